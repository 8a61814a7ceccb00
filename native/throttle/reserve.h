/* NiMC mitigation (b), core reservation, for real (reserve_core, config.h; the engine's [memory]
 * reserve_core): at MPI_Init every rank's thread is pinned away from one CPU of its host, the highest
 * CPU any rank of the host may run on, which is left for communication progress: threads MPI started
 * during its initialisation (MPICH's progress thread with MPIR_CVAR_ASYNC_PROGRESS=1) are moved onto
 * it. A rank keeps the rest of its affinity (the launcher's binding, or all CPUs): the library only
 * takes one core away. A rank whose affinity is that CPU alone cannot run anywhere else: an error. */
#ifndef CONTEND_THROTTLE_RESERVE_H
#define CONTEND_THROTTLE_RESERVE_H

#include <stddef.h>

/* Collective over MPI_COMM_WORLD. 0, or -1 and one line in why. */
int reserve_core_start(char *why, size_t len);

/* The CPUs this thread may run on now, as Linux lists them ("0-2,5"), into out. */
void reserve_cpu_list(char *out, size_t len);

#endif
