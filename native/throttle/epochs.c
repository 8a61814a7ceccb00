/* Passive-target epochs of this task (see epochs.h): a short list of windows, each with its lock_all
 * flag and the targets it holds a lock on. Programs use few windows and few locks at once. */
#include "epochs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    MPI_Win win;
    int all;
    int *targets;
    int ntargets, cap;
} window_epochs;

static window_epochs *windows;
static int nwindows, windows_cap;

static void *grow(void *p, int *cap, size_t item)
{
    *cap = *cap ? *cap * 2 : 4;
    void *q = realloc(p, (size_t)*cap * item);
    if (!q) {
        fprintf(stderr, "contend-throttle: out of memory for window epochs\n");
        abort();
    }
    return q;
}

static window_epochs *find(MPI_Win win, int create)
{
    for (int i = 0; i < nwindows; i++)
        if (windows[i].win == win)
            return &windows[i];
    if (!create)
        return NULL;
    if (nwindows == windows_cap)
        windows = grow(windows, &windows_cap, sizeof *windows);
    window_epochs *w = &windows[nwindows++];
    memset(w, 0, sizeof *w);
    w->win = win;
    return w;
}

void epochs_lock(MPI_Win win, int target)
{
    window_epochs *w = find(win, 1);
    if (w->ntargets == w->cap)
        w->targets = grow(w->targets, &w->cap, sizeof *w->targets);
    w->targets[w->ntargets++] = target;
}

void epochs_unlock(MPI_Win win, int target)
{
    window_epochs *w = find(win, 0);
    for (int i = 0; w && i < w->ntargets; i++)
        if (w->targets[i] == target) {
            w->targets[i] = w->targets[--w->ntargets];
            return;
        }
}

void epochs_lock_all(MPI_Win win)
{
    find(win, 1)->all = 1;
}

void epochs_unlock_all(MPI_Win win)
{
    window_epochs *w = find(win, 0);
    if (w)
        w->all = 0;
}

void epochs_forget(MPI_Win win)
{
    window_epochs *w = find(win, 0);
    if (!w)
        return;
    free(w->targets);
    *w = windows[--nwindows];
}

int epochs_passive(MPI_Win win, int target)
{
    window_epochs *w = find(win, 0);
    if (!w)
        return 0;
    if (w->all)
        return 1;
    for (int i = 0; i < w->ntargets; i++)
        if (w->targets[i] == target)
            return 1;
    return 0;
}
