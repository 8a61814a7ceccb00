/* One-sided puts with flushes (prediction test program, docs/measure.md "Prediction against reality").
 *
 *   app-putflush [ITERATIONS [BYTES [WORK]]]
 *
 * Every rank exposes a window and holds a passive-target epoch on all ranks (MPI_Win_lock_all). Per
 * iteration: WORK doubles of local computation, an MPI_Put of BYTES into the next rank's window, an
 * MPI_Win_flush to that rank (the put is complete at the target), then an MPI_Barrier so every rank may
 * read what its neighbour put. Prints a checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long iterations = positive_arg(argc, argv, 1, 500), bytes = positive_arg(argc, argv, 2, 65536), work = positive_arg(argc, argv, 3, 20000);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *window_memory, *source = malloc((size_t)bytes);
    double *field = malloc((size_t)work * sizeof *field);
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &window_memory, &win);
    if (!source || !field)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(window_memory, 0, (size_t)bytes);
    for (long i = 0; i < work; i++)
        field[i] = (double)(i % 13);
    int next = (rank + 1) % size;
    double checksum = 0.0;
    MPI_Win_lock_all(0, win);
    for (long it = 0; it < iterations; it++) {
        for (long i = 1; i < work; i++)
            field[i] = 0.5 * (field[i] + field[i - 1]);
        memset(source, (int)((it + rank) & 0x7f), (size_t)bytes);
        MPI_Put(source, (int)bytes, MPI_BYTE, next, 0, (int)bytes, MPI_BYTE, win);
        MPI_Win_flush(next, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(win);
        checksum += window_memory[bytes - 1] + field[work - 1];
    }
    MPI_Win_unlock_all(win);
    if (rank == 0)
        printf("app-putflush: %d ranks, %ld iterations, checksum %.6g\n", size, iterations, checksum);
    MPI_Win_free(&win);
    free(source);
    free(field);
    MPI_Finalize();
    return 0;
}
