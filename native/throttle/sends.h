/* What the send wrappers share (send.c, send_modes.c, blocking_send.c, persistent.c, collectives.c). */
#ifndef CONTEND_THROTTLE_SENDS_H
#define CONTEND_THROTTLE_SENDS_H

#include <mpi.h>
#include <stdint.h>

/* What the library does with a send to dest on comm: nothing (no policy, MPI_PROC_NULL), leave it
 * alone as node-local (to a task of this node, the task itself included: nodes.h), or admit it. */
typedef enum { PEER_UNTOUCHED, PEER_LOCAL, PEER_ADMITTED } peer_kind;
peer_kind send_peer(int dest, MPI_Comm comm);

/* Whether a send to dest on comm is admitted (send_peer says PEER_ADMITTED); a node-local one is
 * counted (ops_local). */
int throttled_send(int dest, MPI_Comm comm);

/* The four send modes, each started by its nonblocking call. */
typedef enum { SEND_STANDARD, SEND_SYNCHRONOUS, SEND_BUFFERED, SEND_READY } send_mode;

/* Start a send of mode (PMPI, large count where MPI has it); no admission. */
int start_send(send_mode mode, const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Request *request);

/* Admit a send, start it and record its tokens until completion (admit.h), as MPI_Isend does. */
int throttled_start(send_mode mode, const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                    int tag, MPI_Comm comm, MPI_Request *request);

/* Wait for one request as a blocking call would, but while this task holds tokens as a polling loop
 * that hands back those of its finished operations (complete.c, blocking.c). */
int wait_polling(MPI_Request *request, MPI_Status *status);

/* Persistent sends (persistent.c): the tokens of a started persistent send that is now complete
 * (0 if req is no such request, or not complete), and forgetting a freed request. */
int32_t persistent_settle(MPI_Request req);
void persistent_forget(MPI_Request req);

#endif
