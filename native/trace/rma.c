/* One-sided: MPI_Put, Get, Accumulate, Get_accumulate, Rput, Rget, Raccumulate, Rget_accumulate
 * (classic and large-count), Fetch_and_op, Compare_and_swap. Each is one record, src = this rank (the
 * initiator), peer = the target's world rank, tag = its window's id. It completes when a flush,
 * flush_local, unlock, fence or Win_complete of its window covering its target returns (the R forms: or
 * the Wait/Test of their request, whichever comes first). The synchronisation calls are recorded as
 * regions; Win_post and Win_start also keep their group. An operation on MPI_PROC_NULL moves nothing:
 * not recorded. */
#include <stdlib.h>

#include "trace.h"

/* Window ids, per rank, from 1 in creation order (0: a window the tracer did not see created): the
 * one-sided records carry their window's id in `tag`, and its creation record names its communicator,
 * so a converter knows each window's group. A small array of the live windows, searched from the
 * newest, after a comparison with the last one used. */
typedef struct {
    MPI_Win win;
    int32_t id;
} live_win;

static live_win *wins;
static size_t wins_used, wins_capacity;
static int32_t next_win = 1;
static MPI_Win last_win = MPI_WIN_NULL;
static int32_t last_win_id;

static int32_t win_id(MPI_Win win)
{
    if (win == last_win)
        return last_win_id;
    for (size_t i = wins_used; i-- > 0;)
        if (wins[i].win == win) {
            last_win = win;
            last_win_id = wins[i].id;
            return last_win_id;
        }
    return 0;
}

static int32_t win_add(MPI_Win win)
{
    if (wins_used == wins_capacity) {
        size_t want = wins_capacity ? 2 * wins_capacity : 16;
        live_win *grown = realloc(wins, want * sizeof *grown);
        if (!grown)
            return 0;
        wins = grown;
        wins_capacity = want;
    }
    wins[wins_used++] = (live_win){.win = win, .id = next_win};
    return next_win++;
}

static int32_t win_remove(MPI_Win win)
{
    int32_t id = win_id(win);
    for (size_t i = 0; i < wins_used; i++)
        if (wins[i].win == win) {
            wins[i] = wins[--wins_used];
            break;
        }
    last_win = MPI_WIN_NULL;
    return id;
}

#define ONE_SIDED(KIND, FLAGS, COUNT, TYPE, CALL)                                                     \
    trace_record *r =                                                                                 \
        target_rank == MPI_PROC_NULL ? 0 : record_begin(KIND, __builtin_return_address(0));         \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    r->bytes = type_bytes(TYPE, (int64_t)(COUNT));                                                    \
    r->peer = world_of_win(win, target_rank);                                                         \
    r->tag = win_id(win);                                                                             \
    int rc = CALL;                                                                                    \
    r->returned = stamp();                                                                           \
    if (rc == MPI_SUCCESS)                                                                            \
        pending_add(win, target_rank, r);                                                             \
    return rc;

#define REQUEST_ONE_SIDED(KIND, FLAGS, COUNT, TYPE, CALL)                                             \
    trace_record *r =                                                                                 \
        target_rank == MPI_PROC_NULL ? 0 : record_begin(KIND, __builtin_return_address(0));         \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    r->bytes = type_bytes(TYPE, (int64_t)(COUNT));                                                    \
    r->peer = world_of_win(win, target_rank);                                                         \
    r->tag = win_id(win);                                                                             \
    int rc = CALL;                                                                                    \
    r->returned = stamp();                                                                           \
    if (rc == MPI_SUCCESS) {                                                                          \
        pending_add(win, target_rank, r);                                                             \
        requests_add(*request, r, MPI_COMM_NULL);                                                     \
    }                                                                                                 \
    return rc;

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    ONE_SIDED(K_PUT, 0, origin_count, origin_datatype,
              PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                       target_count, target_datatype, win))
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    ONE_SIDED(K_GET, 0, origin_count, origin_datatype,
              PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                       target_count, target_datatype, win))
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    ONE_SIDED(K_ACCUMULATE, 0, origin_count, origin_datatype,
              PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                              target_count, target_datatype, op, win))
}

int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       void *result_addr, int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    ONE_SIDED(K_GET_ACCUMULATE, 0, result_count, result_datatype,
              PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr,
                                  result_count, result_datatype, target_rank, target_disp,
                                  target_count, target_datatype, op, win))
}

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win win, MPI_Request *request)
{
    REQUEST_ONE_SIDED(K_RPUT, 0, origin_count, origin_datatype,
                      PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank,
                                target_disp, target_count, target_datatype, win, request))
}

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
             MPI_Request *request)
{
    REQUEST_ONE_SIDED(K_RGET, 0, origin_count, origin_datatype,
                      PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank,
                                target_disp, target_count, target_datatype, win, request))
}

int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    REQUEST_ONE_SIDED(K_RACCUMULATE, 0, origin_count, origin_datatype,
                      PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank,
                                       target_disp, target_count, target_datatype, op, win, request))
}

