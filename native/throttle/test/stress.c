/* Stress test of the throttling library (run under mpiexec, with or without LD_PRELOAD): thousands of
 * operations of every kind it wraps between random peers, of random sizes, and every byte checked.
 *
 * Every rank derives every rank's plan from the seed, so each knows what it will receive, from whom,
 * of which size, and what each byte must be.
 *  1. Nonblocking: every rank posts all its receives, then its sends (MPI_Isend, MPI_Issend,
 *     MPI_Ibsend, MPI_Irsend and, with MPI 4, their _c forms), completing sends as it goes with a
 *     random one of Wait, Waitall, Waitany, Waitsome, Test, Testall, Testany, Testsome; then receives
 *     with Waitany and Testsome.
 *  2. Blocking: receives posted, then MPI_Send, Ssend, Bsend, Rsend (and _c) one after the other;
 *     then rounds of MPI_Sendrecv / Sendrecv_replace (and _c) with a random shift.
 *  3. Persistent: 16 persistent sends per rank (Send_init, Ssend_init, Bsend_init, Rsend_init, _c),
 *     matched by persistent receives, started again and again with Start or Startall.
 *  4. Collectives: MPI_Alltoall, Alltoallv, Allgather, Allgatherv (and _c), a third in place, on the
 *     world and on a reordered communicator, with derived datatypes that leave gaps.
 *  5. One-sided, passive target (lock_all): MPI_Put, MPI_Rput into slots only the origin writes,
 *     MPI_Accumulate, MPI_Raccumulate, MPI_Get_accumulate, MPI_Rget_accumulate (and the _c forms) and
 *     MPI_Fetch_and_op into one counter per origin, with random flushes (flush, flush_local, of one
 *     target or all); then MPI_Get and MPI_Rget of what was written.
 *  6. One-sided, fence epochs: a few puts per rank between two fences.
 * Buffered sends are at most BSEND_MAX bytes, from an attached buffer that holds them all.
 * --nocheck opens the lock_all epochs with MPI_MODE_NOCHECK (the program asserts no conflicting lock),
 * where the proxy policy's servers issue the Puts and Gets for their owners.
 * Mode "cycle" instead makes pairs of ranks MPI_Issend to each other before either posts a receive:
 * with a node pool smaller than their sends this needs the library's stall escape to finish.
 *
 * Prints one JSON line (rank 0) with the counts and "verified"; exit 1 if any byte was wrong. The
 * library leaves traffic within a node alone, so the line also has, per rank, the operations of each
 * kind whose peer is on another node, nodes named as the library names them (CONTEND_THROTTLE_NODE,
 * host#(rank / CONTEND_THROTTLE_RANKS_PER_NODE), or the host name): "off_node", one list per rank
 * in the order of the counts (sends, blocking, sendrecvs, persistent starts, collective sends: one per
 * peer and call, one-sided). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Buffered sends are at most this long, so the attached buffer holds every one at once. */
enum { BSEND_MAX = 4096 };

typedef struct {
    int messages;     /* sends per rank */
    int ops;          /* one-sided writes per rank */
    int blocking;     /* blocking sends per rank (and half as many Sendrecv rounds) */
    int rounds;       /* starts of each persistent send */
    int collectives;  /* collective calls */
    int64_t coll_max; /* most elements in a collective's block */
    int64_t max_bytes;/* largest message */
    uint64_t seed;
    int cycle;
    int nocheck;      /* passive epochs opened with MPI_MODE_NOCHECK (the proxy's servers issue there) */
} options;

typedef struct {
    int dest;
    int kind;         /* see post_send */
    int64_t bytes;
} message;

static int rank, size;
static long errors;
static int *node_of; /* world rank -> node, as the library numbers them (only equality matters) */
static long off_node[6]; /* this rank's operations to other nodes, per kind (see the top) */

enum { NODE_NAME = 256 };

/* Each rank's node name as the library gives it, compared. */
static void name_nodes(void)
{
    char mine[NODE_NAME] = "", host[NODE_NAME - 32] = "";
    const char *given = getenv("CONTEND_THROTTLE_NODE"), *per = getenv("CONTEND_THROTTLE_RANKS_PER_NODE");
    gethostname(host, sizeof host - 1);
    if (given)
        snprintf(mine, sizeof mine, "%s", given);
    else if (per && atoi(per) > 0)
        snprintf(mine, sizeof mine, "%s#%d", host, rank / atoi(per));
    else
        snprintf(mine, sizeof mine, "%s", host);
    char *names = malloc((size_t)size * NODE_NAME);
    /* not MPI_Allgather: the library runs that itself, and would count it */
    MPI_Gather(mine, NODE_NAME, MPI_CHAR, names, NODE_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(names, size * NODE_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    node_of = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++) {
        node_of[r] = r;
        for (int q = 0; q < r && node_of[r] == r; q++)
            if (!strncmp(names + (size_t)q * NODE_NAME, names + (size_t)r * NODE_NAME, NODE_NAME))
                node_of[r] = node_of[q];
    }
    free(names);
}

static int leaves(int peer)
{
    return node_of[peer] != node_of[rank];
}

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
        plan[k].kind = (int)(next(&state) % 7);
        plan[k].bytes = random_size(&state, o->max_bytes);
        if (plan[k].kind == 3 || plan[k].kind == 5) /* buffered: within the attached buffer */
            plan[k].bytes = plan[k].bytes % (BSEND_MAX + 1);
    }
    return plan;
}

