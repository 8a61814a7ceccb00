/* Streams between nodes for nicrate and outstanding: layout, rounds, node rows, the final check.
 * What is measured and how is described in nicstream.h. */
#include "nicstream.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "json.h"

enum { DATA = 1, CHECK = 2 };

/* Above this the put window (outstanding x largest size per rank) would crowd the host's memory. */
#define MAX_PUT_WINDOW (1LL << 30)

nic_layout nic_layout_of(bench *b)
{
    nic_layout l;
    memset(&l, 0, sizeof l);
    int p = b->size;
    l.node_of = malloc(sizeof(int) * p);
    l.local_of = malloc(sizeof(int) * p);
    MPI_Pcontrol(0); /* setup: the harness's messages, not the streams' (harness.c) */
    MPI_Allgather(&b->node, 1, MPI_INT, l.node_of, 1, MPI_INT, b->comm);
    MPI_Pcontrol(1);
    if (b->nodes == 1) {
        if (p % 2)
            fail_usage(b, "%s on one host uses the two halves of the ranks as two nodes: needs an even "
                          "number of ranks, got %d", b->pattern, p);
        for (int r = 0; r < p; r++)
            l.node_of[r] = r >= p / 2;
        l.one_host = 1;
        l.nodes = 2;
    } else {
        l.nodes = b->nodes;
    }
    int *count = calloc(l.nodes, sizeof(int));
    for (int r = 0; r < p; r++)
        l.local_of[r] = count[l.node_of[r]]++;
    for (int n = 1; n < l.nodes; n++)
        if (count[n] != count[0])
            fail_usage(b, "%s needs the same number of ranks on every node: node 0 has %d, node %d has %d",
                       b->pattern, count[0], n, count[n]);
    l.per_node = count[0];
    free(count);
    l.rank_at = malloc(sizeof(int) * p);
    for (int r = 0; r < p; r++)
        l.rank_at[l.node_of[r] * l.per_node + l.local_of[r]] = r;
    return l;
}

void nic_layout_free(nic_layout *l)
{
    free(l->rank_at);
    free(l->node_of);
    free(l->local_of);
}

typedef struct {
    int put;              /* --mode put: MPI_Put + flush instead of Isend/Irecv */
    int one_way;          /* --mode put-oneway: only the first node injects */
    int sends, receives;  /* whether this rank injects, and whether its partner src does */
    int src, dst;         /* this rank's partners */
    char *send, *recv;    /* one slot of the largest size per outstanding message */
    MPI_Win win;          /* put: the target slots (recv) */
    MPI_Request *reqs;
} stream;

/* One round: M messages in batches of w, all complete at the end. */
static void round_of(bench *b, stream *st, int64_t bytes, int w)
{
    int messages = b->opt.messages;
    for (int sent = 0; sent < messages; sent += w) {
        int batch = messages - sent < w ? messages - sent : w;
        if (st->put) {
            for (int j = 0; j < batch; j++)
                MPI_Put(st->send + (size_t)j * bytes, (int)bytes, MPI_BYTE, st->dst, (MPI_Aint)j * bytes,
                        (int)bytes, MPI_BYTE, st->win);
            MPI_Win_flush(st->dst, st->win);
            b->count.rma_bytes += bytes * batch;
        } else {
            for (int j = 0; j < batch; j++)
                post_recv(b, st->recv + (size_t)j * bytes, bytes, st->src, DATA, &st->reqs[j]);
            for (int j = 0; j < batch; j++)
                post_send(b, st->send + (size_t)j * bytes, bytes, st->dst, DATA, &st->reqs[batch + j]);
            wait_recvs(b, batch, st->reqs);
            wait_sends(b, batch, st->reqs + batch);
        }
    }
}

/* The barrier that starts a round. Ranks sitting the round out wait in it asleep (polling every
 * millisecond), so that where ranks outnumber cores they leave the cores to the ranks that inject, as
 * the idle cores of Luo et al. 2012 do. Their naps make the injecting ranks leave it up to milliseconds
 * apart (the barrier's messages wait for a sleeper's next poll), longer than a round: so the injecting
 * ranks (injectors, MPI_COMM_NULL on the others) then meet among themselves, spinning, and start
 * together. */
