/* Throttled all-to-all and all-gather: MPI_Alltoall, MPI_Alltoallv, MPI_Allgather, MPI_Allgatherv
 * (classic and large count) on intracommunicators. The library cannot see inside MPI's collectives, so
 * under a policy these run as the congestion paper's runtime ran all-to-all: point to point, every
 * receive posted first, then the sends in the overlapped order (to rank+1, rank+2, ...), each admitted
 * like an MPI_Isend, so the node's pool bounds the collective's traffic as it bounds the program's
 * (each after a ready notice from its receiver: see exchange). A send to a task of this node is not
 * admitted, as an MPI_Isend there is not (nodes.h).
 * Their messages go on a private duplicate of the communicator (made at its first throttled
 * collective, freed with it), so they never match the program's receives. Every datatype works: blocks
 * are addressed by extent, as MPI does, and an in-place all-to-all first packs the blocks it sends.
 *
 * Passed straight to MPI: intercommunicators (their all-to-all pairs the two groups, not the ranks of
 * one), communicators within one node (nothing leaves it: the same answer on every task of it), any
 * call when no policy is in force, and with an
 * MPI older than 4 (the packing and large-count calls this needs are MPI 4's). Every other collective
 * passes through untouched (docs/measure.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "admit.h"
#include "held.h"
#include "nodes.h"
#include "sends.h"
#include "throttle.h"

#if MPI_VERSION >= 4

/* Where each peer's block lies in a buffer, in extents of the datatype. */
typedef struct {
    MPI_Count count;          /* every block's count, when there are no counts */
    const int *counts;        /* or per peer, classic ... */
    const MPI_Count *counts_c; /* ... or large count */
    const int *displs;
    const MPI_Aint *displs_c;
    int one_block;            /* the same block for every peer (Allgather's send) */
} layout;

static MPI_Count count_of(const layout *l, int i)
{
    return l->counts ? l->counts[i] : l->counts_c ? l->counts_c[i] : l->count;
}

static MPI_Aint displ_of(const layout *l, int i)
{
    return l->displs ? l->displs[i] : l->displs_c ? l->displs_c[i] : l->one_block ? 0 : i * l->count;
}

static void *need(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "contend-throttle: out of memory (%zu bytes) in a throttled collective\n",
                bytes);
        abort();
    }
    return p;
}

static int private_key = MPI_KEYVAL_INVALID;

static int free_private(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)extra;
    MPI_Comm *peers = value;
    int rc = PMPI_Comm_free(peers);
    free(peers);
    return rc;
}

/* The communicator's private duplicate for collective traffic (collective on first use). */
static int private_comm(MPI_Comm comm, MPI_Comm *peers)
{
    int rc, found = 0;
    MPI_Comm *cached;
    if (private_key == MPI_KEYVAL_INVALID &&
        (rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_private, &private_key, NULL)) !=
            MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Comm_get_attr(comm, private_key, &cached, &found)) != MPI_SUCCESS)
        return rc;
    if (!found) {
        /* MPI_Comm_dup blocks until every task is in it: finished operations must not keep tokens a
         * task of the node needs to get there. */
        if (held.live > 0)
            give_back(held_poll());
        cached = need(sizeof *cached);
        if ((rc = PMPI_Comm_dup(comm, cached)) != MPI_SUCCESS ||
            (rc = PMPI_Comm_set_attr(comm, private_key, cached)) != MPI_SUCCESS)
            return rc;
    }
    *peers = *cached;
    return MPI_SUCCESS;
}

static char *block(const void *buf, MPI_Aint displ, MPI_Aint extent)
{
    return (char *)buf + displ * extent;
}

/* Wait for the collective's requests, polling like a Wait while this task holds tokens. */
static int wait_all(int n, MPI_Request *requests)
{
    if (held.live == 0)
        return PMPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
    int flag = 0, rc;
    while ((rc = PMPI_Testall(n, requests, &flag, MPI_STATUSES_IGNORE)) == MPI_SUCCESS && !flag)
        between_tests();
    return rc;
}

