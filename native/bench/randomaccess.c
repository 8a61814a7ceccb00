/* RandomAccess-like fine-grained updates (HPCC's GUPS, Section 9 of Luo et al. 2012), one-sided.
 *
 * Every rank owns T 64-bit words (--table) of a global table of P x T words, in an MPI window. Each
 * rank draws a stream of random 64-bit values; a value v names the aligned update of s / 8 words at
 * global word (v mod (P T / (s/8))) x (s/8) and is XORed into each of them with MPI_Accumulate and
 * MPI_BXOR (passive target, lock_all). Per update size s (--sizes, multiples of 8; Luo et al. 2012's are
 * 16 B) and per number of outstanding updates W (--windows, default 1, 4, 16, 64): --warmup and
 * --iters batches of W accumulates, each batch closed by MPI_Win_flush_all. One sample = a batch's
 * time / W, so a row's msg_rate is that rank's updates per second and the rows add up to the total.
 *
 * Verification: XOR commutes, and accumulates with the same op are atomic per element, so the final
 * table does not depend on the order updates arrive in. After each point every rank replays every
 * rank's stream, computes what its own words must be, and compares word by word (extra errors:
 * words that differ; tally verified = 1 when no word differed at any point). */
#include <stdint.h>
#include <stdlib.h>

#include "clock.h"
#include "harness.h"

/* splitmix64: a fast, well-mixed stream any rank can replay from the seed alone. */
static uint64_t next_value(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t stream_seed(unsigned seed, int rank, int point)
{
    uint64_t state = ((uint64_t)seed << 32) ^ ((uint64_t)rank * 0x100000001b3ULL) ^ (uint64_t)point;
    return next_value(&state);
}

/* First global word of the update v names. */
static uint64_t update_word(uint64_t v, uint64_t updates_in_table, int words)
{
    return (v % updates_in_table) * (uint64_t)words;
}

typedef struct {
    int words;        /* 64-bit words per update */
    int w;            /* outstanding updates per batch */
    int64_t updates;  /* per rank in the point: (warmup + iters) x w */
    int point;
} point_spec;

/* The whole table's start values, so a lost or doubled update shows. */
static uint64_t start_value(uint64_t global)
{
    return global * 0x2545f4914f6cdd1dULL;
}

static void reset_table(bench *b, uint64_t *table, MPI_Win win)
{
    int64_t t = b->opt.table_words;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, b->rank, 0, win);
    for (int64_t i = 0; i < t; i++)
        table[i] = start_value((uint64_t)b->rank * t + i);
    MPI_Win_unlock(b->rank, win);
    MPI_Barrier(b->comm);
}

/* Words of this rank's part of the table that differ from the replay of every rank's stream. */
static int64_t count_errors(bench *b, const uint64_t *table, MPI_Win win, const point_spec *ps)
{
    int64_t t = b->opt.table_words, errors = 0;
    uint64_t *expected = malloc(sizeof(uint64_t) * t);
    uint64_t first = (uint64_t)b->rank * t, per_table = (uint64_t)b->size * t / ps->words;
    for (int64_t i = 0; i < t; i++)
        expected[i] = start_value(first + i);
    for (int r = 0; r < b->size; r++) {
        uint64_t state = stream_seed(b->opt.seed, r, ps->point);
        for (int64_t u = 0; u < ps->updates; u++) {
            uint64_t v = next_value(&state), word = update_word(v, per_table, ps->words);
            if (word >= first && word < first + (uint64_t)t)
                for (int j = 0; j < ps->words; j++)
                    expected[word - first + j] ^= v;
        }
    }
    MPI_Win_lock(MPI_LOCK_SHARED, b->rank, 0, win); /* makes the accumulates visible to local loads */
    for (int64_t i = 0; i < t; i++)
        errors += table[i] != expected[i];
    MPI_Win_unlock(b->rank, win);
    free(expected);
    return errors;
}

/* One batch of w accumulates from the stream, then a flush: all of them done at their targets. */
static void batch(bench *b, uint64_t *state, uint64_t *origin, const point_spec *ps, MPI_Win win)
{
    int64_t t = b->opt.table_words;
    uint64_t per_table = (uint64_t)b->size * t / ps->words;
    for (int j = 0; j < ps->w; j++) {
        uint64_t v = next_value(state), word = update_word(v, per_table, ps->words);
        uint64_t *mine = origin + (size_t)j * ps->words; /* untouched until the flush */
        for (int k = 0; k < ps->words; k++)
            mine[k] = v;
        MPI_Accumulate(mine, ps->words, MPI_UINT64_T, (int)(word / t), (MPI_Aint)(word % t), ps->words,
                       MPI_UINT64_T, MPI_BXOR, win);
    }
    MPI_Win_flush_all(win);
    b->count.rma_bytes += (int64_t)ps->w * ps->words * 8;
}

int run_randomaccess(bench *b)
{
    static const int defaults[] = {1, 4, 16, 64};
    const int *windows = b->opt.nwindows ? b->opt.windows : defaults;
    int nwindows = b->opt.nwindows ? b->opt.nwindows : (int)(sizeof defaults / sizeof defaults[0]);
    int64_t t = b->opt.table_words;
    int wmax = 0, words_max = 0;
    for (int k = 0; k < b->opt.nsizes; k++) {
        int64_t s = b->opt.sizes[k];
        if (s < 8 || s % 8 || s / 8 > t || t % (s / 8))
            fail_usage(b, "randomaccess: update size %lld must be a multiple of 8 bytes whose words "
                          "divide --table %lld", (long long)s, (long long)t);
        words_max = (int)(s / 8) > words_max ? (int)(s / 8) : words_max;
    }
    for (int v = 0; v < nwindows; v++)
        wmax = windows[v] > wmax ? windows[v] : wmax;

    uint64_t *table, *origin = alloc_buffer((int64_t)wmax * words_max * 8);
    MPI_Win win;
    MPI_Win_allocate(t * 8, 8, MPI_INFO_NULL, b->comm, &table, &win);
    int iters_max = b->opt.iters > b->opt.iters_large ? b->opt.iters : b->opt.iters_large;
    double *samples = malloc(sizeof(double) * iters_max);
    int all_correct = 1, total = b->opt.nsizes * nwindows;

    for (int k = 0; k < b->opt.nsizes; k++) {
        int iters = iterations_for(b, b->opt.sizes[k]);
        for (int v = 0; v < nwindows; v++) {
            point_spec ps = {(int)(b->opt.sizes[k] / 8), windows[v],
                             (int64_t)(b->opt.warmup + iters) * windows[v], k * nwindows + v};
            reset_table(b, table, win);
            uint64_t state = stream_seed(b->opt.seed, b->rank, ps.point);
            MPI_Win_lock_all(0, win);
            for (int i = -b->opt.warmup; i < iters; i++) {
                int64_t start = now_ns();
                batch(b, &state, origin, &ps, win);
                if (i >= 0)
                    samples[i] = (double)(now_ns() - start) / ps.w;
            }
            MPI_Win_unlock_all(win);
            MPI_Barrier(b->comm); /* every rank's updates are complete before anyone checks */
            int64_t errors = count_errors(b, table, win, &ps);
            all_correct &= errors == 0;
            result r = result_init("updates", b->opt.sizes[k], b->rank, -1, samples, iters);
            r.window = ps.w;
            result_extra(&r, "table_words", (double)t);
            result_extra(&r, "errors", (double)errors);
            report(b, &r);
            progress(b, k * nwindows + v + 1, total);
        }
    }
    b->count.verified = all_correct;
    MPI_Win_free(&win);
    free(samples);
    free(origin);
    return 0;
}
