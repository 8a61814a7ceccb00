/* Ranks in pairs, all pairs ping-ponging at once (Bhatele and Kale 2009):
 *   pairs: Benchmark II, partner a nearest neighbour (2i with 2i+1) or random (--mode random)
 *   hops:  Benchmark III, partner --hops steps away along dimension --dim of the map --dims
 * The lower rank of a pair initiates; one row per initiator and size, sample = half a round trip. */
#include <stdlib.h>

#include "harness.h"

/* A random perfect matching, the same on every rank: shuffle with a seeded generator, pair
 * neighbours in the shuffled order. */
static void random_partners(int size, unsigned seed, int *partner)
{
    int *order = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++)
        order[i] = i;
    unsigned state = seed * 2654435761u + 1;
    for (int i = size - 1; i > 0; i--) {
        state = state * 1103515245u + 12345u; /* the same numbers on every platform */
        int j = (int)((state >> 8) % (unsigned)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < size; i += 2) {
        partner[order[i]] = order[i + 1];
        partner[order[i + 1]] = order[i];
    }
    free(order);
}

/* Partner n hops away along one dimension: coordinate c pairs with c+n when (c / n) is even. */
static void hop_partners(const bench *b, int *partner)
{
    const options *o = &b->opt;
    int dims[MAX_DIMS], ndims = o->ndims;
    if (ndims == 0) { /* default map: all ranks in a line */
        dims[0] = b->size;
        ndims = 1;
    } else {
        for (int d = 0; d < ndims; d++)
            dims[d] = o->dims[d];
    }
    int product = 1, stride = 1;
    for (int d = 0; d < ndims; d++)
        product *= dims[d];
    if (product != b->size)
        fail_usage(b, "--dims has %d positions but there are %d ranks", product, b->size);
    if (o->dim >= ndims)
        fail_usage(b, "--dim %d: the map has only %d dimensions", o->dim, ndims);
    if (dims[o->dim] % (2 * o->hops))
        fail_usage(b, "--hops %d: extent %d of dimension %d is not a multiple of %d", o->hops,
                   dims[o->dim], o->dim, 2 * o->hops);
    for (int d = 0; d < o->dim; d++)
        stride *= dims[d];
    for (int r = 0; r < b->size; r++) {
        int c = (r / stride) % dims[o->dim];
        partner[r] = (c / o->hops) % 2 == 0 ? r + o->hops * stride : r - o->hops * stride;
    }
}

static int run_paired(bench *b, const int *partner, int hops)
{
    buffers io = alloc_buffers(largest_size(b));
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);
    int peer = partner[b->rank], initiator = b->rank < peer;

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        MPI_Barrier(b->comm);
        for (int i = 0; i < b->opt.warmup; i++)
            round_trip(b, io, bytes, peer, initiator);
        MPI_Barrier(b->comm); /* all pairs start together: they compete */
        for (int i = 0; i < iters; i++)
            samples[i] = round_trip(b, io, bytes, peer, initiator) / 2;
        result r = result_init("latency", bytes, b->rank, peer, samples, iters);
        if (hops > 0)
            result_extra(&r, "hops", hops);
        report(b, initiator ? &r : NULL);
        progress(b, k + 1, b->opt.nsizes);
    }
    free(samples);
    free_buffers(io);
    return 0;
}

int run_pairs(bench *b)
{
    static const char *const modes[] = {"nn", "random", NULL};
    int random = pattern_mode(b, modes);
    int *partner = malloc(sizeof(int) * b->size);
    if (random)
        random_partners(b->size, b->opt.seed, partner);
    else
        for (int r = 0; r < b->size; r++)
            partner[r] = r ^ 1;
    int rc = run_paired(b, partner, 0);
    free(partner);
    return rc;
}

int run_hops(bench *b)
{
    int *partner = malloc(sizeof(int) * b->size);
    hop_partners(b, partner);
    int rc = run_paired(b, partner, b->opt.hops);
    free(partner);
    return rc;
}
