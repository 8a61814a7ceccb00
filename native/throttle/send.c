/* The throttled point-to-point calls: MPI_Isend and MPI_Issend, in the classic and (MPI 4) the
 * large-count form that mpi4py uses on MPICH; and MPI_Request_free, which can let go of a send the
 * library still counts. A send to MPI_PROC_NULL moves nothing and is not throttled, nor is a send to
 * a task of this node, the task itself included (nodes.h: it never reaches the NIC). The other send
 * modes: send_modes.c, blocking_send.c, persistent.c. */
#include "admit.h"
#include "held.h"
#include "nodes.h"
#include "sends.h"
#include "throttle.h"

peer_kind send_peer(int dest, MPI_Comm comm)
{
    if (!throttling() || dest == MPI_PROC_NULL)
        return PEER_UNTOUCHED;
    return node_of_comm_rank(comm, dest) == nodes_mine() ? PEER_LOCAL : PEER_ADMITTED;
}

int throttled_send(int dest, MPI_Comm comm)
{
    peer_kind peer = send_peer(dest, comm);
    throttle.stats.ops_local += peer == PEER_LOCAL;
    return peer == PEER_ADMITTED;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    if (!throttled_send(dest, comm))
        return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
    return throttled_start(SEND_STANDARD, buf, count, datatype, dest, tag, comm, request);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (!throttled_send(dest, comm))
        return PMPI_Issend(buf, count, datatype, dest, tag, comm, request);
    return throttled_start(SEND_SYNCHRONOUS, buf, count, datatype, dest, tag, comm, request);
}

#if MPI_VERSION >= 4
int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request *request)
{
    if (!throttled_send(dest, comm))
        return PMPI_Isend_c(buf, count, datatype, dest, tag, comm, request);
    throttle.stats.ops_large_count++;
    return throttled_start(SEND_STANDARD, buf, count, datatype, dest, tag, comm, request);
}

int MPI_Issend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request)
{
    if (!throttled_send(dest, comm))
        return PMPI_Issend_c(buf, count, datatype, dest, tag, comm, request);
    throttle.stats.ops_large_count++;
    return throttled_start(SEND_SYNCHRONOUS, buf, count, datatype, dest, tag, comm, request);
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
