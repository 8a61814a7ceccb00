/* Incast (ranks 1..P-1 all send to rank 0) and outcast (rank 0 sends to all of 1..P-1).
 * Each iteration starts at a barrier; every peer moves a window of W messages at once.
 * The hub (rank 0) times each peer separately from the barrier:
 *   incast:  until the last of that sender's W messages has arrived
 *   outcast: until that receiver's zero-byte acknowledgement (sent once it has all W) arrives
 * One sample = that time / W, so a peer's bandwidth row is the share of the hub's link it got.
 * All messages in flight share one buffer per rank (their contents are not checked; the tally counts
 * every byte), as OSU's bandwidth tests do: W x P buffers would not fit for large messages. */
#include <stdlib.h>

#include "clock.h"
#include "harness.h"

enum { HUB = 0, DATA = 1, ACK = 2 };

/* One iteration at the hub; fills done_ns[peer] with that peer's completion time from start. */
static void hub_iteration(bench *b, int incast, void *buf, int64_t bytes, int w, MPI_Request *data,
                          MPI_Request *acks, double *done_ns)
{
    int peers = b->size - 1;
    MPI_Barrier(b->comm);
    int64_t start = now_ns();
    for (int j = 0; j < w; j++)
        for (int p = 1; p <= peers; p++) {
            MPI_Request *req = &data[(p - 1) * w + j];
            if (incast)
                post_recv(b, buf, bytes, p, DATA, req);
            else
                post_send(b, buf, bytes, p, DATA, req);
        }
    if (incast) {
        int *left = malloc(sizeof(int) * peers);
        for (int p = 0; p < peers; p++)
            left[p] = w;
        for (int n = 0; n < peers * w; n++) {
            int p = wait_any_recv(b, peers * w, data) / w;
            if (--left[p] == 0)
                done_ns[p] = (double)(now_ns() - start);
        }
        free(left);
    } else {
        for (int p = 1; p <= peers; p++)
            post_recv(b, NULL, 0, p, ACK, &acks[p - 1]);
        for (int n = 0; n < peers; n++) {
            int p = wait_any_recv(b, peers, acks);
            done_ns[p] = (double)(now_ns() - start);
        }
        wait_sends(b, peers * w, data);
    }
}

static void peer_iteration(bench *b, int incast, void *buf, int64_t bytes, int w, MPI_Request *data)
{
    MPI_Barrier(b->comm);
    for (int j = 0; j < w; j++) {
        if (incast)
            post_send(b, buf, bytes, HUB, DATA, &data[j]);
        else
            post_recv(b, buf, bytes, HUB, DATA, &data[j]);
    }
    if (incast) {
        wait_sends(b, w, data);
    } else {
        wait_recvs(b, w, data);
        send_msg(b, NULL, 0, HUB, ACK);
    }
}

static int run_fan(bench *b, int incast)
{
    int peers = b->size - 1, w = b->opt.window, hub = b->rank == HUB;
    void *buf = alloc_buffer(largest_size(b));
    MPI_Request *data = malloc(sizeof(MPI_Request) * peers * w);
    MPI_Request *acks = malloc(sizeof(MPI_Request) * peers);
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *done_ns = malloc(sizeof(double) * peers);
    double *samples = malloc(sizeof(double) * peers * iters_max); /* [peer][iteration] */

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        for (int i = -b->opt.warmup; i < iters; i++) {
            if (hub) {
                hub_iteration(b, incast, buf, bytes, w, data, acks, done_ns);
                for (int p = 0; p < peers && i >= 0; p++)
                    samples[p * iters_max + i] = done_ns[p] / w;
            } else {
                peer_iteration(b, incast, buf, bytes, w, data);
            }
        }
        /* Rows come from the hub, one per peer, written as that peer's. */
        for (int p = 0; p < peers; p++) {
            result r = result_init(incast ? "incast" : "outcast", bytes, p + 1, HUB,
                                   &samples[p * iters_max], iters);
            r.window = w;
            if (b->rank == 0)
                report_row(b, &r);
        }
        progress(b, k + 1, b->opt.nsizes);
    }
    free(samples);
    free(done_ns);
    free(acks);
    free(data);
    free(buf);
    return 0;
}

int run_incast(bench *b)
{
    return run_fan(b, 1);
}

int run_outcast(bench *b)
{
    return run_fan(b, 0);
}
