/* The timing loop and data check of the all-to-all patterns (see exchange.h). */
#include "exchange.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"

static unsigned char block_byte(int64_t i, int from, int to)
{
    return (unsigned char)(i * 131 + from * 29 + to * 17 + 7);
}

/* One exchange of the largest size with known contents; 1 when every received byte is right. */
static int check_exchange(bench *b, exchange_fn exchange, const exchange_buffers *io, int64_t bytes)
{
    for (int to = 0; to < b->size; to++)
        for (int64_t i = 0; i < bytes; i++)
            io->send[(size_t)to * bytes + i] = (char)block_byte(i, b->rank, to);
    memset(io->recv, 0, (size_t)b->size * bytes);
    MPI_Barrier(b->comm);
    exchange(b, io, bytes);
    for (int from = 0; from < b->size; from++) {
        if (from == b->rank) /* not every algorithm copies a rank's block to itself */
            continue;
        for (int64_t i = 0; i < bytes; i++)
            if ((unsigned char)io->recv[(size_t)from * bytes + i] != block_byte(i, from, b->rank))
                return 0;
    }
    return 1;
}

int time_exchange(bench *b, exchange_fn exchange, int scratch_blocks)
{
    int64_t largest = largest_size(b);
    exchange_buffers io = {alloc_buffer(largest * b->size), alloc_buffer(largest * b->size),
                           scratch_blocks > 0 ? alloc_buffer(largest * scratch_blocks) : NULL,
                           malloc(sizeof(MPI_Request) * 2 * (size_t)b->size)};
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        for (int i = -b->opt.warmup; i < iters; i++) {
            MPI_Barrier(b->comm); /* everyone starts the exchange together */
            int64_t start = now_ns();
            exchange(b, &io, bytes);
            if (i >= 0)
                samples[i] = (double)(now_ns() - start) / (b->size - 1);
        }
        result r = result_init("bandwidth", bytes, b->rank, -1, samples, iters);
        result_extra(&r, "alltoall_ns", r.t.p50 * (b->size - 1));
        report(b, &r);
        progress(b, k + 1, b->opt.nsizes);
    }
    MPI_Pcontrol(0); /* the check is the harness's, not the exchanges' (harness.c) */
    b->count.verified = check_exchange(b, exchange, &io, largest);
    MPI_Pcontrol(1);
    free(samples);
    free(io.reqs);
    free(io.scratch);
    free(io.send);
    free(io.recv);
    return 0;
}
