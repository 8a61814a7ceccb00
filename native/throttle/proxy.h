/* The proxy policy (Luo et al. 2012's "Proxy", with tokens behind it: "8 servers + ITT"): per node,
 * a few server slots drain the tasks' queues in the node's shared segment round robin, one operation
 * per queue per turn, so at most `servers` operations of a node inject at once. proxy.c says at its top
 * which operations a server issues for their owner and which MPI makes the owner issue itself.
 *
 * Its state lives behind the node's segment (segment.h): a header, one queue per task of the node and
 * one staging area per task. It is zero when created, and zero is its initial state. */
#ifndef CONTEND_THROTTLE_PROXY_H
#define CONTEND_THROTTLE_PROXY_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define PROXY_MAX_SERVERS 64 /* the slots are the bits of one word */

/* Collective over MPI_COMM_WORLD (MPI_Init): find the ranks that share this task's node; returns the
 * bytes the proxy needs behind the node's segment. */
size_t proxy_prepare(void);

/* After the segment is open: this task's view of the proxy's area. */
void proxy_attach(void);

/* Admission of an operation this task issues itself (inline): its ticket joins this task's queue and
 * waits until a server slot is handed to it in the node's round robin. proxy_injected gives the slot
 * back once the injecting call has returned. */
void proxy_admit(void);
void proxy_injected(void);

/* MPI_Put / MPI_Get (and their _c forms) that a server may issue on this task's behalf: queued, and
 * the call returns MPI_SUCCESS; -1 when the operation must be issued inline (see proxy.c). */
int proxy_put(const void *origin, int64_t origin_count, MPI_Datatype origin_type, int target,
              MPI_Aint disp, int64_t target_count, MPI_Datatype target_type, MPI_Win win);
int proxy_get(void *origin, int64_t origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
              int64_t target_count, MPI_Datatype target_type, MPI_Win win);

/* Passive-target epochs: which ones the program opened with MPI_MODE_NOCHECK. */
void proxy_lock(MPI_Win win, int target, int assert);
void proxy_lock_all(MPI_Win win, int assert);
void proxy_unlock(MPI_Win win, int target);
void proxy_unlock_all(MPI_Win win);

/* Before a call that completes this task's operations on win (flush, flush_local, unlock, their _all
 * forms, free): every operation this task queued is issued and complete (MPI_Win_flush by its server),
 * and a Get's data is in the program's buffer. */
void proxy_complete(MPI_Win win);

/* Before MPI_Win_free (collective): complete, then free the window's shadow (proxy.c). */
void proxy_window_free(MPI_Win win);

/* MPI_Finalize: complete everything queued, then wait for the node's ranks, so the per-slot counters
 * each rank reports are final. */
void proxy_finish(void);

/* The proxy's counters as JSON members (`"proxy":{...}`, with a leading comma), for the stats line. */
int proxy_stats_json(char *out, size_t len);

#endif
