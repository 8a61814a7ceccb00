/* The adaptive policy's controller (see adaptive.h; the rule: docs/models.md "Adaptive limit"). */
#include "adaptive.h"

#include "clock.h"

static int32_t round_length(int32_t limit)
{
    return limit < ADAPTIVE_MIN_ROUND ? ADAPTIVE_MIN_ROUND : limit;
}

void adaptive_init(adaptive_state *a, token_pool *p, int32_t initial)
{
    int32_t limit = initial < 1 ? 1 : initial > p->capacity ? p->capacity : initial;
    pool_set_limit(p, limit);
    atomic_init(&a->busy, 0);
    atomic_init(&a->completions, 0);
    atomic_init(&a->waited, 0);
    a->round_start_ns = 0;
    a->round_first = 0;
    a->length = round_length(limit);
    a->slow_start = 1;
    a->best = 0;
    a->min_limit = a->max_limit = limit;
    a->adjustments = 0;
}

/* The round ended at t with done completions, waited of which found a task in line: the next limit
 * (docs/models.md). */
static int32_t decide(adaptive_state *a, int32_t limit, int64_t done, int64_t waited, int64_t t, int32_t capacity)
{
    if (2 * waited < done) /* not binding: the limit held the node back for moments at most */
        return limit;
    double span = (double)(t - a->round_start_ns), rate = (double)done / (span < 1 ? 1 : span);
    if (a->best == 0) { /* the first round, and the first after a decrease, only measure */
        a->best = rate;
        return limit;
    }
    if (rate >= (1 - ADAPTIVE_TOLERANCE) * a->best) {
        if (rate > a->best)
            a->best = rate;
        int64_t next = a->slow_start ? 2 * (int64_t)limit : (int64_t)limit + 1;
        return next > capacity ? capacity : (int32_t)next;
    }
    a->slow_start = 0;
    a->best = 0;
    int32_t next = (int32_t)(limit * ADAPTIVE_DECREASE);
    return next < 1 ? 1 : next;
}

void adaptive_completed(adaptive_state *a, token_pool *p, int32_t n)
{
    atomic_fetch_add_explicit(&a->completions, n, memory_order_relaxed);
    if (pool_waiting(p))
        atomic_fetch_add_explicit(&a->waited, n, memory_order_relaxed);
    if (atomic_exchange_explicit(&a->busy, 1, memory_order_acquire))
        return; /* another rank of the node is at it */
    int64_t t = now_ns(), total = atomic_load_explicit(&a->completions, memory_order_relaxed);
    if (a->round_start_ns == 0) { /* the first completion starts the first round */
        a->round_start_ns = t;
        a->round_first = total;
        atomic_store_explicit(&a->waited, 0, memory_order_relaxed); /* counted from the next on */
    } else if (total - a->round_first >= a->length) {
        int32_t limit = atomic_load_explicit(&p->limit, memory_order_relaxed);
        int64_t waited = atomic_exchange_explicit(&a->waited, 0, memory_order_relaxed);
        int32_t next = decide(a, limit, total - a->round_first, waited, t, p->capacity);
        a->round_start_ns = t;
        a->round_first = total;
        a->length = round_length(next);
        if (next != limit) {
            pool_set_limit(p, next);
            a->adjustments++;
            a->min_limit = next < a->min_limit ? next : a->min_limit;
            a->max_limit = next > a->max_limit ? next : a->max_limit;
        }
    }
    atomic_store_explicit(&a->busy, 0, memory_order_release);
}
