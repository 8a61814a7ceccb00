/* MPI_Init, MPI_Init_thread, MPI_Finalize: read the configuration, allocate the buffers, estimate the
 * clock offset to rank 0 at start and at the end, and write this rank's file.
 *
 * Configuration (environment):
 *   CONTEND_TRACE_DIR       directory for rank-NNNNN.ctrace (unset: nothing is recorded)
 *   CONTEND_TRACE_RECORDS   records kept per rank (default 262144, 96 bytes each); beyond: dropped, counted
 *   CONTEND_TRACE_DEPTH     return addresses per record, 1..6 (default 1: the call site only; more costs
 *                           an unwind per call, see docs/measure.md)
 *   CONTEND_TRACE_REQUESTS  table slots for nonblocking requests (default 16384; 3/4 of them usable)
 *   CONTEND_TRACE_PENDING   one-sided operations awaiting a flush at once (default 65536)
 *   CONTEND_TRACE_SYNC_ROUNDS  ping-pongs per rank and clock estimate (default 20)
 *   CONTEND_TRACE_CLOCK     tsc (default on x86-64) or monotonic (clock_gettime per timestamp)
 * Processes started by MPI_Comm_spawn inherit the variables but are not traced (see start()). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace.h"

tracer_state tracer = {.at_init = {.rtt_ns = -1}, .at_finalize = {.rtt_ns = -1}};

int requests_init(uint64_t capacity);
int pending_init(uint64_t capacity);

/* The file header (docs/formats.md "Trace files"); little-endian, as written by this machine. */
typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint32_t record_bytes;
    uint32_t frames;
    int32_t rank;
    int32_t ranks;
    int32_t depth;
    int32_t pid;
    uint64_t records;   /* records that follow the header */
    uint64_t dropped;   /* operations not recorded: the buffer was full */
    uint64_t capacity;
    uint64_t untracked; /* operations whose completion could not be followed */
    clock_sample at_init;
    clock_sample at_finalize; /* rtt_ns -1: the program never called MPI_Finalize */
    uint64_t addresses;  /* entries of the address table after the records */
    uint64_t names_bytes; /* bytes of object names after the address table */
    char host[64];
    int32_t clock_kind; /* 0: record times are CLOCK_MONOTONIC ns; 1: time-stamp counter ticks */
    int32_t thread_level; /* 0: unknown; else 1 + what MPI provided: single, funneled, serialized, multiple */
    int64_t calibration[4]; /* tick0, ns0, tick1, ns1: ticks -> ns = ns0 + (t - tick0) * (ns1 - ns0) / (tick1 - tick0) */
    uint64_t comm_words; /* int32 words of the communicator table after the names (comms.c) */
    uint64_t size_words; /* int64 words of the per-record table, at the end (per_record.c) */
} file_header;

_Static_assert(sizeof(file_header) == 256, "the header size is part of the file format");

/* Where a return address lies: the object (an offset into the name table) and its load bias. */
typedef struct {
    uint64_t address;
    uint64_t bias;   /* the object's load bias: address - bias is the ELF virtual address */
    uint32_t name;   /* offset of the object's path in the name table; UINT32_MAX: unknown */
    uint32_t unused;
} address_entry;

static int64_t option(const char *name, int64_t fallback, int64_t low, int64_t high, int *bad)
{
    const char *text = getenv(name);
    if (!text || !*text)
        return fallback;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || v < low || v > high) {
        if (tracer.rank == 0)
            fprintf(stderr, "contend-trace: error: %s=%s: expected an integer in %lld..%lld\n", name,
                    text, (long long)low, (long long)high);
        *bad = 1;
        return fallback;
    }
    return v;
}

/* The offset of this rank's clock to rank 0's: ping-pongs with rank 0, one rank at a time; the
 * sample with the shortest round trip bounds the error by half of it. */
