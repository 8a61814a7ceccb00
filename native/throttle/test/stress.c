/* Stress test of the throttling library (run under mpiexec, with or without LD_PRELOAD): thousands of
 * nonblocking sends and one-sided ops between random peers, of random sizes, and every byte checked.
 *
 * Every rank derives every rank's plan from the seed, so each knows what it will receive, from whom,
 * of which size, and what each byte must be.
 *  1. Point to point: every rank posts all its receives, then its sends (MPI_Isend, MPI_Issend and,
 *     with MPI 4, MPI_Isend_c), completing sends as it goes with a random one of Wait, Waitall,
 *     Waitany, Waitsome, Test, Testall, Testany, Testsome; then receives with Waitany and Testsome.
 *  2. One-sided, passive target (lock_all): MPI_Put, MPI_Rput, MPI_Accumulate (and the _c forms) into
 *     slots only the origin writes, with random flushes (flush, flush_local, of one target or all);
 *     then MPI_Get and MPI_Rget of what was written.
 *  3. One-sided, fence epochs: a few puts per rank between two fences.
 * --nocheck opens the lock_all epochs with MPI_MODE_NOCHECK (the program asserts no conflicting lock),
 * where the proxy policy's servers issue the Puts and Gets for their owners.
 * Mode "cycle" instead makes pairs of ranks MPI_Issend to each other before either posts a receive:
 * with a node pool smaller than their sends this needs the library's stall escape to finish.
 *
 * Prints one JSON line (rank 0) with the counts and "verified"; exit 1 if any byte was wrong. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int messages;     /* sends per rank */
    int ops;          /* one-sided writes per rank */
    int64_t max_bytes;/* largest message */
    uint64_t seed;
    int cycle;
    int nocheck;      /* passive epochs opened with MPI_MODE_NOCHECK (the proxy's servers issue there) */
} options;

typedef struct {
    int dest;
    int kind;         /* 0 Isend, 1 Issend, 2 Isend_c */
    int64_t bytes;
} message;

static int rank, size;
static long errors;

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t next(uint64_t *state)
{
    return mix((*state)++);
}

/* Log-uniform in [0, max]: mostly small, sometimes large enough for the rendezvous protocol. */
static int64_t random_size(uint64_t *state, int64_t max)
{
    int bits = 0;
    while (bits < 62 && (INT64_C(1) << bits) <= max)
        bits++;
    int64_t hi = INT64_C(1) << (next(state) % (uint64_t)(bits + 1));
    hi = hi > max ? max : hi;
    return (int64_t)(next(state) % (uint64_t)(hi + 1));
}

static unsigned char expected(uint64_t key, int64_t j)
{
    return (unsigned char)(mix(key) + (uint64_t)j * 131);
}

static void fill(unsigned char *p, int64_t n, uint64_t key)
{
    for (int64_t j = 0; j < n; j++)
        p[j] = expected(key, j);
}

static void check(const unsigned char *p, int64_t n, uint64_t key, const char *what, int from)
{
    for (int64_t j = 0; j < n; j++)
        if (p[j] != expected(key, j)) {
            if (errors++ < 5)
                fprintf(stderr, "rank %d: %s from %d: byte %lld of %lld wrong\n", rank, what, from,
                        (long long)j, (long long)n);
            return;
        }
}

static message *plan_of(int src, const options *o)
{
    message *plan = malloc(sizeof(message) * (size_t)o->messages);
    uint64_t state = mix(o->seed * 1000003 + (uint64_t)src);
    for (int k = 0; k < o->messages; k++) {
        plan[k].dest = (src + 1 + (int)(next(&state) % (uint64_t)(size - 1))) % size;
        plan[k].kind = (int)(next(&state) % 3);
        plan[k].bytes = random_size(&state, o->max_bytes);
    }
    return plan;
}

static uint64_t message_key(int src, int k)
{
    return ((uint64_t)src << 32) | (uint64_t)k;
}

