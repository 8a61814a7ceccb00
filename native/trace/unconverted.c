/* The calls the converter has no algorithm for: Alltoallw and Ialltoallw, the neighborhood collectives
 * (blocking and not) and the persistent collectives' inits (MPI 4), each in its `_c` form too. Each is
 * one region of kind K_UNCONVERTED, its `bytes` the call's code (trace.h), so that a conversion names
 * what it left out (their time counts as computation) instead of losing it without a word. */
#include "trace.h"

/* The region: bytes the code, FLAGS F_LARGE_COUNT for a `_c` entry point (untraced: just the call). */
#define UNCONVERTED(CODE, FLAGS, CALL)                                                                \
    trace_record *r = record_begin(K_UNCONVERTED, __builtin_return_address(0));                      \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    r->bytes = CODE;                                                                                  \
    int rc = CALL;                                                                                    \
    r->returned = r->completed = stamp();                                                             \
    return rc;

int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    UNCONVERTED(U_ALLTOALLW, 0, PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                               rdispls, recvtypes, comm))
}

int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)
{
    UNCONVERTED(U_IALLTOALLW, 0, PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                                 recvcounts, rdispls, recvtypes, comm, request))
}

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLGATHER, 0, PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                                                 recvcount, recvtype, comm))
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                            MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLGATHERV, 0, PMPI_Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                                                   recvcounts, displs, recvtype, comm))
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALL, 0, PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                                               recvcount, recvtype, comm))
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                           MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALLV, 0, PMPI_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype,
                                                                 recvbuf, recvcounts, rdispls, recvtype,
                                                                 comm))
}

int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALLW, 0, PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes,
                                                                 recvbuf, recvcounts, rdispls, recvtypes,
                                                                 comm))
}

int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLGATHER, 0, PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                                                   recvcount, recvtype, comm, request))
}

int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLGATHERV, 0, PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                                                     recvcounts, displs, recvtype, comm,
                                                                     request))
}

int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLTOALL, 0, PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                                                 recvcount, recvtype, comm, request))
}

int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLTOALLV, 0, PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype,
                                                                   recvbuf, recvcounts, rdispls, recvtype,
                                                                   comm, request))
}

int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLTOALLW, 0, PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes,
                                                                   recvbuf, recvcounts, rdispls, recvtypes,
                                                                   comm, request))
}

#if MPI_VERSION >= 4
int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    UNCONVERTED(U_ALLGATHER_INIT, 0, PMPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                         recvtype, comm, info, request))
}

int MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_ALLGATHERV_INIT, 0, PMPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                                           displs, recvtype, comm, info, request))
}

int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_ALLREDUCE_INIT, 0, PMPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info,
                                                         request))
}

int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                      MPI_Request *request)
{
    UNCONVERTED(U_ALLTOALL_INIT, 0, PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                       recvtype, comm, info, request))
}

int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_ALLTOALLV_INIT, 0, PMPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                                         recvcounts, rdispls, recvtype, comm, info, request))
}

int MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    UNCONVERTED(U_ALLTOALLW_INIT, 0, PMPI_Alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                                         recvcounts, rdispls, recvtypes, comm, info, request))
}

int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_BARRIER_INIT, 0, PMPI_Barrier_init(comm, info, request))
}

int MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
                   MPI_Request *request)
{
    UNCONVERTED(U_BCAST_INIT, 0, PMPI_Bcast_init(buffer, count, datatype, root, comm, info, request))
}

int MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_EXSCAN_INIT, 0, PMPI_Exscan_init(sendbuf, recvbuf, count, datatype, op, comm, info,
                                                   request))
}

int MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                    MPI_Request *request)
{
    UNCONVERTED(U_GATHER_INIT, 0, PMPI_Gather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                   recvtype, root, comm, info, request))
}

int MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                     MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_GATHERV_INIT, 0, PMPI_Gatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                                     displs, recvtype, root, comm, info, request))
}

int MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_REDUCE_INIT, 0, PMPI_Reduce_init(sendbuf, recvbuf, count, datatype, op, root, comm, info,
                                                   request))
}

int MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request)
{
    UNCONVERTED(U_REDUCE_SCATTER_INIT, 0, PMPI_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype,
                                                                   op, comm, info, request))
}

int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                  MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_REDUCE_SCATTER_BLOCK_INIT, 0, PMPI_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount,
                                                                               datatype, op, comm, info,
                                                                               request))
}

int MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_SCAN_INIT, 0, PMPI_Scan_init(sendbuf, recvbuf, count, datatype, op, comm, info, request))
}

int MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request *request)
{
    UNCONVERTED(U_SCATTER_INIT, 0, PMPI_Scatter_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                     recvtype, root, comm, info, request))
}

int MPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_SCATTERV_INIT, 0, PMPI_Scatterv_init(sendbuf, sendcounts, displs, sendtype, recvbuf,
                                                       recvcount, recvtype, root, comm, info, request))
}

int MPI_Neighbor_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLGATHER_INIT, 0, PMPI_Neighbor_allgather_init(sendbuf, sendcount, sendtype,
                                                                           recvbuf, recvcount, recvtype,
                                                                           comm, info, request))
}

int MPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                 MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLGATHERV_INIT, 0, PMPI_Neighbor_allgatherv_init(sendbuf, sendcount, sendtype,
                                                                             recvbuf, recvcounts, displs,
                                                                             recvtype, comm, info, request))
}

int MPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                               MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALL_INIT, 0, PMPI_Neighbor_alltoall_init(sendbuf, sendcount, sendtype,
                                                                         recvbuf, recvcount, recvtype, comm,
                                                                         info, request))
}

int MPI_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALLV_INIT, 0, PMPI_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls,
                                                                           sendtype, recvbuf, recvcounts,
                                                                           rdispls, recvtype, comm, info,
                                                                           request))
}

int MPI_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALLW_INIT, 0, PMPI_Neighbor_alltoallw_init(sendbuf, sendcounts, sdispls,
                                                                           sendtypes, recvbuf, recvcounts,
                                                                           rdispls, recvtypes, comm, info,
                                                                           request))
}

int MPI_Alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    UNCONVERTED(U_ALLTOALLW, F_LARGE_COUNT, PMPI_Alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes,
                                                             recvbuf, recvcounts, rdispls, recvtypes, comm))
}

int MPI_Ialltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                     MPI_Request *request)
{
    UNCONVERTED(U_IALLTOALLW, F_LARGE_COUNT, PMPI_Ialltoallw_c(sendbuf, sendcounts, sdispls, sendtypes,
                                                               recvbuf, recvcounts, rdispls, recvtypes, comm,
                                                               request))
}

int MPI_Neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLGATHER, F_LARGE_COUNT, PMPI_Neighbor_allgather_c(sendbuf, sendcount, sendtype,
                                                                               recvbuf, recvcount, recvtype,
                                                                               comm))
}

int MPI_Neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                              MPI_Datatype recvtype, MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLGATHERV, F_LARGE_COUNT, PMPI_Neighbor_allgatherv_c(sendbuf, sendcount,
                                                                                 sendtype, recvbuf,
                                                                                 recvcounts, displs,
                                                                                 recvtype, comm))
}

int MPI_Neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                            MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALL, F_LARGE_COUNT, PMPI_Neighbor_alltoall_c(sendbuf, sendcount, sendtype,
                                                                             recvbuf, recvcount, recvtype,
                                                                             comm))
}

int MPI_Neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                             MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                             const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALLV, F_LARGE_COUNT, PMPI_Neighbor_alltoallv_c(sendbuf, sendcounts, sdispls,
                                                                               sendtype, recvbuf, recvcounts,
                                                                               rdispls, recvtype, comm))
}

