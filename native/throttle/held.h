/* The operations of this task that hold tokens, oldest first.
 *
 * An operation holds its tokens from injection until it is known complete: its request completes in a
 * Wait/Test call, a progress poll finds it complete, or (one-sided) a flush or unlock covers it.
 * Kept in a ring in injection order. Releasing marks an entry dead; dead entries at the front are
 * dropped at once and the ring is compacted when dead entries outnumber live ones, so a scan costs
 * O(live) amortised. Completions usually come oldest first, so finding a request is O(1) then.
 * Not thread-safe: the library serves one thread in MPI at a time (docs/measure.md). */
#ifndef CONTEND_THROTTLE_HELD_H
#define CONTEND_THROTTLE_HELD_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    MPI_Request req;   /* MPI_REQUEST_NULL: a one-sided op without a request */
    MPI_Win win;       /* MPI_WIN_NULL: point to point */
    int target;
    int32_t tokens;    /* 0: released (dead) */
} held_op;

typedef struct {
    held_op *ops;
    size_t cap;        /* a power of two */
    size_t head, tail; /* live and dead entries are ops[head..tail) modulo cap */
    size_t live;
} held_ops;

extern held_ops held;

void held_add(held_op op);

/* Release the entry of this request if it holds tokens; returns its tokens (0 if none). */
int32_t held_complete_request(MPI_Request req);

/* Release the one-sided ops (with or without request) of win, to target or to all when target is
 * MPI_ANY_SOURCE; returns their tokens. */
int32_t held_complete_window(MPI_Win win, int target);

/* Poll every live op, oldest first: a request by MPI_Request_get_status (which leaves it to the
 * application), a one-sided op by MPI_Win_flush_local on its target. Returns the tokens freed. */
int32_t held_poll(void);

/* The requests of held_poll only, which never wait: one-sided ops stay held. */
int32_t held_poll_requests(void);

/* Release every live op (a task leaving must not keep the node's tokens); returns their tokens. */
int32_t held_release_all(void);

#endif