static void post_send(const void *buf, const message *m, int tag, MPI_Request *req)
{
    if (m->kind == 1)
        MPI_Issend(buf, (int)m->bytes, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req);
#if MPI_VERSION >= 4
    else if (m->kind == 2)
        MPI_Isend_c(buf, m->bytes, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req);
#endif
    else
        MPI_Isend(buf, (int)m->bytes, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req);
}

/* Complete some of the sends posted so far with a random one of the eight completion calls. */
static void complete_some(MPI_Request *reqs, int posted, uint64_t *state)
{
    int idx, flag, out, indices[64];
    int oldest = 0;
    while (oldest < posted && reqs[oldest] == MPI_REQUEST_NULL)
        oldest++;
    int recent = posted < 8 ? posted : 8;
    switch (next(state) % 10) {
    case 0:
        MPI_Test(&reqs[next(state) % (uint64_t)posted], &flag, MPI_STATUS_IGNORE);
        break;
    case 1:
        MPI_Testany(posted, reqs, &idx, &flag, MPI_STATUS_IGNORE);
        break;
    case 2:
        MPI_Testsome(posted < 64 ? posted : 64, reqs + (posted < 64 ? 0 : posted - 64), &out,
                     indices, MPI_STATUSES_IGNORE);
        break;
    case 3:
        MPI_Waitany(posted, reqs, &idx, MPI_STATUS_IGNORE);
        break;
    case 4:
        if (oldest < posted)
            MPI_Wait(&reqs[oldest], MPI_STATUS_IGNORE);
        break;
    case 5:
        MPI_Testall(recent, reqs + posted - recent, &flag, MPI_STATUSES_IGNORE);
        break;
    case 6:
        MPI_Waitsome(posted < 64 ? posted : 64, reqs + (posted < 64 ? 0 : posted - 64), &out,
                     indices, MPI_STATUSES_IGNORE);
        break;
    case 7:
        MPI_Waitall(recent, reqs + posted - recent, MPI_STATUSES_IGNORE);
        break;
    default:
        break;
    }
}

