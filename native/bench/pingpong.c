/* Ping-pong between ranks 0 and 1 over all sizes; the other ranks wait at the barrier.
 * One sample = half of one timed round trip (the one-way time of a message). */
#include <stdlib.h>
#include <time.h>

#include "harness.h"

/* --pause: the initiator rests between round trips (the responder waits in its receive). */
static void pause_after(const bench *b, int initiator)
{
    if (!initiator || b->opt.pause_s <= 0)
        return;
    struct timespec rest = {(time_t)b->opt.pause_s, (long)((b->opt.pause_s - (time_t)b->opt.pause_s) * 1e9)};
    nanosleep(&rest, NULL);
}

int run_pingpong(bench *b)
{
    buffers io = alloc_buffers(largest_size(b));
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);
    int active = b->rank < 2, initiator = b->rank == 0;

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        MPI_Barrier(b->comm);
        if (active) {
            for (int i = 0; i < b->opt.warmup; i++) {
                round_trip(b, io, bytes, 1 - b->rank, initiator);
                pause_after(b, initiator);
            }
            for (int i = 0; i < iters; i++) {
                samples[i] = round_trip(b, io, bytes, 1 - b->rank, initiator) / 2;
                pause_after(b, initiator);
            }
        }
        result r = result_init("latency", bytes, 0, 1, samples, iters);
        report(b, initiator ? &r : NULL);
        progress(b, k + 1, b->opt.nsizes);
    }
    free(samples);
    free_buffers(io);
    return 0;
}
