/* Matched receives: MPI_Mprobe / MPI_Improbe take a message off the queue as a handle, and MPI_Mrecv /
 * MPI_Imrecv (classic and `_c`) receive it. mpi4py receives every pickled object this way (comm.recv,
 * comm.irecv), so without these wrappers each such message had a traced send and no receive. The
 * receive is recorded as a Recv or Irecv; its source and tag are the probe's (the handle carries no
 * communicator, so the probe keeps them, in world ranks, until the receive takes them). Probed
 * messages not yet received are a few at a time: a small array searched from its end. */
#include <stdlib.h>

#include "trace.h"

typedef struct {
    MPI_Message message;
    int32_t peer; /* world rank of the sender */
    int32_t tag;
} probed;

static probed *held;
static size_t used, capacity;

static void keep(MPI_Message message, MPI_Comm comm, const MPI_Status *status)
{
    if (!tracer.on || message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC)
        return;
    if (used == capacity) {
        size_t want = capacity ? 2 * capacity : 16;
        probed *grown = realloc(held, want * sizeof *grown);
        if (!grown)
            return; /* its receive is then recorded without a source */
        held = grown;
        capacity = want;
    }
    held[used++] = (probed){.message = message, .peer = world_of_comm(comm, status->MPI_SOURCE),
                            .tag = status->MPI_TAG};
}

/* The probe's source and tag for a message being received (forgotten now); -1 when unknown. */
static probed take(MPI_Message message)
{
    for (size_t i = used; i-- > 0;)
        if (held[i].message == message) {
            probed p = held[i];
            held[i] = held[--used];
            return p;
        }
    return (probed){.message = message, .peer = -1, .tag = -1};
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE)
        status = &own;
    int rc = PMPI_Mprobe(source, tag, comm, message, status);
    if (rc == MPI_SUCCESS)
        keep(*message, comm, status);
    return rc;
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE)
        status = &own;
    int rc = PMPI_Improbe(source, tag, comm, flag, message, status);
    if (rc == MPI_SUCCESS && *flag)
        keep(*message, comm, status);
    return rc;
}

/* The receive's record (NULL: not recorded, as for MPI_MESSAGE_NO_PROC, which moves nothing). */
static trace_record *begin_matched(int kind, uint16_t flags, MPI_Datatype type, int64_t count,
                                   MPI_Message message, void *site)
{
    if (message == MPI_MESSAGE_NO_PROC || message == MPI_MESSAGE_NULL)
        return 0;
    probed p = used ? take(message) : (probed){.peer = -1, .tag = -1};
    trace_record *r = record_begin(kind, site);
    if (r) {
        r->flags |= flags;
        r->bytes = type_bytes(type, count);
        r->peer = p.peer;
        r->tag = p.tag;
    }
    return r;
}

#define MRECV(FLAGS, CALL)                                                                            \
    trace_record *r = begin_matched(K_RECV, FLAGS, datatype, (int64_t)count, *message,              \
                                    __builtin_return_address(0));                                     \
    int rc = CALL;                                                                                    \
    if (r)                                                                                            \
        r->returned = r->completed = stamp();                                                        \
    return rc;

#define IMRECV(FLAGS, CALL)                                                                           \
    trace_record *r = begin_matched(K_IRECV, FLAGS, datatype, (int64_t)count, *message,             \
                                    __builtin_return_address(0));                                     \
    int rc = CALL;                                                                                    \
    if (r) {                                                                                          \
        r->returned = stamp();                                                                        \
        if (rc == MPI_SUCCESS)                                                                        \
            requests_add(*request, r, MPI_COMM_NULL); /* source and tag known: no status needed */ \
    }                                                                                                 \
    return rc;

int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    MRECV(0, PMPI_Mrecv(buf, count, datatype, message, status))
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request)
{
    IMRECV(0, PMPI_Imrecv(buf, count, datatype, message, request))
}

#if MPI_VERSION >= 4
int MPI_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    MRECV(F_LARGE_COUNT, PMPI_Mrecv_c(buf, count, datatype, message, status))
}

int MPI_Imrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,
                 MPI_Request *request)
{
    IMRECV(F_LARGE_COUNT, PMPI_Imrecv_c(buf, count, datatype, message, request))
}
#endif
