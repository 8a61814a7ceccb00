/* libcontend-trace.so: one fixed-size record per MPI operation, kept in a bounded per-rank buffer and
 * written to $CONTEND_TRACE_DIR/rank-NNNNN.ctrace at MPI_Finalize (or at exit). The file format is in
 * docs/formats.md ("Trace files"); python/contend/native/trace/files.py reads it.
 *
 * The per-call cost is the point of the design: a call takes the next slot of a buffer allocated at
 * MPI_Init, reads CLOCK_MONOTONIC at entry and return, and keeps its return addresses. Nothing is
 * allocated, locked or symbolized per call; addresses are resolved to objects (dladdr) once per
 * distinct address when the file is written, and to function and line after the run (addr2line).
 * Not thread-safe: one thread calls MPI at a time (MPI_THREAD_FUNNELED or SERIALIZED), as for
 * libcontend-throttle. */
#ifndef CONTEND_TRACE_H
#define CONTEND_TRACE_H

#include <execinfo.h>
#include <mpi.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "clock.h"

#define TRACE_MAGIC "CTRACE1"
#define TRACE_VERSION 2
#define TRACE_FRAMES 6 /* return addresses kept per record: the call site, then its callers */

/* Record kinds: the numbers are part of the file format (python/contend/native/trace/files.py KINDS). */
enum {
    K_SEND = 0, K_ISEND, K_SSEND, K_ISSEND, K_RECV, K_IRECV,
    K_PUT = 8, K_GET, K_ACCUMULATE, K_GET_ACCUMULATE, K_RPUT, K_RGET, K_RACCUMULATE, K_RGET_ACCUMULATE,
    /* nonblocking collectives: complete in the Wait/Test of their request, like an Isend; each is its
     * blocking form's kind minus 16 */
    K_IBARRIER = 16, K_IBCAST, K_IALLREDUCE, K_IREDUCE, K_IALLTOALL, K_IALLGATHER, K_IGATHER, K_ISCATTER,
    K_IALLTOALLV, K_IALLGATHERV, K_IREDUCE_SCATTER, K_IREDUCE_SCATTER_BLOCK, K_ISCAN, K_IEXSCAN, K_IGATHERV,
    K_ISCATTERV,
    /* regions: time inside a call, no message of its own */
    K_BARRIER = 32, K_BCAST, K_ALLREDUCE, K_REDUCE, K_ALLTOALL, K_ALLGATHER, K_GATHER, K_SCATTER,
    K_ALLTOALLV, K_ALLGATHERV, K_REDUCE_SCATTER, K_REDUCE_SCATTER_BLOCK, K_SCAN, K_EXSCAN, K_GATHERV,
    K_SCATTERV,
    K_WAIT = 48, K_FENCE, K_FLUSH, K_FLUSH_ALL, K_FLUSH_LOCAL, K_FLUSH_LOCAL_ALL, K_LOCK, K_UNLOCK,
    K_LOCK_ALL, K_UNLOCK_ALL,
    K_TEST = 58,        /* a Test call that completed at least one followed request (failed Tests leave none) */
    K_COMM_CREATE = 59, /* MPI_Comm_dup, split, create, ...: tag the parent's id, bytes the new one's (-1: none) */
    K_INIT = 60,        /* MPI_Init(_thread) returned (tracing began): the run's start */
    K_FINALIZE = 61,    /* MPI_Finalize entered: the run's end */
    K_WIN_CREATE = 62,  /* MPI_Win_create, allocate(_shared), create_dynamic: tag the comm's id, bytes the window's */
    K_WIN_FREE = 63,    /* MPI_Win_free: tag the window's id */
    /* one-sided like get_accumulate (data to the target, its old contents back), one element each */
    K_FETCH_AND_OP = 64, K_COMPARE_AND_SWAP,
    /* post/start/complete/wait epochs, regions on their window: post and start name their group in
     * the per-record table; complete completes the epoch's operations, wait (or a Win_test that
     * succeeded) ends the exposure */
    K_WIN_POST = 66, K_WIN_START, K_WIN_COMPLETE, K_WIN_WAIT,
    K_UNCONVERTED = 70, /* a call the converter has no algorithm for (unconverted.c): bytes its code */
};

/* K_UNCONVERTED's codes, one per call (its `_c` form shares it); engine/src/replay/ctrace.rs names them
 * in this order. */
