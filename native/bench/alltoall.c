/* Overlapped all-to-all (the seed's baseline): in each iteration every rank posts a receive from
 * every other rank, then sends to every other rank at once, starting with rank + 1, and waits for
 * all of them. Iterations start at a barrier. One sample = a rank's iteration time / (P - 1), the
 * time per message it sent, so a row's bandwidth is that rank's injection rate during the exchange
 * and the rows add up to the aggregate. Send buffers are one per peer, receive buffers too. */
#include <stdlib.h>

#include "clock.h"
#include "harness.h"

enum { DATA = 1 };

static void exchange(bench *b, char *send, char *recv, int64_t bytes, MPI_Request *reqs)
{
    int p = b->size, n = 0;
    for (int k = 1; k < p; k++) {
        int from = (b->rank - k + p) % p;
        post_recv(b, recv + (size_t)from * (size_t)bytes, bytes, from, DATA, &reqs[n++]);
    }
    for (int k = 1; k < p; k++) {
        int to = (b->rank + k) % p;
        post_send(b, send + (size_t)to * (size_t)bytes, bytes, to, DATA, &reqs[n++]);
    }
    wait_recvs(b, p - 1, reqs);
    wait_sends(b, p - 1, reqs + p - 1);
}

int run_alltoall(bench *b)
{
    int64_t largest = largest_size(b);
    char *send = alloc_buffer(largest * b->size), *recv = alloc_buffer(largest * b->size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)b->size);
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        for (int i = -b->opt.warmup; i < iters; i++) {
            MPI_Barrier(b->comm); /* everyone starts the exchange together */
            int64_t start = now_ns();
            exchange(b, send, recv, bytes, reqs);
            if (i >= 0)
                samples[i] = (double)(now_ns() - start) / (b->size - 1);
        }
        result r = result_init("bandwidth", bytes, b->rank, -1, samples, iters);
        report(b, &r);
        progress(b, k + 1, b->opt.nsizes);
    }
    free(samples);
    free(reqs);
    free(send);
    free(recv);
    return 0;
}
