/* Overlapped all-to-all (Luo et al. 2012's baseline): every rank posts a receive from every other rank,
 * then sends to every other rank at once, starting with rank + 1, and waits for all of them.
 * Timing, rows and the data check: exchange.h. */
#include "exchange.h"

enum { DATA = 1 };

static void overlapped(bench *b, const exchange_buffers *io, int64_t bytes)
{
    int p = b->size, n = 0;
    for (int k = 1; k < p; k++) {
        int from = (b->rank - k + p) % p;
        post_recv(b, io->recv + (size_t)from * (size_t)bytes, bytes, from, DATA, &io->reqs[n++]);
    }
    for (int k = 1; k < p; k++) {
        int to = (b->rank + k) % p;
        post_send(b, io->send + (size_t)to * (size_t)bytes, bytes, to, DATA, &io->reqs[n++]);
    }
    wait_recvs(b, p - 1, io->reqs);
    wait_sends(b, p - 1, io->reqs + p - 1);
}

int run_alltoall(bench *b)
{
    return time_exchange(b, overlapped, 0);
}