static void start_round(bench *b, MPI_Comm injectors)
{
    MPI_Request barrier;
    MPI_Ibarrier(b->comm, &barrier);
    int done = 0;
    while (!done) {
        MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
        if (!done && injectors == MPI_COMM_NULL)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    if (injectors != MPI_COMM_NULL)
        MPI_Barrier(injectors);
}

/* --round-times: rank 0 writes when each injecting rank started and ended each round, warm-up rounds
 * first (round -warmup..-1), on the host's CLOCK_MONOTONIC: one clock for all ranks of one host, so
 * a twin can start each rank's rounds as they started here (experiments.throttle_agreement). starts
 * and ends hold n rounds per rank; -1 marks a rank that did not inject. */
static void round_lines(bench *b, const int64_t *starts, const int64_t *ends, int n, int64_t bytes, int active,
                        int w)
{
    int64_t *all = b->rank == 0 ? malloc(sizeof(int64_t) * 2 * (size_t)n * (size_t)b->size) : NULL;
    int64_t *mine = malloc(sizeof(int64_t) * 2 * (size_t)n);
    memcpy(mine, starts, sizeof(int64_t) * (size_t)n);
    memcpy(mine + n, ends, sizeof(int64_t) * (size_t)n);
    MPI_Gather(mine, 2 * n, MPI_INT64_T, all, 2 * n, MPI_INT64_T, 0, b->comm);
    for (int r = 0; b->rank == 0 && r < b->size; r++) {
        const int64_t *at = all + (size_t)r * 2 * (size_t)n;
        for (int i = 0; i < n && at[0] >= 0; i++) {
            json_begin();
            json_str("type", "round");
            json_int("bytes", bytes);
            json_int("active", active);
            json_int("window", w);
            json_int("rank", r);
            json_int("round", i - b->opt.warmup);
            json_int("start_ns", at[i]);
            json_int("end_ns", at[n + i]);
            json_end();
        }
    }
    free(mine);
    free(all);
}

/* Rank 0: one row per node from every rank's round times ([rank][round]). */
static void node_rows(bench *b, const nic_layout *l, const stream *st, const double *all, int rounds,
                      int64_t bytes, int active, int w)
{
    double *samples = malloc(sizeof(double) * rounds);
    for (int n = 0; n < (st->one_way ? 1 : l->nodes); n++) {
        double slowest = 0, fastest = 0;
        for (int i = 0; i < rounds; i++) {
            samples[i] = 0;
            for (int a = 0; a < active; a++) {
                double t = all[(size_t)l->rank_at[n * l->per_node + a] * rounds + i];
                samples[i] = t > samples[i] ? t : samples[i];
            }
            samples[i] /= (double)active * b->opt.messages;
        }
        for (int a = 0; a < active; a++) {
            double t = median(&all[(size_t)l->rank_at[n * l->per_node + a] * rounds], rounds);
            double rate = t > 0 ? (double)bytes * b->opt.messages / t * 1e9 : 0;
            slowest = a == 0 || rate < slowest ? rate : slowest;
            fastest = rate > fastest ? rate : fastest;
        }
        int next = (n + 1) % l->nodes;
        result r = result_init(st->put ? "put" : "send", bytes, l->rank_at[n * l->per_node],
                               l->rank_at[next * l->per_node], samples, rounds);
        r.window = w;
        result_extra(&r, "active", active);
        result_extra(&r, "messages", b->opt.messages);
        result_extra(&r, "logical_node", n);
        result_extra(&r, "one_host", l->one_host);
        result_extra(&r, "rank_min_Bps", slowest);
        result_extra(&r, "rank_max_Bps", fastest);
        report_row(b, &r);
    }
    free(samples);
}

static unsigned char check_byte(int64_t i, int from)
{
    return (unsigned char)(i * 131 + from * 29 + 7);
}

/* Every rank sends the largest size with known contents to its partner, which checks every byte.
 * In put mode this closes the sweep's lock_all epoch: the target reads its slots under its own lock. */
static void check_data(bench *b, stream *st, int64_t bytes)
{
    for (int64_t i = 0; i < bytes; i++)
        st->send[i] = (char)check_byte(i, b->rank);
    if (st->put) {
        if (st->sends) {
            MPI_Put(st->send, (int)bytes, MPI_BYTE, st->dst, 0, (int)bytes, MPI_BYTE, st->win);
            MPI_Win_flush(st->dst, st->win);
            b->count.rma_bytes += bytes;
        }
        MPI_Win_unlock_all(st->win);
        MPI_Barrier(b->comm); /* every put has reached its target */
        MPI_Win_lock(MPI_LOCK_SHARED, b->rank, 0, st->win); /* makes them visible to local loads */
    } else {
        MPI_Request req;
        post_recv(b, st->recv, bytes, st->src, CHECK, &req);
        send_msg(b, st->send, bytes, st->dst, CHECK);
        wait_recvs(b, 1, &req);
    }
    int ok = 1;
    for (int64_t i = 0; i < bytes && ok && st->receives; i++)
        ok = (unsigned char)st->recv[i] == check_byte(i, st->src);
    b->count.verified = ok;
    if (st->put)
        MPI_Win_unlock(b->rank, st->win);
}

int nic_sweep(bench *b, const nic_layout *l, const int *active, int nactive, const int *windows,
              int nwindows)
{
    static const char *const modes[] = {"send", "put", "put-oneway", NULL};
    stream st;
    memset(&st, 0, sizeof st);
    int mode = pattern_mode(b, modes);
    st.put = mode >= 1;
    st.one_way = mode == 2;
    int wmax = 0;
    for (int i = 0; i < nactive; i++)
        if (active[i] > l->per_node)
            fail_usage(b, "--active %d exceeds the %d ranks per node", active[i], l->per_node);
    for (int i = 0; i < nwindows; i++) {
        if (windows[i] > b->opt.messages)
            fail_usage(b, "--windows %d exceeds --messages %d (a rank sends only %d per round)", windows[i],
                       b->opt.messages, b->opt.messages);
        wmax = windows[i] > wmax ? windows[i] : wmax;
    }
    int64_t largest = largest_size(b), slots = (int64_t)wmax * largest;
    if (st.put && slots > MAX_PUT_WINDOW)
        fail_usage(b, "--mode put needs a window of %d x %lld bytes per rank, more than 1 GiB", wmax,
                   (long long)largest);

    int me = b->rank, node = l->node_of[me], local = l->local_of[me];
    st.dst = l->rank_at[((node + 1) % l->nodes) * l->per_node + local];
    st.src = l->rank_at[((node - 1 + l->nodes) % l->nodes) * l->per_node + local];
    st.sends = !st.one_way || node == 0;
    st.receives = !st.one_way || node == 1 % l->nodes;
    st.send = alloc_buffer(slots);
    if (st.put) {
        MPI_Win_allocate(slots > 0 ? slots : 1, 1, MPI_INFO_NULL, b->comm, &st.recv, &st.win);
        MPI_Win_lock_all(0, st.win);
    } else {
        st.recv = alloc_buffer(slots);
    }
    st.reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)wmax);
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *mine = malloc(sizeof(double) * iters_max);
    int64_t *starts = malloc(sizeof(int64_t) * (size_t)(iters_max + b->opt.warmup));
    int64_t *ends = malloc(sizeof(int64_t) * (size_t)(iters_max + b->opt.warmup));
    double *all = me == 0 ? malloc(sizeof(double) * iters_max * (size_t)b->size) : NULL;

    int done = 0, total = b->opt.nsizes * nactive * nwindows;
    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int rounds = iterations_for(b, bytes);
        for (int a = 0; a < nactive; a++) {
            int injects = local < active[a] && st.sends;
            MPI_Comm injectors;
            MPI_Comm_split(b->comm, injects ? 0 : MPI_UNDEFINED, b->rank, &injectors);
            for (int v = 0; v < nwindows; v++) {
                for (int i = -b->opt.warmup; i < rounds; i++) {
                    start_round(b, injectors); /* active ranks of all nodes start together */
                    int64_t start = now_ns();
                    if (injects)
                        round_of(b, &st, bytes, windows[v]);
                    int64_t end = now_ns();
                    if (i >= 0)
                        mine[i] = injects ? (double)(end - start) : 0;
                    starts[b->opt.warmup + i] = injects ? start : -1;
                    ends[b->opt.warmup + i] = injects ? end : -1;
                }
                if (b->opt.round_times)
                    round_lines(b, starts, ends, b->opt.warmup + rounds, bytes, active[a], windows[v]);
                MPI_Gather(mine, rounds, MPI_DOUBLE, all, rounds, MPI_DOUBLE, 0, b->comm);
                if (me == 0)
                    node_rows(b, l, &st, all, rounds, bytes, active[a], windows[v]);
                progress(b, ++done, total);
            }
            if (injectors != MPI_COMM_NULL)
                MPI_Comm_free(&injectors);
        }
    }
    MPI_Pcontrol(0); /* the check is the harness's, not the streams' */
    check_data(b, &st, largest);
    MPI_Pcontrol(1);
    if (st.put)
        MPI_Win_free(&st.win);
    else
        free(st.recv);
    free(st.send);
    free(st.reqs);
    free(mine);
    free(starts);
    free(ends);
    free(all);
    return 0;
}
