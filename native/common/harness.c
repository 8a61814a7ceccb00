/* main(): options, the world (ranks, nodes, host names), one pattern, the closing tallies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "harness.h"
#include "json.h"
#include "options.h"

int iterations_for(const bench *b, int64_t bytes)
{
    return bytes >= LARGE_MESSAGE ? b->opt.iters_large : b->opt.iters;
}

int64_t largest_size(const bench *b)
{
    int64_t largest = 0;
    for (int i = 0; i < b->opt.nsizes; i++)
        if (b->opt.sizes[i] > largest)
            largest = b->opt.sizes[i];
    return largest;
}

int pattern_mode(const bench *b, const char *const *modes)
{
    if (!b->opt.mode[0])
        return 0;
    char choices[256] = "";
    for (int i = 0; modes[i]; i++) {
        if (!strcmp(b->opt.mode, modes[i]))
            return i;
        snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s", i ? " or " : "",
                 modes[i]);
    }
    fail_usage(b, "bad --mode '%s' for %s (want %s)", b->opt.mode, b->pattern, choices);
    return -1;
}

void *alloc_buffer(int64_t n)
{
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, n > 0 ? (size_t)n : 1)) {
        fprintf(stderr, "contend-bench: cannot allocate %lld bytes\n", (long long)n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, 0xa5, n > 0 ? (size_t)n : 1);
    return buf;
}

buffers alloc_buffers(int64_t n)
{
    buffers io = {alloc_buffer(n), alloc_buffer(n)};
    return io;
}

void free_buffers(buffers io)
{
    free(io.send);
    free(io.recv);
}

static const pattern *find_pattern(const char *name)
{
    for (const pattern *p = patterns; p->name; p++)
        if (!strcmp(p->name, name))
            return p;
    return NULL;
}

static void list_patterns(void)
{
    for (const pattern *p = patterns; p->name; p++) {
        json_begin();
        json_str("name", p->name);
        json_str("summary", p->summary);
        json_int("min_ranks", p->min_ranks);
        json_bool("even_ranks", p->even_ranks);
        json_end();
    }
}

static void usage(FILE *to)
{
    fprintf(to, "usage: contend-bench PATTERN [options] | --list | --help\npatterns:\n");
    for (const pattern *p = patterns; p->name; p++)
        fprintf(to, "  %-10s %s\n", p->name, p->summary);
    fprintf(to, "options:\n%s", options_help);
}

/* Node of each rank: ranks with the same processor name share a node, numbered by first rank. */
typedef struct {
    char (*names)[MPI_MAX_PROCESSOR_NAME];
    int *node_of_rank;
    int *first_rank_of_node;
} world;

static world learn_world(bench *b)
{
    world w;
    char mine[MPI_MAX_PROCESSOR_NAME] = {0};
    int len;
    MPI_Get_processor_name(mine, &len);
    w.names = calloc(b->size, MPI_MAX_PROCESSOR_NAME);
    w.node_of_rank = calloc(b->size, sizeof(int));
    w.first_rank_of_node = calloc(b->size, sizeof(int));
    MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, w.names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  b->comm);
    b->nodes = 0;
    for (int r = 0; r < b->size; r++) {
        int node = -1;
        for (int n = 0; n < b->nodes && node < 0; n++)
            if (!strcmp(w.names[w.first_rank_of_node[n]], w.names[r]))
                node = n;
        if (node < 0) {
            node = b->nodes++;
            w.first_rank_of_node[node] = r;
        }
        w.node_of_rank[r] = node;
    }
    b->node = w.node_of_rank[b->rank];
    return w;
}

double load_average(void)
{
    double load = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1)
            load = -1;
        fclose(f);
    }
    return load;
}

static double clock_cost_ns(void)
{
    enum { CALLS = 10000 };
    int64_t start = now_ns();
    for (int i = 0; i < CALLS; i++)
        (void)now_ns();
    return (double)(now_ns() - start) / CALLS;
}

/* Keep all ranks busy in collectives for a while before measuring: on a virtual machine the first
 * tens of milliseconds after start-up run several times slower (measured here: 1-byte round trips of
 * 10 us instead of 2.5 us for up to 70 ms), and the first sizes would carry that. */
static void settle(bench *b)
{
    int64_t end = now_ns() + (int64_t)(b->opt.settle_s * 1e9);
    int done = 0;
    while (!done) {
        int mine = now_ns() >= end;
        MPI_Allreduce(&mine, &done, 1, MPI_INT, MPI_MAX, b->comm); /* rank clocks differ: any decides */
    }
}