static void sync_clocks(clock_sample *out, int rounds)
{
    MPI_Comm comm = tracer.sync_comm;
    if (tracer.rank == 0) {
        int64_t ping;
        for (int peer = 1; peer < tracer.ranks; peer++)
            for (int k = 0; k < rounds; k++) {
                PMPI_Recv(&ping, 1, MPI_INT64_T, peer, 1, comm, MPI_STATUS_IGNORE);
                int64_t t = now_ns();
                PMPI_Send(&t, 1, MPI_INT64_T, peer, 2, comm);
            }
        *out = (clock_sample){.local_ns = now_ns(), .offset_ns = 0, .rtt_ns = 0};
        return;
    }
    out->rtt_ns = -1;
    for (int k = 0; k < rounds; k++) {
        int64_t t0 = now_ns(), t1;
        PMPI_Send(&t0, 1, MPI_INT64_T, 0, 1, comm);
        PMPI_Recv(&t1, 1, MPI_INT64_T, 0, 2, comm, MPI_STATUS_IGNORE);
        int64_t t2 = now_ns();
        if (out->rtt_ns < 0 || t2 - t0 < out->rtt_ns) {
            out->rtt_ns = t2 - t0;
            out->local_ns = t0 + (t2 - t0) / 2;
            out->offset_ns = t1 - out->local_ns;
        }
    }
}

static int sync_rounds = 20;

/* A tick and a ns read together (the tick between two ns reads, the pair closest together of a few). */
static void calibrate(int64_t *pair)
{
    int64_t best = -1;
    for (int k = 0; k < 5; k++) {
        int64_t a = now_ns(), t = stamp(), b = now_ns();
        if (best < 0 || b - a < best) {
            best = b - a;
            pair[0] = t;
            pair[1] = a + (b - a) / 2;
        }
    }
}

/* The header's thread level. MPICH runs no collective through its shared-memory buffers under
 * MPI_THREAD_MULTIPLE, so the converter needs it (docs/models.md, "Replaying traces"). */
static int32_t thread_level_code(void)
{
    int provided;
    if (PMPI_Query_thread(&provided) != MPI_SUCCESS)
        return 0;
    switch (provided) {
    case MPI_THREAD_SINGLE: return 1;
    case MPI_THREAD_FUNNELED: return 2;
    case MPI_THREAD_SERIALIZED: return 3;
    case MPI_THREAD_MULTIPLE: return 4;
    default: return 0;
    }
}

static void start(void *site)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &tracer.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &tracer.ranks);
    tracer.thread_level = thread_level_code();
    const char *dir = getenv("CONTEND_TRACE_DIR");
    MPI_Comm parent;
    PMPI_Comm_get_parent(&parent);
    if (dir && *dir && parent != MPI_COMM_NULL) {
        /* Started by MPI_Comm_spawn: it inherited the launched job's directory, where its rank files
         * would replace that job's (the same names) and mix two runs. Only the launched job is traced. */
        if (tracer.rank == 0)
            fprintf(stderr, "contend-trace: warning: processes started by MPI_Comm_spawn are not traced "
                    "(only the launched job's ranks)\n");
        return;
    }
    if (!dir || !*dir) {
        if (tracer.rank == 0)
            fprintf(stderr, "contend-trace: warning: CONTEND_TRACE_DIR is not set; nothing is recorded\n");
        return;
    }
    int bad = 0;
    if (strlen(dir) >= sizeof tracer.dir - 32) {
        if (tracer.rank == 0)
            fprintf(stderr, "contend-trace: error: CONTEND_TRACE_DIR is too long\n");
        bad = 1;
    }
    uint64_t capacity = (uint64_t)option("CONTEND_TRACE_RECORDS", 262144, 1, (int64_t)1 << 32, &bad);
    tracer.depth = (int)option("CONTEND_TRACE_DEPTH", 1, 1, TRACE_FRAMES, &bad);
    uint64_t requests = (uint64_t)option("CONTEND_TRACE_REQUESTS", 16384, 16, (int64_t)1 << 28, &bad);
    uint64_t pending = (uint64_t)option("CONTEND_TRACE_PENDING", 65536, 16, (int64_t)1 << 28, &bad);
    sync_rounds = (int)option("CONTEND_TRACE_SYNC_ROUNDS", 20, 1, 100000, &bad);
    if (bad) { /* the same environment on every rank: all stop */
        PMPI_Finalize();
        exit(2);
    }
    const char *clock = getenv("CONTEND_TRACE_CLOCK");
    if (clock && *clock && strcmp(clock, "tsc") != 0 && strcmp(clock, "monotonic") != 0) {
        if (tracer.rank == 0)
            fprintf(stderr, "contend-trace: error: CONTEND_TRACE_CLOCK=%s: expected tsc or monotonic\n", clock);
        PMPI_Finalize();
        exit(2);
    }