/* Receive requests: completed by Waitany and Testsome in turn, each checked as it completes. */
static void finish_receives(MPI_Request *reqs, int n, unsigned char **bufs, const int64_t *bytes,
                            const uint64_t *keys, const int *from)
{
    int done = 0, turn = 0;
    int *indices = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    MPI_Status *st = malloc(sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
    while (done < n) {
        int out = 0;
        if (turn++ % 2 == 0) {
            MPI_Waitany(n, reqs, &indices[0], &st[0]);
            out = indices[0] == MPI_UNDEFINED ? 0 : 1;
        } else {
            MPI_Testsome(n, reqs, &out, indices, st);
            out = out == MPI_UNDEFINED ? 0 : out;
        }
        for (int i = 0; i < out; i++) {
            int r = indices[i], count;
            MPI_Get_count(&st[i], MPI_BYTE, &count);
            if (count != bytes[r] && errors++ < 5)
                fprintf(stderr, "rank %d: message from %d has %d bytes, expected %lld\n", rank,
                        from[r], count, (long long)bytes[r]);
            check(bufs[r], bytes[r], keys[r], "message", from[r]);
        }
        done += out;
    }
    free(indices);
    free(st);
}

static long point_to_point(const options *o, int64_t *moved)
{
    message **plans = malloc(sizeof(message *) * (size_t)size);
    int incoming = 0;
    for (int s = 0; s < size; s++) {
        plans[s] = plan_of(s, o);
        for (int k = 0; k < o->messages; k++)
            incoming += plans[s][k].dest == rank;
    }
    MPI_Request *rreqs = malloc(sizeof(MPI_Request) * (size_t)(incoming + 1));
    unsigned char **rbufs = malloc(sizeof(void *) * (size_t)(incoming + 1));
    int64_t *rbytes = malloc(sizeof(int64_t) * (size_t)(incoming + 1));
    uint64_t *rkeys = malloc(sizeof(uint64_t) * (size_t)(incoming + 1));
    int *rfrom = malloc(sizeof(int) * (size_t)(incoming + 1));
    int r = 0;
    for (int s = 0; s < size; s++)
        for (int k = 0; k < o->messages; k++)
            if (plans[s][k].dest == rank) {
                rbytes[r] = plans[s][k].bytes;
                rkeys[r] = message_key(s, k);
                rfrom[r] = s;
                rbufs[r] = calloc(1, (size_t)rbytes[r] + 1);
                MPI_Irecv(rbufs[r], (int)rbytes[r], MPI_BYTE, s, k, MPI_COMM_WORLD, &rreqs[r]);
                r++;
            }

    message *mine = plans[rank];
    MPI_Request *sreqs = malloc(sizeof(MPI_Request) * (size_t)o->messages);
    unsigned char **sbufs = malloc(sizeof(void *) * (size_t)o->messages);
    uint64_t state = mix(o->seed ^ (uint64_t)(rank + 77));
    for (int k = 0; k < o->messages; k++) {
        sbufs[k] = malloc((size_t)mine[k].bytes + 1);
        fill(sbufs[k], mine[k].bytes, message_key(rank, k));
        post_send(sbufs[k], &mine[k], k, &sreqs[k]);
        *moved += mine[k].bytes;
        complete_some(sreqs, k + 1, &state);
    }
    finish_receives(rreqs, incoming, rbufs, rbytes, rkeys, rfrom);
    MPI_Waitall(o->messages, sreqs, MPI_STATUSES_IGNORE);

    for (int k = 0; k < o->messages; k++)
        free(sbufs[k]);
    for (int i = 0; i < incoming; i++)
        free(rbufs[i]);
    for (int s = 0; s < size; s++)
        free(plans[s]);
    free(sbufs), free(sreqs), free(rbufs), free(rreqs), free(rbytes), free(rkeys), free(rfrom);
    free(plans);
    return o->messages;
}

/* Window layout: for each origin, `ops` slots of SLOT bytes (only that origin writes them), then one
 * int counter per origin (accumulated into), then a fence area of FENCE_OPS slots per origin. */
enum { SLOT = 512, FENCE_OPS = 16, FENCE_SLOT = 64 };

typedef struct {
    int target, kind;  /* kind: 0 Put, 1 Rput, 2 Accumulate, 3 Put_c, 4 Rput_c */
    int slot;
    int64_t bytes;
    int value;         /* Accumulate: what is added */
} one_sided_op;

static one_sided_op *rma_plan(int origin, const options *o, int *slots_used)
{
    one_sided_op *plan = malloc(sizeof(one_sided_op) * (size_t)o->ops);
    uint64_t state = mix(o->seed * 7919 + (uint64_t)origin + 1);
    memset(slots_used, 0, sizeof(int) * (size_t)size);
    for (int k = 0; k < o->ops; k++) {
        one_sided_op *op = &plan[k];
        op->target = (int)(next(&state) % (uint64_t)size);
        op->kind = (int)(next(&state) % 5);
        op->bytes = 1 + random_size(&state, SLOT - 1);
        op->value = (int)(next(&state) % 1000);
        op->slot = op->kind == 2 ? -1 : slots_used[op->target]++;
    }
    return plan;
}

static uint64_t slot_key(int origin, int target, int slot)
{
    return UINT64_C(0x5107) << 48 | (uint64_t)origin << 32 | (uint64_t)target << 20 | (uint64_t)slot;
}

static void flush_some(MPI_Win win, int target, uint64_t *state, MPI_Request *rreqs, int posted)
{
    int flag, out, indices[16], idx;
    switch (next(state) % 12) {
    case 0:
        MPI_Win_flush(target, win);
        break;
    case 1:
        MPI_Win_flush_local(target, win);
        break;
    case 2:
        MPI_Win_flush_all(win);
        break;
    case 3:
        MPI_Win_flush_local_all(win);
        break;
    case 4:
        if (posted)
            MPI_Testsome(posted < 16 ? posted : 16, rreqs + (posted < 16 ? 0 : posted - 16), &out,
                         indices, MPI_STATUSES_IGNORE);
        break;
    case 5:
        if (posted)
            MPI_Waitany(posted, rreqs, &idx, MPI_STATUS_IGNORE);
        break;
    case 6:
        if (posted)
            MPI_Test(&rreqs[posted - 1], &flag, MPI_STATUS_IGNORE);
        break;
    default:
        break;
    }
}

static void issue_write(const one_sided_op *op, unsigned char *src, MPI_Aint disp, MPI_Aint counter,
                        MPI_Win win, MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    switch (op->kind) {
    case 1:
        MPI_Rput(src, (int)op->bytes, MPI_BYTE, op->target, disp, (int)op->bytes, MPI_BYTE, win, req);
        break;
    case 2:
        MPI_Accumulate(&op->value, 1, MPI_INT, op->target, counter, 1, MPI_INT, MPI_SUM, win);
        break;
#if MPI_VERSION >= 4
    case 3:
        MPI_Put_c(src, op->bytes, MPI_BYTE, op->target, disp, op->bytes, MPI_BYTE, win);
        break;
    case 4:
        MPI_Rput_c(src, op->bytes, MPI_BYTE, op->target, disp, op->bytes, MPI_BYTE, win, req);
        break;
#endif
    default:
        MPI_Put(src, (int)op->bytes, MPI_BYTE, op->target, disp, (int)op->bytes, MPI_BYTE, win);
        break;
    }
}

/* Gets of slots written before (their owners' plans say what each holds), half with Rget. */
static void read_back(const options *o, MPI_Win win, MPI_Aint region, one_sided_op **plans)
{
    uint64_t state = mix(o->seed + 31 * (uint64_t)rank);
    int reads = o->ops / 4 + 1;
    unsigned char *buf = malloc((size_t)reads * SLOT);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)reads);
    int *origin = malloc(sizeof(int) * (size_t)reads), *index = malloc(sizeof(int) * (size_t)reads);
    MPI_Win_lock_all(o->nocheck ? MPI_MODE_NOCHECK : 0, win);
    for (int i = 0; i < reads; i++) {
        int found = 0;
        while (!found) { /* a write of any origin to any target, not an accumulate */
            origin[i] = (int)(next(&state) % (uint64_t)size);
            index[i] = (int)(next(&state) % (uint64_t)o->ops);
            found = plans[origin[i]][index[i]].kind != 2;
        }
        const one_sided_op *w = &plans[origin[i]][index[i]];
        MPI_Aint disp = (MPI_Aint)origin[i] * region + (MPI_Aint)w->slot * SLOT;
        unsigned char *dst = buf + (size_t)i * SLOT;
        reqs[i] = MPI_REQUEST_NULL;
        switch (next(&state) % 4) {
        case 0:
            MPI_Rget(dst, (int)w->bytes, MPI_BYTE, w->target, disp, (int)w->bytes, MPI_BYTE, win,
                     &reqs[i]);
            break;
#if MPI_VERSION >= 4
        case 1:
            MPI_Get_c(dst, w->bytes, MPI_BYTE, w->target, disp, w->bytes, MPI_BYTE, win);
            break;
        case 2:
            MPI_Rget_c(dst, w->bytes, MPI_BYTE, w->target, disp, w->bytes, MPI_BYTE, win,
                       &reqs[i]);
            break;
#endif
        default:
            MPI_Get(dst, (int)w->bytes, MPI_BYTE, w->target, disp, (int)w->bytes, MPI_BYTE, win);
            break;
        }
        if (i % 16 == 15)
            MPI_Win_flush_all(win);
    }
    MPI_Waitall(reads, reqs, MPI_STATUSES_IGNORE);
    MPI_Win_unlock_all(win);
    for (int i = 0; i < reads; i++) {
        const one_sided_op *w = &plans[origin[i]][index[i]];
        check(buf + (size_t)i * SLOT, w->bytes, slot_key(origin[i], w->target, w->slot), "get",
              w->target);
    }
    free(buf), free(reqs), free(origin), free(index);
}