int MPI_Neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                             const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                             const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALLW, F_LARGE_COUNT, PMPI_Neighbor_alltoallw_c(sendbuf, sendcounts, sdispls,
                                                                               sendtypes, recvbuf,
                                                                               recvcounts, rdispls,
                                                                               recvtypes, comm))
}

int MPI_Ineighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLGATHER, F_LARGE_COUNT, PMPI_Ineighbor_allgather_c(sendbuf, sendcount,
                                                                                 sendtype, recvbuf,
                                                                                 recvcount, recvtype, comm,
                                                                                 request))
}

int MPI_Ineighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLGATHERV, F_LARGE_COUNT, PMPI_Ineighbor_allgatherv_c(sendbuf, sendcount,
                                                                                   sendtype, recvbuf,
                                                                                   recvcounts, displs,
                                                                                   recvtype, comm, request))
}

int MPI_Ineighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLTOALL, F_LARGE_COUNT, PMPI_Ineighbor_alltoall_c(sendbuf, sendcount, sendtype,
                                                                               recvbuf, recvcount, recvtype,
                                                                               comm, request))
}

int MPI_Ineighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                              MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                              const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLTOALLV, F_LARGE_COUNT, PMPI_Ineighbor_alltoallv_c(sendbuf, sendcounts,
                                                                                 sdispls, sendtype, recvbuf,
                                                                                 recvcounts, rdispls,
                                                                                 recvtype, comm, request))
}

int MPI_Ineighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                              const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                              const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                              MPI_Request *request)
{
    UNCONVERTED(U_INEIGHBOR_ALLTOALLW, F_LARGE_COUNT, PMPI_Ineighbor_alltoallw_c(sendbuf, sendcounts,
                                                                                 sdispls, sendtypes, recvbuf,
                                                                                 recvcounts, rdispls,
                                                                                 recvtypes, comm, request))
}

int MPI_Allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                         MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    UNCONVERTED(U_ALLGATHER_INIT, F_LARGE_COUNT, PMPI_Allgather_init_c(sendbuf, sendcount, sendtype, recvbuf,
                                                                       recvcount, recvtype, comm, info,
                                                                       request))
}

int MPI_Allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                          MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_ALLGATHERV_INIT, F_LARGE_COUNT, PMPI_Allgatherv_init_c(sendbuf, sendcount, sendtype,
                                                                         recvbuf, recvcounts, displs,
                                                                         recvtype, comm, info, request))
}

int MPI_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_ALLREDUCE_INIT, F_LARGE_COUNT, PMPI_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op,
                                                                       comm, info, request))
}

int MPI_Alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request)
{
    UNCONVERTED(U_ALLTOALL_INIT, F_LARGE_COUNT, PMPI_Alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf,
                                                                     recvcount, recvtype, comm, info,
                                                                     request))
}

int MPI_Alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                         MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                         const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    UNCONVERTED(U_ALLTOALLV_INIT, F_LARGE_COUNT, PMPI_Alltoallv_init_c(sendbuf, sendcounts, sdispls,
                                                                       sendtype, recvbuf, recvcounts,
                                                                       rdispls, recvtype, comm, info,
                                                                       request))
}

int MPI_Alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                         const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                         const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                         MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_ALLTOALLW_INIT, F_LARGE_COUNT, PMPI_Alltoallw_init_c(sendbuf, sendcounts, sdispls,
                                                                       sendtypes, recvbuf, recvcounts,
                                                                       rdispls, recvtypes, comm, info,
                                                                       request))
}

int MPI_Bcast_init_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_BCAST_INIT, F_LARGE_COUNT, PMPI_Bcast_init_c(buffer, count, datatype, root, comm, info,
                                                               request))
}

int MPI_Exscan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_EXSCAN_INIT, F_LARGE_COUNT, PMPI_Exscan_init_c(sendbuf, recvbuf, count, datatype, op, comm,
                                                                 info, request))
}

int MPI_Gather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                      MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                      MPI_Request *request)
{
    UNCONVERTED(U_GATHER_INIT, F_LARGE_COUNT, PMPI_Gather_init_c(sendbuf, sendcount, sendtype, recvbuf,
                                                                 recvcount, recvtype, root, comm, info,
                                                                 request))
}

