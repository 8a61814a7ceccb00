/* Core reservation at MPI_Init (see reserve.h). */
#define _GNU_SOURCE /* cpu_set_t, sched_setaffinity, gettid */
#include "reserve.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "throttle.h"

#define MASK_WORDS (CPU_SETSIZE / 64)

static void to_words(const cpu_set_t *set, unsigned long long *words)
{
    memset(words, 0, MASK_WORDS * sizeof *words);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, set))
            words[cpu / 64] |= 1ULL << (cpu % 64);
}

/* MPI's own threads (started in PMPI_Init, so they are all the others now) onto the reserved CPU. A
 * thread that ended meanwhile is no error. */
static void move_other_threads(int cpu)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pid_t me = (pid_t)syscall(SYS_gettid);
    for (struct dirent *e; (e = readdir(d));) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid > 0 && tid != me)
            sched_setaffinity(tid, sizeof one, &one);
    }
    closedir(d);
}

int reserve_core_start(char *why, size_t len)
{
    int mine = throttle.cfg.reserve_core, low, high;
    PMPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&mine, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (low != high) {
        snprintf(why, len, "some ranks were given reserve_core and others not: they must agree");
        return -1;
    }
    if (!mine)
        return 0;
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        snprintf(why, len, "reserve_core: cannot read the CPU affinity: %s", strerror(errno));
        return -1;
    }
    /* the highest CPU any rank of the host may use: one CPU for the whole host */
    unsigned long long words[MASK_WORDS], host_words[MASK_WORDS];
    to_words(&allowed, words);
    MPI_Comm host;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, throttle.rank, MPI_INFO_NULL, &host);
    PMPI_Allreduce(words, host_words, MASK_WORDS, MPI_UNSIGNED_LONG_LONG, MPI_BOR, host);
    PMPI_Comm_free(&host);
    int reserved = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (host_words[cpu / 64] >> (cpu % 64) & 1)
            reserved = cpu;
    cpu_set_t rest = allowed;
    CPU_CLR(reserved, &rest);
    if (CPU_COUNT(&rest) == 0) {
        char list[64];
        reserve_cpu_list(list, sizeof list);
        snprintf(why, len, "reserve_core: rank %d may run only on CPU %s, the one reserved for "
                 "communication (the host's ranks may use CPUs up to %d): bind the ranks to more "
                 "than one CPU, or do not reserve one", throttle.rank, list, reserved);
        return -1;
    }
    move_other_threads(reserved);
    if (sched_setaffinity(0, sizeof rest, &rest) != 0) {
        snprintf(why, len, "reserve_core: cannot set the CPU affinity: %s", strerror(errno));
        return -1;
    }
    throttle.stats.reserved_cpu = reserved;
    return 0;
}

void reserve_cpu_list(char *out, size_t len)
{
    cpu_set_t set;
    size_t n = 0;
    out[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int cpu = 0; cpu < CPU_SETSIZE && n + 24 < len; cpu++) {
        if (!CPU_ISSET(cpu, &set) || (cpu > 0 && CPU_ISSET(cpu - 1, &set)))
            continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
            last++;
        const char *comma = n ? "," : "";
        if (last > cpu)
            n += (size_t)snprintf(out + n, len - n, "%s%d-%d", comma, cpu, last);
        else
            n += (size_t)snprintf(out + n, len - n, "%s%d", comma, cpu);
    }
}
