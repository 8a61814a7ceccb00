/* The one rule for the prediction programs' arguments (apps/): each is a positive integer, else the
 * program says which and exits 2. */
#ifndef CONTEND_APPS_ARGS_H
#define CONTEND_APPS_ARGS_H

#include <stdio.h>
#include <stdlib.h>

/* argv[i] as a positive integer, or `fallback` when the argument is absent. */
static long positive_arg(int argc, char **argv, int i, long fallback)
{
    if (argc <= i)
        return fallback;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < 1) {
        fprintf(stderr, "%s: argument %d must be a positive integer, not %s\n", argv[0], i, argv[i]);
        exit(2);
    }
    return v;
}

#endif