#if defined(__x86_64__)
    tracer.tsc = !(clock && strcmp(clock, "monotonic") == 0);
#endif
    snprintf(tracer.dir, sizeof tracer.dir, "%s", dir);
    tracer.records = malloc(capacity * sizeof(trace_record));
    if (!tracer.records || requests_init(requests) != 0 || pending_init(pending) != 0) {
        fprintf(stderr, "contend-trace: error: rank %d: cannot allocate %llu records; lower "
                "CONTEND_TRACE_RECORDS\n", tracer.rank, (unsigned long long)capacity);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(tracer.records, 0, capacity * sizeof(trace_record)); /* no page faults while recording */
    tracer.capacity = capacity;
    void *warm[2];
    backtrace(warm, 2); /* the first unwind loads libgcc_s: do it now, not inside a traced call */
    PMPI_Comm_dup(MPI_COMM_WORLD, &tracer.sync_comm);
    sync_clocks(&tracer.at_init, sync_rounds);
    calibrate(&tracer.calibration[0]);
    atexit(trace_write); /* a program that never finalizes still leaves its file */
    tracer.on = 1;
    trace_record *r = record_begin(K_INIT, site);
    if (r)
        r->returned = r->completed = r->posted;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        start(__builtin_return_address(0));
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        start(__builtin_return_address(0));
    return rc;
}

int MPI_Finalize(void)
{
    if (tracer.on) {
        trace_record *r = record_begin(K_FINALIZE, __builtin_return_address(0));
        if (r)
            r->returned = r->completed = r->posted;
        tracer.on = 0; /* MPI calls of the library itself from here on are not the program's */
        sync_clocks(&tracer.at_finalize, sync_rounds);
        PMPI_Comm_free(&tracer.sync_comm);
        trace_write();
    }
    return PMPI_Finalize();
}

