/* The command line of contend-bench: `contend-bench PATTERN [--option VALUE]...`. */
#ifndef CONTEND_OPTIONS_H
#define CONTEND_OPTIONS_H

#include <stddef.h>

#include "harness.h"

/* Fill opt from argv[first..argc). On a bad option returns -1 and writes a one-line reason. */
int parse_options(int argc, char **argv, int first, options *opt, char *why, size_t whylen);

/* The option summary printed by --help. */
extern const char options_help[];

#endif
