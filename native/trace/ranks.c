/* World ranks of communicator and window ranks. MPI_COMM_WORLD (and a window whose group is the
 * world's) is the identity and costs a comparison; any other is translated once, when first seen, and
 * kept in a small cache until the program frees it (then the handle may be reused for another). */
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define CACHED 32

typedef struct {
    uintptr_t handle;
    int is_win;
    int identity;
    int size;
    int *world; /* world rank of each rank (NULL when identity) */
} translation;

static translation cache[CACHED];
static int cached, next_evicted;

static uintptr_t handle_of_comm(MPI_Comm comm)
{
    uintptr_t h = 0;
    memcpy(&h, &comm, sizeof comm < sizeof h ? sizeof comm : sizeof h);
    return h;
}

static uintptr_t handle_of_win(MPI_Win win)
{
    uintptr_t h = 0;
    memcpy(&h, &win, sizeof win < sizeof h ? sizeof win : sizeof h);
    return h;
}

static translation *build(uintptr_t handle, int is_win, MPI_Group group)
{
    MPI_Group world;
    int size = 0, same = MPI_UNEQUAL;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Group_size(group, &size);
    PMPI_Group_compare(group, world, &same);
    translation *t;
    if (cached < CACHED) {
        t = &cache[cached++];
    } else { /* full: reuse the oldest slot */
        t = &cache[next_evicted];
        next_evicted = (next_evicted + 1) % CACHED;
        free(t->world);
    }
    t->handle = handle;
    t->is_win = is_win;
    t->size = size;
    t->identity = same == MPI_IDENT;
    t->world = NULL;
    if (!t->identity && size > 0) {
        int *ranks = malloc(sizeof(int) * (size_t)size);
        t->world = malloc(sizeof(int) * (size_t)size);
        if (ranks && t->world) {
            for (int i = 0; i < size; i++)
                ranks[i] = i;
            PMPI_Group_translate_ranks(group, size, ranks, world, t->world);
        } else { /* out of memory: ranks stay as the program gave them */
            free(t->world);
            t->world = NULL;
            t->identity = 1;
        }
        free(ranks);
    }
    PMPI_Group_free(&world);
    PMPI_Group_free(&group);
    return t;
}

static translation *find(uintptr_t handle, int is_win)
{
    for (int i = 0; i < cached; i++)
        if (cache[i].handle == handle && cache[i].is_win == is_win)
            return &cache[i];
    return NULL;
}

static int translate(const translation *t, int rank)
{
    if (rank < 0)
        return -1; /* MPI_PROC_NULL, MPI_ANY_SOURCE */
    if (t->identity)
        return rank;
    if (rank >= t->size)
        return -1;
    return t->world[rank] == MPI_UNDEFINED ? -1 : t->world[rank];
}

int world_of_comm(MPI_Comm comm, int rank)
{
    if (comm == MPI_COMM_WORLD)
        return rank < 0 ? -1 : rank;
    uintptr_t h = handle_of_comm(comm);
    translation *t = find(h, 0);
    if (!t) {
        int inter = 0;
        MPI_Group group;
        PMPI_Comm_test_inter(comm, &inter);
        if (inter) /* a peer of an intercommunicator is a rank of the remote group */
            PMPI_Comm_remote_group(comm, &group);
        else
            PMPI_Comm_group(comm, &group);
        t = build(h, 0, group);
    }
    return translate(t, rank);
}

int world_of_win(MPI_Win win, int rank)
{
    uintptr_t h = handle_of_win(win);
    translation *t = find(h, 1);
    if (!t) {
        MPI_Group group;
        PMPI_Win_get_group(win, &group);
        t = build(h, 1, group);
    }
    return translate(t, rank);
}

void world_of_group(MPI_Group group, int n, int64_t *world)
{
    /* not cached: a post or start costs O(members) in MPI anyway */
    int *ranks = malloc(sizeof(int) * (2 * (size_t)n + 1));
    int *out = ranks ? ranks + n : NULL;
    MPI_Group everyone;
    PMPI_Comm_group(MPI_COMM_WORLD, &everyone);
    for (int i = 0; ranks && i < n; i++)
        ranks[i] = i;
    int ok = ranks && (n == 0 || PMPI_Group_translate_ranks(group, n, ranks, everyone, out) == MPI_SUCCESS);
    for (int i = 0; i < n; i++)
        world[i] = ok && out[i] != MPI_UNDEFINED ? out[i] : -1;
    PMPI_Group_free(&everyone);
    free(ranks);
}

static void forget(uintptr_t handle, int is_win)
{
    translation *t = find(handle, is_win);
    if (!t)
        return;
    free(t->world);
    t->world = NULL;
    t->handle = 0;
    t->is_win = -1; /* never matches again; the slot is reused when the cache is full */
}

void forget_comm(MPI_Comm comm)
{
    forget(handle_of_comm(comm), 0);
}

void forget_win(MPI_Win win)
{
    forget(handle_of_win(win), 1);
}

/* The size of the last datatype asked about: most programs send one type again and again, and
 * MPI_Type_size (with its argument checks) costs as much as the rest of a record. MPI_Type_free
 * forgets it, since a freed handle may come back as another type. */
static MPI_Datatype last_type = MPI_DATATYPE_NULL;
static int last_size;

int64_t type_bytes(MPI_Datatype type, int64_t count)
{
    if (type == MPI_DATATYPE_NULL)
        return 0;
    if (type != last_type) {
        PMPI_Type_size(type, &last_size);
        last_type = type;
    }
    return count * (int64_t)last_size;
}

int MPI_Type_free(MPI_Datatype *type)
{
    last_type = MPI_DATATYPE_NULL;
    return PMPI_Type_free(type);
}

