/* The throttled one-sided calls (MPI_Put, MPI_Get, MPI_Accumulate, MPI_Rput, MPI_Rget, and their
 * large-count forms), and the synchronisation calls that complete them: flush, flush_local (one
 * target or all) and unlock (one or all) give back the tokens of the ops they cover. Lock calls are
 * followed so the library knows where it may flush on its own (epochs.h); freeing a window forgets it.
 * An op on MPI_PROC_NULL moves nothing and is not throttled. Requests of MPI_Rput and MPI_Rget also
 * give their tokens back in the Wait/Test calls (complete.c), whichever comes first. */
#include "admit.h"
#include "epochs.h"
#include "held.h"
#include "throttle.h"

static int32_t admit_one_sided(int64_t count, MPI_Datatype datatype)
{
    throttle.stats.ops_one_sided++;
    return admit(count, datatype);
}

static MPI_Request made(int rc, const MPI_Request *request)
{
    return rc == MPI_SUCCESS ? *request : MPI_REQUEST_NULL;
}

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win);
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                      target_count, target_datatype, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win);
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                      target_count, target_datatype, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                               target_count, target_datatype, op, win);
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                             target_count, target_datatype, op, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

/* MPI_Raccumulate: as MPI_Accumulate; its request also gives the tokens back (complete.c). */
int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                target_count, target_datatype, op, win, request);
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                              target_count, target_datatype, op, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win win, MPI_Request *request)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win, request);
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                       target_count, target_datatype, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
             MPI_Request *request)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win, request);
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                       target_count, target_datatype, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

#if MPI_VERSION >= 4
int MPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win);
    throttle.stats.ops_large_count++;
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win);
    throttle.stats.ops_large_count++;
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Accumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                 target_disp, target_count, target_datatype, op, win);
    throttle.stats.ops_large_count++;
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Accumulate_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                               target_count, target_datatype, op, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count,
                      MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                      MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                      MPI_Request *request)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Raccumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                  target_disp, target_count, target_datatype, op, win, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Raccumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                target_disp, target_count, target_datatype, op, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Rput_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                           target_count, target_datatype, win, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Rput_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (!throttling() || target_rank == MPI_PROC_NULL)
        return PMPI_Rget_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                           target_count, target_datatype, win, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admit_one_sided(origin_count, origin_datatype);
    int rc = PMPI_Rget_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}
#endif

int MPI_Win_flush(int rank, MPI_Win win)
{
    int rc = PMPI_Win_flush(rank, win);
    if (holding_tokens())
        give_back(held_complete_window(win, rank));
    return rc;
}

int MPI_Win_flush_all(MPI_Win win)
{
    int rc = PMPI_Win_flush_all(win);
    if (holding_tokens())
        give_back(held_complete_window(win, MPI_ANY_SOURCE));
    return rc;
}

int MPI_Win_flush_local(int rank, MPI_Win win)
{
    int rc = PMPI_Win_flush_local(rank, win);
    if (holding_tokens())
        give_back(held_complete_window(win, rank));
    return rc;
}

int MPI_Win_flush_local_all(MPI_Win win)
{
    int rc = PMPI_Win_flush_local_all(win);
    if (holding_tokens())
        give_back(held_complete_window(win, MPI_ANY_SOURCE));
    return rc;
}

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    int rc = PMPI_Win_lock(lock_type, rank, assert, win);
    if (rc == MPI_SUCCESS && holding_tokens())
        epochs_lock(win, rank);
    return rc;
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
    int rc = PMPI_Win_lock_all(assert, win);
    if (rc == MPI_SUCCESS && holding_tokens())
        epochs_lock_all(win);
    return rc;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
    int rc = PMPI_Win_unlock(rank, win);
    if (holding_tokens()) {
        give_back(held_complete_window(win, rank));
        epochs_unlock(win, rank);
    }
    return rc;
}

int MPI_Win_unlock_all(MPI_Win win)
{
    int rc = PMPI_Win_unlock_all(win);
    if (holding_tokens()) {
        give_back(held_complete_window(win, MPI_ANY_SOURCE));
        epochs_unlock_all(win);
    }
    return rc;
}

int MPI_Win_free(MPI_Win *win)
{
    if (holding_tokens()) {
        give_back(held_complete_window(*win, MPI_ANY_SOURCE));
        epochs_forget(*win);
    }
    return PMPI_Win_free(win);
}