int MPI_Gatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                       const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                       int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_GATHERV_INIT, F_LARGE_COUNT, PMPI_Gatherv_init_c(sendbuf, sendcount, sendtype, recvbuf,
                                                                   recvcounts, displs, recvtype, root, comm,
                                                                   info, request))
}

int MPI_Reduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_REDUCE_INIT, F_LARGE_COUNT, PMPI_Reduce_init_c(sendbuf, recvbuf, count, datatype, op, root,
                                                                 comm, info, request))
}

int MPI_Reduce_scatter_init_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request)
{
    UNCONVERTED(U_REDUCE_SCATTER_INIT, F_LARGE_COUNT, PMPI_Reduce_scatter_init_c(sendbuf, recvbuf,
                                                                                 recvcounts, datatype, op,
                                                                                 comm, info, request))
}

int MPI_Reduce_scatter_block_init_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request)
{
    UNCONVERTED(U_REDUCE_SCATTER_BLOCK_INIT, F_LARGE_COUNT, PMPI_Reduce_scatter_block_init_c(sendbuf,
                                                                                             recvbuf,
                                                                                             recvcount,
                                                                                             datatype, op,
                                                                                             comm, info,
                                                                                             request))
}

int MPI_Scan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_SCAN_INIT, F_LARGE_COUNT, PMPI_Scan_init_c(sendbuf, recvbuf, count, datatype, op, comm,
                                                             info, request))
}

int MPI_Scatter_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                       MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    UNCONVERTED(U_SCATTER_INIT, F_LARGE_COUNT, PMPI_Scatter_init_c(sendbuf, sendcount, sendtype, recvbuf,
                                                                   recvcount, recvtype, root, comm, info,
                                                                   request))
}

int MPI_Scatterv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                        int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_SCATTERV_INIT, F_LARGE_COUNT, PMPI_Scatterv_init_c(sendbuf, sendcounts, displs, sendtype,
                                                                     recvbuf, recvcount, recvtype, root,
                                                                     comm, info, request))
}

int MPI_Neighbor_allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                  MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLGATHER_INIT, F_LARGE_COUNT, PMPI_Neighbor_allgather_init_c(sendbuf, sendcount,
                                                                                         sendtype, recvbuf,
                                                                                         recvcount, recvtype,
                                                                                         comm, info, request))
}

int MPI_Neighbor_allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                   MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLGATHERV_INIT, F_LARGE_COUNT, PMPI_Neighbor_allgatherv_init_c(sendbuf,
                                                                                           sendcount,
                                                                                           sendtype, recvbuf,
                                                                                           recvcounts,
                                                                                           displs, recvtype,
                                                                                           comm, info,
                                                                                           request))
}

int MPI_Neighbor_alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALL_INIT, F_LARGE_COUNT, PMPI_Neighbor_alltoall_init_c(sendbuf, sendcount,
                                                                                       sendtype, recvbuf,
                                                                                       recvcount, recvtype,
                                                                                       comm, info, request))
}

int MPI_Neighbor_alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                  const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                  const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALLV_INIT, F_LARGE_COUNT, PMPI_Neighbor_alltoallv_init_c(sendbuf, sendcounts,
                                                                                         sdispls, sendtype,
                                                                                         recvbuf, recvcounts,
                                                                                         rdispls, recvtype,
                                                                                         comm, info, request))
}

int MPI_Neighbor_alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                  const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                                  const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                  const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    UNCONVERTED(U_NEIGHBOR_ALLTOALLW_INIT, F_LARGE_COUNT, PMPI_Neighbor_alltoallw_init_c(sendbuf, sendcounts,
                                                                                         sdispls, sendtypes,
                                                                                         recvbuf, recvcounts,
                                                                                         rdispls, recvtypes,
                                                                                         comm, info, request))
}

#endif
