/* Collectives, recorded as regions (entry to return): Barrier, Bcast, Allreduce, Reduce, Alltoall,
 * Allgather, Gather, Scatter, Alltoallv, Allgatherv, Gatherv, Scatterv, Reduce_scatter(_block), Scan,
 * Exscan; their nonblocking forms (Ibarrier, Ibcast, ..., Iscatterv) as operations completed by the
 * Wait/Test of their request; each (but the barriers, which have no count) also in its MPI 4
 * large-count `_c` form, which mpi4py calls on MPICH. bytes: this rank's contribution (send count
 * times its type's size; for Bcast the buffer; for the v-forms the sum of its send counts, for
 * Reduce_scatter the whole vector); peer: the root's world rank for rooted ones; tag: the
 * communicator's id (comms.c; the id is asked for before the buffer is, since agreeing on a new
 * communicator's id is collective). */
#include <stdlib.h>

#include "trace.h"

/* The part every collective wrapper shares: the record with its communicator id in `tag` and the root's
 * world rank in `peer` (untraced: just the call), then the call itself, its result in `rc`. */
#define COLL_CALL(KIND, FLAGS, BYTES, ROOT, CALL)                                                     \
    int32_t id = tracer.on ? comm_id(comm) : -1;                                                      \
    trace_record *r = record_begin(KIND, __builtin_return_address(0));                               \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    r->bytes = BYTES;                                                                                 \
    r->peer = world_of_comm(comm, ROOT);                                                              \
    r->tag = id;                                                                                      \
    int rc = CALL;

#define REGION(KIND, FLAGS, BYTES, ROOT, CALL)                                                        \
    COLL_CALL(KIND, FLAGS, BYTES, ROOT, CALL)                                                       \
    r->returned = r->completed = stamp();                                                            \
    return rc;

#define NONBLOCKING(KIND, FLAGS, BYTES, ROOT, CALL)                                                   \
    COLL_CALL(KIND, FLAGS, BYTES, ROOT, CALL)                                                       \
    r->returned = stamp();                                                                           \
    if (rc == MPI_SUCCESS)                                                                            \
        requests_add(*request, r, comm);                                                              \
    return rc;

/* The sum of counts[0..n) times the type's size (the v-forms; n is the communicator's size). */
#define SUMMED(NAME, COUNT_TYPE)                                                                      \
    static int64_t NAME(MPI_Comm comm, const COUNT_TYPE *counts, MPI_Datatype type)                   \
    {                                                                                                 \
        int n = 0;                                                                                    \
        PMPI_Comm_size(comm, &n);                                                                     \
        int64_t total = 0;                                                                            \
        for (int i = 0; counts && i < n; i++)                                                         \
            total += (int64_t)counts[i];                                                              \
        return type_bytes(type, total);                                                               \
    }
SUMMED(summed, int)
#if MPI_VERSION >= 4
SUMMED(summed_c, MPI_Count)
#endif

/* The v-forms' per-peer sizes, for a converter to send each member what it was sent (the per-record
 * table). Nothing is kept when memory runs out: the converter then spreads the total evenly. */
#define KEEP_SIZES(NAME, COUNT_TYPE)                                                                  \
    static void NAME(const trace_record *r, MPI_Comm comm, const COUNT_TYPE *send, MPI_Datatype stype,  \
                     const COUNT_TYPE *recv, MPI_Datatype rtype)                                       \
    {                                                                                                 \
        int n = 0;                                                                                    \
        PMPI_Comm_size(comm, &n);                                                                     \
        uint64_t ns = send ? (uint64_t)n : 0, nr = recv ? (uint64_t)n : 0;                            \
        int64_t *w = per_record_add(r, ns, nr);                                                       \
        for (uint64_t i = 0; w && i < ns; i++)                                                        \
            *w++ = type_bytes(stype, (int64_t)send[i]);                                               \
        for (uint64_t i = 0; w && i < nr; i++)                                                        \
            *w++ = type_bytes(rtype, (int64_t)recv[i]);                                               \
    }
