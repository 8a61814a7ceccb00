/* The nodes of the tasks (see nodes.h). */
#include "nodes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "throttle.h"

/* A communicator's or window's ranks: the node of each, and whether all are on this task's node. */
typedef struct {
    int size, within;
    int node[];
} rank_nodes;

static struct {
    int nodes, mine, world_size;
    int *world;              /* world rank -> node */
    MPI_Group world_group;
    int comm_key, win_key;
    MPI_Comm last_comm;      /* the last communicator asked about, and its table */
    rank_nodes *last_comm_nodes;
    MPI_Win last_win;
    rank_nodes *last_win_nodes;
} n = {.world_group = MPI_GROUP_NULL, .comm_key = MPI_KEYVAL_INVALID, .win_key = MPI_KEYVAL_INVALID,
       .last_comm = MPI_COMM_NULL, .last_win = MPI_WIN_NULL};

static void *need(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "contend-throttle: out of memory (%zu bytes) for the node table\n", bytes);
        abort();
    }
    return p;
}

/* FNV-1a of the node's name: every task sends 8 bytes, not the name (a million tasks' names would be
 * 256 MB on each). Two names with one hash are as likely as 2^-64 per pair. */
static uint64_t name_hash(const char *name)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = (h ^ *c) * UINT64_C(0x100000001b3);
    return h;
}

typedef struct {
    uint64_t hash;
    int rank;
} named;

static int by_hash(const void *a, const void *b)
{
    const named *x = a, *y = b;
    return x->hash != y->hash ? (x->hash < y->hash ? -1 : 1) : (x->rank > y->rank) - (x->rank < y->rank);
}

int nodes_start(char *why, size_t len)
{
    (void)why, (void)len;
    PMPI_Comm_size(MPI_COMM_WORLD, &n.world_size);
    int p = n.world_size;
    uint64_t mine = name_hash(throttle.node), *hashes = need(sizeof(uint64_t) * (size_t)p);
    PMPI_Allgather(&mine, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    named *sorted = need(sizeof(named) * (size_t)p);
    for (int r = 0; r < p; r++)
        sorted[r] = (named){hashes[r], r};
    qsort(sorted, (size_t)p, sizeof *sorted, by_hash);
    n.world = need(sizeof(int) * (size_t)p);
    n.nodes = 0;
    for (int i = 0; i < p; i++) {
        if (i > 0 && sorted[i].hash != sorted[i - 1].hash)
            n.nodes++;
        n.world[sorted[i].rank] = n.nodes;
    }
    n.nodes++;
    n.mine = n.world[throttle.rank];
    free(sorted);
    free(hashes);
    PMPI_Comm_group(MPI_COMM_WORLD, &n.world_group);
    return 0;
}

int nodes_count(void)
{
    return n.nodes;
}

int nodes_mine(void)
{
    return n.mine;
}

/* The table of group's ranks (translated to world ranks, then to nodes). */
static rank_nodes *table_of(MPI_Group group)
{
    int size;
    PMPI_Group_size(group, &size);
    rank_nodes *t = need(sizeof *t + sizeof(int) * (size_t)size);
    int *in = need(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        in[i] = i;
    PMPI_Group_translate_ranks(group, size, in, n.world_group, t->node);
    free(in);
    t->size = size;
    t->within = 1;
    for (int i = 0; i < size; i++) {
        int w = t->node[i];
        t->node[i] = w == MPI_UNDEFINED || w < 0 || w >= n.world_size ? -1 : n.world[w];
        t->within &= t->node[i] == n.mine;
    }
    return t;
}

static int forget_comm(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)extra;
    if (value == n.last_comm_nodes) {
        n.last_comm = MPI_COMM_NULL;
        n.last_comm_nodes = NULL;
    }
    free(value);
    return MPI_SUCCESS;
}

static int forget_win(MPI_Win win, int key, void *value, void *extra)
{
    (void)win, (void)key, (void)extra;
    if (value == n.last_win_nodes) {
        n.last_win = MPI_WIN_NULL;
        n.last_win_nodes = NULL;
    }
    free(value);
    return MPI_SUCCESS;
}

static rank_nodes *comm_table(MPI_Comm comm)
{
    if (comm == n.last_comm)
        return n.last_comm_nodes;
    if (n.comm_key == MPI_KEYVAL_INVALID)
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, forget_comm, &n.comm_key, NULL);
    rank_nodes *t = NULL;
    int found = 0, inter = 0;
    PMPI_Comm_get_attr(comm, n.comm_key, &t, &found);
    if (!found) {
        MPI_Group group;
        PMPI_Comm_test_inter(comm, &inter);
        if (inter)
            PMPI_Comm_remote_group(comm, &group);
        else
            PMPI_Comm_group(comm, &group);
        t = table_of(group);
        PMPI_Group_free(&group);
        PMPI_Comm_set_attr(comm, n.comm_key, t);
    }
    n.last_comm = comm;
    n.last_comm_nodes = t;
    return t;
}

static rank_nodes *win_table(MPI_Win win)
{
    if (win == n.last_win)
        return n.last_win_nodes;
    if (n.win_key == MPI_KEYVAL_INVALID)
        PMPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, forget_win, &n.win_key, NULL);
    rank_nodes *t = NULL;
    int found = 0;
    PMPI_Win_get_attr(win, n.win_key, &t, &found);
    if (!found) {
        MPI_Group group;
        PMPI_Win_get_group(win, &group);
        t = table_of(group);
        PMPI_Group_free(&group);
        PMPI_Win_set_attr(win, n.win_key, t);
    }
    n.last_win = win;
    n.last_win_nodes = t;
    return t;
}

int node_of_comm_rank(MPI_Comm comm, int rank)
{
    if (rank < 0) /* MPI_PROC_NULL, MPI_ANY_SOURCE */
        return -1;
    if (comm == MPI_COMM_WORLD)
        return rank < n.world_size ? n.world[rank] : -1;
    rank_nodes *t = comm_table(comm);
    return rank < t->size ? t->node[rank] : -1; /* a rank MPI will refuse */
}

int node_of_win_rank(MPI_Win win, int rank)
{
    if (rank < 0)
        return -1;
    rank_nodes *t = win_table(win);
    return rank < t->size ? t->node[rank] : -1;
}

int comm_within_node(MPI_Comm comm)
{
    return comm == MPI_COMM_WORLD ? n.nodes == 1 : comm_table(comm)->within;
}

void nodes_stop(void)
{
    if (n.world_group != MPI_GROUP_NULL)
        PMPI_Group_free(&n.world_group);
    if (n.comm_key != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&n.comm_key);
    if (n.win_key != MPI_KEYVAL_INVALID)
        PMPI_Win_free_keyval(&n.win_key);
    free(n.world);
    n.world = NULL;
}
