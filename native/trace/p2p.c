/* Point to point: MPI_Send, Ssend, Bsend, Rsend, Recv (blocking: complete when they return), Sendrecv
 * and Sendrecv_replace (a blocking send and a blocking receive in one call) and Isend, Issend, Ibsend,
 * Irsend, Irecv (complete in the Wait/Test that completes their request, complete.c), each in the
 * classic and the MPI 4 large-count form that mpi4py uses on MPICH. A buffered or ready send is recorded as a send of its
 * kind (blocking or not): what it moves and when the program knew it done are what diagnosis needs. A
 * call on MPI_PROC_NULL moves nothing: not recorded. */
#include "trace.h"

static inline void describe(trace_record *r, int64_t bytes, int peer, int tag, MPI_Comm comm)
{
    r->bytes = bytes;
    r->peer = world_of_comm(comm, peer);
    r->tag = tag;
}

#define BLOCKING_SEND(KIND, FLAGS, CALL)                                                              \
    trace_record *r = dest == MPI_PROC_NULL ? 0 : record_begin(KIND, __builtin_return_address(0));   \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    describe(r, type_bytes(datatype, (int64_t)count), dest, tag, comm);                                  \
    int rc = CALL;                                                                                    \
    r->returned = r->completed = stamp();                                                            \
    return rc;

#define NONBLOCKING_SEND(KIND, FLAGS, CALL)                                                           \
    trace_record *r = dest == MPI_PROC_NULL ? 0 : record_begin(KIND, __builtin_return_address(0));   \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    describe(r, type_bytes(datatype, (int64_t)count), dest, tag, comm);                                  \
    int rc = CALL;                                                                                    \
    r->returned = stamp();                                                                           \
    if (rc == MPI_SUCCESS)                                                                            \
        requests_add(*request, r, comm);                                                              \
    return rc;

