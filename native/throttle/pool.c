/* The node's token pool: tickets for order, one state word for tokens (see pool.h). */
#include "pool.h"

#define FREE_BIAS (UINT64_C(1) << 23)
#define FREE_MASK ((UINT64_C(1) << 24) - 1)
#define IN_LINE (UINT64_C(1) << 24)
#define LINE_MASK UINT64_C(0xffff)
#define GRANT (UINT64_C(1) << 40)
#define MAX_DEBT (INT64_C(1) << 22) /* a forced take never pushes free below minus this */

static int64_t free_of(uint64_t s)
{
    return (int64_t)(s & FREE_MASK) - (int64_t)FREE_BIAS;
}

static uint32_t in_line_of(uint64_t s)
{
    return (uint32_t)((s >> 24) & LINE_MASK);
}

static uint32_t grants_of(uint64_t s)
{
    return (uint32_t)(s >> 40);
}

static pool_grant grant_seen(const token_pool *p, uint64_t after, uint32_t grants_before)
{
    pool_grant g;
    g.in_use = atomic_load_explicit(&p->limit, memory_order_relaxed) - (int32_t)free_of(after);
    g.served_meanwhile = (grants_of(after) - grants_before - 1) & 0xffffff;
    g.forced = free_of(after) < 0;
    return g;
}

void pool_init(token_pool *p, int32_t capacity)
{
    p->capacity = capacity;
    atomic_init(&p->limit, capacity);
    atomic_init(&p->state, FREE_BIAS + (uint64_t)capacity);
    atomic_init(&p->next_ticket, 0);
    atomic_init(&p->serving, 0);
}

int pool_try(token_pool *p, int32_t n, pool_grant *g)
{
    uint64_t s = atomic_load_explicit(&p->state, memory_order_relaxed);
    while (in_line_of(s) == 0 && free_of(s) >= n) {
        uint64_t next = s - (uint64_t)n + GRANT;
        if (atomic_compare_exchange_weak_explicit(&p->state, &s, next, memory_order_acquire,
                                                  memory_order_relaxed)) {
            *g = grant_seen(p, next, grants_of(s));
            return 1;
        }
    }
    return 0;
}

void pool_join(token_pool *p, pool_place *place)
{
    /* In line first (this stops the fast path), then the ticket that fixes the order. Grants are
     * counted from the ticket on: a task preempted between the two steps is overtaken by those who
     * take their tickets meanwhile (its place is its ticket), and they must not count as served
     * while it waited. */
    atomic_fetch_add_explicit(&p->state, IN_LINE, memory_order_acq_rel);
    place->ticket = atomic_fetch_add_explicit(&p->next_ticket, 1, memory_order_acq_rel);
    place->grants_at_join = grants_of(atomic_load_explicit(&p->state, memory_order_acquire));
    place->ahead = (uint32_t)(place->ticket - atomic_load_explicit(&p->serving, memory_order_acquire));
}

int pool_turn(token_pool *p, const pool_place *place)
{
    return atomic_load_explicit(&p->serving, memory_order_acquire) == place->ticket;
}

int pool_take(token_pool *p, const pool_place *place, int32_t n, int force, pool_grant *g)
{
    uint64_t s = atomic_load_explicit(&p->state, memory_order_relaxed);
    for (;;) {
        int64_t left = free_of(s) - n;
        if (left < 0 && !(force && left > -MAX_DEBT))
            return 0;
        uint64_t next = s - (uint64_t)n - IN_LINE + GRANT;
        if (atomic_compare_exchange_weak_explicit(&p->state, &s, next, memory_order_acquire,
                                                  memory_order_relaxed)) {
            *g = grant_seen(p, next, place->grants_at_join);
            atomic_store_explicit(&p->serving, place->ticket + 1, memory_order_release);
            return 1;
        }
    }
}

int pool_waiting(token_pool *p)
{
    return in_line_of(atomic_load_explicit(&p->state, memory_order_relaxed)) > 0;
}

void pool_release(token_pool *p, int32_t n)
{
    atomic_fetch_add_explicit(&p->state, (uint64_t)n, memory_order_release);
}

int32_t pool_free(token_pool *p)
{
    return (int32_t)free_of(atomic_load_explicit(&p->state, memory_order_acquire));
}

void pool_set_limit(token_pool *p, int32_t limit)
{
    /* The order makes a grant that reads limit and free in between see fewer tokens in use, never more
     * (grant_seen): lowering stores the limit first, raising adds the tokens first. */
    int32_t old = atomic_load_explicit(&p->limit, memory_order_relaxed);
    if (limit < old) {
        atomic_store_explicit(&p->limit, limit, memory_order_release);
        atomic_fetch_sub_explicit(&p->state, (uint64_t)(old - limit), memory_order_acq_rel);
    } else if (limit > old) {
        atomic_fetch_add_explicit(&p->state, (uint64_t)(limit - old), memory_order_acq_rel);
        atomic_store_explicit(&p->limit, limit, memory_order_release);
    }
}
