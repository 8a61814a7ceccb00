/* Monotonic clock in nanoseconds and a busy-wait that never yields the core.
 * Why our own clock instead of MPI_Wtime: the same resolution and cost under every MPI library,
 * so numbers from different libraries (MPICH, Open MPI) compare. */
#ifndef CONTEND_CLOCK_H
#define CONTEND_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin (no sleep: a sleeping rank would give the core away and change what is measured). */
static inline void spin_ns(int64_t duration)
{
    int64_t end = now_ns() + duration;
    while (now_ns() < end) {
    }
}

#endif
