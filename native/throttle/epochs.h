/* Which targets of which windows this task holds a passive-target lock on (MPI_Win_lock, _lock_all).
 *
 * Only there may the library complete a one-sided op on its own (MPI_Win_flush_local), so only ops in
 * passive-target epochs hold tokens until completion. Ops in fence or post/start/complete/wait epochs
 * complete only at the collective closing call, which a waiting task cannot make; they wait their turn
 * for tokens like any op but give them back right after injection (admit.c). */
#ifndef CONTEND_THROTTLE_EPOCHS_H
#define CONTEND_THROTTLE_EPOCHS_H

#include <mpi.h>

void epochs_lock(MPI_Win win, int target);
void epochs_unlock(MPI_Win win, int target);
void epochs_lock_all(MPI_Win win);
void epochs_unlock_all(MPI_Win win);
void epochs_forget(MPI_Win win);

/* Whether this task is in a passive-target epoch on target of win. O(windows + locks held). */
int epochs_passive(MPI_Win win, int target);

#endif
