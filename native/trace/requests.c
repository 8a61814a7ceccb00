/* Nonblocking operations waiting for their completion: an open-addressing hash table from the request
 * (its handle, as MPI gave it) to the operation's record, allocated once at MPI_Init
 * ($CONTEND_TRACE_REQUESTS slots, 16384 by default: 384 KiB). Linear probing with backward-shift deletion: no tombstones, so a
 * long run never degrades. When the table is three quarters full, a new request is not followed: its
 * record says F_UNTRACKED and the file counts it.
 *
 * One handle can stand for several operations at once: MPICH gives every send that completed inside its
 * own call one shared, built-in request (a rank's small Isends before one Waitall all return it). The
 * older operations of a handle wait in `aliases` (a stack searched from its end), and each completion of
 * the handle completes one of them, so each is credited to the Wait/Test the program passed it to. */
#include <stdlib.h>
#include <string.h>

#include "trace.h"

typedef struct {
    uintptr_t key;   /* 0: empty */
    uint64_t record; /* index in tracer.records */
    MPI_Comm comm;   /* to translate the source of a receive that named MPI_ANY_SOURCE */
    int wild;        /* a receive from MPI_ANY_SOURCE or with MPI_ANY_TAG: its status is needed */
} slot;

static slot *slots;
static uint64_t mask, live, wild;
#define ALIASES 4096 /* older operations behind a handle still followed: beyond, see requests_add */
static slot aliases[ALIASES];
static uint64_t aliased;

int requests_init(uint64_t capacity)
{
    uint64_t n = 1;
    while (n < capacity)
        n <<= 1;
    slots = calloc(n, sizeof(slot));
    if (!slots)
        return -1;
    mask = n - 1;
    return 0;
}

static uintptr_t key_of(MPI_Request req)
{
    uintptr_t k = 0;
    memcpy(&k, &req, sizeof req < sizeof k ? sizeof req : sizeof k);
    return k ^ (uintptr_t)1 << (sizeof(uintptr_t) * 8 - 1); /* never 0, even for a handle 0 */
}

/* Requests made one after another get nearby slots (MPICH numbers its requests, Open MPI allocates
 * them from a pool), so the table's working set stays in cache: no multiplicative scrambling. */
static uint64_t home(uintptr_t key)
{
    return (uint64_t)(key ^ (key >> 4) ^ (key >> 20)) & mask;
}

int requests_live(void)
{
    return live > 0;
}

/* Whether a completion call must read statuses: only a wildcard receive's source and tag are unknown
 * until then (every other receive's size is its matched send's, after the run). */
int requests_need_status(void)
{
    return wild > 0;
}

void requests_add(MPI_Request req, trace_record *r, MPI_Comm comm)
{
    if (req == MPI_REQUEST_NULL)
        return;
    if (!slots || (live + 1) * 4 > (mask + 1) * 3) {
        r->flags |= F_UNTRACKED;
        tracer.untracked++;
        return;
    }
    uintptr_t key = key_of(req);
    uint64_t i = home(key);
    while (slots[i].key != 0 && slots[i].key != key)
        i = (i + 1) & mask;
    if (slots[i].key == 0) {
        live++;
    } else if (aliased < ALIASES) {
        aliases[aliased++] = slots[i]; /* completed by a later completion of the same handle */
    } else {
        /* Too many operations behind one handle: the oldest kept completed when its call returned
         * (MPICH's built-in request is complete when returned), the earliest it can have been. */
        trace_record *older = &tracer.records[slots[i].record];
        if (older->completed < 0)
            older->completed = older->returned;
        if (slots[i].wild)
            wild--;
    }
    int is_wild = r->kind == K_IRECV && (r->peer < 0 || r->tag == MPI_ANY_TAG);
    wild += (uint64_t)is_wild;
    slots[i] = (slot){.key = key, .record = record_index(r), .comm = comm, .wild = is_wild};
}

/* Remove the entry at i, moving later entries of the same probe run back so lookups still find them. */
static void remove_at(uint64_t i)
{
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (slots[j].key == 0)
            break;
        uint64_t h = home(slots[j].key);
        /* slot j may move to i if its home is not cyclically in (i, j] */
        if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
            slots[i] = slots[j];
            i = j;
        }
    }
    slots[i].key = 0;
    live--;
}

/* Done with the operation in slot i: the next older one of its handle takes its place, if any. */
static void release(uint64_t i)
{
    if (slots[i].wild)
        wild--;
    for (uint64_t k = aliased; k-- > 0;)
        if (aliases[k].key == slots[i].key) {
            slots[i] = aliases[k];
            aliases[k] = aliases[--aliased];
            return;
        }
    remove_at(i);
}

static int64_t find(MPI_Request req)
{
    if (live == 0)
        return -1;
    uintptr_t key = key_of(req);
    for (uint64_t i = home(key); slots[i].key != 0; i = (i + 1) & mask)
        if (slots[i].key == key)
            return (int64_t)i;
    return -1;
}

int requests_complete(MPI_Request req, const MPI_Status *status, int64_t now)
{
    int64_t i = find(req);
    if (i < 0)
        return 0;
    trace_record *r = &tracer.records[slots[i].record];
    if (r->completed < 0)
        r->completed = now;
    if (status && r->kind == K_IRECV) {
        if (r->peer < 0 && status->MPI_SOURCE >= 0)
            r->peer = world_of_comm(slots[i].comm, status->MPI_SOURCE);
        r->tag = status->MPI_TAG;
    }
    release((uint64_t)i);
    return 1;
}

void requests_free(MPI_Request req)
{
    int64_t i = find(req);
    if (i < 0)
        return;
    tracer.records[slots[i].record].flags |= F_FREED;
    release((uint64_t)i);
}