/* Every task sends count_of(s, j) elements at displ_of(s, j) of sendbuf to task j and receives task
 * j's block into recvbuf as r says. own_in_place: this task's block is already where it belongs.
 *
 * A task sends its data to a peer only after that peer has said, with an empty message, that its
 * receives of this call are posted. Without that, a task that finished call k could hold the node's
 * tokens for a send of call k+1 to a peer still in call k, waiting for those very tokens before it
 * can post call k+1's receives: with messages above MPI's eager limit only the stall escape would end
 * that. So a send that holds tokens always has its receive waiting for it. */
enum { DATA_TAG, READY_TAG };

static int exchange(int large, const void *sendbuf, const layout *s, MPI_Datatype sendtype,
                    void *recvbuf, const layout *r, MPI_Datatype recvtype, MPI_Comm comm,
                    int own_in_place)
{
    MPI_Comm peers;
    int rc = private_comm(comm, &peers), p, me, n = 0;
    if (rc != MPI_SUCCESS)
        return rc;
    PMPI_Comm_size(comm, &p);
    PMPI_Comm_rank(comm, &me);
    MPI_Aint lb, sext, rext;
    PMPI_Type_get_extent(sendtype, &lb, &sext);
    PMPI_Type_get_extent(recvtype, &lb, &rext);
    MPI_Request *requests = need(sizeof(MPI_Request) * 3 * (size_t)p);
    MPI_Request *ready = need(sizeof(MPI_Request) * (size_t)p); /* ready[k]: from me + k */
    MPI_Request *sends = need(sizeof(MPI_Request) * (size_t)p); /* to find their tokens afterwards */
    throttle.stats.collectives++;
    for (int k = 1; k < p && rc == MPI_SUCCESS; k++)
        rc = PMPI_Irecv(NULL, 0, MPI_BYTE, (me + k) % p, READY_TAG, peers, &ready[k]);
    for (int k = own_in_place; k < p && rc == MPI_SUCCESS; k++) {
        int from = (me - k + p) % p;
        rc = PMPI_Irecv_c(block(recvbuf, displ_of(r, from), rext), count_of(r, from), recvtype, from,
                          DATA_TAG, peers, &requests[n++]);
    }
    for (int k = 1; k < p && rc == MPI_SUCCESS; k++) /* tiny, and needed before any data: not throttled */
        rc = PMPI_Isend(NULL, 0, MPI_BYTE, (me - k + p) % p, READY_TAG, peers, &requests[n++]);
    if (!own_in_place && rc == MPI_SUCCESS) /* to itself: nothing leaves the task */
        rc = PMPI_Isend_c(block(sendbuf, displ_of(s, me), sext), count_of(s, me), sendtype, me,
                          DATA_TAG, peers, &requests[n++]);
    int nsends = 0;
    for (int k = 1; k < p && rc == MPI_SUCCESS; k++) {
        int to = (me + k) % p;
        if ((rc = wait_polling(&ready[k], MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            break;
        const void *data = block(sendbuf, displ_of(s, to), sext);
        if (!throttled_send(to, peers)) { /* to a task of this node: not admitted */
            rc = start_send(SEND_STANDARD, data, count_of(s, to), sendtype, to, DATA_TAG, peers, &requests[n]);
            n += rc == MPI_SUCCESS;
            continue;
        }
        throttle.stats.ops_large_count += large;
        rc = throttled_start(SEND_STANDARD, data, count_of(s, to), sendtype, to, DATA_TAG, peers, &requests[n]);
        if (rc == MPI_SUCCESS)
            sends[nsends++] = requests[n++];
    }
    if (rc == MPI_SUCCESS)
        rc = wait_all(n, requests);
    int32_t tokens = 0;
    for (int i = 0; i < nsends && held.live > 0; i++)
        tokens += held_complete_request(sends[i]);
    give_back(tokens);
    free(requests), free(ready), free(sends);
    return rc;
}

/* In-place all-to-all: the blocks for the others are packed first, then sent from the copy. */
static int exchange_in_place(int large, void *recvbuf, const layout *r, MPI_Datatype recvtype,
                             MPI_Comm comm)
{
    int p, me, rc = MPI_SUCCESS;
    PMPI_Comm_size(comm, &p);
    PMPI_Comm_rank(comm, &me);
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(recvtype, &lb, &extent);
    MPI_Count *sizes = need(sizeof(MPI_Count) * (size_t)p), total = 0;
    MPI_Aint *at = need(sizeof(MPI_Aint) * (size_t)p);
    for (int j = 0; j < p && rc == MPI_SUCCESS; j++) {
        rc = PMPI_Pack_size_c(j == me ? 0 : count_of(r, j), recvtype, comm, &sizes[j]);
        at[j] = (MPI_Aint)total;
        total += sizes[j];
    }
    char *packed = need((size_t)total);
    for (int j = 0; j < p && rc == MPI_SUCCESS; j++) {
        MPI_Count position = at[j];
        if (j != me)
            rc = PMPI_Pack_c(block(recvbuf, displ_of(r, j), extent), count_of(r, j), recvtype, packed,
                             total, &position, comm);
        sizes[j] = position - at[j];
    }
    layout s = {.counts_c = sizes, .displs_c = at};
    if (rc == MPI_SUCCESS)
        rc = exchange(large, packed, &s, MPI_PACKED, recvbuf, r, recvtype, comm, 1);
    free(sizes), free(at), free(packed);
    return rc;
}

/* In-place all-gather: this task's block, already in place, is what it sends. */
static int gather_in_place(int large, void *recvbuf, const layout *r, MPI_Datatype recvtype,
                           MPI_Comm comm)
{
    int me;
    PMPI_Comm_rank(comm, &me);
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(recvtype, &lb, &extent);
    layout s = {.count = count_of(r, me), .one_block = 1};
    return exchange(large, block(recvbuf, displ_of(r, me), extent), &s, recvtype, recvbuf, r, recvtype,
                    comm, 1);
}

/* Whether the library runs this collective itself (see the top of the file). */
static int throttled_collective(MPI_Comm comm)
{
    if (!throttling())
        return 0;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    return !inter && !comm_within_node(comm);
}

static int alltoall(int large, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                    void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    layout s = {.count = sendcount}, r = {.count = recvcount};
    if (sendbuf == MPI_IN_PLACE)
        return exchange_in_place(large, recvbuf, &r, recvtype, comm);
    return exchange(large, sendbuf, &s, sendtype, recvbuf, &r, recvtype, comm, 0);
}

static int alltoallv(int large, const void *sendbuf, const layout *s, MPI_Datatype sendtype,
                     void *recvbuf, const layout *r, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (sendbuf == MPI_IN_PLACE)
        return exchange_in_place(large, recvbuf, r, recvtype, comm);
    return exchange(large, sendbuf, s, sendtype, recvbuf, r, recvtype, comm, 0);
}

static int allgather(int large, const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                     void *recvbuf, const layout *r, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (sendbuf == MPI_IN_PLACE)
        return gather_in_place(large, recvbuf, r, recvtype, comm);
    layout s = {.count = sendcount, .one_block = 1};
    return exchange(large, sendbuf, &s, sendtype, recvbuf, r, recvtype, comm, 0);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!throttled_collective(comm))
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return alltoall(0, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!throttled_collective(comm))
        return PMPI_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return alltoall(1, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!throttled_collective(comm))
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm);
    layout s = {.counts = sendcounts, .displs = sdispls}, r = {.counts = recvcounts, .displs = rdispls};
    return alltoallv(0, sendbuf, &s, sendtype, recvbuf, &r, recvtype, comm);
}

int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!throttled_collective(comm))
        return PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                recvtype, comm);
    layout s = {.counts_c = sendcounts, .displs_c = sdispls};
    layout r = {.counts_c = recvcounts, .displs_c = rdispls};
    return alltoallv(1, sendbuf, &s, sendtype, recvbuf, &r, recvtype, comm);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!throttled_collective(comm))
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    layout r = {.count = recvcount};
    return allgather(0, sendbuf, sendcount, sendtype, recvbuf, &r, recvtype, comm);
}

int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!throttled_collective(comm))
        return PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    layout r = {.count = recvcount};
    return allgather(1, sendbuf, sendcount, sendtype, recvbuf, &r, recvtype, comm);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!throttled_collective(comm))
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               comm);
    layout r = {.counts = recvcounts, .displs = displs};
    return allgather(0, sendbuf, sendcount, sendtype, recvbuf, &r, recvtype, comm);
}

int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                     MPI_Comm comm)
{
    if (!throttled_collective(comm))
        return PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                 comm);
    layout r = {.counts_c = recvcounts, .displs_c = displs};
    return allgather(1, sendbuf, sendcount, sendtype, recvbuf, &r, recvtype, comm);
}

#endif
