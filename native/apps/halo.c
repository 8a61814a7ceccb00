/* A 1-D halo exchange (prediction test program, docs/measure.md "Prediction against reality").
 *
 *   app-halo [ITERATIONS [CELLS [HALO [EVERY [DISTANCE]]]]]
 *
 * Ranks form a periodic ring; each holds CELLS doubles. A rank's neighbours are the ranks DISTANCE before
 * and after it (default 1; with DISTANCE = size / 2 both are the same partner, the pairs r <-> r + size/2
 * that the mapping experiment on the emulated fabric places). Per iteration: post Irecvs from both neighbours,
 * Isend HALO doubles of each edge to them, relax the interior while the messages fly, Waitall, relax the
 * edges; every EVERY iterations an MPI_Allreduce of the residual (one double). Prints the residual on
 * rank 0, so the compiler keeps the work. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"

/* One relaxation sweep over cells [from, to) of u into v; returns the sum of squared changes. */
static double relax(const double *u, double *v, long from, long to)
{
    double change = 0.0;
    for (long i = from; i < to; i++) {
        v[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
        change += (v[i] - u[i]) * (v[i] - u[i]);
    }
    return change;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long iterations = positive_arg(argc, argv, 1, 200), cells = positive_arg(argc, argv, 2, 100000);
    long halo = positive_arg(argc, argv, 3, 1024), every = positive_arg(argc, argv, 4, 10);
    long distance = positive_arg(argc, argv, 5, 1);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (halo * 2 > cells || (size > 1 && distance % size == 0)) {
        /* every rank sees the same arguments: all leave cleanly, rank 0 says why (MPI_Abort could end the
         * job before the launcher has passed the message on) */
        if (rank == 0 && halo * 2 > cells)
            fprintf(stderr, "app-halo: HALO (%ld) must be at most half of CELLS (%ld)\n", halo, cells);
        else if (rank == 0)
            fprintf(stderr, "app-halo: DISTANCE (%ld) must not be a multiple of the ranks (%d)\n", distance, size);
        MPI_Finalize();
        return 2;
    }
    int left = (int)((rank + size - distance % size) % size), right = (int)((rank + distance) % size);
    /* u[0..halo) and u[halo+cells..) are the ghost cells */
    double *u = calloc((size_t)(cells + 2 * halo), sizeof *u), *v = calloc((size_t)(cells + 2 * halo), sizeof *v);
    if (!u || !v)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (long i = 0; i < cells; i++)
        u[halo + i] = (double)((rank * cells + i) % 97);
    double residual = 0.0;
    for (long it = 0; it < iterations; it++) {
        MPI_Request req[4];
        MPI_Irecv(u, (int)halo, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(u + halo + cells, (int)halo, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(u + halo, (int)halo, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(u + cells, (int)halo, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[3]);
        double change = relax(u, v, 2 * halo, cells); /* needs no ghost cell */
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        change += relax(u, v, halo, 2 * halo) + relax(u, v, cells, cells + halo);
        double *t = u;
        u = v;
        v = t;
        if ((it + 1) % every == 0)
            MPI_Allreduce(&change, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("app-halo: %d ranks, %ld iterations, residual %.6g\n", size, iterations, residual);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
