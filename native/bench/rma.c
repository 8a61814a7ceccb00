/* One-sided put and get, passive target: rank 0 is the origin, rank 1 the target, which makes no
 * MPI call while being accessed (it waits in the barrier). Per size two rows:
 *   latency:   one op followed by MPI_Win_flush, timed alone
 *   bandwidth: a window of ops then one flush, time divided by the window
 * After timing, the data is checked: the target checks what was put, the origin what it got. */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "harness.h"

enum { ORIGIN = 0, TARGET = 1 };

static unsigned char expected_byte(int64_t i)
{
    return (unsigned char)(i * 131 + 7);
}

static void fill(unsigned char *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        buf[i] = expected_byte(i);
}

static int check(const unsigned char *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (buf[i] != expected_byte(i))
            return 0;
    return 1;
}

static void one_op(int put, void *local, int64_t bytes, MPI_Win win)
{
    if (put)
        MPI_Put(local, (int)bytes, MPI_BYTE, TARGET, 0, (int)bytes, MPI_BYTE, win);
    else
        MPI_Get(local, (int)bytes, MPI_BYTE, TARGET, 0, (int)bytes, MPI_BYTE, win);
}

static int run_rma(bench *b, int put)
{
    int64_t largest = largest_size(b);
    unsigned char *base, *local = alloc_buffer(largest);
    MPI_Win win;
    MPI_Win_allocate(largest > 0 ? largest : 1, 1, MPI_INFO_NULL, b->comm, &base, &win);
    if (!put && b->rank == TARGET) { /* the data the origin will get and check */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win);
        fill(base, largest);
        MPI_Win_unlock(TARGET, win);
    }
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *latency = malloc(sizeof(double) * iters_max);
    double *per_op = malloc(sizeof(double) * iters_max);
    int w = b->opt.window;

    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t bytes = b->opt.sizes[k];
        int iters = iterations_for(b, bytes);
        MPI_Barrier(b->comm);
        if (b->rank == ORIGIN) {
            MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win);
            for (int i = 0; i < b->opt.warmup; i++) {
                one_op(put, local, bytes, win);
                MPI_Win_flush(TARGET, win);
            }
            for (int i = 0; i < iters; i++) {
                int64_t start = now_ns();
                one_op(put, local, bytes, win);
                MPI_Win_flush(TARGET, win);
                latency[i] = (double)(now_ns() - start);
            }
            for (int i = 0; i < iters; i++) {
                int64_t start = now_ns();
                for (int j = 0; j < w; j++)
                    one_op(put, local, bytes, win);
                MPI_Win_flush(TARGET, win);
                per_op[i] = (double)(now_ns() - start) / w;
            }
            MPI_Win_unlock(TARGET, win);
            b->count.rma_bytes += bytes * (int64_t)(b->opt.warmup + iters + iters * w);
        }
        result lat = result_init("latency", bytes, ORIGIN, TARGET, latency, iters);
        report(b, b->rank == ORIGIN ? &lat : NULL);
        result bw = result_init("bandwidth", bytes, ORIGIN, TARGET, per_op, iters);
        bw.window = w;
        report(b, b->rank == ORIGIN ? &bw : NULL);
        progress(b, k + 1, b->opt.nsizes);
    }

    /* Check the data moved by one last op of the largest size. */
    MPI_Barrier(b->comm);
    if (b->rank == ORIGIN) {
        if (put)
            fill(local, largest);
        else
            memset(local, 0, largest);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, win);
        one_op(put, local, largest, win);
        MPI_Win_unlock(TARGET, win);
        b->count.rma_bytes += largest;
        if (!put)
            b->count.verified = check(local, largest);
    }
    MPI_Barrier(b->comm);
    if (put && b->rank == TARGET) {
        MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, win); /* makes the puts visible to local loads */
        b->count.verified = check(base, largest);
        MPI_Win_unlock(TARGET, win);
    }
    MPI_Win_free(&win);
    free(latency);
    free(per_op);
    free(local);
    return 0;
}

int run_put(bench *b)
{
    return run_rma(b, 1);
}

int run_get(bench *b)
{
    return run_rma(b, 0);
}