enum {
    U_ALLTOALLW = 1,
    U_IALLTOALLW = 2,
    U_NEIGHBOR_ALLGATHER = 3,
    U_NEIGHBOR_ALLGATHERV = 4,
    U_NEIGHBOR_ALLTOALL = 5,
    U_NEIGHBOR_ALLTOALLV = 6,
    U_NEIGHBOR_ALLTOALLW = 7,
    U_INEIGHBOR_ALLGATHER = 8,
    U_INEIGHBOR_ALLGATHERV = 9,
    U_INEIGHBOR_ALLTOALL = 10,
    U_INEIGHBOR_ALLTOALLV = 11,
    U_INEIGHBOR_ALLTOALLW = 12,
    U_ALLGATHER_INIT = 13,
    U_ALLGATHERV_INIT = 14,
    U_ALLREDUCE_INIT = 15,
    U_ALLTOALL_INIT = 16,
    U_ALLTOALLV_INIT = 17,
    U_ALLTOALLW_INIT = 18,
    U_BARRIER_INIT = 19,
    U_BCAST_INIT = 20,
    U_EXSCAN_INIT = 21,
    U_GATHER_INIT = 22,
    U_GATHERV_INIT = 23,
    U_REDUCE_INIT = 24,
    U_REDUCE_SCATTER_INIT = 25,
    U_REDUCE_SCATTER_BLOCK_INIT = 26,
    U_SCAN_INIT = 27,
    U_SCATTER_INIT = 28,
    U_SCATTERV_INIT = 29,
    U_NEIGHBOR_ALLGATHER_INIT = 30,
    U_NEIGHBOR_ALLGATHERV_INIT = 31,
    U_NEIGHBOR_ALLTOALL_INIT = 32,
    U_NEIGHBOR_ALLTOALLV_INIT = 33,
    U_NEIGHBOR_ALLTOALLW_INIT = 34,
};

/* flags */
#define F_LARGE_COUNT 1u /* through an MPI 4 `_c` entry point */
#define F_FREED 2u       /* the request was freed before anything completed it: completed unknown */
#define F_UNTRACKED 4u   /* the request or one-sided table was full: completed unknown */
#define F_MPI_MEMORY 8u  /* win_create: MPI allocated the window's memory (Win_allocate, allocate_shared),
                          * so ranks on one host may share it */

typedef struct {
    int64_t posted;    /* stamp() at call entry: ns, or ticks (file header says which) */
    int64_t returned;  /* stamp() when the call returned */
    int64_t completed; /* when the Wait/Test/flush/unlock/fence that completed it returned: exactly that
                        * record's `returned` (completion stamps are unique per rank, completion_stamp());
                        * -1 unknown */
    int64_t bytes;
    int32_t peer;      /* world rank: destination, source, one-sided target, collective root; -1 none */
    int32_t tag;       /* -1 none; collectives (and comm_create, win_create): the communicator's id
                        * (comms.c); one-sided operations and window synchronisation: the window's id
                        * (rma.c) */
    uint16_t kind;
    uint16_t flags;
    uint32_t depth;    /* frames kept */
    uint64_t frames[TRACE_FRAMES]; /* return addresses, the call site first */
} trace_record;

_Static_assert(sizeof(trace_record) == 96, "the record size is part of the file format");

typedef struct {
    int64_t local_ns;  /* this rank's clock at the sample's midpoint */
    int64_t offset_ns; /* rank 0's clock minus this rank's at that moment */
    int64_t rtt_ns;    /* the round trip of the best (shortest) sample; -1: no sample */
} clock_sample;

typedef struct {
    int on;            /* recording (after MPI_Init, with a directory) */
    int tsc;           /* timestamps are time-stamp counter ticks (x86-64), not ns; see stamp() */
    int64_t calibration[4]; /* tick and ns read together at start and at the end: ticks -> ns */
    int written;
    int rank, ranks;
    int32_t thread_level; /* the header's code (init.c): 0 unknown, 1 + the level MPI provided */
    int depth;         /* frames per record, 1..TRACE_FRAMES */
    char dir[4096];
    trace_record *records;
    uint64_t capacity, used, dropped, untracked;
    clock_sample at_init, at_finalize;
    MPI_Comm sync_comm;
    int64_t last_completion; /* the latest completion stamp handed out */
} tracer_state;

extern tracer_state tracer;

/* A timestamp: the time-stamp counter where there is one (x86-64: a few ns, no system call, about half
 * the cost of clock_gettime), converted to ns after the run from two (tick, ns) pairs read together at
 * MPI_Init and when the file is written; CLOCK_MONOTONIC ns elsewhere or with CONTEND_TRACE_CLOCK=monotonic. */
static inline int64_t stamp(void)
{
#if defined(__x86_64__)
    if (tracer.tsc)
        return (int64_t)__rdtsc();
#endif
    return now_ns();
}

