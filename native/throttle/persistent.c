/* Persistent sends: MPI_Send_init, MPI_Ssend_init, MPI_Bsend_init, MPI_Rsend_init (classic and large
 * count) create requests that MPI_Start and MPI_Startall start again and again. Admission happens at
 * each start of a throttled send (not at creation, which moves nothing); the started send holds its
 * tokens until it completes, like an MPI_Isend. Unlike other requests, a completed persistent request
 * is not set to MPI_REQUEST_NULL but left inactive, so the Wait/Test calls ask persistent_settle
 * about requests they left in place (complete.c). Startall starts every other request first (receives
 * above all: a peer's send may wait for them), then admits and starts the sends one by one. Partitioned
 * sends (MPI_Psend_init) pass through untouched.
 *
 * The library remembers each throttled persistent send (its request, size in bytes and target), and
 * each node-local one (its starts are counted in ops_local, and pass), in an open-addressing hash
 * table until MPI_Request_free (send.c) forgets it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "held.h"
#include "sends.h"
#include "throttle.h"

typedef struct {
    MPI_Request req;   /* MPI_REQUEST_NULL: a free slot */
    int64_t bytes;     /* at creation: the datatype may be freed before a start */
    int dest;
    int large;         /* made by a `_c` call: each start counts as a large-count op */
    int local;         /* to a task of this node: each start is counted in ops_local, not admitted */
} persistent_send;

static persistent_send *table;
static size_t table_cap, table_used; /* cap: a power of two, at most half full */

static size_t slot_of(MPI_Request req)
{
    uint64_t key = 0;
    memcpy(&key, &req, sizeof req < sizeof key ? sizeof req : sizeof key);
    key *= UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(key >> 17) & (table_cap - 1);
}

static persistent_send *find(MPI_Request req)
{
    if (table_used == 0 || req == MPI_REQUEST_NULL)
        return NULL;
    for (size_t i = slot_of(req);; i = (i + 1) & (table_cap - 1)) {
        if (table[i].req == req)
            return &table[i];
        if (table[i].req == MPI_REQUEST_NULL)
            return NULL;
    }
}

static void insert(persistent_send entry)
{
    size_t i = slot_of(entry.req);
    while (table[i].req != MPI_REQUEST_NULL)
        i = (i + 1) & (table_cap - 1);
    table[i] = entry;
    table_used++;
}

static void remember(persistent_send entry)
{
    if (2 * (table_used + 1) > table_cap) {
        persistent_send *old = table;
        size_t old_cap = table_cap;
        table_cap = table_cap ? 2 * table_cap : 64;
        table = malloc(table_cap * sizeof *table);
        if (!table) {
            fprintf(stderr, "contend-throttle: out of memory for %zu persistent sends\n", table_cap);
            abort();
        }
        for (size_t i = 0; i < table_cap; i++)
            table[i].req = MPI_REQUEST_NULL;
        table_used = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].req != MPI_REQUEST_NULL)
                insert(old[i]);
        free(old);
    }
    insert(entry);
}

void persistent_forget(MPI_Request req)
{
    persistent_send *e = find(req);
    if (!e)
        return;
    size_t hole = (size_t)(e - table);
    e->req = MPI_REQUEST_NULL;
    table_used--;
    /* Backward shift: move later entries of the probe run into the hole where their home allows. */
    for (size_t i = (hole + 1) & (table_cap - 1); table[i].req != MPI_REQUEST_NULL;
         i = (i + 1) & (table_cap - 1)) {
        size_t home = slot_of(table[i].req);
        if (((i - home) & (table_cap - 1)) >= ((i - hole) & (table_cap - 1))) {
            table[hole] = table[i];
            table[i].req = MPI_REQUEST_NULL;
            hole = i;
        }
    }
}

int32_t persistent_settle(MPI_Request req)
{
    if (!find(req))
        return 0;
    int done = 0;
    PMPI_Request_get_status(req, &done, MPI_STATUS_IGNORE); /* true once inactive */
    return done ? held_complete_request(req) : 0;
}

/* After a *_init (rc: its result): remember a send the library throttles, or counts as node-local. */
static int created(int rc, MPI_Count count, MPI_Datatype datatype, int dest, MPI_Comm comm,
                   const MPI_Request *request, int large)
{
    peer_kind peer = rc == MPI_SUCCESS ? send_peer(dest, comm) : PEER_UNTOUCHED;
    if (peer == PEER_UNTOUCHED)
        return rc;
    persistent_send e = {*request, message_bytes((int64_t)count, datatype), dest, large, peer == PEER_LOCAL};
    remember(e);
    return rc;
}

static int start_one(MPI_Request *request)
{
    persistent_send *e = throttling() ? find(*request) : NULL;
    if (!e)
        return PMPI_Start(request);
    if (e->local) {
        throttle.stats.ops_local++;
        return PMPI_Start(request);
    }
    /* It may only be started inactive: a completion the library did not see has ended it. */
    give_back(held_complete_request(*request));
    throttle.stats.ops_persistent++;
    throttle.stats.ops_large_count += e->large;
    int32_t tokens = admit(e->bytes, MPI_BYTE);
    int rc = PMPI_Start(request);
    injected(tokens, rc, *request, MPI_WIN_NULL, e->dest);
    return rc;
}

int MPI_Start(MPI_Request *request)
{
    return start_one(request);
}

int MPI_Startall(int count, MPI_Request requests[])
{
    int throttled = 0;
    for (int i = 0; i < count && throttling() && table_used; i++)
        throttled += find(requests[i]) != NULL;
    if (!throttled)
        return PMPI_Startall(count, requests);
    int rc = MPI_SUCCESS;
    for (int pass = 0; pass < 2; pass++) /* the others in their order, then the sends */
        for (int i = 0; i < count && rc == MPI_SUCCESS; i++)
            if ((find(requests[i]) != NULL) == pass)
                rc = pass ? start_one(&requests[i]) : PMPI_Start(&requests[i]);
    return rc;
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Send_init(buf, count, datatype, dest, tag, comm, request);
    return created(rc, count, datatype, dest, comm, request, 0);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Ssend_init(buf, count, datatype, dest, tag, comm, request);
    return created(rc, count, datatype, dest, comm, request, 0);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Bsend_init(buf, count, datatype, dest, tag, comm, request);
    return created(rc, count, datatype, dest, comm, request, 0);
}

int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Rsend_init(buf, count, datatype, dest, tag, comm, request);
    return created(rc, count, datatype, dest, comm, request, 0);
}

#if MPI_VERSION >= 4
int MPI_Send_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Send_init_c(buf, count, datatype, dest, tag, comm, request);
    return created(rc, count, datatype, dest, comm, request, 1);
}

int MPI_Ssend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Ssend_init_c(buf, count, datatype, dest, tag, comm, request);
    return created(rc, count, datatype, dest, comm, request, 1);
}

int MPI_Bsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Bsend_init_c(buf, count, datatype, dest, tag, comm, request);
    return created(rc, count, datatype, dest, comm, request, 1);
}

int MPI_Rsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Rsend_init_c(buf, count, datatype, dest, tag, comm, request);
    return created(rc, count, datatype, dest, comm, request, 1);
}
#endif
