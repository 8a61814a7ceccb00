/* What the send wrappers share (send.c, send_modes.c, blocking_send.c, persistent.c, collectives.c). */
#ifndef CONTEND_THROTTLE_SENDS_H
#define CONTEND_THROTTLE_SENDS_H

#include <mpi.h>
#include <stdint.h>

/* Whether a send to dest on comm is throttled: a policy is in force and the send leaves the task (not
 * to MPI_PROC_NULL, not to the task itself: see send.c). */
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
