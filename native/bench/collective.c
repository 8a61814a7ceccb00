/* What a collective costs beyond its messages, on 2 ranks: MPI_Allgather of SIZE bytes per rank, whose
 * algorithm on 2 ranks is one exchange, against MPI_Sendrecv of SIZE bytes with the partner, the same
 * exchange by point-to-point. The two alternate call by call, so both see the same state of the host.
 * One sample = one call's time on rank 0; rows "allgather" and "sendrecv" per size. The difference of
 * their medians is the library's entry into a collective (argument checks, algorithm selection) and the
 * copy of the rank's own block: `contend bench fit` writes it as [mpi] collective_entry. */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "harness.h"

/* Counted from the statuses of the point-to-point half and from what an Allgather of 2 ranks must move. */
static int64_t allgather(bench *b, const char *send, char *recv, int64_t bytes)
{
    int64_t start = now_ns();
    MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, b->comm);
    int64_t took = now_ns() - start;
    b->count.bytes_sent += bytes;
    b->count.bytes_received += bytes;
    b->count.messages_sent++;
    b->count.messages_received++;
    return took;
}

static int64_t sendrecv(bench *b, const char *send, char *recv, int64_t bytes)
{
    MPI_Status status;
    int peer = 1 - b->rank, got;
    int64_t start = now_ns();
    MPI_Sendrecv(send, (int)bytes, MPI_BYTE, peer, 0, recv, (int)bytes, MPI_BYTE, peer, 0, b->comm, &status);
    int64_t took = now_ns() - start;
    MPI_Get_count(&status, MPI_BYTE, &got);
    b->count.bytes_sent += bytes;
    b->count.messages_sent++;
    b->count.bytes_received += got;
    b->count.messages_received++;
    return took;
}

int run_collective(bench *b)
{
    if (b->size != 2)
        fail_usage(b, "collective compares a 2-rank Allgather with one Sendrecv: needs --np 2, got %d", b->size);
    int64_t largest = largest_size(b);
    char *send = alloc_buffer(largest > 0 ? largest : 1), *recv = alloc_buffer(2 * (largest > 0 ? largest : 1));
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *gathers = malloc(sizeof(double) * iters_max), *pairs = malloc(sizeof(double) * iters_max);
    int verified = 1;

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        memset(send, 'a' + b->rank, (size_t)(bytes > 0 ? bytes : 1));
        MPI_Barrier(b->comm);
        for (int i = 0; i < b->opt.warmup; i++) {
            allgather(b, send, recv, bytes);
            sendrecv(b, send, recv, bytes);
        }
        for (int i = 0; i < iters; i++) {
            gathers[i] = (double)allgather(b, send, recv, bytes);
            pairs[i] = (double)sendrecv(b, send, recv, bytes);
        }
        /* One more Allgather, the partner's block checked byte by byte. */
        allgather(b, send, recv, bytes);
        for (int64_t i = 0; i < bytes; i++)
            verified &= recv[(1 - b->rank) * bytes + i] == 'a' + (1 - b->rank);
        result g = result_init("allgather", bytes, 0, 1, gathers, iters);
        report(b, b->rank == 0 ? &g : NULL);
        result p = result_init("sendrecv", bytes, 0, 1, pairs, iters);
        report(b, b->rank == 0 ? &p : NULL);
        progress(b, k + 1, b->opt.nsizes);
    }
    b->count.verified = verified;
    free(gathers);
    free(pairs);
    free(send);
    free(recv);
    return 0;
}