KEEP_SIZES(keep_sizes, int)
#if MPI_VERSION >= 4
KEEP_SIZES(keep_sizes_c, MPI_Count)
#endif

/* A region of a v-form: REGION, with its per-peer sizes kept once the call succeeded. */
#define V_REGION(KIND, FLAGS, BYTES, ROOT, CALL, KEEP)                                                \
    COLL_CALL(KIND, FLAGS, BYTES, ROOT, CALL)                                                       \
    r->returned = r->completed = stamp();                                                            \
    if (rc == MPI_SUCCESS)                                                                            \
        KEEP;                                                                                         \
    return rc;

/* A nonblocking v-form: its sizes are kept at the call (MPI forbids changing the count arrays before
 * the operation completes, so they are what it moves). */
#define V_NONBLOCKING(KIND, FLAGS, BYTES, ROOT, CALL, KEEP)                                           \
    COLL_CALL(KIND, FLAGS, BYTES, ROOT, CALL)                                                       \
    r->returned = stamp();                                                                           \
    if (rc == MPI_SUCCESS) {                                                                          \
        requests_add(*request, r, comm);                                                              \
        KEEP;                                                                                         \
    }                                                                                                 \
    return rc;


static int rank_in(MPI_Comm comm)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

static int is_root(MPI_Comm comm, int root)
{
    return rank_in(comm) == root;
}

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

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                  MPI_Comm comm)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    V_REGION(K_ALLTOALLV, 0, in_place ? summed(comm, recvcounts, recvtype) : summed(comm, sendcounts, sendtype),
             -1, PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm),
             keep_sizes(r, comm, in_place ? recvcounts : sendcounts, in_place ? recvtype : sendtype, recvcounts,
                        recvtype))
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    V_REGION(K_ALLGATHERV, 0,
             sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcounts[rank_in(comm)]) : type_bytes(sendtype, sendcount),
             -1, PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),
             keep_sizes(r, comm, NULL, MPI_DATATYPE_NULL, recvcounts, recvtype))
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    V_REGION(K_GATHERV, 0, sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount), root,
             PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm),
             is_root(comm, root) ? keep_sizes(r, comm, NULL, MPI_DATATYPE_NULL, recvcounts, recvtype) : (void)0)
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    V_REGION(K_SCATTERV, 0, recvbuf == MPI_IN_PLACE ? 0 : type_bytes(recvtype, recvcount), root,
             PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm),
             is_root(comm, root) ? keep_sizes(r, comm, sendcounts, sendtype, NULL, MPI_DATATYPE_NULL) : (void)0)
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm)
{
    REGION(K_REDUCE_SCATTER, 0, summed(comm, recvcounts, datatype), -1,
           PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm))
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm)
{
    REGION(K_REDUCE_SCATTER_BLOCK, 0, type_bytes(datatype, recvcount), -1,
           PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm))
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    REGION(K_SCAN, 0, type_bytes(datatype, count), -1, PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm))
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    REGION(K_EXSCAN, 0, type_bytes(datatype, count), -1, PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm))
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IBARRIER, 0, 0, -1, PMPI_Ibarrier(comm, request))
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IBCAST, 0, type_bytes(datatype, count), root, PMPI_Ibcast(buffer, count, datatype, root, comm, request))
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IALLREDUCE, 0, type_bytes(datatype, count), -1,
                PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request))
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IREDUCE, 0, type_bytes(datatype, count), root,
                PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request))
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IALLTOALL, 0, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), -1,
                PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request))
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IALLGATHER, 0, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), -1,
                PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request))
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IGATHER, 0, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), root,
                PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request))
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_ISCATTER, 0, type_bytes(recvtype, recvcount), root,
                PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request))
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                   MPI_Comm comm, MPI_Request *request)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    V_NONBLOCKING(K_IALLTOALLV, 0, in_place ? summed(comm, recvcounts, recvtype) : summed(comm, sendcounts, sendtype),
                  -1, PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                      comm, request),
                  keep_sizes(r, comm, in_place ? recvcounts : sendcounts, in_place ? recvtype : sendtype, recvcounts,
                             recvtype))
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request *request)
{
    V_NONBLOCKING(K_IALLGATHERV, 0,
                  sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcounts[rank_in(comm)]) : type_bytes(sendtype, sendcount),
                  -1, PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request),
                  keep_sizes(r, comm, NULL, MPI_DATATYPE_NULL, recvcounts, recvtype))
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    V_NONBLOCKING(K_IGATHERV, 0, sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount), root,
                  PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
                                request),
                  is_root(comm, root) ? keep_sizes(r, comm, NULL, MPI_DATATYPE_NULL, recvcounts, recvtype) : (void)0)
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    V_NONBLOCKING(K_ISCATTERV, 0, recvbuf == MPI_IN_PLACE ? 0 : type_bytes(recvtype, recvcount), root,
                  PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                                 request),
                  is_root(comm, root) ? keep_sizes(r, comm, sendcounts, sendtype, NULL, MPI_DATATYPE_NULL) : (void)0)
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IREDUCE_SCATTER, 0, summed(comm, recvcounts, datatype), -1,
                PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request))
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IREDUCE_SCATTER_BLOCK, 0, type_bytes(datatype, recvcount), -1,
                PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request))
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request *request)
{
    NONBLOCKING(K_ISCAN, 0, type_bytes(datatype, count), -1,
                PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request))
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request *request)
{
    NONBLOCKING(K_IEXSCAN, 0, type_bytes(datatype, count), -1,
                PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request))
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