static long one_sided(const options *o)
{
    MPI_Aint region = (MPI_Aint)o->ops * SLOT, counters = region * size;
    MPI_Aint fence_area = counters + (MPI_Aint)sizeof(int) * size;
    MPI_Aint bytes = fence_area + (MPI_Aint)size * FENCE_OPS * FENCE_SLOT;
    unsigned char *base;
    MPI_Win win;
    MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, (size_t)bytes);
    MPI_Barrier(MPI_COMM_WORLD);

    int *slots = malloc(sizeof(int) * (size_t)size);
    one_sided_op **plans = malloc(sizeof(one_sided_op *) * (size_t)size);
    for (int s = 0; s < size; s++)
        plans[s] = rma_plan(s, o, slots);
    one_sided_op *mine = plans[rank];
    unsigned char *src = malloc((size_t)o->ops * SLOT);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)o->ops);
    uint64_t state = mix(o->seed + 99 * (uint64_t)rank);

    MPI_Win_lock_all(o->nocheck ? MPI_MODE_NOCHECK : 0, win);
    for (int k = 0; k < o->ops; k++) {
        one_sided_op *op = &mine[k];
        unsigned char *from = src + (size_t)k * SLOT; /* stays untouched until the final unlock */
        fill(from, op->bytes, slot_key(rank, op->target, op->slot));
        MPI_Aint disp = (MPI_Aint)rank * region + (MPI_Aint)op->slot * SLOT;
        issue_write(op, from, disp, counters + (MPI_Aint)sizeof(int) * rank, win, &reqs[k]);
        flush_some(win, op->target, &state, reqs, k + 1);
    }
    MPI_Waitall(o->ops, reqs, MPI_STATUSES_IGNORE);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Fence epoch: FENCE_OPS puts into the fence area of random targets. */
    MPI_Win_fence(0, win);
    unsigned char *fsrc = malloc(FENCE_OPS * FENCE_SLOT);
    for (int k = 0; k < FENCE_OPS; k++) {
        int target = (rank + 1 + k) % size;
        fill(fsrc + k * FENCE_SLOT, FENCE_SLOT, slot_key(rank, target, 100000 + k));
        MPI_Put(fsrc + k * FENCE_SLOT, FENCE_SLOT, MPI_BYTE, target,
                fence_area + (MPI_Aint)(rank * FENCE_OPS + k) * FENCE_SLOT, FENCE_SLOT, MPI_BYTE, win);
    }
    MPI_Win_fence(0, win);

    /* Check this rank's memory: every origin's slots, its counter, and the fence puts. */
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win); /* the puts made visible to local loads */
    for (int s = 0; s < size; s++) {
        int expected_sum = 0;
        for (int k = 0; k < o->ops; k++) {
            const one_sided_op *op = &plans[s][k];
            if (op->target != rank)
                continue;
            if (op->kind == 2) {
                expected_sum += op->value;
                continue;
            }
            unsigned char *slot = base + (size_t)s * region + (size_t)op->slot * SLOT;
            check(slot, op->bytes, slot_key(s, rank, op->slot), "put", s);
            for (int64_t j = op->bytes; j < SLOT; j++)
                if (slot[j] != 0 && errors++ < 5)
                    fprintf(stderr, "rank %d: bytes past a put from %d were written\n", rank, s);
        }
        int sum;
        memcpy(&sum, base + counters + sizeof(int) * (size_t)s, sizeof sum);
        if (sum != expected_sum && errors++ < 5)
            fprintf(stderr, "rank %d: accumulated %d from %d, expected %d\n", rank, sum, s,
                    expected_sum);
        for (int k = 0; k < FENCE_OPS; k++)
            if ((rank - s - 1 - k) % size == 0)
                check(base + fence_area + (size_t)(s * FENCE_OPS + k) * FENCE_SLOT, FENCE_SLOT,
                      slot_key(s, rank, 100000 + k), "fence put", s);
    }
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    read_back(o, win, region, plans);

    MPI_Win_free(&win);
    for (int s = 0; s < size; s++)
        free(plans[s]);
    free(plans), free(slots), free(src), free(reqs), free(fsrc);
    return o->ops + FENCE_OPS + o->ops / 4 + 1;
}

