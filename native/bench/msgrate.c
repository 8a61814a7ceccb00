/* Streams between disjoint pairs at once: rank i < P/2 sends to rank i + P/2. In each iteration the
 * sender posts a window of W non-blocking sends, the receiver W receives, then the receiver returns
 * a zero-byte acknowledgement. One sample = the sender's iteration time / W (time per message), so
 * a row's bandwidth and message rate are those of one pair; the pairs' rows add up to the total.
 * The W messages of a window share one buffer (contents unchecked, bytes counted), as in OSU. */
#include <stdlib.h>

#include "clock.h"
#include "harness.h"

enum { DATA = 1, ACK = 2 };

static void stream_window(bench *b, void *buf, int64_t bytes, int peer, int sender,
                          MPI_Request *reqs, int w)
{
    for (int j = 0; j < w; j++) {
        if (sender)
            post_send(b, buf, bytes, peer, DATA, &reqs[j]);
        else
            post_recv(b, buf, bytes, peer, DATA, &reqs[j]);
    }
    if (sender) {
        wait_sends(b, w, reqs);
        recv_msg(b, NULL, 0, peer, ACK);
    } else {
        wait_recvs(b, w, reqs);
        send_msg(b, NULL, 0, peer, ACK);
    }
}

int run_msgrate(bench *b)
{
    int half = b->size / 2, sender = b->rank < half;
    int peer = sender ? b->rank + half : b->rank - half;
    int w = b->opt.window;
    void *buf = alloc_buffer(largest_size(b));
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * w);
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        MPI_Barrier(b->comm);
        for (int i = 0; i < b->opt.warmup; i++)
            stream_window(b, buf, bytes, peer, sender, reqs, w);
        MPI_Barrier(b->comm); /* all pairs start timing together: they compete */
        for (int i = 0; i < iters; i++) {
            int64_t start = now_ns();
            stream_window(b, buf, bytes, peer, sender, reqs, w);
            samples[i] = (double)(now_ns() - start) / w;
        }
        result r = result_init("bandwidth", bytes, b->rank, peer, samples, iters);
        r.window = w;
        report(b, sender ? &r : NULL);
        progress(b, k + 1, b->opt.nsizes);
    }
    free(samples);
    free(reqs);
    free(buf);
    return 0;
}
