/* Rows of output: results gathered to rank 0, progress, tallies. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"

result result_init(const char *metric, int64_t bytes, int rank, int peer, const double *samples,
                   int nsamples)
{
    result r;
    memset(&r, 0, sizeof r);
    r.valid = 1;
    snprintf(r.metric, sizeof r.metric, "%s", metric);
    r.bytes = bytes;
    r.rank = rank;
    r.peer = peer;
    r.window = 1;
    r.t = summarise(samples, nsamples);
    return r;
}

void result_extra(result *r, const char *key, double value)
{
    if (r->nextras == MAX_EXTRAS)
        return;
    snprintf(r->extras[r->nextras].key, sizeof r->extras[0].key, "%s", key);
    r->extras[r->nextras].value = value;
    r->nextras++;
}

void report_row(const bench *b, const result *r)
{
    json_begin();
    json_str("type", "result");
    json_str("pattern", b->pattern);
    json_str("metric", r->metric);
    json_int("bytes", r->bytes);
    json_int("rank", r->rank);
    json_int("peer", r->peer);
    json_int("window", r->window);
    json_int("samples", r->t.n);
    json_num("t_min_ns", r->t.min);
    json_num("t_p50_ns", r->t.p50);
    json_num("t_p90_ns", r->t.p90);
    json_num("t_p99_ns", r->t.p99);
    json_num("t_max_ns", r->t.max);
    json_num("t_mean_ns", r->t.mean);
    json_num("t_tmean_ns", r->t.tmean);
    json_num("bandwidth_Bps", r->t.p50 > 0 ? (double)r->bytes / r->t.p50 * 1e9 : 0.0);
    json_num("msg_rate", r->t.p50 > 0 ? 1e9 / r->t.p50 : 0.0);
    for (int i = 0; i < r->nextras; i++)
        json_num(r->extras[i].key, r->extras[i].value);
    json_end();
}

void report(bench *b, const result *mine)
{
    result none;
    memset(&none, 0, sizeof none);
    result *all = b->rank == 0 ? malloc(sizeof(result) * b->size) : NULL;
    MPI_Gather(mine ? mine : &none, sizeof(result), MPI_BYTE, all, sizeof(result), MPI_BYTE, 0,
               b->comm);
    if (b->rank == 0) {
        for (int i = 0; i < b->size; i++)
            if (all[i].valid)
                report_row(b, &all[i]);
        free(all);
    }
}

void progress(const bench *b, int done, int total)
{
    if (b->rank != 0)
        return;
    json_begin();
    json_str("type", "progress");
    json_int("done", done);
    json_int("total", total);
    json_end();
}

void fail_usage(const bench *b, const char *fmt, ...)
{
    if (b->rank == 0) {
        va_list args;
        va_start(args, fmt);
        fprintf(stderr, "contend-bench: error: ");
        vfprintf(stderr, fmt, args);
        fputc('\n', stderr);
        va_end(args);
    }
    MPI_Finalize();
    exit(2);
}
