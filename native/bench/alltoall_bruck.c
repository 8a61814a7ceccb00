/* Bruck's all-to-all (Bruck et al. 1997; what MPI libraries use for small blocks): ceil(log2 P)
 * steps instead of P - 1, each moving about half the blocks, so fewer but larger messages.
 * Rotate so that block i is the one for rank + i; in the step for bit k send every block whose index
 * has bit k set to rank + k (receiving the same positions from rank - k); at the end block i came
 * from rank - i. Timing, rows, check: exchange.h. */
#include <string.h>

#include "exchange.h"

enum { DATA = 1 };

/* Copy the blocks whose index has bit k set between the staging area and a packed buffer. */
static int64_t pack(char *packed, char *blocks, int p, int k, size_t n, int unpack)
{
    int64_t count = 0;
    for (int i = 0; i < p; i++) {
        if (!(i & k))
            continue;
        if (unpack)
            memcpy(blocks + i * n, packed + count * n, n);
        else
            memcpy(packed + count * n, blocks + i * n, n);
        count++;
    }
    return count;
}

static void bruck(bench *b, const exchange_buffers *io, int64_t bytes)
{
    int p = b->size, me = b->rank;
    size_t n = (size_t)bytes, half = (size_t)(p / 2 + 1);
    char *blocks = io->scratch, *out = blocks + p * n, *in = out + half * n;
    for (int i = 0; i < p; i++)
        memcpy(blocks + i * n, io->send + ((me + i) % p) * n, n);
    for (int k = 1; k < p; k <<= 1) {
        int to = (me + k) % p, from = (me - k + p) % p;
        int64_t count = pack(out, blocks, p, k, n, 0);
        post_recv(b, in, count * bytes, from, DATA, &io->reqs[0]);
        send_msg(b, out, count * bytes, to, DATA);
        wait_recvs(b, 1, io->reqs);
        pack(in, blocks, p, k, n, 1);
    }
    for (int i = 0; i < p; i++)
        memcpy(io->recv + ((me - i + p) % p) * n, blocks + i * n, n);
}

int run_alltoall_bruck(bench *b)
{
    return time_exchange(b, bruck, 2 * (b->size / 2 + 1) + b->size);
}
