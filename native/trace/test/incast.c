/* An incast for the tracer: every rank but 0 puts PUTS messages of BYTES into rank 0's window, each
 * completed by a flush (the contended call site), then each rank puts as many to its own partner
 * (rank r to r+1, a ring without rank 0 in it: the uncontended control call site).
 *   trace-incast [PUTS [BYTES [exit]]]
 * With `exit`, every rank leaves without MPI_Finalize (the tracer's files then come from its atexit). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int puts = argc > 1 ? atoi(argv[1]) : 50, bytes = argc > 2 ? atoi(argv[2]) : 65536;
    char *data = calloc((size_t)bytes, 1), *base;
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)bytes * size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
        for (int i = 0; i < puts; i++) {
            MPI_Put(data, bytes, MPI_CHAR, 0, (MPI_Aint)bytes * rank, bytes, MPI_CHAR, win); /* INCAST */
            MPI_Win_flush(0, win);
        }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        int partner = rank % (size - 1) + 1; /* 1 -> 2 -> ... -> size-1 -> 1 */
        for (int i = 0; i < puts; i++) {
            MPI_Put(data, bytes, MPI_CHAR, partner, (MPI_Aint)bytes * rank, bytes, MPI_CHAR, win); /* RING */
            MPI_Win_flush(partner, win);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(data);
    if (argc > 3 && strcmp(argv[3], "exit") == 0)
        exit(0);
    MPI_Finalize();
    return 0;
}
