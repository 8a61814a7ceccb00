/* The throttled one-sided calls (MPI_Put, MPI_Get, MPI_Accumulate, MPI_Get_accumulate, MPI_Rput,
 * MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate, and their large-count forms; MPI_Fetch_and_op and
 * MPI_Compare_and_swap, one element), and the synchronisation calls that complete them: flush,
 * flush_local (one target or all) and unlock (one or all) give back the tokens of the ops they cover.
 * Lock calls are followed so the library knows where it may flush on its own (epochs.h); freeing a
 * window forgets it. An op on MPI_PROC_NULL moves nothing and is not throttled, nor is one to a task of
 * this node (nodes.h: the engine admits only traffic that leaves its node). Requests of the R forms also
 * give their tokens back in the Wait/Test calls (complete.c), whichever comes first. The ops that fetch
 * (get-accumulates, fetch-and-op, compare-and-swap) are sized by what comes back, their result, as a
 * Get is: the origin's operand is at most as large and is ignored under MPI_NO_OP. With
 * memory_throttle, every op into another node is first paced at its target node's rate (target_rate.h),
 * under any policy, none included. Under the proxy policy a Put or Get may then be queued for a server
 * of the node instead, and every completing call waits for this task's queued operations first
 * (proxy.c). */
#include "admit.h"
#include "epochs.h"
#include "held.h"
#include "nodes.h"
#include "proxy.h"
#include "target_rate.h"
#include "throttle.h"

/* An op to target_rank of win: paced at its target node's rate first (target_rate.h, under any policy,
 * none included; tokens are not held while it waits for its node), then whether it is admitted: a
 * policy is in force and the target is on another node (one on this node is counted in ops_local and
 * left alone: nodes.h). */
static int paced_then_admitted(int target_rank, MPI_Win win, int64_t count, MPI_Datatype datatype)
{
    int policy = throttling(); /* first: it refuses a call before MPI_Init */
    if (target_rank == MPI_PROC_NULL)
        return 0;
    if (target_rate_on())
        target_rate_pace(target_rank, win, count, datatype);
    if (!policy)
        return 0;
    if (node_of_win_rank(win, target_rank) != nodes_mine())
        return 1;
    throttle.stats.ops_local++;
    return 0;
}

static int32_t admitted(int64_t count, MPI_Datatype datatype)
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
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win);
    int proxied = proxy_put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                            target_count, target_datatype, win);
    if (proxied >= 0) /* queued for a server of the node (proxy.c) */
        return proxied;
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                      target_count, target_datatype, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win);
    int proxied = proxy_get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                            target_count, target_datatype, win);
    if (proxied >= 0) /* queued for a server of the node (proxy.c) */
        return proxied;
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                      target_count, target_datatype, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                               target_count, target_datatype, op, win);
    int32_t tokens = admitted(origin_count, origin_datatype);
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
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                target_count, target_datatype, op, win, request);
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                              target_count, target_datatype, op, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       void *result_addr, int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    if (!paced_then_admitted(target_rank, win, result_count, result_datatype))
        return PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                                   result_datatype, target_rank, target_disp, target_count,
                                   target_datatype, op, win);
    int32_t tokens = admitted(result_count, result_datatype);
    int rc = PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                                 result_datatype, target_rank, target_disp, target_count,
                                 target_datatype, op, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

/* MPI_Rget_accumulate: as MPI_Get_accumulate; its request also gives the tokens back (complete.c). */
int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        void *result_addr, int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
    if (!paced_then_admitted(target_rank, win, result_count, result_datatype))
        return PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr,
                                    result_count, result_datatype, target_rank, target_disp,
                                    target_count, target_datatype, op, win, request);
    int32_t tokens = admitted(result_count, result_datatype);
    int rc = PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                                  result_datatype, target_rank, target_disp, target_count,
                                  target_datatype, op, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                     MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
    if (!paced_then_admitted(target_rank, win, 1, datatype))
        return PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
    int32_t tokens = admitted(1, datatype);
    int rc = PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                         MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
    if (!paced_then_admitted(target_rank, win, 1, datatype))
        return PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype, target_rank,
                                     target_disp, win);
    int32_t tokens = admitted(1, datatype);
    int rc = PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype, target_rank,
                                   target_disp, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win win, MPI_Request *request)
{
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win, request);
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                       target_count, target_datatype, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
             MPI_Request *request)
{
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win, request);
    int32_t tokens = admitted(origin_count, origin_datatype);
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
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win);
    throttle.stats.ops_large_count++;
    int proxied = proxy_put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                            target_count, target_datatype, win);
    if (proxied >= 0)
        return proxied;
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win win)
{
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, win);
    throttle.stats.ops_large_count++;
    int proxied = proxy_get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                            target_count, target_datatype, win);
    if (proxied >= 0)
        return proxied;
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Accumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                 target_disp, target_count, target_datatype, op, win);
    throttle.stats.ops_large_count++;
    int32_t tokens = admitted(origin_count, origin_datatype);
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
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Raccumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                  target_disp, target_count, target_datatype, op, win, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Raccumulate_c(origin_addr, origin_count, origin_datatype, target_rank,
                                target_disp, target_count, target_datatype, op, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                         void *result_addr, MPI_Count result_count, MPI_Datatype result_datatype,
                         int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                         MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
    if (!paced_then_admitted(target_rank, win, result_count, result_datatype))
        return PMPI_Get_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                     result_count, result_datatype, target_rank, target_disp,
                                     target_count, target_datatype, op, win);
    throttle.stats.ops_large_count++;
    int32_t tokens = admitted(result_count, result_datatype);
    int rc = PMPI_Get_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                                   result_datatype, target_rank, target_disp, target_count,
                                   target_datatype, op, win);
    injected(tokens, rc, MPI_REQUEST_NULL, win, target_rank);
    return rc;
}

int MPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                          MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                          MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win win, MPI_Request *request)
{
    if (!paced_then_admitted(target_rank, win, result_count, result_datatype))
        return PMPI_Rget_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                      result_count, result_datatype, target_rank, target_disp,
                                      target_count, target_datatype, op, win, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admitted(result_count, result_datatype);
    int rc = PMPI_Rget_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr,
                                    result_count, result_datatype, target_rank, target_disp,
                                    target_count, target_datatype, op, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Rput_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                           target_count, target_datatype, win, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Rput_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}

int MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    if (!paced_then_admitted(target_rank, win, origin_count, origin_datatype))
        return PMPI_Rget_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                           target_count, target_datatype, win, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admitted(origin_count, origin_datatype);
    int rc = PMPI_Rget_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                         target_count, target_datatype, win, request);
    injected(tokens, rc, made(rc, request), win, target_rank);
    return rc;
}
#endif

int MPI_Win_flush(int rank, MPI_Win win)
{
    if (proxying()) /* the operations queued for servers first */
        proxy_complete(win);
    int rc = PMPI_Win_flush(rank, win);
    if (holding_tokens())
        give_back(held_complete_window(win, rank));
    return rc;
}

int MPI_Win_flush_all(MPI_Win win)
{
    if (proxying()) /* the operations queued for servers first */
        proxy_complete(win);
    int rc = PMPI_Win_flush_all(win);
    if (holding_tokens())
        give_back(held_complete_window(win, MPI_ANY_SOURCE));
    return rc;
}

int MPI_Win_flush_local(int rank, MPI_Win win)
{
    if (proxying()) /* the operations queued for servers first */
        proxy_complete(win);
    int rc = PMPI_Win_flush_local(rank, win);
    if (holding_tokens())
        give_back(held_complete_window(win, rank));
    return rc;
}

int MPI_Win_flush_local_all(MPI_Win win)
{
    if (proxying()) /* the operations queued for servers first */
        proxy_complete(win);
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
    if (rc == MPI_SUCCESS && proxying())
        proxy_lock(win, rank, assert);
    return rc;
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
    int rc = PMPI_Win_lock_all(assert, win);
    if (rc == MPI_SUCCESS && holding_tokens())
        epochs_lock_all(win);
    if (rc == MPI_SUCCESS && proxying())
        proxy_lock_all(win, assert);
    return rc;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
    if (proxying()) /* the operations queued for servers first */
        proxy_complete(win);
    int rc = PMPI_Win_unlock(rank, win);
    if (holding_tokens()) {
        give_back(held_complete_window(win, rank));
        epochs_unlock(win, rank);
    }
    if (proxying())
        proxy_unlock(win, rank);
    return rc;
}

int MPI_Win_unlock_all(MPI_Win win)
{
    if (proxying()) /* the operations queued for servers first */
        proxy_complete(win);
    int rc = PMPI_Win_unlock_all(win);
    if (holding_tokens()) {
        give_back(held_complete_window(win, MPI_ANY_SOURCE));
        epochs_unlock_all(win);
    }
    if (proxying())
        proxy_unlock_all(win);
    return rc;
}

int MPI_Win_free(MPI_Win *win)
{
    if (holding_tokens()) {
        give_back(held_complete_window(*win, MPI_ANY_SOURCE));
        epochs_forget(*win);
    }
    if (proxying()) /* its queued operations, then its shadow (collective, like this call) */
        proxy_window_free(*win);
    return PMPI_Win_free(win);
}
