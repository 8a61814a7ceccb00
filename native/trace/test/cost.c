/* The tracer's CPU cost per call, robust to a busy host: one rank sends 8 bytes to itself in a loop and
 * reads its own CPU time (CLOCK_THREAD_CPUTIME_ID: time other jobs take from it does not count) around
 * the loop, once with MPI_Irecv + MPI_Send + MPI_Wait and once with MPI_Irecv + MPI_Isend + MPI_Waitall
 * (3 calls per iteration each; a blocking send to oneself needs its receive posted first). Prints one
 * JSON line: CPU ns per iteration of each loop.
 *   trace-cost [ITERATIONS] */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n = argc > 1 ? atoi(argv[1]) : 100000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char out[8] = {0}, in[8];
    MPI_Request reqs[2];
    for (int i = 0; i < n / 10; i++) { /* warm up */
        MPI_Irecv(in, 8, MPI_CHAR, rank, 1, MPI_COMM_WORLD, &reqs[0]);
        MPI_Send(out, 8, MPI_CHAR, rank, 1, MPI_COMM_WORLD);
        MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    }
    double t0 = cpu_ns();
    for (int i = 0; i < n; i++) {
        MPI_Irecv(in, 8, MPI_CHAR, rank, 1, MPI_COMM_WORLD, &reqs[0]);
        MPI_Send(out, 8, MPI_CHAR, rank, 1, MPI_COMM_WORLD);
        MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    }
    double t1 = cpu_ns();
    for (int i = 0; i < n; i++) {
        MPI_Irecv(in, 8, MPI_CHAR, rank, 2, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(out, 8, MPI_CHAR, rank, 2, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    }
    double t2 = cpu_ns();
    char line[256];
    int len = snprintf(line, sizeof line, "{\"rank\": %d, \"iterations\": %d, \"blocking_ns\": %.2f, "
                       "\"nonblocking_ns\": %.2f}\n", rank, n, (t1 - t0) / n, (t2 - t1) / n);
    fwrite(line, 1, (size_t)len, stdout);
    MPI_Finalize();
    return 0;
}