static void write_meta(const bench *b, const world *w)
{
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len, version, subversion;
    MPI_Get_library_version(library, &len);
    library[strcspn(library, "\n")] = '\0'; /* the first line names library and version */
    MPI_Get_version(&version, &subversion);
    char standard[16], started[32];
    snprintf(standard, sizeof standard, "%d.%d", version, subversion);
    time_t t = time(NULL);
    strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    struct timespec resolution;
    clock_getres(CLOCK_MONOTONIC, &resolution);

    int ranks_per_node = 0;
    for (int n = 0; n < b->nodes; n++) {
        int count = 0;
        for (int r = 0; r < b->size; r++)
            count += w->node_of_rank[r] == n;
        if (count > ranks_per_node)
            ranks_per_node = count;
    }

    json_begin();
    json_str("type", "meta");
    json_str("pattern", b->pattern);
    json_str("mpi_library", library);
    json_str("mpi_standard", standard);
    json_int("ranks", b->size);
    json_int("nodes", b->nodes);
    json_int("ranks_per_node", ranks_per_node);
    json_list_begin("hosts");
    for (int n = 0; n < b->nodes; n++)
        json_item_str(w->names[w->first_rank_of_node[n]]);
    json_list_end();
    json_list_begin("node_of_rank");
    for (int r = 0; r < b->size; r++)
        json_item_int(w->node_of_rank[r]);
    json_list_end();
    json_str("clock", "CLOCK_MONOTONIC");
    json_num("clock_resolution_ns", resolution.tv_sec * 1e9 + resolution.tv_nsec);
    json_num("clock_cost_ns", clock_cost_ns());
    json_num("loadavg_1min", load_average());
    json_str("started", started);
    json_str("compiler", __VERSION__);
    json_list_begin("sizes");
    for (int i = 0; i < b->opt.nsizes; i++)
        json_item_int(b->opt.sizes[i]);
    json_list_end();
    json_int("iters", b->opt.iters);
    json_int("iters_large", b->opt.iters_large);
    json_int("warmup", b->opt.warmup);
    json_int("window", b->opt.window);
    json_num("settle_s", b->opt.settle_s);
    json_list_begin("argv");
    for (int i = 0; i < b->opt.argc; i++)
        json_item_str(b->opt.argv[i]);
    json_list_end();
    json_end();
}

static void write_tallies(const bench *b, const world *w)
{
    tally *all = b->rank == 0 ? malloc(sizeof(tally) * b->size) : NULL;
    MPI_Gather(&b->count, sizeof(tally), MPI_BYTE, all, sizeof(tally), MPI_BYTE, 0, b->comm);
    if (b->rank != 0)
        return;
    for (int r = 0; r < b->size; r++) {
        json_begin();
        json_str("type", "tally");
        json_int("rank", r);
        json_int("node", w->node_of_rank[r]);
        json_str("host", w->names[r]);
        json_int("bytes_sent", all[r].bytes_sent);
        json_int("bytes_received", all[r].bytes_received);
        json_int("messages_sent", all[r].messages_sent);
        json_int("messages_received", all[r].messages_received);
        json_int("rma_bytes", all[r].rma_bytes);
        json_int("verified", all[r].verified);
        json_end();
    }
    free(all);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--list")) {
        list_patterns();
        return 0;
    }
    const pattern *chosen = find_pattern(argv[1]);
    if (!chosen) {
        fprintf(stderr, "contend-bench: error: unknown pattern '%s' (try --list)\n", argv[1]);
        return 2;
    }

    MPI_Init(&argc, &argv);
    /* A profiling library (libcontend-throttle) counts the harness's own messages apart: MPI_Pcontrol(0)
     * pauses its counting, (1) resumes it, around what a pattern measures; without one it does nothing. */
    MPI_Pcontrol(0);
    bench b;
    memset(&b, 0, sizeof b);
    b.comm = MPI_COMM_WORLD;
    b.pattern = chosen->name;
    b.count.verified = -1;
    MPI_Comm_rank(b.comm, &b.rank);
    MPI_Comm_size(b.comm, &b.size);

    char why[512];
    if (parse_options(argc, argv, 2, &b.opt, why, sizeof why))
        fail_usage(&b, "%s", why);
    b.opt.argc = argc;
    b.opt.argv = argv;
    if (b.size < chosen->min_ranks)
        fail_usage(&b, "pattern %s needs at least %d ranks, got %d", chosen->name, chosen->min_ranks,
                   b.size);
    if (chosen->even_ranks && b.size % 2)
        fail_usage(&b, "pattern %s pairs ranks: needs an even number of ranks, got %d",
                   chosen->name, b.size);

    world w = learn_world(&b);
    if (b.rank == 0)
        write_meta(&b, &w);
    settle(&b);
    int64_t start = now_ns();
    MPI_Pcontrol(1); /* the pattern's messages; it pauses around its own checks */
    int rc = chosen->run(&b);
    MPI_Pcontrol(0);
    MPI_Barrier(b.comm);
    write_tallies(&b, &w);
    if (b.rank == 0) {
        json_begin();
        json_str("type", "end");
        json_num("elapsed_s", (double)(now_ns() - start) / 1e9);
        json_end();
    }
    MPI_Finalize();
    return rc;
}