int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        void *result_addr, int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    REQUEST_ONE_SIDED(K_RGET_ACCUMULATE, 0, result_count, result_datatype,
                      PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr,
                                           result_count, result_datatype, target_rank, target_disp,
                                           target_count, target_datatype, op, win, request))
}

/* One element each way (Compare_and_swap's compare value is not counted). */
int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                     MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    ONE_SIDED(K_FETCH_AND_OP, 0, 1, datatype,
              PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp, op, win))
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                         MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
    ONE_SIDED(K_COMPARE_AND_SWAP, 0, 1, datatype,
              PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype, target_rank,
                                    target_disp, win))
}

#if MPI_VERSION >= 4
int MPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win)
{
    ONE_SIDED(K_PUT, F_LARGE_COUNT, origin_count, origin_datatype,
              PMPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win))
}

int MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win)
{
    ONE_SIDED(K_GET, F_LARGE_COUNT, origin_count, origin_datatype,
              PMPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win))
}

int MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    ONE_SIDED(K_ACCUMULATE, F_LARGE_COUNT, origin_count, origin_datatype,
              PMPI_Accumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                target_disp, target_count, target_datatype, op, win))
}

int MPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                         MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                         MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                         MPI_Win win)
{
    ONE_SIDED(K_GET_ACCUMULATE, F_LARGE_COUNT, result_count, result_datatype,
              PMPI_Get_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                    result_count, result_datatype, target_rank, target_disp,
                                    target_count, target_datatype, op, win))
}

int MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    REQUEST_ONE_SIDED(K_RPUT, F_LARGE_COUNT, origin_count, origin_datatype,
                      PMPI_Rput_c(origin_addr, origin_count, origin_datatype, target_rank,
                                  target_disp, target_count, target_datatype, win, request))
}

int MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    REQUEST_ONE_SIDED(K_RGET, F_LARGE_COUNT, origin_count, origin_datatype,
                      PMPI_Rget_c(origin_addr, origin_count, origin_datatype, target_rank,
                                  target_disp, target_count, target_datatype, win, request))
}

int MPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                      int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                      MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    REQUEST_ONE_SIDED(K_RACCUMULATE, F_LARGE_COUNT, origin_count, origin_datatype,
                      PMPI_Raccumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                         target_disp, target_count, target_datatype, op, win, request))
}

int MPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                          MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                          MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win win, MPI_Request *request)
{
    REQUEST_ONE_SIDED(K_RGET_ACCUMULATE, F_LARGE_COUNT, result_count, result_datatype,
                      PMPI_Rget_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                             result_count, result_datatype, target_rank, target_disp,
                                             target_count, target_datatype, op, win, request))
}
#endif

/* A synchronisation call: a region, and the one-sided ops of (win, target) it completes. */
#define SYNC(KIND, TARGET, COMPLETES, CALL)                                                           \
    trace_record *r = record_begin(KIND, __builtin_return_address(0));                               \
    if (r)                                                                                            \
        r->tag = win_id(win);                                                                         \
    if (r && (TARGET) != MPI_ANY_SOURCE)                                                              \
        r->peer = world_of_win(win, TARGET);                                                          \
    int rc = CALL;                                                                                    \
    int64_t now = COMPLETES ? completion_stamp() : stamp();                                           \
    if (r)                                                                                            \
        r->returned = r->completed = now;                                                             \
    if (COMPLETES && tracer.on && rc == MPI_SUCCESS)                                                  \
        pending_complete(win, TARGET, now);                                                           \
    return rc;

int MPI_Win_fence(int assert, MPI_Win win)
{
    SYNC(K_FENCE, MPI_ANY_SOURCE, 1, PMPI_Win_fence(assert, win))
}

int MPI_Win_flush(int rank, MPI_Win win)
{
    SYNC(K_FLUSH, rank, 1, PMPI_Win_flush(rank, win))
}

int MPI_Win_flush_all(MPI_Win win)
{
    SYNC(K_FLUSH_ALL, MPI_ANY_SOURCE, 1, PMPI_Win_flush_all(win))
}

/* Local completion: the origin buffer is free again; for a get, the data has arrived. */
int MPI_Win_flush_local(int rank, MPI_Win win)
{
    SYNC(K_FLUSH_LOCAL, rank, 1, PMPI_Win_flush_local(rank, win))
}

int MPI_Win_flush_local_all(MPI_Win win)
{
    SYNC(K_FLUSH_LOCAL_ALL, MPI_ANY_SOURCE, 1, PMPI_Win_flush_local_all(win))
}

/* bytes: 1 for an exclusive lock, 0 for a shared one */
int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    trace_record *r = record_begin(K_LOCK, __builtin_return_address(0));
    if (r) {
        r->tag = win_id(win);
        r->peer = world_of_win(win, rank);
        r->bytes = lock_type == MPI_LOCK_EXCLUSIVE;
    }
    int rc = PMPI_Win_lock(lock_type, rank, assert, win);
    if (r)
        r->returned = r->completed = stamp();
    return rc;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
    SYNC(K_UNLOCK, rank, 1, PMPI_Win_unlock(rank, win))
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
    SYNC(K_LOCK_ALL, MPI_ANY_SOURCE, 0, PMPI_Win_lock_all(assert, win))
}

