/* The throttled point-to-point calls: MPI_Isend and MPI_Issend, in the classic and (MPI 4) the
 * large-count form that mpi4py uses on MPICH; and MPI_Request_free, which can let go of a send the
 * library still counts. A send to MPI_PROC_NULL moves nothing and is not throttled, nor is a send to
 * the task itself (see to_self). The other send modes: send_modes.c, blocking_send.c, persistent.c. */
#include "admit.h"
#include "held.h"
#include "sends.h"
#include "throttle.h"

/* A send to the task itself never reaches the NIC, and its receive can only be posted by this task
 * after the send returns: a token it held could come back only through the stall escape, so each
 * such send beyond the pool's tokens cost a full stall (mpi4py's own tests, on one rank: minutes). */
static int to_self(int dest, MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD)
        return dest == throttle.rank;
    int inter = 0, me = -1;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) /* dest is a rank of the other group */
        return 0;
    PMPI_Comm_rank(comm, &me);
    return dest == me;
}

int throttled_send(int dest, MPI_Comm comm)
{
    return throttling() && dest != MPI_PROC_NULL && !to_self(dest, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    if (!throttling() || dest == MPI_PROC_NULL || to_self(dest, comm))
        return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
    int32_t tokens = admit(count, datatype);
    int rc = PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
    injected(tokens, rc, rc == MPI_SUCCESS ? *request : MPI_REQUEST_NULL, MPI_WIN_NULL, dest);
    return rc;
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (!throttling() || dest == MPI_PROC_NULL || to_self(dest, comm))
        return PMPI_Issend(buf, count, datatype, dest, tag, comm, request);
    int32_t tokens = admit(count, datatype);
    int rc = PMPI_Issend(buf, count, datatype, dest, tag, comm, request);
    injected(tokens, rc, rc == MPI_SUCCESS ? *request : MPI_REQUEST_NULL, MPI_WIN_NULL, dest);
    return rc;
}

#if MPI_VERSION >= 4
int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request *request)
{
    if (!throttling() || dest == MPI_PROC_NULL || to_self(dest, comm))
        return PMPI_Isend_c(buf, count, datatype, dest, tag, comm, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admit(count, datatype);
    int rc = PMPI_Isend_c(buf, count, datatype, dest, tag, comm, request);
    injected(tokens, rc, rc == MPI_SUCCESS ? *request : MPI_REQUEST_NULL, MPI_WIN_NULL, dest);
    return rc;
}

int MPI_Issend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request)
{
    if (!throttling() || dest == MPI_PROC_NULL || to_self(dest, comm))
        return PMPI_Issend_c(buf, count, datatype, dest, tag, comm, request);
    throttle.stats.ops_large_count++;
    int32_t tokens = admit(count, datatype);
    int rc = PMPI_Issend_c(buf, count, datatype, dest, tag, comm, request);
    injected(tokens, rc, rc == MPI_SUCCESS ? *request : MPI_REQUEST_NULL, MPI_WIN_NULL, dest);
    return rc;
}
#endif

/* A freed request is never seen again: its tokens go back now, even if its send is still moving. */
int MPI_Request_free(MPI_Request *request)
{
    MPI_Request before = *request;
    int rc = PMPI_Request_free(request);
    persistent_forget(before);
    if (held.live > 0)
        give_back(held_complete_request(before));
    return rc;
}