int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                    MPI_Datatype recvtype, MPI_Comm comm)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    V_REGION(K_ALLTOALLV, F_LARGE_COUNT,
             in_place ? summed_c(comm, recvcounts, recvtype) : summed_c(comm, sendcounts, sendtype), -1,
             PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm),
             keep_sizes_c(r, comm, in_place ? recvcounts : sendcounts, in_place ? recvtype : sendtype, recvcounts,
                          recvtype))
}

int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    V_REGION(K_ALLGATHERV, F_LARGE_COUNT,
             sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcounts[rank_in(comm)]) : type_bytes(sendtype, sendcount),
             -1, PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),
             keep_sizes_c(r, comm, NULL, MPI_DATATYPE_NULL, recvcounts, recvtype))
}

int MPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root,
                  MPI_Comm comm)
{
    V_REGION(K_GATHERV, F_LARGE_COUNT, sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount), root,
             PMPI_Gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm),
             is_root(comm, root) ? keep_sizes_c(r, comm, NULL, MPI_DATATYPE_NULL, recvcounts, recvtype) : (void)0)
}

int MPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                   MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                   MPI_Comm comm)
{
    V_REGION(K_SCATTERV, F_LARGE_COUNT, recvbuf == MPI_IN_PLACE ? 0 : type_bytes(recvtype, recvcount), root,
             PMPI_Scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm),
             is_root(comm, root) ? keep_sizes_c(r, comm, sendcounts, sendtype, NULL, MPI_DATATYPE_NULL) : (void)0)
}

int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm)
{
    REGION(K_REDUCE_SCATTER, F_LARGE_COUNT, summed_c(comm, recvcounts, datatype), -1,
           PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm))
}

int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm)
{
    REGION(K_REDUCE_SCATTER_BLOCK, F_LARGE_COUNT, type_bytes(datatype, recvcount), -1,
           PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm))
}

int MPI_Scan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm)
{
    REGION(K_SCAN, F_LARGE_COUNT, type_bytes(datatype, count), -1,
           PMPI_Scan_c(sendbuf, recvbuf, count, datatype, op, comm))
}

int MPI_Exscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                 MPI_Comm comm)
{
    REGION(K_EXSCAN, F_LARGE_COUNT, type_bytes(datatype, count), -1,
           PMPI_Exscan_c(sendbuf, recvbuf, count, datatype, op, comm))
}

