/* The per-record table (trace.h): a growing array written with the file. Its users cost O(members)
 * per call anyway (v-collectives, post and start); it doubles, rarely. */
#include <stdlib.h>

#include "trace.h"

static int64_t *words;
static uint64_t used, capacity;

int64_t *per_record_add(const trace_record *r, uint64_t n_first, uint64_t n_second)
{
    uint64_t need = 3 + n_first + n_second;
    if (used + need > capacity) {
        uint64_t want = capacity ? 2 * capacity : 4096;
        while (want < used + need)
            want *= 2;
        int64_t *grown = realloc(words, want * sizeof *grown);
        if (!grown)
            return NULL;
        words = grown;
        capacity = want;
    }
    int64_t *w = words + used;
    w[0] = (int64_t)record_index(r);
    w[1] = (int64_t)n_first;
    w[2] = (int64_t)n_second;
    used += need;
    return w + 3;
}

const int64_t *per_record_table(uint64_t *n)
{
    *n = used;
    return words;
}