/* One wrapper per send entry point: NAME, the record kind, the count's type, flags. */
#define WRAP_BLOCKING_SEND(NAME, KIND, COUNT_TYPE, FLAGS)                                             \
    int NAME(const void *buf, COUNT_TYPE count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) \
    {                                                                                                 \
        BLOCKING_SEND(KIND, FLAGS, P##NAME(buf, count, datatype, dest, tag, comm))                    \
    }

#define WRAP_NONBLOCKING_SEND(NAME, KIND, COUNT_TYPE, FLAGS)                                          \
    int NAME(const void *buf, COUNT_TYPE count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, \
             MPI_Request *request)                                                                    \
    {                                                                                                 \
        NONBLOCKING_SEND(KIND, FLAGS, P##NAME(buf, count, datatype, dest, tag, comm, request))        \
    }

WRAP_BLOCKING_SEND(MPI_Send, K_SEND, int, 0)
WRAP_BLOCKING_SEND(MPI_Ssend, K_SSEND, int, 0)
WRAP_BLOCKING_SEND(MPI_Bsend, K_SEND, int, 0)
WRAP_BLOCKING_SEND(MPI_Rsend, K_SEND, int, 0)
WRAP_NONBLOCKING_SEND(MPI_Isend, K_ISEND, int, 0)
WRAP_NONBLOCKING_SEND(MPI_Issend, K_ISSEND, int, 0)
WRAP_NONBLOCKING_SEND(MPI_Ibsend, K_ISEND, int, 0)
WRAP_NONBLOCKING_SEND(MPI_Irsend, K_ISEND, int, 0)
#if MPI_VERSION >= 4
WRAP_BLOCKING_SEND(MPI_Send_c, K_SEND, MPI_Count, F_LARGE_COUNT)
WRAP_BLOCKING_SEND(MPI_Ssend_c, K_SSEND, MPI_Count, F_LARGE_COUNT)
WRAP_BLOCKING_SEND(MPI_Bsend_c, K_SEND, MPI_Count, F_LARGE_COUNT)
WRAP_BLOCKING_SEND(MPI_Rsend_c, K_SEND, MPI_Count, F_LARGE_COUNT)
WRAP_NONBLOCKING_SEND(MPI_Isend_c, K_ISEND, MPI_Count, F_LARGE_COUNT)
WRAP_NONBLOCKING_SEND(MPI_Issend_c, K_ISSEND, MPI_Count, F_LARGE_COUNT)
WRAP_NONBLOCKING_SEND(MPI_Ibsend_c, K_ISEND, MPI_Count, F_LARGE_COUNT)
WRAP_NONBLOCKING_SEND(MPI_Irsend_c, K_ISEND, MPI_Count, F_LARGE_COUNT)
#endif

/* A wildcard receive's source and tag are known only from its status: take them from there, with
 * our own status if the program passed MPI_STATUS_IGNORE. (Its size is its matched send's, after the
 * run; until then the posted count.) */
static void received(trace_record *r, MPI_Comm comm, const MPI_Status *status)
{
    r->peer = world_of_comm(comm, status->MPI_SOURCE);
    r->tag = status->MPI_TAG;
}

#define BLOCKING_RECV(FLAGS, CALL)                                                                    \
    trace_record *r = source == MPI_PROC_NULL ? 0 : record_begin(K_RECV, __builtin_return_address(0)); \
    if (!r)                                                                                           \
        return CALL;                                                                                  \
    r->flags |= FLAGS;                                                                                \
    describe(r, type_bytes(datatype, (int64_t)count), source, tag, comm);                                \
    MPI_Status own;                                                                                   \
    int wild = source == MPI_ANY_SOURCE || tag == MPI_ANY_TAG;                                        \
    if (wild && status == MPI_STATUS_IGNORE)                                                          \
        status = &own;                                                                                \
    int rc = CALL;                                                                                    \
    r->returned = r->completed = stamp();                                                            \
    if (rc == MPI_SUCCESS && wild)                                                                    \
        received(r, comm, status);                                                                    \
    return rc;

/* Sendrecv: recorded as the two operations it is, a send and a receive of the same call site that
 * both complete when the call returns (the halo exchanges of stencil codes are mostly this call). */
#define SENDRECV(FLAGS, SEND_BYTES, RECV_BYTES, CALL)                                                 \
    void *site = __builtin_return_address(0);                                                         \
    trace_record *s = dest == MPI_PROC_NULL ? 0 : record_begin(K_SEND, site);                         \
    trace_record *r = source == MPI_PROC_NULL ? 0 : record_begin(K_RECV, site);                       \
    if (s) {                                                                                          \
        s->flags |= FLAGS;                                                                            \
        describe(s, SEND_BYTES, dest, sendtag, comm);                                                 \
    }                                                                                                 \
    if (r) {                                                                                          \
        r->flags |= FLAGS;                                                                            \
        describe(r, RECV_BYTES, source, recvtag, comm);                                               \
    }                                                                                                 \
    MPI_Status own;                                                                                   \
    int wild = r && (source == MPI_ANY_SOURCE || recvtag == MPI_ANY_TAG);                             \
    if (wild && status == MPI_STATUS_IGNORE)                                                          \
        status = &own;                                                                                \
    int rc = CALL;                                                                                    \
    int64_t end = stamp();                                                                            \
    if (s)                                                                                            \
        s->returned = s->completed = end;                                                             \
    if (r) {                                                                                          \
        r->returned = r->completed = end;                                                             \
        if (rc == MPI_SUCCESS && wild)                                                                \
            received(r, comm, status);                                                                \
    }                                                                                                 \
    return rc;

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    SENDRECV(0, type_bytes(sendtype, (int64_t)sendcount), type_bytes(recvtype, (int64_t)recvcount),
             PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                           source, recvtag, comm, status))
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    int64_t bytes = type_bytes(datatype, (int64_t)count);
    SENDRECV(0, bytes, bytes,
             PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm, status))
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    BLOCKING_RECV(0, PMPI_Recv(buf, count, datatype, source, tag, comm, status))
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    trace_record *r = source == MPI_PROC_NULL ? 0 : record_begin(K_IRECV, __builtin_return_address(0));
    if (!r)
        return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    describe(r, type_bytes(datatype, (int64_t)count), source, tag, comm);
    int rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    r->returned = stamp();
    if (rc == MPI_SUCCESS)
        requests_add(*request, r, comm);
    return rc;
}

#if MPI_VERSION >= 4
int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Status *status)
{
    BLOCKING_RECV(F_LARGE_COUNT, PMPI_Recv_c(buf, count, datatype, source, tag, comm, status))
}

int MPI_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    SENDRECV(F_LARGE_COUNT, type_bytes(sendtype, (int64_t)sendcount),
             type_bytes(recvtype, (int64_t)recvcount),
             PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                             source, recvtag, comm, status))
}

int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                           int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    int64_t bytes = type_bytes(datatype, (int64_t)count);
    SENDRECV(F_LARGE_COUNT, bytes, bytes,
             PMPI_Sendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm, status))
}

int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                MPI_Comm comm, MPI_Request *request)
{
    trace_record *r = source == MPI_PROC_NULL ? 0 : record_begin(K_IRECV, __builtin_return_address(0));
    if (!r)
        return PMPI_Irecv_c(buf, count, datatype, source, tag, comm, request);
    r->flags |= F_LARGE_COUNT;
    describe(r, type_bytes(datatype, (int64_t)count), source, tag, comm);
    int rc = PMPI_Irecv_c(buf, count, datatype, source, tag, comm, request);
    r->returned = stamp();
    if (rc == MPI_SUCCESS)
        requests_add(*request, r, comm);
    return rc;
}
#endif
