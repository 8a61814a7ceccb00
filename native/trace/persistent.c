/* Persistent requests: MPI_Send_init (and Ssend, Bsend, Rsend) and MPI_Recv_init define an operation
 * once; every MPI_Start / MPI_Startall issues it again, and the Wait/Test that completes the request
 * leaves it inactive (not MPI_REQUEST_NULL) until the next start. Each start is recorded as the
 * nonblocking operation it is, at the start's call site, and followed in the request table like an
 * Isend or Irecv (complete.c knows a persistent handle completes without becoming MPI_REQUEST_NULL).
 * The definitions are a plain array searched from its end (programs keep a few tens of persistent
 * requests; the newest are the most used); MPI_Request_free forgets one. */
#include <stdlib.h>

#include "trace.h"

typedef struct {
    MPI_Request request;
    MPI_Comm comm;
    int64_t bytes;
    int32_t peer; /* world rank, or -1 for MPI_ANY_SOURCE */
    int32_t tag;
    uint16_t kind, flags;
} definition;

static definition *defined;
static size_t used, capacity;

static definition *find(MPI_Request request)
{
    for (size_t i = used; i-- > 0;)
        if (defined[i].request == request)
            return &defined[i];
    return 0;
}

int persistent_is(MPI_Request request)
{
    return used > 0 && find(request) != 0;
}

void persistent_forget(MPI_Request request)
{
    definition *d = used ? find(request) : 0;
    if (d)
        *d = defined[--used];
}

/* Remember what a persistent request stands for (nothing when it moves nothing: MPI_PROC_NULL). */
static void define(MPI_Request request, int kind, uint16_t flags, MPI_Datatype type, int64_t count, int peer,
                   int tag, MPI_Comm comm)
{
    if (!tracer.on || peer == MPI_PROC_NULL || request == MPI_REQUEST_NULL)
        return;
    persistent_forget(request); /* a handle MPI reused after a free we did not see */
    if (used == capacity) {
        size_t want = capacity ? 2 * capacity : 64;
        definition *grown = realloc(defined, want * sizeof *grown);
        if (!grown)
            return; /* its starts are then not recorded */
        defined = grown;
        capacity = want;
    }
    defined[used++] = (definition){.request = request, .comm = comm, .bytes = type_bytes(type, count),
                                   .peer = world_of_comm(comm, peer), .tag = tag, .kind = (uint16_t)kind,
                                   .flags = flags};
}

/* One start: its record (NULL when not recorded) and its communicator, for the request table. */
typedef struct {
    trace_record *record;
    MPI_Comm comm;
} start;

/* Records for the starts of `n` requests, all posted now at `site`. */
static void begin_starts(int n, const MPI_Request *requests, start *starts, void *site)
{
    for (int i = 0; i < n; i++) {
        definition *d = used ? find(requests[i]) : 0;
        trace_record *r = d ? record_begin(d->kind, site) : 0;
        if (r) {
            r->flags |= d->flags;
            r->bytes = d->bytes;
            r->peer = d->peer;
            r->tag = d->tag;
        }
        starts[i] = (start){.record = r, .comm = d ? d->comm : MPI_COMM_NULL};
    }
}

static void end_starts(int n, const MPI_Request *requests, const start *starts, int rc)
{
    int64_t now = stamp();
    for (int i = 0; i < n; i++)
        if (starts[i].record) {
            starts[i].record->returned = now;
            if (rc == MPI_SUCCESS)
                requests_add(requests[i], starts[i].record, starts[i].comm);
        }
}

int MPI_Start(MPI_Request *request)
{
    start one;
    begin_starts(1, request, &one, __builtin_return_address(0));
    int rc = PMPI_Start(request);
    end_starts(1, request, &one, rc);
    return rc;
}

int MPI_Startall(int count, MPI_Request requests[])
{
    start few[64], *starts = count <= 64 ? few : malloc(sizeof *starts * (size_t)count);
    if (!starts || count <= 0)
        return PMPI_Startall(count, requests);
    begin_starts(count, requests, starts, __builtin_return_address(0));
    int rc = PMPI_Startall(count, requests);
    end_starts(count, requests, starts, rc);
    if (starts != few)
        free(starts);
    return rc;
}

#define SEND_INIT(NAME, KIND, COUNT_TYPE, FLAGS)                                                       \
    int NAME(const void *buf, COUNT_TYPE count, MPI_Datatype datatype, int dest, int tag,            \
             MPI_Comm comm, MPI_Request *request)                                                    \
    {                                                                                                \
        int rc = P##NAME(buf, count, datatype, dest, tag, comm, request);                            \
        if (rc == MPI_SUCCESS)                                                                       \
            define(*request, KIND, FLAGS, datatype, (int64_t)count, dest, tag, comm);                \
        return rc;                                                                                   \
    }

SEND_INIT(MPI_Send_init, K_ISEND, int, 0)
SEND_INIT(MPI_Ssend_init, K_ISSEND, int, 0)
SEND_INIT(MPI_Bsend_init, K_ISEND, int, 0)
SEND_INIT(MPI_Rsend_init, K_ISEND, int, 0)

int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                  MPI_Request *request)
{
    int rc = PMPI_Recv_init(buf, count, datatype, source, tag, comm, request);
    if (rc == MPI_SUCCESS)
        define(*request, K_IRECV, 0, datatype, (int64_t)count, source, tag, comm);
    return rc;
}

#if MPI_VERSION >= 4
SEND_INIT(MPI_Send_init_c, K_ISEND, MPI_Count, F_LARGE_COUNT)
SEND_INIT(MPI_Ssend_init_c, K_ISSEND, MPI_Count, F_LARGE_COUNT)
SEND_INIT(MPI_Bsend_init_c, K_ISEND, MPI_Count, F_LARGE_COUNT)
SEND_INIT(MPI_Rsend_init_c, K_ISEND, MPI_Count, F_LARGE_COUNT)

int MPI_Recv_init_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Recv_init_c(buf, count, datatype, source, tag, comm, request);
    if (rc == MPI_SUCCESS)
        define(*request, K_IRECV, F_LARGE_COUNT, datatype, (int64_t)count, source, tag, comm);
    return rc;
}
#endif
