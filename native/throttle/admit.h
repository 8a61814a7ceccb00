/* Admission: what a throttled call does before it injects, and how tokens come back. */
#ifndef CONTEND_THROTTLE_ADMIT_H
#define CONTEND_THROTTLE_ADMIT_H

#include <mpi.h>
#include <stdint.h>

/* The bytes of count elements of datatype (the large-count query where MPI has it). */
int64_t message_bytes(int64_t count, MPI_Datatype datatype);

/* Wait until an operation of count elements of datatype may be injected.
 * token: takes its tokens from the node's pool, first come first served; while it waits it polls
 *   this task's own token-holding operations (oldest first), giving back the tokens of those done,
 *   and if the head of the line sees no token come back for stall_ms it takes its tokens anyway
 *   (an escape, counted), since waiting longer could be a deadlock (docs/measure.md).
 * rate: waits until gap_ns have passed since this task's last injection, making MPI progress.
 * Returns the tokens the operation now holds (0 under the rate policy). */
int32_t admit(int64_t count, MPI_Datatype datatype);

/* After the injecting call: an operation that holds tokens until completion is recorded (req, or
 * win and target for one-sided ops without request); one that cannot (the call failed, or a one-sided
 * op outside a passive-target epoch) gives them back at once. */
void injected(int32_t tokens, int rc, MPI_Request req, MPI_Win win, int target);

/* One turn of MPI progress for a task that waits: its own token-holding operations, else a probe. */
void progress(void);

/* Take the tokens of an operation of count elements of datatype from the node's pool, waiting in line
 * as admit does (for a proxy server injecting for another task). Returns them. */
int32_t admit_tokens(int64_t count, MPI_Datatype datatype);

/* One turn of a wait for the library's shared state (the proxy's queues): progress as a task waiting
 * for tokens makes, then back off (spin, later nap) by how long it has waited. */
void waiting_turn(int64_t waited_ns);

/* Give tokens back to the node's pool. */
void give_back(int32_t tokens);

/* One turn of a call that polls instead of blocking while this task holds tokens (a Wait, a blocking
 * receive or probe): hand back what this task no longer needs if another task of the node waits for
 * it (complete.c). */
void between_tests(void);

#endif
