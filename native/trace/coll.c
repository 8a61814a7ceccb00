/* Collectives, recorded as regions (entry to return): Barrier, Bcast, Allreduce, Reduce, Alltoall,
 * Allgather, Gather, Scatter, and the large-count forms. bytes: this rank's contribution (send count
 * times its type's size; for Bcast the buffer); peer: the root's world rank for rooted ones. */
#include "trace.h"

#define REGION(KIND, FLAGS, BYTES, ROOT, CALL)                                                        \
    trace_record *r = record_begin(KIND, __builtin_return_address(0));                               \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    r->bytes = BYTES;                                                                                 \
    r->peer = world_of_comm(comm, ROOT);                                                              \
    int rc = CALL;                                                                                    \
    r->returned = r->completed = stamp();                                                            \
    return rc;

/* MPI_IN_PLACE sends nothing of its own type: count the receive side instead. */
#define SENT(SBUF, SCOUNT, STYPE, RCOUNT, RTYPE)                                                      \
    ((SBUF) == MPI_IN_PLACE ? type_bytes(RTYPE, (int64_t)(RCOUNT)) : type_bytes(STYPE, (int64_t)(SCOUNT)))

int MPI_Barrier(MPI_Comm comm)
{
    REGION(K_BARRIER, 0, 0, -1, PMPI_Barrier(comm))
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    REGION(K_BCAST, 0, type_bytes(datatype, count), root, PMPI_Bcast(buffer, count, datatype, root, comm))
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    REGION(K_ALLREDUCE, 0, type_bytes(datatype, count), -1,
           PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm))
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    REGION(K_REDUCE, 0, type_bytes(datatype, count), root,
           PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm))
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    REGION(K_ALLTOALL, 0, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), -1,
           PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    REGION(K_ALLGATHER, 0, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), -1,
           PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    REGION(K_GATHER, 0, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), root,
           PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    REGION(K_SCATTER, 0, type_bytes(recvtype, recvcount), root,
           PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
}

#if MPI_VERSION >= 4
int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    REGION(K_BCAST, F_LARGE_COUNT, type_bytes(datatype, count), root,
           PMPI_Bcast_c(buffer, count, datatype, root, comm))
}

int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm)
{
    REGION(K_ALLREDUCE, F_LARGE_COUNT, type_bytes(datatype, count), -1,
           PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm))
}

int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm)
{
    REGION(K_REDUCE, F_LARGE_COUNT, type_bytes(datatype, count), root,
           PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm))
}

int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    REGION(K_ALLTOALL, F_LARGE_COUNT, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), -1,
           PMPI_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
}

int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    REGION(K_ALLGATHER, F_LARGE_COUNT, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), -1,
           PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
}

int MPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    REGION(K_GATHER, F_LARGE_COUNT, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), root,
           PMPI_Gather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
}

int MPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    REGION(K_SCATTER, F_LARGE_COUNT, type_bytes(recvtype, recvcount), root,
           PMPI_Scatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
}
#endif
