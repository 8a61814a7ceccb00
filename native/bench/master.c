/* Bhatele and Kale 2009, Benchmark I (no contention): the master (rank 0) ping-pongs with every other rank
 * in turn while the rest wait, so each rank's latency to the master is measured alone.
 * One row per size and rank; sample = half a round trip. */
#include <stdlib.h>

#include "harness.h"

int run_master(bench *b)
{
    buffers io = alloc_buffers(largest_size(b));
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        for (int peer = 1; peer < b->size; peer++) {
            MPI_Barrier(b->comm);
            int active = b->rank == 0 || b->rank == peer;
            if (active) {
                int other = b->rank == 0 ? peer : 0;
                for (int i = 0; i < b->opt.warmup; i++)
                    round_trip(b, io, bytes, other, b->rank == 0);
                for (int i = 0; i < iters; i++)
                    samples[i] = round_trip(b, io, bytes, other, b->rank == 0) / 2;
            }
            result r = result_init("latency", bytes, peer, 0, samples, iters);
            if (b->rank == 0)
                report_row(b, &r);
        }
        progress(b, k + 1, b->opt.nsizes);
    }
    free(samples);
    free_buffers(io);
    return 0;
}