static int by_address(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every distinct return address of the records, with its object and load bias (dladdr, once each). */
static uint64_t resolve(address_entry **entries, char **names, uint64_t *names_bytes)
{
    uint64_t n = 0, total = tracer.used * (uint64_t)TRACE_FRAMES;
    uint64_t *all = malloc((total ? total : 1) * sizeof *all);
    size_t cap = 4096, used = 0;
    char *table = malloc(cap);
    if (!all || !table) {
        free(all);
        free(table);
        *entries = NULL;
        *names = NULL;
        *names_bytes = 0;
        return 0;
    }
    for (uint64_t i = 0; i < tracer.used; i++)
        for (uint32_t f = 0; f < tracer.records[i].depth; f++)
            all[n++] = tracer.records[i].frames[f];
    qsort(all, n, sizeof *all, by_address);
    uint64_t distinct = 0;
    for (uint64_t i = 0; i < n; i++)
        if (i == 0 || all[i] != all[i - 1])
            all[distinct++] = all[i];
    address_entry *out = calloc(distinct ? distinct : 1, sizeof *out);
    char self[4096] = "";
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = '\0';
    const char *last_name = NULL;
    uint32_t last_offset = UINT32_MAX;
    for (uint64_t i = 0; out && i < distinct; i++) {
        Dl_info info;
        struct link_map *map = NULL;
        out[i].address = all[i];
        out[i].name = UINT32_MAX;
        if (!dladdr1((void *)(uintptr_t)all[i], &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
            continue;
        out[i].bias = map->l_addr;
        /* the main program's link map has no name: it is /proc/self/exe */
        const char *name = map->l_name && map->l_name[0] ? map->l_name : self;
        if (last_name && strcmp(name, last_name) == 0) {
            out[i].name = last_offset;
            continue;
        }
        size_t need = strlen(name) + 1;
        while (used + need > cap) {
            char *bigger = realloc(table, cap * 2);
            if (!bigger)
                break;
            table = bigger;
            cap *= 2;
        }
        if (used + need > cap)
            continue;
        memcpy(table + used, name, need);
        out[i].name = last_offset = (uint32_t)used;
        last_name = table + used;
        used += need;
    }
    free(all);
    *entries = out;
    *names = table;
    *names_bytes = out ? used : 0;
    return out ? distinct : 0;
}

/* How long a rank that exits without MPI_Finalize waits for the others to write their files. */
#define EXIT_WAIT_NS 2000000000LL

/* Exiting without MPI_Finalize: after writing its file a rank waits (a bounded time) until every rank
 * has written its own, because a launcher kills the whole job as soon as one rank exits that way and
 * would cut off the ranks still writing. Ranks that never exit do not hold it beyond the bound. */
static void wait_for_other_ranks(void)
{
    MPI_Request request;
    if (PMPI_Ibarrier(tracer.sync_comm, &request) != MPI_SUCCESS)
        return;
    int64_t deadline = now_ns() + EXIT_WAIT_NS;
    int done = 0;
    while (!done && now_ns() < deadline) {
        if (PMPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return;
        if (!done)
            usleep(1000);
    }
}

void trace_write(void)
{
    if (tracer.written || !tracer.records)
        return;
    int exiting_unfinalized = tracer.on; /* MPI_Finalize turns the tracer off before writing */
    tracer.written = 1;
    tracer.on = 0;
    calibrate(&tracer.calibration[2]);
    address_entry *entries;
    char *names;
    uint64_t names_bytes;
    uint64_t addresses = resolve(&entries, &names, &names_bytes);
    file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, TRACE_MAGIC, sizeof TRACE_MAGIC);
    h.version = TRACE_VERSION;
    h.header_bytes = sizeof h;
    h.record_bytes = sizeof(trace_record);
    h.frames = TRACE_FRAMES;
    h.rank = tracer.rank;
    h.ranks = tracer.ranks;
    h.depth = tracer.depth;
    h.pid = (int32_t)getpid();
    h.records = tracer.used;
    h.dropped = tracer.dropped;
    h.capacity = tracer.capacity;
    h.untracked = tracer.untracked;
    h.at_init = tracer.at_init;
    h.at_finalize = tracer.at_finalize;
    h.addresses = addresses;
    h.names_bytes = names_bytes;
    gethostname(h.host, sizeof h.host - 1);
    h.clock_kind = tracer.tsc;
    h.thread_level = tracer.thread_level;
    memcpy(h.calibration, tracer.calibration, sizeof h.calibration);
    uint64_t comm_words;
    const int32_t *comms = comm_table(&comm_words);
    h.comm_words = comm_words;
    uint64_t size_words;
    const int64_t *sizes = per_record_table(&size_words);
    h.size_words = size_words;

    char path[sizeof tracer.dir + 32], temporary[sizeof tracer.dir + 48];
    mkdir(tracer.dir, 0777); /* usually made by `contend trace`; EEXIST is fine */
    snprintf(path, sizeof path, "%s/rank-%05d.ctrace", tracer.dir, tracer.rank);
    snprintf(temporary, sizeof temporary, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(temporary, "wb");
    int ok = f != NULL;
    ok = ok && fwrite(&h, sizeof h, 1, f) == 1;
    ok = ok && fwrite(tracer.records, sizeof(trace_record), tracer.used, f) == tracer.used;
    ok = ok && (addresses == 0 || fwrite(entries, sizeof *entries, addresses, f) == addresses);
    ok = ok && (names_bytes == 0 || fwrite(names, 1, names_bytes, f) == names_bytes);
    ok = ok && (comm_words == 0 || fwrite(comms, sizeof *comms, comm_words, f) == comm_words);
    ok = ok && (size_words == 0 || fwrite(sizes, sizeof *sizes, size_words, f) == size_words);
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok && rename(temporary, path) == 0) {
        if (tracer.dropped)
            fprintf(stderr, "contend-trace: warning: rank %d: buffer full, %llu operations not "
                    "recorded (raise CONTEND_TRACE_RECORDS)\n", tracer.rank,
                    (unsigned long long)tracer.dropped);
    } else {
        fprintf(stderr, "contend-trace: error: rank %d: cannot write %s: %s\n", tracer.rank, path,
                strerror(errno));
        unlink(temporary);
    }
    free(entries);
    free(names);
    if (exiting_unfinalized)
        wait_for_other_ranks();
}
