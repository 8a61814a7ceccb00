/* Selfish detour (Beckman et al.; Hoefler's Netgauge variant): every rank spins reading the clock
 * for --duration seconds; an iteration much longer than the fastest one means the CPU was taken
 * away (interrupt, daemon, another process, the hypervisor). The resolution is the fastest
 * iteration of a short calibration loop; a detour is an iteration longer than --threshold (default
 * 10 x resolution) and its stolen time is its length minus the resolution.
 * With --pin 1, rank r first pins itself to the r-th CPU it may run on (modulo their number).
 * Rows (metric "noise", one per rank): t_* = detour lengths; extras resolution_ns, threshold_ns,
 * detours, stolen_ns, duration_ns, overhead_pct, cpu (where the rank ran at the end, -1 unknown),
 * complete_ns (every detour before this time was kept: the whole run unless --max-detours ran
 * out). Then one "detour" line per kept detour (rank, start_ns from the rank's start, length_ns):
 * a noise trace a simulator can replay. */
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu */
#include <sched.h>
#include <stdlib.h>

#include "clock.h"
#include "harness.h"
#include "json.h"

static double resolution_ns(void)
{
    int64_t end = now_ns() + 10000000, prev = now_ns(), best = INT64_MAX;
    while (prev < end) {
        int64_t t = now_ns();
        if (t - prev > 0 && t - prev < best)
            best = t - prev;
        prev = t;
    }
    return (double)best;
}

/* Rank 0 writes every rank's kept detours, gathered rank by rank. */
static void write_detours(bench *b, const double *starts, const double *lengths, int kept)
{
    int *counts = b->rank == 0 ? malloc(sizeof(int) * b->size) : NULL;
    MPI_Gather(&kept, 1, MPI_INT, counts, 1, MPI_INT, 0, b->comm);
    for (int r = 0; r < b->size; r++) {
        if (r != 0 && b->rank == r) {
            MPI_Send(starts, kept, MPI_DOUBLE, 0, 0, b->comm);
            MPI_Send(lengths, kept, MPI_DOUBLE, 0, 1, b->comm);
        }
        if (b->rank != 0)
            continue;
        double *s = (double *)starts, *l = (double *)lengths;
        if (r != 0) {
            s = malloc(sizeof(double) * (counts[r] ? counts[r] : 1));
            l = malloc(sizeof(double) * (counts[r] ? counts[r] : 1));
            MPI_Recv(s, counts[r], MPI_DOUBLE, r, 0, b->comm, MPI_STATUS_IGNORE);
            MPI_Recv(l, counts[r], MPI_DOUBLE, r, 1, b->comm, MPI_STATUS_IGNORE);
        }
        for (int i = 0; i < counts[r]; i++) {
            json_begin();
            json_str("type", "detour");
            json_int("rank", r);
            json_num("start_ns", s[i]);
            json_num("length_ns", l[i]);
            json_end();
        }
        if (r != 0) {
            free(s);
            free(l);
        }
    }
    free(counts);
}

/* Pin this rank to the (rank mod n)-th of the n CPUs it may run on. */
static void pin_to_cpu(bench *b)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        fail_usage(b, "--pin: cannot read the CPU affinity");
    int n = CPU_COUNT(&allowed), want = b->rank % n;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &allowed) && want-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (sched_setaffinity(0, sizeof one, &one) != 0)
                fail_usage(b, "--pin: cannot pin rank %d to CPU %d", b->rank, cpu);
            return;
        }
    }
}

int run_noise(bench *b)
{
    if (b->opt.pin)
        pin_to_cpu(b);
    double resolution = resolution_ns();
    double threshold = b->opt.threshold_ns > 0 ? b->opt.threshold_ns : 10 * resolution;
    int capacity = b->opt.max_detours;
    double *starts = malloc(sizeof(double) * (capacity ? capacity : 1));
    double *lengths = malloc(sizeof(double) * (capacity ? capacity : 1));
    int kept = 0;
    int64_t detours = 0;
    double stolen = 0;
    double complete = -1; /* start of the first detour not kept; -1: none was dropped */

    MPI_Barrier(b->comm); /* all ranks spin at once: their noise includes each other */
    int64_t start = now_ns(), duration = (int64_t)(b->opt.duration_s * 1e9);
    int64_t end = start + duration, prev = start;
    while (prev < end) {
        int64_t t = now_ns();
        double dt = (double)(t - prev);
        if (dt > threshold) {
            detours++;
            stolen += dt - resolution;
            if (kept < capacity) {
                starts[kept] = (double)(prev - start);
                lengths[kept] = dt;
                kept++;
            } else if (complete < 0) {
                complete = (double)(prev - start);
            }
        }
        prev = t;
    }
    double elapsed = (double)(prev - start);

    result r = result_init("noise", 0, b->rank, -1, lengths, kept);
    result_extra(&r, "resolution_ns", resolution);
    result_extra(&r, "threshold_ns", threshold);
    result_extra(&r, "detours", (double)detours);
    result_extra(&r, "stolen_ns", stolen);
    result_extra(&r, "duration_ns", elapsed);
    result_extra(&r, "overhead_pct", 100.0 * stolen / elapsed);
    result_extra(&r, "cpu", (double)sched_getcpu());
    result_extra(&r, "complete_ns", complete < 0 ? elapsed : complete);
    report(b, &r);
    write_detours(b, starts, lengths, kept);
    progress(b, 1, 1);
    free(lengths);
    free(starts);
    return 0;
}
