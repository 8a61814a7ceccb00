/* The MPI library's own MPI_Alltoall (Luo et al. 2012's "MPI" series), whatever algorithm it picks for the
 * size. Timing, rows, check: exchange.h. */
#include "exchange.h"

static void library(bench *b, const exchange_buffers *io, int64_t bytes)
{
    MPI_Alltoall(io->send, (int)bytes, MPI_BYTE, io->recv, (int)bytes, MPI_BYTE, b->comm);
    /* A collective leaves no statuses to count: count the blocks it must move between ranks. */
    int64_t others = b->size - 1;
    b->count.bytes_sent += others * bytes;
    b->count.bytes_received += others * bytes;
    b->count.messages_sent += others;
    b->count.messages_received += others;
}

int run_alltoall_mpi(bench *b)
{
    return time_exchange(b, library, 0);
}