/* The next record, stamped with its kind and entry time and the caller's return addresses; NULL when
 * not tracing or the buffer is full (counted in tracer.dropped). `site` is the wrapper's own
 * __builtin_return_address(0): always right, even where backtrace() cannot unwind. */
static inline __attribute__((always_inline)) trace_record *record_begin(int kind, void *site)
{
    if (!tracer.on)
        return 0;
    if (tracer.used >= tracer.capacity) {
        tracer.dropped++;
        return 0;
    }
    trace_record *r = &tracer.records[tracer.used++];
    r->kind = (uint16_t)kind;
    r->flags = 0;
    r->peer = -1;
    r->tag = -1;
    r->bytes = 0;
    r->completed = -1;
    r->frames[0] = (uint64_t)(uintptr_t)site;
    r->depth = 1;
    if (tracer.depth > 1) {
        void *stack[TRACE_FRAMES + 2];
        int n = backtrace(stack, tracer.depth + 2);
        int first = 0; /* the wrapper's own frames come first: start at the call site */
        while (first < n && stack[first] != site)
            first++;
        for (int i = first + 1; i < n && r->depth < (uint32_t)tracer.depth; i++)
            r->frames[r->depth++] = (uint64_t)(uintptr_t)stack[i];
    }
    r->posted = stamp();
    return r;
}

/* The stamp of a call that completes operations (Wait, Test, flush, unlock, fence): strictly after the
 * previous one, so an operation's `completed` names its completing record without doubt even where two
 * clock readings coincide (a coarse clock); the shift is at most a tick per completion. */
static inline int64_t completion_stamp(void)
{
    int64_t now = stamp();
    if (now <= tracer.last_completion)
        now = tracer.last_completion + 1;
    tracer.last_completion = now;
    return now;
}

static inline uint64_t record_index(const trace_record *r)
{
    return (uint64_t)(r - tracer.records);
}

/* The world rank of `rank` in a communicator or a window's group (-1 for MPI_PROC_NULL / ANY). */
int world_of_comm(MPI_Comm comm, int rank);
int world_of_win(MPI_Win win, int rank);
/* The world ranks of a group's n members, in group order, into world[0..n) (-1 where unknown). */
void world_of_group(MPI_Group group, int n, int64_t *world);
void forget_comm(MPI_Comm comm);
void forget_win(MPI_Win win);

int64_t type_bytes(MPI_Datatype type, int64_t count);

/* Communicator ids (comms.c): MPI_COMM_WORLD is 0; any other intracommunicator gets an id agreed by its
 * members when it is created (or first used by a collective), kept with its members' world ranks for
 * the file. -1: an intercommunicator, or the tracer is off. comm_id is collective over `comm` the first
 * time it sees it: call it only where every member calls it (a collective), whatever the buffer holds. */
int32_t comm_id(MPI_Comm comm);
/* The id of a communicator already known, without registering it (no communication); -1 unknown. */
int32_t comm_known(MPI_Comm comm);
void comm_forget(MPI_Comm comm);
/* The table for the file: `words` int32 of [id, size, world rank of each member...] per communicator. */
const int32_t *comm_table(uint64_t *words);

/* The per-record table, written at the end of the file (per_record.c): [record index, n_first,
 * n_second, n_first words, n_second words] as int64 per record that needs more than its fields: a
 * v-collective's bytes sent to and received from each member (coll.c), a post's or start's group
 * as world ranks (rma.c). per_record_add returns the n_first + n_second words to fill, NULL when
 * memory ran out (nothing kept then). */
int64_t *per_record_add(const trace_record *r, uint64_t n_first, uint64_t n_second);
const int64_t *per_record_table(uint64_t *words);

/* Requests of nonblocking operations, until a Wait/Test completes them (requests.c). */
void requests_add(MPI_Request req, trace_record *r, MPI_Comm comm);
/* Complete the operation of `req` (its value before the call); its status (NULL: not read) gives a
 * wildcard receive's source and tag; now: the time. 1 if it was followed. */
int requests_complete(MPI_Request req, const MPI_Status *status, int64_t now);
void requests_free(MPI_Request req);
int requests_live(void);
int requests_need_status(void);

/* Persistent requests (persistent.c): whether a handle is one (it completes without becoming
 * MPI_REQUEST_NULL), and forgetting one when it is freed. */
int persistent_is(MPI_Request request);
void persistent_forget(MPI_Request request);

/* One-sided operations, until a flush, unlock or fence covers them (pending.c). */
void pending_add(MPI_Win win, int target, trace_record *r);
/* Complete the ops of win to target (or all targets: target == MPI_ANY_SOURCE). */
void pending_complete(MPI_Win win, int target, int64_t now);

/* Write the file (init.c); also from atexit when the program never finalized. */
void trace_write(void);

#endif
