/* libcontend-span.so: the time a run spends between MPI_Init and MPI_Finalize, without tracing it.
 *
 * Loaded with LD_PRELOAD by `contend predict` for its untraced runs. Both ends are taken after a barrier
 * on MPI_COMM_WORLD (every rank has initialized; every rank has reached MPI_Finalize), on rank 0's
 * clock, the same two moments the tracer's clock samples mark (native/trace/init.c). Rank 0 writes the
 * span in ns, one line, to $CONTEND_SPAN_FILE; without it the library does nothing.
 *
 * Each call goes on to the next library that defines it (RTLD_NEXT), not straight to PMPI: preloaded
 * before libcontend-throttle.so, it times a throttled run (`contend predict --throttle`), whose
 * library initializes in its own MPI_Init and writes its counters in its own MPI_Finalize. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"

static int64_t started = -1;

static void start(void)
{
    const char *file = getenv("CONTEND_SPAN_FILE");
    MPI_Comm parent;
    PMPI_Comm_get_parent(&parent);
    if (!file || !*file || parent != MPI_COMM_NULL) /* spawned processes are not the launched job */
        return;
    PMPI_Barrier(MPI_COMM_WORLD);
    started = now_ns();
}

/* The next definition of an MPI call: another preloaded library's, else MPI's own. */
static void *next(const char *name, void *pmpi)
{
    void *found = dlsym(RTLD_NEXT, name);
    return found ? found : pmpi;
}

int MPI_Init(int *argc, char ***argv)
{
    int (*init)(int *, char ***) = next("MPI_Init", (void *)PMPI_Init);
    int rc = init(argc, argv);
    if (rc == MPI_SUCCESS)
        start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int (*init_thread)(int *, char ***, int, int *) = next("MPI_Init_thread", (void *)PMPI_Init_thread);
    int rc = init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        start();
    return rc;
}

int MPI_Finalize(void)
{
    if (started >= 0) {
        PMPI_Barrier(MPI_COMM_WORLD);
        int64_t span = now_ns() - started;
        int rank;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        const char *file = getenv("CONTEND_SPAN_FILE");
        FILE *out = rank == 0 ? fopen(file, "w") : NULL;
        if (rank == 0 && (!out || fprintf(out, "%lld\n", (long long)span) < 0 || fclose(out) != 0))
            fprintf(stderr, "contend-span: error: cannot write %s\n", file);
        started = -1;
    }
    int (*finalize)(void) = next("MPI_Finalize", (void *)PMPI_Finalize);
    return finalize();
}
