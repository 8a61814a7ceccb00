/* Communicators, so a converter can map a collective on a sub-communicator to world ranks: every
 * intracommunicator a collective runs on gets an id, written at the end of the file with its members'
 * world ranks in communicator-rank order (docs/formats.md "Trace files"). MPI_COMM_WORLD is 0.
 *
 * An id must mean the same communicator on every member, without a central counter: the members agree
 * on it with one MAX allreduce of their next free id when the communicator is made (Comm_dup, split,
 * split_type, create, create_group, Cart_create, ... below), or, for one made by a call not wrapped
 * here, before the first collective on it (every member makes that call, in the same order). Each rank
 * then continues above the agreed id, so two communicators sharing a member never share an id; two
 * that share an id have no member in common. The cost is one small allreduce per communicator, paid in
 * its (already collective and synchronising) creation, never per call: the lookup per collective is a
 * comparison with the last communicator seen, else a scan of the live ones (programs keep a few).
 * Comm_idup is not wrapped (its communicator may not be used before its request completes): it is
 * registered at its first collective. (Registering at a first *nonblocking* collective blocks in it; a
 * program that starts nonblocking collectives on two such communicators in different orders on
 * different ranks would wait there: the wrapped creators avoid it.) Intercommunicators get -1. */
#include <stdlib.h>
#include <string.h>

#include "trace.h"

typedef struct {
    MPI_Comm comm;
    int32_t id;
} live_comm;

static live_comm *live;
static size_t live_used, live_capacity;
static int32_t *words;
static size_t words_used, words_capacity;
static int32_t next_id = 1;
static MPI_Comm last_comm = MPI_COMM_NULL;
static int32_t last_id = -1;

static int append(const int32_t *values, size_t n)
{
    if (words_used + n > words_capacity) {
        size_t want = words_capacity ? words_capacity : 256;
        while (want < words_used + n)
            want *= 2;
        int32_t *grown = realloc(words, want * sizeof *grown);
        if (!grown)
            return -1;
        words = grown;
        words_capacity = want;
    }
    memcpy(words + words_used, values, n * sizeof *values);
    words_used += n;
    return 0;
}

static int32_t remember(MPI_Comm comm, int32_t id)
{
    if (live_used == live_capacity) {
        size_t want = live_capacity ? 2 * live_capacity : 16;
        live_comm *grown = realloc(live, want * sizeof *grown);
        if (!grown)
            return id; /* looked up again (and registered again: a new id) next time */
        live = grown;
        live_capacity = want;
    }
    live[live_used++] = (live_comm){.comm = comm, .id = id};
    last_comm = comm;
    last_id = id;
    return id;
}

int32_t comm_known(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD)
        return 0;
    if (comm == last_comm)
        return last_id;
    for (size_t i = live_used; i-- > 0;)
        if (live[i].comm == comm) {
            last_comm = comm;
            last_id = live[i].id;
            return last_id;
        }
    return -1;
}

/* Agree on an id with the other members and keep the members' world ranks (collective over comm). */
static int32_t register_comm(MPI_Comm comm)
{
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return -1;
    int32_t id = -1;
    if (PMPI_Allreduce(&next_id, &id, 1, MPI_INT32_T, MPI_MAX, comm) != MPI_SUCCESS)
        return -1;
    next_id = id + 1;
    int size = 0;
    PMPI_Comm_size(comm, &size);
    int32_t head[2] = {id, size};
    int32_t *members = malloc(sizeof(int32_t) * (size_t)(size > 0 ? size : 1));
    if (!members)
        return -1;
    for (int i = 0; i < size; i++)
        members[i] = world_of_comm(comm, i);
    int ok = append(head, 2) == 0;
    if (ok && append(members, (size_t)size) != 0) {
        words_used -= 2;
        ok = 0;
    }
    free(members);
    return ok ? remember(comm, id) : -1;
}

int32_t comm_id(MPI_Comm comm)
{
    if (!tracer.on || comm == MPI_COMM_NULL)
        return -1;
    int32_t id = comm_known(comm);
    return id >= 0 || comm == MPI_COMM_WORLD ? id : register_comm(comm);
}

void comm_forget(MPI_Comm comm)
{
    for (size_t i = 0; i < live_used; i++)
        if (live[i].comm == comm) {
            live[i] = live[--live_used];
            break;
        }
    if (comm == last_comm) {
        last_comm = MPI_COMM_NULL;
        last_id = -1;
    }
}

const int32_t *comm_table(uint64_t *count)
{
    *count = words_used;
    return words;
}

/* A creation: a region on the parent (collective over it, so the parent may be registered here too,
 * except for create_group, collective over the group only), then the new communicator's id. */
#define CREATE(PARENT_ID, NEWCOMM, CALL)                                                              \
    int32_t parent_id = tracer.on ? (PARENT_ID) : -1;                                                 \
    trace_record *r = record_begin(K_COMM_CREATE, __builtin_return_address(0));                       \
    int rc = CALL;                                                                                    \
    int32_t id = rc == MPI_SUCCESS && tracer.on ? comm_id(NEWCOMM) : -1;                              \
    if (r) { /* the agreement on the id is part of the call, as the program sees it */                \
        r->tag = parent_id;                                                                           \
        r->bytes = id;                                                                                \
        r->returned = r->completed = stamp();                                                         \
    }                                                                                                 \
    return rc;

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    CREATE(comm_id(comm), *newcomm, PMPI_Comm_dup(comm, newcomm))
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    CREATE(comm_id(comm), *newcomm, PMPI_Comm_dup_with_info(comm, info, newcomm))
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    CREATE(comm_id(comm), *newcomm, PMPI_Comm_split(comm, color, key, newcomm))
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    CREATE(comm_id(comm), *newcomm, PMPI_Comm_split_type(comm, split_type, key, info, newcomm))
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    CREATE(comm_id(comm), *newcomm, PMPI_Comm_create(comm, group, newcomm))
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    CREATE(comm_known(comm), *newcomm, PMPI_Comm_create_group(comm, group, tag, newcomm))
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *newcomm)
{
    CREATE(comm_id(comm), *newcomm, PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm))
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    CREATE(comm_id(comm), *newcomm, PMPI_Cart_sub(comm, remain_dims, newcomm))
}

int MPI_Comm_free(MPI_Comm *comm)
{
    comm_forget(*comm);
    forget_comm(*comm);
    return PMPI_Comm_free(comm);
}