int MPI_Ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    NONBLOCKING(K_IBCAST, F_LARGE_COUNT, type_bytes(datatype, count), root,
                PMPI_Ibcast_c(buffer, count, datatype, root, comm, request))
}

int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                     MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IALLREDUCE, F_LARGE_COUNT, type_bytes(datatype, count), -1,
                PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request))
}

int MPI_Ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                  int root, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IREDUCE, F_LARGE_COUNT, type_bytes(datatype, count), root,
                PMPI_Ireduce_c(sendbuf, recvbuf, count, datatype, op, root, comm, request))
}

int MPI_Ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IALLTOALL, F_LARGE_COUNT, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), -1,
                PMPI_Ialltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request))
}

int MPI_Iallgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IALLGATHER, F_LARGE_COUNT, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), -1,
                PMPI_Iallgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request))
}
int MPI_Igather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IGATHER, F_LARGE_COUNT, SENT(sendbuf, sendcount, sendtype, recvcount, recvtype), root,
                PMPI_Igather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request))
}

int MPI_Iscatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_ISCATTER, F_LARGE_COUNT, type_bytes(recvtype, recvcount), root,
                PMPI_Iscatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request))
}

int MPI_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    V_NONBLOCKING(K_IALLTOALLV, F_LARGE_COUNT,
                  in_place ? summed_c(comm, recvcounts, recvtype) : summed_c(comm, sendcounts, sendtype), -1,
                  PMPI_Ialltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                    comm, request),
                  keep_sizes_c(r, comm, in_place ? recvcounts : sendcounts, in_place ? recvtype : sendtype,
                               recvcounts, recvtype))
}

int MPI_Iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm,
                      MPI_Request *request)
{
    V_NONBLOCKING(K_IALLGATHERV, F_LARGE_COUNT,
                  sendbuf == MPI_IN_PLACE ? type_bytes(recvtype, recvcounts[rank_in(comm)]) : type_bytes(sendtype, sendcount),
                  -1, PMPI_Iallgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                         request),
                  keep_sizes_c(r, comm, NULL, MPI_DATATYPE_NULL, recvcounts, recvtype))
}

int MPI_Igatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root,
                   MPI_Comm comm, MPI_Request *request)
{
    V_NONBLOCKING(K_IGATHERV, F_LARGE_COUNT, sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount), root,
                  PMPI_Igatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
                                  request),
                  is_root(comm, root) ? keep_sizes_c(r, comm, NULL, MPI_DATATYPE_NULL, recvcounts, recvtype) : (void)0)
}

int MPI_Iscatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                    MPI_Comm comm, MPI_Request *request)
{
    V_NONBLOCKING(K_ISCATTERV, F_LARGE_COUNT, recvbuf == MPI_IN_PLACE ? 0 : type_bytes(recvtype, recvcount), root,
                  PMPI_Iscatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                                   request),
                  is_root(comm, root) ? keep_sizes_c(r, comm, sendcounts, sendtype, NULL, MPI_DATATYPE_NULL) : (void)0)
}

int MPI_Ireduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IREDUCE_SCATTER, F_LARGE_COUNT, summed_c(comm, recvcounts, datatype), -1,
                PMPI_Ireduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, request))
}

int MPI_Ireduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount, MPI_Datatype datatype,
                                MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IREDUCE_SCATTER_BLOCK, F_LARGE_COUNT, type_bytes(datatype, recvcount), -1,
                PMPI_Ireduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm, request))
}

int MPI_Iscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_ISCAN, F_LARGE_COUNT, type_bytes(datatype, count), -1,
                PMPI_Iscan_c(sendbuf, recvbuf, count, datatype, op, comm, request))
}

int MPI_Iexscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IEXSCAN, F_LARGE_COUNT, type_bytes(datatype, count), -1,
                PMPI_Iexscan_c(sendbuf, recvbuf, count, datatype, op, comm, request))
}
#endif
