/* The per-target-node rate of one-sided traffic (see target_rate.h). */
#define _GNU_SOURCE /* nanosleep, sched_yield under -std=c11 */
#include "target_rate.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admit.h"
#include "clock.h"
#include "nodes.h"
#include "throttle.h"

/* One target node's clock, shared by the ranks of an origin node. The lock guards a few loads and
 * stores, never a wait or an MPI call. */
typedef struct {
    _Atomic int lock;
    int64_t next_ns;    /* the earliest start of the next injection into the node */
    int64_t last_ns;    /* the start of the last one (0: none yet) */
    int64_t last_bytes;
    char pad[64 - sizeof(_Atomic int) - 3 * sizeof(int64_t)];
} target_clock;

static struct {
    int64_t share;        /* bytes/s from this node into each other node; 0: not pacing */
    MPI_Win clocks_win;   /* the node's shared memory of clocks */
    target_clock *clocks; /* one per node (nodes.h) */
} rate = {.clocks_win = MPI_WIN_NULL};

static int fail(char *why, size_t len, const char *text)
{
    snprintf(why, len, "%s", text);
    return -1;
}

/* The clocks in memory shared by the ranks of this node (same host, same node name). */
static int share_clocks(char *why, size_t len)
{
    MPI_Comm host, node;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, throttle.rank, MPI_INFO_NULL, &host);
    PMPI_Comm_split(host, nodes_mine(), throttle.rank, &node);
    PMPI_Comm_free(&host);
    int node_rank;
    PMPI_Comm_rank(node, &node_rank);
    MPI_Aint bytes = node_rank == 0 ? (MPI_Aint)nodes_count() * (MPI_Aint)sizeof(target_clock) : 0;
    void *base;
    int rc = PMPI_Win_allocate_shared(bytes, sizeof(target_clock), MPI_INFO_NULL, node, &base,
                                      &rate.clocks_win);
    if (rc != MPI_SUCCESS) {
        PMPI_Comm_free(&node);
        return fail(why, len, "cannot allocate the node's shared memory for memory_throttle");
    }
    MPI_Aint size;
    int unit;
    PMPI_Win_shared_query(rate.clocks_win, 0, &size, &unit, &rate.clocks);
    if (node_rank == 0)
        memset(rate.clocks, 0, (size_t)bytes);
    PMPI_Barrier(node); /* nobody paces before the clocks are set */
    PMPI_Comm_free(&node);
    return 0;
}

int target_rate_start(char *why, size_t len)
{
    /* every rank must take part in the collectives below, or none */
    int64_t mine = throttle.cfg.memory_throttle, low, high;
    PMPI_Allreduce(&mine, &low, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&mine, &high, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (low != high) {
        snprintf(why, len, "the ranks were given different memory_throttle values (%lld to %lld "
                 "bytes/s; 0: none): they must agree", (long long)low, (long long)high);
        return -1;
    }
    if (mine == 0)
        return 0;
    if (share_clocks(why, len))
        return -1;
    rate.share = nodes_count() > 1 ? mine / (nodes_count() - 1) : mine;
    if (rate.share < 1)
        rate.share = 1;
    return 0;
}

int target_rate_on(void)
{
    return rate.share > 0 && throttle.phase != PHASE_FINISHED;
}

/* The time b bytes take at the share, rounded up (at least 1 ns, so starts are strictly ordered). */
static int64_t span_ns(int64_t bytes)
{
    double ns = (double)bytes * 1e9 / (double)rate.share;
    int64_t whole = (int64_t)ns;
    return whole < ns ? whole + 1 : whole < 1 ? 1 : whole;
}

/* Take the next interval of the clock; note how far its start is from the previous one's. */
static int64_t reserve(target_clock *c, int64_t bytes)
{
    while (atomic_exchange_explicit(&c->lock, 1, memory_order_acquire))
        sched_yield();
    int64_t t = now_ns(), start = c->next_ns > t ? c->next_ns : t;
    int64_t last = c->last_ns, last_bytes = c->last_bytes;
    c->next_ns = start + span_ns(bytes);
    c->last_ns = start;
    c->last_bytes = bytes;
    atomic_store_explicit(&c->lock, 0, memory_order_release);
    throttle_stats *s = &throttle.stats;
    if (last) {
        int64_t gap = start - last, slack = gap - span_ns(last_bytes);
        if (s->target_min_gap_ns < 0 || gap < s->target_min_gap_ns)
            s->target_min_gap_ns = gap;
        if (s->target_min_slack_ns == INT64_MIN || slack < s->target_min_slack_ns)
            s->target_min_slack_ns = slack;
    }
    return start;
}

/* Until start: MPI progress (others' operations on this task's memory still move), yielding the core
 * to whoever else may run on it; a nap only for the part of a long wait that is more than 1 ms away.
 * Why not nap throughout: a nap wakes late (measured here under load 24: about half a 1 MiB op's span
 * at 2 GB/s), and a late start is lost bandwidth, the clock keeps no credit. */
static void wait_until(int64_t start)
{
    throttle_stats *s = &throttle.stats;
    int64_t t = now_ns();
    if (t >= start)
        return;
    s->target_waits++;
    int64_t begin = t;
    while (t < start) {
        progress();
        int64_t left = start - now_ns();
        if (left > 2000000) {
            struct timespec nap = {0, left - 1000000 > 10000000 ? 10000000 : left - 1000000};
            nanosleep(&nap, NULL);
        } else
            sched_yield();
        t = now_ns();
    }
    s->target_wait_ns += t - begin;
}

void target_rate_pace(int target_rank, MPI_Win win, int64_t count, MPI_Datatype datatype)
{
    int node = node_of_win_rank(win, target_rank);
    if (node < 0 || node == nodes_mine())
        return;
    int64_t bytes = message_bytes(count, datatype);
    throttle.stats.target_ops++;
    throttle.stats.target_bytes += bytes;
    wait_until(reserve(&rate.clocks[node], bytes));
}

void target_rate_stop(void)
{
    if (rate.clocks_win != MPI_WIN_NULL)
        PMPI_Win_free(&rate.clocks_win);
}

int64_t target_rate_share(void)
{
    return rate.share;
}