static uint64_t message_key(int src, int k)
{
    return ((uint64_t)src << 32) | (uint64_t)k;
}

/* Kinds: 0 Isend, 1 Issend, 2 Isend_c, 3 Ibsend, 4 Irsend, 5 Ibsend_c, 6 Irsend_c (without MPI 4, the
 * classic form of each). */
static void post_send(const void *buf, const message *m, int tag, MPI_Request *req)
{
    int n = (int)m->bytes;
    switch (m->kind) {
    case 1: MPI_Issend(buf, n, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
    case 3: MPI_Ibsend(buf, n, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
    case 4: MPI_Irsend(buf, n, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
#if MPI_VERSION >= 4
    case 2: MPI_Isend_c(buf, m->bytes, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
    case 5: MPI_Ibsend_c(buf, m->bytes, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
    case 6: MPI_Irsend_c(buf, m->bytes, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
#else
    case 5: MPI_Ibsend(buf, n, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
    case 6: MPI_Irsend(buf, n, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
#endif
    default: MPI_Isend(buf, n, MPI_BYTE, m->dest, tag, MPI_COMM_WORLD, req); break;
    }
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
    MPI_Barrier(MPI_COMM_WORLD); /* every receive posted: ready sends may start */

    message *mine = plans[rank];
    MPI_Request *sreqs = malloc(sizeof(MPI_Request) * (size_t)o->messages);
    unsigned char **sbufs = malloc(sizeof(void *) * (size_t)o->messages);
    uint64_t state = mix(o->seed ^ (uint64_t)(rank + 77));
    for (int k = 0; k < o->messages; k++) {
        sbufs[k] = malloc((size_t)mine[k].bytes + 1);
        fill(sbufs[k], mine[k].bytes, message_key(rank, k));
        post_send(sbufs[k], &mine[k], k, &sreqs[k]);
        off_node[0] += leaves(mine[k].dest);
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

/* Blocking sends: every rank posts its receives, then (after a barrier, for the ready sends) makes
 * its blocking sends one after the other: Send, Ssend, Bsend, Rsend and their _c forms. */
static long blocking(const options *o, int64_t *moved)
{
    options b = *o;
    b.messages = o->blocking;
    b.seed = o->seed * 31 + 5;
    message **plans = malloc(sizeof(message *) * (size_t)size);
    int incoming = 0;
    for (int s = 0; s < size; s++) {
        plans[s] = plan_of(s, &b);
        for (int k = 0; k < b.messages; k++) {
            message *m = &plans[s][k];
            m->kind = (int)(mix(b.seed + (uint64_t)s * 65599 + (uint64_t)k) % 8);
            if (m->kind % 4 == 2)
                m->bytes %= BSEND_MAX + 1;
            incoming += m->dest == rank;
        }
    }
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(incoming + 1));
    unsigned char **bufs = malloc(sizeof(void *) * (size_t)(incoming + 1));
    int64_t *bytes = malloc(sizeof(int64_t) * (size_t)(incoming + 1));
    uint64_t *keys = malloc(sizeof(uint64_t) * (size_t)(incoming + 1));
    int *from = malloc(sizeof(int) * (size_t)(incoming + 1));
    int r = 0;
    for (int s = 0; s < size; s++)
        for (int k = 0; k < b.messages; k++)
            if (plans[s][k].dest == rank) {
                bytes[r] = plans[s][k].bytes;
                keys[r] = message_key(s, k) ^ UINT64_C(0xb10c) << 48;
                from[r] = s;
                bufs[r] = calloc(1, (size_t)bytes[r] + 1);
                MPI_Irecv(bufs[r], (int)bytes[r], MPI_BYTE, s, k, MPI_COMM_WORLD, &reqs[r]);
                r++;
            }
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned char *out = malloc((size_t)o->max_bytes + 1);
    for (int k = 0; k < b.messages; k++) {
        const message *m = &plans[rank][k];
        int n = (int)m->bytes;
        fill(out, m->bytes, message_key(rank, k) ^ UINT64_C(0xb10c) << 48);
        switch (m->kind) {
        case 1: MPI_Ssend(out, n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
        case 2: MPI_Bsend(out, n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
        case 3: MPI_Rsend(out, n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
#if MPI_VERSION >= 4
        case 4: MPI_Send_c(out, m->bytes, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
        case 5: MPI_Ssend_c(out, m->bytes, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
        case 6: MPI_Bsend_c(out, m->bytes, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
        case 7: MPI_Rsend_c(out, m->bytes, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
#else
        case 6: MPI_Bsend(out, n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
        case 7: MPI_Rsend(out, n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
#endif
        default: MPI_Send(out, n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD); break;
        }
        off_node[1] += leaves(m->dest);
        *moved += m->bytes;
    }
    finish_receives(reqs, incoming, bufs, bytes, keys, from);
    for (int i = 0; i < incoming; i++)
        free(bufs[i]);
    for (int s = 0; s < size; s++)
        free(plans[s]);
    free(out), free(plans), free(reqs), free(bufs), free(bytes), free(keys), free(from);
    return b.messages;
}

/* Sendrecv rounds: in each, every rank sends to rank+shift and receives from rank-shift (the shift
 * and the kind, Sendrecv, Sendrecv_replace or their _c forms, drawn the same on every rank). */
static long sendrecvs(const options *o, int64_t *moved)
{
    int rounds = o->blocking / 2;
    unsigned char *out = malloc((size_t)o->max_bytes + 1), *in = malloc((size_t)o->max_bytes + 1);
    for (int j = 0; j < rounds; j++) {
        /* A rank ahead by a round could hold the node's tokens for a send to a rank still waiting for
         * them to finish the round (or phase) before: a cycle only the stall escape ends
         * (docs/measure.md). So a round starts when every rank has finished the one before. */
        MPI_Barrier(MPI_COMM_WORLD);
        uint64_t common = mix(o->seed * 17 + (uint64_t)j);
        int shift = 1 + (int)(common % (uint64_t)(size - 1)), kind = (int)(mix(common) % 4);
        int dest = (rank + shift) % size, source = (rank - shift + size) % size;
        uint64_t state = mix(common + 3), mine = mix(common + 5 + (uint64_t)rank),
                 theirs = mix(common + 5 + (uint64_t)source);
        int64_t same = random_size(&state, o->max_bytes); /* Sendrecv_replace: one size a round */
        int64_t send_bytes = kind < 2 ? random_size(&mine, o->max_bytes) : same;
        int64_t recv_bytes = kind < 2 ? random_size(&theirs, o->max_bytes) : same;
        uint64_t key = message_key(rank, j) ^ UINT64_C(0x5e4d) << 48;
        uint64_t want = message_key(source, j) ^ UINT64_C(0x5e4d) << 48;
        MPI_Status st;
        memset(in, 0, (size_t)recv_bytes + 1);
        switch (kind) {
        case 0:
            fill(out, send_bytes, key);
            MPI_Sendrecv(out, (int)send_bytes, MPI_BYTE, dest, j, in, (int)recv_bytes, MPI_BYTE,
                         source, j, MPI_COMM_WORLD, &st);
            break;
        case 2:
            fill(in, send_bytes, key);
            MPI_Sendrecv_replace(in, (int)send_bytes, MPI_BYTE, dest, j, source, j, MPI_COMM_WORLD,
                                 &st);
            break;
#if MPI_VERSION >= 4
        case 1:
            fill(out, send_bytes, key);
            MPI_Sendrecv_c(out, send_bytes, MPI_BYTE, dest, j, in, recv_bytes, MPI_BYTE, source, j,
                           MPI_COMM_WORLD, &st);
            break;
        case 3:
            fill(in, send_bytes, key);
            MPI_Sendrecv_replace_c(in, send_bytes, MPI_BYTE, dest, j, source, j, MPI_COMM_WORLD, &st);
            break;
#else
        case 1:
            fill(out, send_bytes, key);
            MPI_Sendrecv(out, (int)send_bytes, MPI_BYTE, dest, j, in, (int)recv_bytes, MPI_BYTE,
                         source, j, MPI_COMM_WORLD, &st);
            break;
        case 3:
            fill(in, send_bytes, key);
            MPI_Sendrecv_replace(in, (int)send_bytes, MPI_BYTE, dest, j, source, j, MPI_COMM_WORLD,
                                 &st);
            break;
#endif
        }
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if ((count != recv_bytes || st.MPI_SOURCE != source) && errors++ < 5)
            fprintf(stderr, "rank %d: sendrecv round %d: %d bytes from %d, expected %lld from %d\n",
                    rank, j, count, st.MPI_SOURCE, (long long)recv_bytes, source);
        check(in, recv_bytes, want, "sendrecv", source);
        off_node[2] += leaves(dest);
        *moved += send_bytes;
    }
    free(out), free(in);
    return rounds;
}

/* Persistent sends: PERSISTENT requests per rank of random kinds (Send_init, Ssend_init, Bsend_init,
 * Rsend_init and the _c forms), peers and sizes, matched by persistent receives; started `rounds`
 * times with Start or Startall, completed with a random completion call, every byte checked. */
enum { PERSISTENT = 16 };

static long persistent(const options *o, int64_t *moved)
{
    options b = *o;
    b.messages = PERSISTENT;
    b.seed = o->seed * 131 + 9;
    message **plans = malloc(sizeof(message *) * (size_t)size);
    int incoming = 0;
    for (int s = 0; s < size; s++) {
        plans[s] = plan_of(s, &b);
        for (int k = 0; k < PERSISTENT; k++) {
            message *m = &plans[s][k];
            m->kind = (int)(mix(b.seed + (uint64_t)s * 257 + (uint64_t)k) % 8);
            if (m->kind % 4 == 2)
                m->bytes %= BSEND_MAX + 1;
            incoming += m->dest == rank;
        }
    }
    MPI_Request sends[PERSISTENT], *recvs = malloc(sizeof(MPI_Request) * (size_t)(incoming + 1));
    unsigned char *out[PERSISTENT], **in = malloc(sizeof(void *) * (size_t)(incoming + 1));
    int *from = malloc(sizeof(int) * (size_t)(incoming + 1)), *tag = malloc(sizeof(int) * (size_t)(incoming + 1));
    int r = 0;
    for (int s = 0; s < size; s++)
        for (int k = 0; k < PERSISTENT; k++)
            if (plans[s][k].dest == rank) {
                from[r] = s, tag[r] = k;
                in[r] = malloc((size_t)plans[s][k].bytes + 1);
                MPI_Recv_init(in[r], (int)plans[s][k].bytes, MPI_BYTE, s, k, MPI_COMM_WORLD, &recvs[r]);
                r++;
            }
    for (int k = 0; k < PERSISTENT; k++) {
        const message *m = &plans[rank][k];
        int n = (int)m->bytes;
        out[k] = malloc((size_t)m->bytes + 1);
        switch (m->kind) {
        case 1: MPI_Ssend_init(out[k], n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
        case 2: MPI_Bsend_init(out[k], n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
        case 3: MPI_Rsend_init(out[k], n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
#if MPI_VERSION >= 4
        case 4: MPI_Send_init_c(out[k], m->bytes, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
        case 5: MPI_Ssend_init_c(out[k], m->bytes, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
        case 6: MPI_Bsend_init_c(out[k], m->bytes, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
        case 7: MPI_Rsend_init_c(out[k], m->bytes, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
#else
        case 6: MPI_Bsend_init(out[k], n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
        case 7: MPI_Rsend_init(out[k], n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
#endif
        default: MPI_Send_init(out[k], n, MPI_BYTE, m->dest, k, MPI_COMM_WORLD, &sends[k]); break;
        }
    }
    uint64_t state = mix(o->seed ^ (uint64_t)(rank + 1234));
    for (int round = 0; round < o->rounds; round++) {
        for (int k = 0; k < PERSISTENT; k++) {
            fill(out[k], plans[rank][k].bytes, message_key(rank, k) + (uint64_t)round * 977);
            *moved += plans[rank][k].bytes;
            off_node[3] += leaves(plans[rank][k].dest);
        }
        for (int i = 0; i < incoming; i++)
            memset(in[i], 0, (size_t)plans[from[i]][tag[i]].bytes + 1);
        if (incoming)
            MPI_Startall(incoming, recvs);
        MPI_Barrier(MPI_COMM_WORLD); /* every receive started: ready sends may start */
        if (next(&state) % 2)
            MPI_Startall(PERSISTENT, sends);
        else
            for (int k = 0; k < PERSISTENT; k++) {
                MPI_Start(&sends[k]);
                complete_some(sends, k + 1, &state); /* an inactive request is ignored by these */
            }
        int flag = 0, idx, outcount, indices[PERSISTENT];
        switch (next(&state) % 4) {
        case 0:
            MPI_Waitall(PERSISTENT, sends, MPI_STATUSES_IGNORE);
            break;
        case 1:
            while (!flag)
                MPI_Testall(PERSISTENT, sends, &flag, MPI_STATUSES_IGNORE);
            break;
        case 2:
            for (int k = 0; k < PERSISTENT; k++)
                MPI_Waitany(PERSISTENT, sends, &idx, MPI_STATUS_IGNORE);
            break;
        default:
            do
                MPI_Waitsome(PERSISTENT, sends, &outcount, indices, MPI_STATUSES_IGNORE);
            while (outcount != MPI_UNDEFINED);
            break;
        }
        if (incoming)
            MPI_Waitall(incoming, recvs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < incoming; i++)
            check(in[i], plans[from[i]][tag[i]].bytes, message_key(from[i], tag[i]) + (uint64_t)round * 977,
                  "persistent", from[i]);
    }
    for (int k = 0; k < PERSISTENT; k++)
        MPI_Request_free(&sends[k]), free(out[k]);
    for (int i = 0; i < incoming; i++)
        MPI_Request_free(&recvs[i]), free(in[i]);
    for (int s = 0; s < size; s++)
        free(plans[s]);
    free(plans), free(recvs), free(in), free(from), free(tag);
    return (long)PERSISTENT * o->rounds;
}

/* Collectives: `collectives` calls of Alltoall, Alltoallv, Allgather, Allgatherv (and _c forms),
 * a third of them in place, on the world or on a communicator of the ranks in reverse order, with
 * derived datatypes whose extent leaves gaps (which must stay untouched); every int of every receive
 * buffer checked. The kind, datatype, communicator and sizes of a call are drawn the same on all ranks. */
typedef struct {
    MPI_Datatype type;
    int extent;        /* ints */
    int data[3];       /* which ints of an element carry data */
    int ndata;
} int_type;

enum { GAP = -1, JUNK = 0x7eadbeef };

static int value(int src, int dst, int call, int64_t element, int q)
{
    uint64_t key = mix((uint64_t)call * 1000003 + (uint64_t)src * 10007 + (uint64_t)dst * 101);
    return (int)((key + (uint64_t)element * 3 + (uint64_t)q) & 0x7fffffff);
}

/* Put block (element count n at element displ) with values from src to dst into buf. */
static void put_block(int *buf, const int_type *t, int64_t displ, int64_t n, int src, int dst, int call)
{
    for (int64_t e = 0; e < n; e++)
        for (int q = 0; q < t->ndata; q++)
            buf[(displ + e) * t->extent + t->data[q]] = value(src, dst, call, e, q);
}

/* A block layout: counts and displacements (elements) per peer; displacements in reverse rank order
 * with random gaps, so blocks are neither in order nor contiguous. */
static int64_t place(int p, const int64_t *counts, int64_t *displs, uint64_t *state, int contiguous)
{
    int64_t at = 0;
    for (int j = 0; j < p; j++) {
        int peer = contiguous ? j : p - 1 - j;
        at += contiguous ? 0 : (int64_t)(next(state) % 3);
        displs[peer] = at;
        at += counts[peer];
    }
    return at + 1;
}

static long collectives(const options *o, int64_t *moved)
{
    int_type types[4] = {{MPI_INT, 1, {0}, 1}, {MPI_DATATYPE_NULL, 3, {0, 1, 2}, 3},
                         {MPI_DATATYPE_NULL, 3, {0, 2}, 2}, {MPI_DATATYPE_NULL, 2, {0}, 1}};
    MPI_Type_contiguous(3, MPI_INT, &types[1].type);
    MPI_Type_vector(2, 1, 2, MPI_INT, &types[2].type);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &types[3].type);
    for (int i = 1; i < 4; i++)
        MPI_Type_commit(&types[i].type);
    MPI_Comm comms[2] = {MPI_COMM_WORLD, MPI_COMM_NULL};
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &comms[1]);
    int p = size;
    int64_t *sc = malloc(sizeof(int64_t) * (size_t)p), *sd = malloc(sizeof(int64_t) * (size_t)p);
    int64_t *rc = malloc(sizeof(int64_t) * (size_t)p), *rd = malloc(sizeof(int64_t) * (size_t)p);
    int *isc = malloc(sizeof(int) * (size_t)p), *isd = malloc(sizeof(int) * (size_t)p);
    int *irc = malloc(sizeof(int) * (size_t)p), *ird = malloc(sizeof(int) * (size_t)p);
#if MPI_VERSION >= 4
    MPI_Count *csc = malloc(sizeof(MPI_Count) * (size_t)p), *crc = malloc(sizeof(MPI_Count) * (size_t)p);
    MPI_Aint *csd = malloc(sizeof(MPI_Aint) * (size_t)p), *crd = malloc(sizeof(MPI_Aint) * (size_t)p);
#endif
    uint64_t local = mix(o->seed * 3 + (uint64_t)rank * 7 + 11);
    int peers_off = 0; /* both communicators hold every rank: the same peers on other nodes */
    for (int r = 0; r < size; r++)
        peers_off += leaves(r);
    for (int call = 0; call < o->collectives; call++) {
        off_node[4] += peers_off;
        uint64_t common = mix(o->seed * 7777 + (uint64_t)call);
        int kind = (int)(next(&common) % 8), large = kind % 2, in_place = next(&common) % 3 == 0;
        const int_type *t = &types[next(&common) % 4];
        MPI_Comm comm = comms[next(&common) % 2];
        int me;
        MPI_Comm_rank(comm, &me);
        int gather = kind >= 4, uniform = kind < 2 || kind == 4 || kind == 5;
        int64_t c = random_size(&common, o->coll_max);
        for (int j = 0; j < p; j++) {
            int a = in_place && !gather && j < me ? j : me, b = in_place && !gather && j < me ? me : j;
            uint64_t pair = mix(common + (uint64_t)a * 31 + (uint64_t)b * 131071);
            uint64_t from_j = mix(common + (uint64_t)j * 31 + (uint64_t)me * 131071);
            uint64_t gathered = mix(common + 99 + (uint64_t)j);
            if (uniform)
                sc[j] = rc[j] = c;
            else if (gather)
                sc[j] = gathered % (uint64_t)(o->coll_max + 1), rc[j] = sc[j];
            else
                sc[j] = pair % (uint64_t)(o->coll_max + 1),
                rc[j] = in_place ? sc[j] : (int64_t)(from_j % (uint64_t)(o->coll_max + 1));
        }
        if (gather) /* this task sends its own block to all */
            for (int j = 0; j < p; j++)
                sc[j] = rc[me];
        int64_t send_elems = place(p, sc, sd, &local, uniform), recv_elems = place(p, rc, rd, &local, uniform);
        int *send = malloc(sizeof(int) * (size_t)(send_elems * t->extent));
        int *recv = malloc(sizeof(int) * (size_t)(recv_elems * t->extent));
        int *want = malloc(sizeof(int) * (size_t)(recv_elems * t->extent));
        for (int64_t i = 0; i < send_elems * t->extent; i++)
            send[i] = JUNK;
        for (int64_t i = 0; i < recv_elems * t->extent; i++)
            recv[i] = want[i] = GAP;
        for (int j = 0; j < p; j++) {
            put_block(want, t, rd[j], rc[j], j, gather ? p : me, call);
            if (!gather)
                put_block(in_place ? recv : send, t, (in_place ? rd : sd)[j], sc[j], me, j, call);
        }
        if (gather)
            put_block(in_place ? recv : send, t, in_place ? rd[me] : 0, rc[me], me, p, call);
        for (int j = 0; j < p; j++) {
            isc[j] = (int)sc[j], isd[j] = (int)sd[j], irc[j] = (int)rc[j], ird[j] = (int)rd[j];
#if MPI_VERSION >= 4
            csc[j] = sc[j], csd[j] = sd[j], crc[j] = rc[j], crd[j] = rd[j];
#endif
        }
        const void *sbuf = in_place ? MPI_IN_PLACE : (const void *)send;
        int ic = (int)c;
#if MPI_VERSION < 4
        large = 0;
#endif
        if (!large) {
            switch (kind / 2) {
            case 0: MPI_Alltoall(sbuf, ic, t->type, recv, ic, t->type, comm); break;
            case 1: MPI_Alltoallv(sbuf, isc, isd, t->type, recv, irc, ird, t->type, comm); break;
            case 2: MPI_Allgather(sbuf, ic, t->type, recv, ic, t->type, comm); break;
            default: MPI_Allgatherv(sbuf, irc[me], t->type, recv, irc, ird, t->type, comm); break;
            }
        }
#if MPI_VERSION >= 4
        else {
            switch (kind / 2) {
            case 0: MPI_Alltoall_c(sbuf, c, t->type, recv, c, t->type, comm); break;
            case 1: MPI_Alltoallv_c(sbuf, csc, csd, t->type, recv, crc, crd, t->type, comm); break;
            case 2: MPI_Allgather_c(sbuf, c, t->type, recv, c, t->type, comm); break;
            default: MPI_Allgatherv_c(sbuf, crc[me], t->type, recv, crc, crd, t->type, comm); break;
            }
        }
#endif
        int64_t wrong = -1;
        for (int64_t i = 0; i < recv_elems * t->extent && wrong < 0; i++)
            if (recv[i] != want[i])
                wrong = i;
        if (wrong >= 0 && errors++ < 5)
            fprintf(stderr, "rank %d: collective %d (kind %d, in place %d, type %d): int %lld is %d, "
                    "expected %d\n", rank, call, kind, in_place, (int)(t - types), (long long)wrong,
                    recv[wrong], want[wrong]);
        for (int j = 0; j < p; j++)
            *moved += j == me ? 0 : sc[j] * t->ndata * (int64_t)sizeof(int);
        free(send), free(recv), free(want);
    }
    for (int i = 1; i < 4; i++)
        MPI_Type_free(&types[i].type);
    MPI_Comm_free(&comms[1]);
    free(sc), free(sd), free(rc), free(rd), free(isc), free(isd), free(irc), free(ird);
#if MPI_VERSION >= 4
    free(csc), free(csd), free(crc), free(crd);
#endif
    return o->collectives;
}

/* Window layout: for each origin, `ops` slots of SLOT bytes (only that origin writes them), then one
 * int counter per origin (accumulated into), then a fence area of FENCE_OPS slots per origin. */
enum { SLOT = 512, FENCE_OPS = 16, FENCE_SLOT = 64 };

typedef struct {
    int target, kind;  /* kind: 0 Put, 1 Rput, 2 Accumulate, 3 Put_c, 4 Rput_c, 5 Raccumulate,
                        * 6 Raccumulate_c, 7 Get_accumulate, 8 Rget_accumulate, 9 Fetch_and_op,
                        * 10 Get_accumulate_c, 11 Rget_accumulate_c */
    int slot;
    int64_t bytes;
    int value;         /* Accumulate: what is added */
} one_sided_op;

enum { KINDS = 12 };

static int accumulates(int kind)
{
    return kind == 2 || kind >= 5;
}

static one_sided_op *rma_plan(int origin, const options *o, int *slots_used)
{
    one_sided_op *plan = malloc(sizeof(one_sided_op) * (size_t)o->ops);
    uint64_t state = mix(o->seed * 7919 + (uint64_t)origin + 1);
    memset(slots_used, 0, sizeof(int) * (size_t)size);
    for (int k = 0; k < o->ops; k++) {
        one_sided_op *op = &plan[k];
        op->target = (int)(next(&state) % (uint64_t)size);
        op->kind = (int)(next(&state) % KINDS);
        op->bytes = 1 + random_size(&state, SLOT - 1);
        op->value = (int)(next(&state) % 1000);
        op->slot = accumulates(op->kind) ? -1 : slots_used[op->target]++;
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

/* result: where a fetching accumulate puts the counter's old value (untouched until completion) */
static void issue_write(const one_sided_op *op, unsigned char *src, MPI_Aint disp, MPI_Aint counter,
                        int *result, MPI_Win win, MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    switch (op->kind) {
    case 1:
        MPI_Rput(src, (int)op->bytes, MPI_BYTE, op->target, disp, (int)op->bytes, MPI_BYTE, win, req);
        break;
    case 2:
        MPI_Accumulate(&op->value, 1, MPI_INT, op->target, counter, 1, MPI_INT, MPI_SUM, win);
        break;
    case 5:
        MPI_Raccumulate(&op->value, 1, MPI_INT, op->target, counter, 1, MPI_INT, MPI_SUM, win, req);
        break;
    case 7:
        MPI_Get_accumulate(&op->value, 1, MPI_INT, result, 1, MPI_INT, op->target, counter, 1, MPI_INT,
                           MPI_SUM, win);
        break;
    case 8:
        MPI_Rget_accumulate(&op->value, 1, MPI_INT, result, 1, MPI_INT, op->target, counter, 1, MPI_INT,
                            MPI_SUM, win, req);
        break;
    case 9:
        MPI_Fetch_and_op(&op->value, result, MPI_INT, op->target, counter, MPI_SUM, win);
        break;
#if MPI_VERSION >= 4
    case 3:
        MPI_Put_c(src, op->bytes, MPI_BYTE, op->target, disp, op->bytes, MPI_BYTE, win);
        break;
    case 4:
        MPI_Rput_c(src, op->bytes, MPI_BYTE, op->target, disp, op->bytes, MPI_BYTE, win, req);
        break;
    case 6:
        MPI_Raccumulate_c(&op->value, 1, MPI_INT, op->target, counter, 1, MPI_INT, MPI_SUM, win, req);
        break;
    case 10:
        MPI_Get_accumulate_c(&op->value, 1, MPI_INT, result, 1, MPI_INT, op->target, counter, 1, MPI_INT,
                             MPI_SUM, win);
        break;
    case 11:
        MPI_Rget_accumulate_c(&op->value, 1, MPI_INT, result, 1, MPI_INT, op->target, counter, 1,
                              MPI_INT, MPI_SUM, win, req);
        break;
#else
    case 6:
        MPI_Raccumulate(&op->value, 1, MPI_INT, op->target, counter, 1, MPI_INT, MPI_SUM, win, req);
        break;
    case 10:
    case 11:
        MPI_Get_accumulate(&op->value, 1, MPI_INT, result, 1, MPI_INT, op->target, counter, 1, MPI_INT,
                           MPI_SUM, win);
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
            found = !accumulates(plans[origin[i]][index[i]].kind);
        }
        const one_sided_op *w = &plans[origin[i]][index[i]];
        off_node[5] += leaves(w->target);
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
    int *results = malloc(sizeof(int) * (size_t)o->ops);
    uint64_t state = mix(o->seed + 99 * (uint64_t)rank);

    MPI_Win_lock_all(o->nocheck ? MPI_MODE_NOCHECK : 0, win);
    for (int k = 0; k < o->ops; k++) {
        one_sided_op *op = &mine[k];
        unsigned char *from = src + (size_t)k * SLOT; /* stays untouched until the final unlock */
        fill(from, op->bytes, slot_key(rank, op->target, op->slot));
        MPI_Aint disp = (MPI_Aint)rank * region + (MPI_Aint)op->slot * SLOT;
        issue_write(op, from, disp, counters + (MPI_Aint)sizeof(int) * rank, &results[k], win, &reqs[k]);
        off_node[5] += leaves(op->target);
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
        off_node[5] += leaves(target);
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
            if (accumulates(op->kind)) {
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
    free(plans), free(slots), free(src), free(reqs), free(results), free(fsrc);
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
        off_node[0] += leaves(partner);
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
    *o = (options){.messages = 1000, .ops = 1000, .blocking = -1, .rounds = -1, .collectives = -1,
                   .coll_max = 512, .max_bytes = 200000, .seed = 1, .cycle = 0};
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
        else if (!strcmp(a, "--blocking"))
            o->blocking = atoi(v);
        else if (!strcmp(a, "--rounds"))
            o->rounds = atoi(v);
        else if (!strcmp(a, "--collectives"))
            o->collectives = atoi(v);
        else if (!strcmp(a, "--coll-max"))
            o->coll_max = atoll(v);
        else if (!strcmp(a, "--max-bytes"))
            o->max_bytes = atoll(v);
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 10);
        else
            return -1;
        i++;
    }
    /* Unless given, the other phases scale with --messages. */
    o->blocking = o->blocking == -1 ? o->messages : o->blocking;
    o->rounds = o->rounds == -1 ? (o->messages + PERSISTENT - 1) / PERSISTENT : o->rounds;
    o->collectives = o->collectives == -1 ? o->messages / 5 : o->collectives;
    return o->messages < 1 || o->messages > 30000 || o->ops < 1 || o->ops > 100000 ||
                   o->blocking < 0 || o->blocking > 30000 || o->rounds < 0 || o->rounds > 100000 ||
                   o->collectives < 0 || o->collectives > 100000 || o->coll_max < 0 ||
                   o->coll_max > (1 << 20) ||
                   o->max_bytes < 1 || o->max_bytes > (1 << 24) ? -1 : 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    name_nodes();
    options o;
    if (parse(argc, argv, &o) || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n P>=2 throttle-stress [--messages N] [--ops N] "
                    "[--blocking N] [--rounds N] [--collectives N] [--coll-max ELEMENTS] [--max-bytes B] "
                    "[--seed S] [--cycle] [--nocheck]\n");
        MPI_Finalize();
        return 2;
    }
    if (rank == 0) {
        printf("{\"started\":true}\n");
        fflush(stdout);
    }
    /* Room for every buffered send at once: the test must not depend on when MPI drains them. */
    int bsend_size = (o.messages + o.blocking + PERSISTENT) * (BSEND_MAX + MPI_BSEND_OVERHEAD);
    void *bsend_buffer = malloc((size_t)bsend_size);
    MPI_Buffer_attach(bsend_buffer, bsend_size);
    int64_t moved = 0;
    long counts[6] = {0}; /* sends, blocking, sendrecv rounds, persistent starts, collectives, one-sided */
    if (o.cycle)
        counts[0] = cycle(&o, &moved);
    else {
        counts[0] = point_to_point(&o, &moved);
        counts[1] = blocking(&o, &moved);
        counts[2] = sendrecvs(&o, &moved);
        counts[3] = o.rounds ? persistent(&o, &moved) : 0;
        counts[4] = collectives(&o, &moved);
        counts[5] = one_sided(&o);
    }
    long all_errors, all[6];
    int64_t all_moved;
    MPI_Reduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(counts, all, 6, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&moved, &all_moved, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    long *offs = malloc(sizeof(long) * 6 * (size_t)size);
    MPI_Gather(off_node, 6, MPI_LONG, offs, 6, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) { /* per kind, summed over the ranks (collectives: calls, each made by every rank) */
        printf("{\"ranks\":%d,\"sends\":%ld,\"blocking\":%ld,\"sendrecvs\":%ld,\"persistent\":%ld,"
               "\"collectives\":%ld,\"one_sided\":%ld,\"bytes_sent\":%lld,\"errors\":%ld,"
               "\"verified\":%s,\"off_node\":[", size, all[0], all[1], all[2], all[3], all[4], all[5],
               (long long)all_moved, all_errors, all_errors ? "false" : "true");
        for (int r = 0; r < size; r++)
            for (int k = 0; k < 6; k++)
                printf("%s%ld%s", k ? "," : r ? ",[" : "[", offs[6 * r + k], k == 5 ? "]" : "");
        printf("]}\n");
    }
    free(offs);
    free(node_of);
    MPI_Buffer_detach(&bsend_buffer, &bsend_size);
    free(bsend_buffer);
    MPI_Bcast(&all_errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
