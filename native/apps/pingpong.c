/* A blocking ping-pong between ranks 0 and 1 (prediction test program, docs/measure.md "Prediction
 * against reality"); further ranks only initialize and finalize.
 *
 *   app-pingpong [ROUNDS [BYTES]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long rounds = positive_arg(argc, argv, 1, 1000), bytes = positive_arg(argc, argv, 2, 8);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buffer = calloc((size_t)bytes, 1);
    if (!buffer)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (long r = 0; r < rounds && rank < 2; r++) {
        if (rank == 0) {
            MPI_Send(buffer, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buffer, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buffer, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buffer, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    free(buffer);
    MPI_Finalize();
    return 0;
}
