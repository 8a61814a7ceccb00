/* Hand-checkable programs for converting traces into schedules (tests/test_trace_replay.py): each does a
 * few MPI operations whose schedule can be written by hand.
 *   trace-replay pingpong  ranks 0 and 1: 3 round trips of 1000 bytes (Send / Recv, tag 5)
 *   trace-replay ring      every rank: Irecv from the left, Isend of 4096 bytes to the right, Waitall
 *   trace-replay split     Comm_split into even and odd world ranks (key: minus the world rank, so the
 *                          highest world rank is rank 0), Bcast of 256 bytes from the sub-rank 1,
 *                          then a Barrier on MPI_COMM_WORLD
 *   trace-replay rma       Win_allocate; lock_all; each rank Puts 512 bytes to its right neighbour,
 *                          Win_flush; unlock_all; Test-polled Irecv from the left, Send to the right */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static char buffer[2][8192];

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    if (strcmp(mode, "pingpong") == 0) {
        for (int i = 0; i < 3 && rank < 2; i++) {
            if (rank == 0) {
                MPI_Send(buffer[0], 1000, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
                MPI_Recv(buffer[1], 1000, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buffer[1], 1000, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buffer[0], 1000, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
            }
        }
    } else if (strcmp(mode, "ring") == 0) {
        MPI_Request requests[2];
        MPI_Irecv(buffer[1], 4096, MPI_BYTE, left, 9, MPI_COMM_WORLD, &requests[0]);
        MPI_Isend(buffer[0], 4096, MPI_BYTE, right, 9, MPI_COMM_WORLD, &requests[1]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    } else if (strcmp(mode, "split") == 0) {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
        MPI_Bcast(buffer[0], 64, MPI_INT, 1, half);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Comm_free(&half);
    } else if (strcmp(mode, "rma") == 0) {
        void *base;
        MPI_Win win;
        MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Win_lock_all(0, win);
        MPI_Put(buffer[0], 512, MPI_BYTE, right, 0, 512, MPI_BYTE, win);
        MPI_Win_flush(right, win);
        MPI_Win_unlock_all(win);
        MPI_Request request;
        int done = 0;
        MPI_Irecv(buffer[1], 8, MPI_BYTE, left, 3, MPI_COMM_WORLD, &request);
        MPI_Send(buffer[0], 8, MPI_BYTE, right, 3, MPI_COMM_WORLD);
        while (!done)
            MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        MPI_Win_free(&win);
    } else {
        if (rank == 0)
            fprintf(stderr, "usage: trace-replay pingpong|ring|split|rma\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