/* Pairs (0,1), (2,3), ... each MPI_Issend to the other before posting a receive. */
static long cycle(const options *o, int64_t *moved)
{
    int partner = rank ^ 1;
    if (partner >= size)
        return 0;
    int n = o->messages;
    unsigned char *out = malloc((size_t)n * (size_t)o->max_bytes + 1);
    unsigned char *in = calloc(1, (size_t)n * (size_t)o->max_bytes + 1);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)n);
    for (int k = 0; k < n; k++) {
        unsigned char *p = out + (size_t)k * (size_t)o->max_bytes;
        fill(p, o->max_bytes, message_key(rank, k));
        MPI_Issend(p, (int)o->max_bytes, MPI_BYTE, partner, k, MPI_COMM_WORLD, &reqs[k]);
        *moved += o->max_bytes;
    }
    for (int k = 0; k < n; k++)
        MPI_Irecv(in + (size_t)k * (size_t)o->max_bytes, (int)o->max_bytes, MPI_BYTE, partner, k,
                  MPI_COMM_WORLD, &reqs[n + k]);
    MPI_Waitall(2 * n, reqs, MPI_STATUSES_IGNORE);
    for (int k = 0; k < n; k++)
        check(in + (size_t)k * (size_t)o->max_bytes, o->max_bytes, message_key(partner, k),
              "message", partner);
    free(out), free(in), free(reqs);
    return n;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.messages = 1000, .ops = 1000, .max_bytes = 200000, .seed = 1, .cycle = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--cycle") || !strcmp(a, "--nocheck")) {
            *(a[2] == 'c' ? &o->cycle : &o->nocheck) = 1;
            continue;
        }
        if (!v)
            return -1;
        if (!strcmp(a, "--messages"))
            o->messages = atoi(v);
        else if (!strcmp(a, "--ops"))
            o->ops = atoi(v);
        else if (!strcmp(a, "--max-bytes"))
            o->max_bytes = atoll(v);
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 10);
        else
            return -1;
        i++;
    }
    return o->messages < 1 || o->messages > 30000 || o->ops < 1 || o->ops > 100000 ||
                   o->max_bytes < 1 || o->max_bytes > (1 << 24) ? -1 : 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    options o;
    if (parse(argc, argv, &o) || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n P>=2 throttle-stress [--messages N] [--ops N] "
                    "[--max-bytes B] [--seed S] [--cycle] [--nocheck]\n");
        MPI_Finalize();
        return 2;
    }
    if (rank == 0) {
        printf("{\"started\":true}\n");
        fflush(stdout);
    }
    int64_t moved = 0;
    long sends = 0, rma = 0;
    if (o.cycle)
        sends = cycle(&o, &moved);
    else {
        sends = point_to_point(&o, &moved);
        rma = one_sided(&o);
    }
    long all_errors, all_sends, all_rma;
    int64_t all_moved;
    MPI_Reduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sends, &all_sends, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rma, &all_rma, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&moved, &all_moved, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"ranks\":%d,\"sends\":%ld,\"one_sided\":%ld,\"bytes_sent\":%lld,\"errors\":%ld,"
               "\"verified\":%s}\n", size, all_sends, all_rma, (long long)all_moved, all_errors,
               all_errors ? "false" : "true");
    MPI_Bcast(&all_errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
