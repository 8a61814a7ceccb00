/* Admission under the token and rate policies (see admit.h). */
#include "admit.h"

#include <sched.h>
#include <time.h>

#include "clock.h"
#include "epochs.h"
#include "held.h"
#include "proxy.h"
#include "throttle.h"

/* Completions this task gave back and has not yet counted for the adaptive controller: it counts
 * them once its next admission has its tokens. The controller's bookkeeping (a clock read, the node's
 * shared counters) right after a give-back would let a node-mate take the tokens first, and this task
 * would then wait in line for them: at a limit of 2 on this host, 0.16-0.20 waits a send instead of
 * the token policy's 0.01 (docs/measurements.md, 2026-11-27). */
static int32_t uncounted;

void give_back(int32_t tokens)
{
    if (tokens <= 0)
        return;
    pool_release(&throttle.seg->pool, tokens);
    if (throttle.cfg.policy == POLICY_ADAPTIVE)
        uncounted += tokens; /* one token per message: tokens completions */
}

int64_t message_bytes(int64_t count, MPI_Datatype datatype)
{
#if MPI_VERSION >= 4
    MPI_Count size;
    PMPI_Type_size_c(datatype, &size);
#else
    int size;
    PMPI_Type_size(datatype, &size);
#endif
    return count * (int64_t)size;
}

static int32_t tokens_for(int64_t count, MPI_Datatype datatype)
{
    int64_t per = throttle.cfg.size_per_token;
    if (per == 0)
        return 1;
    int64_t n = (message_bytes(count, datatype) + per - 1) / per;
    int32_t capacity = throttle.seg->pool.capacity;
    return n < 1 ? 1 : n > capacity ? capacity : (int32_t)n; /* never more than the whole pool */
}

static void note_grant(const pool_grant *g, int32_t n)
{
    throttle_stats *s = &throttle.stats;
    s->tokens += n;
    if (g->in_use > s->max_in_use)
        s->max_in_use = g->in_use;
    if (g->served_meanwhile > s->max_served_meanwhile)
        s->max_served_meanwhile = g->served_meanwhile;
}

/* Keep MPI progressing while this task waits: its own operations first (that frees tokens), and
 * when it holds none, a probe, so others' messages to it and one-sided ops on its memory still move. */
void progress(void)
{
    throttle.stats.polls++;
    if (held.live > 0)
        give_back(held_poll());
    else {
        int flag;
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
}

/* A waiter first spins (yielding the core), then naps: on a node with more ranks than cores the rank
 * that must release tokens, or post the receive that lets them go, needs the core more. */
#define SPIN_NS 200000
#define NAP_NS 20000

static void back_off(int64_t waited_ns)
{
    if (waited_ns < SPIN_NS) {
        sched_yield();
        return;
    }
    struct timespec nap = {0, NAP_NS};
    nanosleep(&nap, NULL);
}

static void wait_in_line(token_pool *p, int32_t n)
{
    pool_place place;
    pool_grant g;
    pool_join(p, &place);
    throttle_stats *s = &throttle.stats;
    s->waits++;
    if (place.ahead > s->max_ahead)
        s->max_ahead = place.ahead;
    int64_t start = now_ns(), stall_ns = throttle.cfg.stall_ms * 1000000, quiet_since = 0;
    int32_t seen_free = 0;
    int head = 0;
    for (;;) {
        if (pool_turn(p, &place)) {
            int32_t free_now = pool_free(p);
            int64_t t = now_ns();
            if (!head || free_now > seen_free) { /* just became head, or tokens came back */
                head = 1;
                seen_free = free_now;
                quiet_since = t;
            }
            int force = t - quiet_since > stall_ns;
            if (pool_take(p, &place, n, force, &g)) {
                s->escapes += g.forced;
                break;
            }
        }
        progress();
        back_off(now_ns() - start);
    }
    s->wait_ns += now_ns() - start;
    note_grant(&g, n);
}

static void take_tokens_now(int32_t n)
{
    token_pool *p = &throttle.seg->pool;
    pool_grant g;
    if (!pool_try(p, n, &g)) {
        if (held.live > 0) /* own finished operations first: that may be enough */
            give_back(held_poll());
        if (!pool_try(p, n, &g)) {
            wait_in_line(p, n);
            return;
        }
    }
    note_grant(&g, n);
}

static int32_t take_tokens(int32_t n)
{
    take_tokens_now(n);
    if (uncounted > 0) {
        int32_t k = uncounted;
        uncounted = 0;
        adaptive_completed(&throttle.seg->adaptive, &throttle.seg->pool, k);
    }
    return n;
}

static void keep_gap(void)
{
    throttle_stats *s = &throttle.stats;
    int64_t t = now_ns(), last = throttle.last_injection_ns;
    if (last && t - last < throttle.cfg.gap_ns) {
        s->waits++;
        int64_t start = t;
        while (t - last < throttle.cfg.gap_ns) {
            progress();
            t = now_ns();
        }
        s->wait_ns += t - start;
    }
    if (last && (s->min_gap_ns < 0 || t - last < s->min_gap_ns))
        s->min_gap_ns = t - last;
    throttle.last_injection_ns = t;
}

int32_t admit(int64_t count, MPI_Datatype datatype)
{
    throttle.stats.ops++;
    if (throttle.cfg.policy == POLICY_RATE) {
        keep_gap();
        return 0;
    }
    if (throttle.cfg.policy == POLICY_PROXY) { /* a server slot, then the tokens behind it, if any */
        proxy_admit();
        return throttle.cfg.tokens ? take_tokens(tokens_for(count, datatype)) : 0;
    }
    return take_tokens(tokens_for(count, datatype));
}

int32_t admit_tokens(int64_t count, MPI_Datatype datatype)
{
    return take_tokens(tokens_for(count, datatype));
}

void waiting_turn(int64_t waited_ns)
{
    progress();
    back_off(waited_ns);
}

void injected(int32_t tokens, int rc, MPI_Request req, MPI_Win win, int target)
{
    if (throttle.cfg.policy == POLICY_PROXY)
        proxy_injected(); /* the slot goes back once the injecting call has returned */
    if (tokens == 0)
        return;
    if (rc != MPI_SUCCESS || (win != MPI_WIN_NULL && !epochs_passive(win, target))) {
        give_back(tokens);
        return;
    }
    held_op op = {req, win, target, tokens};
    held_add(op);
    /* MPI may have finished a send inside its call (MPICH: an eager send on shared memory): with the
     * pool now empty, a node-mate asking next would wait for tokens no operation holds any more. Only
     * requests are asked (a one-sided op would need a flush, which waits, to say). */
    if (pool_free(&throttle.seg->pool) == 0)
        give_back(held_poll_requests());
}
