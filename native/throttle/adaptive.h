/* The adaptive policy: the node's token limit follows the node's completion rate while the program
 * runs, with no sweep beforehand. The rule, its defaults and what it cannot do: docs/models.md
 * ("Adaptive limit"); engine/src/policy/adaptive.rs is the same rule in the engine, so a simulation
 * predicts what the library does.
 *
 * The controller lives in the node's segment beside the pool (segment.h) and acts on the pool only
 * through pool_set_limit, so admission (pool_try) stays one atomic operation and FIFO. A completion
 * costs one more atomic add and a load; one rank at a time evaluates the round (a rank that finds the
 * controller busy leaves the decision to the next completion: no completion is lost, the round only
 * ends a little later). */
#ifndef CONTEND_THROTTLE_ADAPTIVE_H
#define CONTEND_THROTTLE_ADAPTIVE_H

#include <stdatomic.h>
#include <stdint.h>

#include "pool.h"

/* The rule's constants (docs/models.md). */
#define ADAPTIVE_DECREASE 0.5   /* a congested round multiplies the limit by this */
#define ADAPTIVE_TOLERANCE 0.05 /* congested: the round's rate below (1 - this) x the best */
#define ADAPTIVE_MIN_ROUND 16   /* the fewest completions a round has: fewer measure the clock's jitter */

typedef struct {
    _Atomic int32_t busy;         /* a rank is evaluating the round */
    _Atomic int64_t completions;  /* tokens given back on the node (one per message), ever */
    _Atomic int64_t waited;       /* completions of this round that found a task in line */
    /* Written only by the rank that holds busy: */
    int64_t round_start_ns;       /* 0: before the node's first completion */
    int64_t round_first;          /* completions when the round started */
    int32_t length;               /* the round's length: the limit when it started, at least
                                   * ADAPTIVE_MIN_ROUND */
    int32_t slow_start;           /* the limit doubles until the first decrease */
    double best;                  /* completions per ns of the best round since the last decrease */
    int32_t min_limit, max_limit; /* what the limit was, for the counters */
    int64_t adjustments;
} adaptive_state;

/* Before any rank injects: the limit starts at initial (the node's ranks, at most the pool). */
void adaptive_init(adaptive_state *a, token_pool *p, int32_t initial);

/* n tokens came back (n messages completed): count them, and end the round when it is due. */
void adaptive_completed(adaptive_state *a, token_pool *p, int32_t n);

#endif