int MPI_Win_unlock_all(MPI_Win win)
{
    SYNC(K_UNLOCK_ALL, MPI_ANY_SOURCE, 1, PMPI_Win_unlock_all(win))
}

/* Post and start: a region whose group's world ranks go to the per-record table (bytes: its size),
 * read after the call so the region is MPI's time alone. */
#define EPOCH_OPEN(KIND, CALL)                                                                        \
    trace_record *r = record_begin(KIND, __builtin_return_address(0));                               \
    int rc = CALL;                                                                                    \
    if (r) {                                                                                          \
        r->returned = r->completed = stamp();                                                        \
        r->tag = win_id(win);                                                                         \
        int n = 0;                                                                                    \
        PMPI_Group_size(group, &n);                                                                   \
        r->bytes = n;                                                                                 \
        int64_t *members = per_record_add(r, (uint64_t)n, 0);                                         \
        if (members)                                                                                  \
            world_of_group(group, n, members);                                                        \
    }                                                                                                 \
    return rc;

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    EPOCH_OPEN(K_WIN_POST, PMPI_Win_post(group, assert, win))
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    EPOCH_OPEN(K_WIN_START, PMPI_Win_start(group, assert, win))
}

/* Ends the access epoch: its operations are complete at their targets. */
int MPI_Win_complete(MPI_Win win)
{
    SYNC(K_WIN_COMPLETE, MPI_ANY_SOURCE, 1, PMPI_Win_complete(win))
}

int MPI_Win_wait(MPI_Win win)
{
    SYNC(K_WIN_WAIT, MPI_ANY_SOURCE, 0, PMPI_Win_wait(win))
}

/* A Win_test that found the exposure epoch over is its Win_wait; one that did not leaves no record (a
 * polling loop's would fill the buffer). */
int MPI_Win_test(MPI_Win win, int *flag)
{
    int64_t entry = tracer.on ? stamp() : 0;
    int rc = PMPI_Win_test(win, flag);
    if (rc != MPI_SUCCESS || !*flag)
        return rc;
    trace_record *r = record_begin(K_WIN_WAIT, __builtin_return_address(0));
    if (r) {
        r->posted = entry;
        r->tag = win_id(win);
        r->returned = r->completed = stamp();
    }
    return rc;
}

/* Freeing a window completes what is left on it (MPI requires it synchronised) and forgets its group
 * and id (a region: tag the window's id). */
int MPI_Win_free(MPI_Win *win)
{
    trace_record *r = record_begin(K_WIN_FREE, __builtin_return_address(0));
    if (tracer.on) {
        pending_complete(*win, MPI_ANY_SOURCE, stamp());
        forget_win(*win);
        int32_t id = win_remove(*win);
        if (r)
            r->tag = id;
    }
    int rc = PMPI_Win_free(win);
    if (r)
        r->returned = r->completed = stamp();
    return rc;
}

/* A window's creation (collective over comm): a region whose tag is the communicator's id and bytes
 * the new window's; FLAGS F_MPI_MEMORY where MPI allocated the memory. */
#define WIN_CREATE(FLAGS, CALL)                                                                       \
    int32_t comm_ident = tracer.on ? comm_id(comm) : -1;                                              \
    trace_record *r = record_begin(K_WIN_CREATE, __builtin_return_address(0));                       \
    int rc = CALL;                                                                                    \
    int32_t id = rc == MPI_SUCCESS && tracer.on ? win_add(*win) : 0;                                  \
    if (r) {                                                                                          \
        r->tag = comm_ident;                                                                          \
        r->bytes = id;                                                                                \
        r->flags |= FLAGS;                                                                            \
        r->returned = r->completed = stamp();                                                         \
    }                                                                                                 \
    return rc;

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    WIN_CREATE(0, PMPI_Win_create(base, size, disp_unit, info, comm, win))
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)
{
    WIN_CREATE(F_MPI_MEMORY, PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win))
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                            MPI_Win *win)
{
    WIN_CREATE(F_MPI_MEMORY, PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win))
}

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    WIN_CREATE(0, PMPI_Win_create_dynamic(info, comm, win))
}

#if MPI_VERSION >= 4
int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    WIN_CREATE(0, PMPI_Win_create_c(base, size, disp_unit, info, comm, win))
}

int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                       MPI_Win *win)
{
    WIN_CREATE(F_MPI_MEMORY, PMPI_Win_allocate_c(size, disp_unit, info, comm, baseptr, win))
}

int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                              MPI_Win *win)
{
    WIN_CREATE(F_MPI_MEMORY, PMPI_Win_allocate_shared_c(size, disp_unit, info, comm, baseptr, win))
}
#endif
