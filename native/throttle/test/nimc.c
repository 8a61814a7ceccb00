/* Test of the library's NiMC mitigations (run under mpiexec with the library preloaded, 4 ranks, two
 * nodes of two ranks each: CONTEND_THROTTLE_RANKS_PER_NODE=2).
 *
 * One-sided traffic: every rank makes --ops passive-target writes (MPI_Put, MPI_Rput, MPI_Accumulate,
 * in turn) of random sizes up to --max-bytes, each into its own slot of a random rank's window; with
 * --into-node N only ranks of node N are targets (all the other node's traffic goes into one node),
 * and a rank of node N writes into its own node. Every rank derives every rank's plan from the seed, so
 * each target checks every byte that should have landed in its window.
 *
 * Prints one JSON line per rank: its node (rank / 2), its ops and bytes into the other node, the
 * clock (CLOCK_MONOTONIC, comparable between the ranks of one host) before its first op into the other
 * node and after its last returned, its largest op, the errors found in its window, and the CPUs it may
 * run on after MPI_Init (/proc/self/status Cpus_allowed_list). Exit 1 if any byte was wrong. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PER_NODE 2

typedef struct {
    int target;
    int kind;          /* 0 Put, 1 Rput, 2 Accumulate (MPI_REPLACE) */
    int64_t bytes;
} op;

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned char byte_of(int origin, int index, int64_t i)
{
    return (unsigned char)mix(((uint64_t)origin << 40) ^ ((uint64_t)index << 20) ^ (uint64_t)i);
}

/* Rank r's plan: the same on every rank. */
static void plan(int r, int size, int ops, int64_t max_bytes, int into_node, uint64_t seed, op *out)
{
    uint64_t state = mix(seed ^ (uint64_t)r * 7919);
    int nodes = size / PER_NODE;
    for (int i = 0; i < ops; i++) {
        int node = into_node >= 0 ? into_node : (int)(mix(state++) % (uint64_t)nodes);
        out[i].target = node * PER_NODE + (int)(mix(state++) % PER_NODE);
        out[i].kind = i % 3;
        out[i].bytes = 1 + (int64_t)(mix(state++) % (uint64_t)max_bytes);
    }
}

static void cpus_allowed(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[512];
    snprintf(out, len, "?");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) {
            char *v = line + 18;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = '\0';
            snprintf(out, len, "%s", v);
        }
    if (f)
        fclose(f);
}

int main(int argc, char **argv)
{
    int ops = 300, into_node = -1;
    int64_t max_bytes = 4096;
    uint64_t seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ops"))
            ops = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-bytes"))
            max_bytes = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--into-node"))
            into_node = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = (uint64_t)atoll(argv[i + 1]);
    }
    MPI_Init(&argc, &argv);
    char cpus[256];
    cpus_allowed(cpus, sizeof cpus);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size % PER_NODE || ops < 1 || max_bytes < 1 || into_node >= size / PER_NODE) {
        if (rank == 0)
            fprintf(stderr, "nimc test: needs ranks in pairs, --ops >= 1, --max-bytes >= 1, --into-node < nodes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    op *plans = malloc((size_t)size * (size_t)ops * sizeof *plans);
    for (int r = 0; r < size; r++)
        plan(r, size, ops, max_bytes, into_node, seed, plans + (size_t)r * (size_t)ops);
    /* each (origin, op) has its own slot of max_bytes in the target's window */
    int64_t window_bytes = (int64_t)size * ops * max_bytes;
    unsigned char *window, *source = malloc((size_t)max_bytes);
    MPI_Win win;
    MPI_Win_allocate(window_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &window, &win);
    memset(window, 0, (size_t)window_bytes);
    MPI_Barrier(MPI_COMM_WORLD);

    int my_node = rank / PER_NODE;
    int64_t remote_ops = 0, remote_bytes = 0, first_ns = -1, last_ns = -1, largest = 0;
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < ops; i++) {
        const op *o = &plans[(size_t)rank * (size_t)ops + (size_t)i];
        for (int64_t b = 0; b < o->bytes; b++)
            source[b] = byte_of(rank, i, b);
        MPI_Aint at = ((MPI_Aint)rank * ops + i) * max_bytes;
        int remote = o->target / PER_NODE != my_node;
        if (remote && first_ns < 0)
            first_ns = now_ns();
        if (o->kind == 0)
            MPI_Put(source, (int)o->bytes, MPI_BYTE, o->target, at, (int)o->bytes, MPI_BYTE, win);
        else if (o->kind == 1) {
            MPI_Request req;
            MPI_Rput(source, (int)o->bytes, MPI_BYTE, o->target, at, (int)o->bytes, MPI_BYTE, win, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Accumulate(source, (int)o->bytes, MPI_BYTE, o->target, at, (int)o->bytes, MPI_BYTE,
                           MPI_REPLACE, win);
        MPI_Win_flush(o->target, win); /* the source buffer is reused */
        if (remote) {
            last_ns = now_ns();
            remote_ops++;
            remote_bytes += o->bytes;
            largest = o->bytes > largest ? o->bytes : largest;
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    long errors = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win); /* the others' writes visible to local loads */
    for (int r = 0; r < size; r++)
        for (int i = 0; i < ops; i++) {
            const op *o = &plans[(size_t)r * (size_t)ops + (size_t)i];
            const unsigned char *slot = window + ((int64_t)r * ops + i) * max_bytes;
            for (int64_t b = 0; b < max_bytes; b++) {
                unsigned char want = o->target == rank && b < o->bytes ? byte_of(r, i, b) : 0;
                errors += slot[b] != want;
            }
        }
    MPI_Win_unlock(rank, win);
    printf("{\"rank\":%d,\"node\":%d,\"remote_ops\":%lld,\"remote_bytes\":%lld,\"first_ns\":%lld,"
           "\"last_ns\":%lld,\"largest\":%lld,\"errors\":%ld,\"cpus\":\"%s\"}\n",
           rank, my_node, (long long)remote_ops, (long long)remote_bytes, (long long)first_ns,
           (long long)last_ns, (long long)largest, errors, cpus);
    fflush(stdout);
    MPI_Win_free(&win);
    free(plans);
    free(source);
    MPI_Finalize();
    return errors ? 1 : 0;
}
