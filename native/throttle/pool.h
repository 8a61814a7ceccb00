/* The node's token pool: a fixed number of tokens shared by the ranks of one node, granted first come
 * first served by tickets (Luo et al. 2012's "ticket-based token allocation").
 *
 * It lives in shared memory (segment.h) and uses only C11 atomics, no MPI, so it is tested on its own
 * with forked processes (test/pool_fifo.c).
 *
 * Guarantees:
 * - FIFO: once a task is in line, no one is served before it who joined after it; the fast path
 *   (pool_try) only succeeds while nobody is in line. So a task waits for at most the tasks that were
 *   in line when it joined: no task starves, not even one asking for many tokens among many asking
 *   for one.
 * - The tokens in use never exceed the pool's limit (its capacity unless pool_set_limit lowered it),
 *   except after a forced take (pool_take with force), which the caller uses only to escape a stall
 *   (see admit.c); the debt is repaid by the releases.
 * Cost: pool_try and pool_release are one atomic operation each; everything else is for waiters. */
#ifndef CONTEND_THROTTLE_POOL_H
#define CONTEND_THROTTLE_POOL_H

#include <stdatomic.h>
#include <stdint.h>

/* The largest pool (the state word keeps free tokens in 24 bits, with room for a debt). */
#define POOL_MAX_TOKENS 1000000

typedef struct {
    /* One word, so the fast path is one compare-and-swap:
     *   bits  0..23  free tokens + 2^23 (negative after a forced take)
     *   bits 24..39  tasks in line
     *   bits 40..63  grants made, modulo 2^24 (to count who was served while a task waited) */
    _Atomic uint64_t state;
    _Atomic uint64_t next_ticket; /* the ticket the next task to join gets */
    _Atomic uint64_t serving;     /* the ticket whose turn it is */
    int32_t capacity;
    _Atomic int32_t limit;        /* tokens that may be in use: capacity, or less (adaptive.h) */
} token_pool;

/* A task's place in line. */
typedef struct {
    uint64_t ticket;
    uint32_t grants_at_join;      /* grants made when it took its ticket */
    uint32_t ahead;               /* tasks in line before it when it joined */
} pool_place;

/* What a grant saw (for statistics and tests). */
typedef struct {
    int32_t in_use;               /* tokens in use on the node right after this grant */
    uint32_t served_meanwhile;    /* grants to others between joining the line and this grant */
    int forced;                   /* taken by force, into debt */
} pool_grant;

void pool_init(token_pool *p, int32_t capacity);

/* Take n tokens if nobody is in line and n are free. 1 if taken. */
int pool_try(token_pool *p, int32_t n, pool_grant *g);

/* Join the line (take a ticket). */
void pool_join(token_pool *p, pool_place *place);

/* Whether it is this place's turn. */
int pool_turn(token_pool *p, const pool_place *place);

/* At its turn: take n tokens if they are free, or regardless when force is set, and leave the line,
 * letting the next one have its turn. 1 if taken, 0 if not (still in line). */
int pool_take(token_pool *p, const pool_place *place, int32_t n, int force, pool_grant *g);

/* Whether some task is in line (waiting for tokens). One load. */
int pool_waiting(token_pool *p);

/* Give back n tokens. */
void pool_release(token_pool *p, int32_t n);

/* Tokens free now (negative while a forced take is in debt, or after the limit was lowered below the
 * tokens in use). */
int32_t pool_free(token_pool *p);

/* Let at most limit (1..capacity) tokens be in use: the difference is taken from or added to the free
 * tokens in one atomic operation, so pool_try stays one. Tokens in use above a lowered limit stay
 * until released. One caller at a time (the adaptive controller). */
void pool_set_limit(token_pool *p, int32_t limit);

#endif
