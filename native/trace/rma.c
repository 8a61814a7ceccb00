/* One-sided: MPI_Put, Get, Accumulate, Get_accumulate, Rput, Rget (classic and large-count). Each is
 * one record, src = this rank (the initiator), peer = the target's world rank. It completes when a
 * flush, flush_local, unlock or fence of its window covering its target returns (Rput/Rget: or the
 * Wait/Test of its request, whichever comes first). The synchronisation calls are recorded as regions.
 * An operation on MPI_PROC_NULL moves nothing: not recorded. */
#include "trace.h"

#define ONE_SIDED(KIND, FLAGS, COUNT, TYPE, CALL)                                                     \
    trace_record *r =                                                                                 \
        target_rank == MPI_PROC_NULL ? 0 : record_begin(KIND, __builtin_return_address(0));         \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    r->bytes = type_bytes(TYPE, (int64_t)(COUNT));                                                    \
    r->peer = world_of_win(win, target_rank);                                                         \
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
#endif

/* A synchronisation call: a region, and the one-sided ops of (win, target) it completes. */
#define SYNC(KIND, TARGET, COMPLETES, CALL)                                                           \
    trace_record *r = record_begin(KIND, __builtin_return_address(0));                               \
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

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    SYNC(K_LOCK, rank, 0, PMPI_Win_lock(lock_type, rank, assert, win))
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

/* Freeing a window completes what is left on it (MPI requires it synchronised) and forgets its group. */
int MPI_Win_free(MPI_Win *win)
{
    if (tracer.on) {
        pending_complete(*win, MPI_ANY_SOURCE, stamp());
        forget_win(*win);
    }
    return PMPI_Win_free(win);
}
