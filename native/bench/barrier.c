/* MPI_Barrier of all ranks, the size ignored: one sample = one barrier's time on rank 0. How the MPI
 * library waits inside a collective; with ranks sharing one core (bench fit pins them so), MPICH's
 * shared-memory barrier spins without yielding, and its time is the scheduler's (the [cores] quantum). */
#include <stdlib.h>

#include "clock.h"
#include "harness.h"

int run_barrier(bench *b)
{
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);

    for (int k = 0; k < b->opt.nsizes; k++) {
        int iters = iterations_for(b, b->opt.sizes[k]);
        MPI_Barrier(b->comm);
        for (int i = 0; i < b->opt.warmup; i++)
            MPI_Barrier(b->comm);
        for (int i = 0; i < iters; i++) {
            int64_t start = now_ns();
            MPI_Barrier(b->comm);
            samples[i] = (double)(now_ns() - start);
        }
        result r = result_init("latency", b->opt.sizes[k], 0, 1, samples, iters);
        report(b, b->rank == 0 ? &r : NULL);
        progress(b, k + 1, b->opt.nsizes);
    }
    free(samples);
    return 0;
}
