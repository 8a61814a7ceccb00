#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char options_help[] =
    "  --sizes LIST      message sizes: 1,8,4KiB,1MiB or a power-of-two range 1:1MiB\n"
    "                    (default 1 to 1 MiB in steps of x4)\n"
    "  --iters N         timed repetitions per size (default 200)\n"
    "  --iters-large N   timed repetitions for sizes >= 64 KiB (default iters/10, at least 5)\n"
    "  --warmup N        untimed repetitions first (default 10)\n"
    "  --settle S        seconds of busy collectives before measuring (default 0.2)\n"
    "  --window N        messages in flight per peer (default 16)\n"
    "  --prtt-n N        loggp: messages per parametrised round trip (default 16)\n"
    "  --mode M          pairs: nn|random partner (default nn); nicrate, outstanding: send|put|put-oneway\n"
    "                    (default send)\n"
    "  --seed N          pairs --mode random: seed of the pairing (default 1)\n"
    "  --dims AxBxC      hops: topology map, rank = x + A*(y + B*z) (default: ranks in a line)\n"
    "  --dim D           hops: dimension to pair along, 0 is x (default 0)\n"
    "  --hops N          hops: partner distance (default 1)\n"
    "  --duration S      noise: seconds of selfish-detour loop (default 1)\n"
    "  --threshold NS    noise: detour threshold (default 10 x measured resolution)\n"
    "  --max-detours N   noise: detours kept per rank (default 10000)\n"
    "  --pin 0|1         noise: pin each rank to its own CPU (default 0)\n"
    "  --pause S         pingpong: seconds rank 0 sleeps after each round trip, e.g. for a shaped link's\n"
    "                    token bucket to refill (default 0)\n"
    "  --active LIST     nicrate, outstanding: ranks per node injecting at once, e.g. 1,2,4 or 1:8\n"
    "                    (default: nicrate 1 to all, outstanding all)\n"
    "  --windows LIST    nicrate, outstanding, randomaccess: outstanding operations per rank, swept\n"
    "                    (default: nicrate 1, outstanding 1:32, randomaccess 1,4,16,64)\n"
    "  --messages N      nicrate, outstanding: messages per active rank per round (default 64)\n"
    "  --round-times 0|1 nicrate, outstanding: a line per injecting rank and round, with its start and\n"
    "                    end on the host's clock (default 0)\n"
    "  --table N         randomaccess: 64-bit words of the table on each rank (default 65536)\n"
    "  --rate R          nimc: bytes/s the interferer injects, e.g. 2GB (0: none; max: unpaced;\n"
    "                    default max)\n"
    "  --interval S      nimc: seconds per triad sample (default 0.1)\n"
    "  --region N        nimc: bytes of the buffer the traffic lands in (default 256MiB)\n"
    "  --nice N          nimc: nice value both ranks ask for, -20..19 (default 0: unchanged)\n"
    "  --period S        nimc: traffic in bursts, one every S seconds (default 0: continuous)\n"
    "  --on S            nimc: length of each burst (default half the period)\n";

/* A byte count as contend writes them everywhere: 65536, 64KiB, 1MiB (binary), 1kB, 1MB (decimal). */
static int64_t parse_bytes(const char *text, int *ok)
{
    static const struct {
        const char *suffix;
        int64_t scale;
    } units[] = {{"", 1},          {"B", 1},          {"KiB", 1LL << 10}, {"MiB", 1LL << 20},
                 {"GiB", 1LL << 30}, {"k", 1000},       {"kB", 1000},       {"K", 1000},
                 {"KB", 1000},     {"M", 1000000},    {"MB", 1000000},    {"G", 1000000000},
                 {"GB", 1000000000}};
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    *ok = 0;
    if (errno || end == text || value < 0)
        return 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!strcmp(end, units[i].suffix)) {
            *ok = value <= (1LL << 40);
            return (int64_t)value * units[i].scale;
        }
    }
    return 0;
}

/* The largest message a pattern may use: MPI counts are int, and a buffer must fit in memory. */
#define MAX_MESSAGE (1LL << 30)

static int parse_sizes(const char *text, options *opt, char *why, size_t whylen)
{
    int ok1 = 0, ok2 = 0;
    const char *colon = strchr(text, ':');
    opt->nsizes = 0;
    if (colon) {
        char first[64];
        size_t len = (size_t)(colon - text);
        if (len >= sizeof first)
            len = sizeof first - 1;
        memcpy(first, text, len);
        first[len] = '\0';
        int64_t lo = parse_bytes(first, &ok1), hi = parse_bytes(colon + 1, &ok2);
        if (!ok1 || !ok2 || lo < 1 || hi < lo) {
            snprintf(why, whylen, "bad size range '%s' (want LOW:HIGH with 1 <= LOW <= HIGH)", text);
            return -1;
        }
        for (int64_t s = lo; s <= hi && opt->nsizes < MAX_SIZES; s *= 2)
            opt->sizes[opt->nsizes++] = s;
    } else {
        char copy[1024];
        snprintf(copy, sizeof copy, "%s", text);
        for (char *item = strtok(copy, ","); item; item = strtok(NULL, ",")) {
            int ok;
            int64_t s = parse_bytes(item, &ok);
            if (!ok) {
                snprintf(why, whylen, "bad message size '%s' (want a byte count like 8, 4KiB, 1MiB)", item);
                return -1;
            }
            if (opt->nsizes == MAX_SIZES) {
                snprintf(why, whylen, "too many sizes (at most %d)", MAX_SIZES);
                return -1;
            }
            opt->sizes[opt->nsizes++] = s;
        }
    }
    for (int i = 0; i < opt->nsizes; i++) {
        if (opt->sizes[i] > MAX_MESSAGE) {
            snprintf(why, whylen, "message size %lld is larger than 1 GiB", (long long)opt->sizes[i]);
            return -1;
        }
    }
    if (opt->nsizes == 0) {
        snprintf(why, whylen, "no message sizes in '%s'", text);
        return -1;
    }
    return 0;
}

static int parse_dims(const char *text, options *opt, char *why, size_t whylen)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", text);
    opt->ndims = 0;
    for (char *item = strtok(copy, "x"); item; item = strtok(NULL, "x")) {
        char *end;
        long d = strtol(item, &end, 10);
        if (*end != '\0' || d < 1 || opt->ndims == MAX_DIMS) {
            snprintf(why, whylen, "bad --dims '%s' (want up to %d positive extents like 4x2x2)", text,
                     MAX_DIMS);
            return -1;
        }
        opt->dims[opt->ndims++] = (int)d;
    }
    if (opt->ndims == 0) {
        snprintf(why, whylen, "bad --dims '%s' (want extents like 4x2x2)", text);
        return -1;
    }
    return 0;
}

static int parse_count(const char *name, const char *text, long lo, long hi, int *out, char *why,
                       size_t whylen)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *end != '\0' || end == text || value < lo || value > hi) {
        snprintf(why, whylen, "bad %s '%s' (want an integer from %ld to %ld)", name, text, lo, hi);
        return -1;
    }
    *out = (int)value;
    return 0;
}

/* A list of counts: 1,2,4 or a doubling range 1:32. */
static int parse_counts(const char *name, const char *text, long hi, int *out, int *n, char *why,
                        size_t whylen)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", text);
    *n = 0;
    char *colon = strchr(copy, ':');
    if (colon) {
        int lo, top;
        *colon = '\0';
        if (parse_count(name, copy, 1, hi, &lo, why, whylen) ||
            parse_count(name, colon + 1, lo, hi, &top, why, whylen))
            return -1;
        for (long c = lo; c <= top && *n < MAX_SIZES; c *= 2)
            out[(*n)++] = (int)c;
        return 0;
    }
    for (char *item = strtok(copy, ","); item; item = strtok(NULL, ",")) {
        if (*n == MAX_SIZES) {
            snprintf(why, whylen, "too many values in %s (at most %d)", name, MAX_SIZES);
            return -1;
        }
        if (parse_count(name, item, 1, hi, &out[(*n)++], why, whylen))
            return -1;
    }
    if (*n == 0) {
        snprintf(why, whylen, "no values in %s '%s'", name, text);
        return -1;
    }
    return 0;
}

static int parse_real(const char *name, const char *text, double lo, double hi, double *out,
                      char *why, size_t whylen)
{
    char *end;
    double value = strtod(text, &end);
    if (*end != '\0' || end == text || !(value >= lo && value <= hi)) {
        snprintf(why, whylen, "bad %s '%s' (want a number from %g to %g)", name, text, lo, hi);
        return -1;
    }
    *out = value;
    return 0;
}

int parse_options(int argc, char **argv, int first, options *opt, char *why, size_t whylen)
{
    memset(opt, 0, sizeof *opt);
    opt->iters = 200;
    opt->iters_large = -1;
    opt->warmup = 10;
    opt->window = 16;
    opt->prtt_n = 16;
    opt->seed = 1;
    opt->hops = 1;
    opt->duration_s = 1.0;
    opt->max_detours = 10000;
    opt->settle_s = 0.2;
    opt->messages = 64;
    opt->table_words = 65536;
    opt->rate_Bps = -1;
    opt->interval_s = 0.1;
    opt->region = 256LL << 20;
    if (parse_sizes("1,4,16,64,256,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB", opt, why, whylen))
        return -1;

    for (int i = first; i < argc; i++) {
        const char *name = argv[i];
        if (strncmp(name, "--", 2) != 0) {
            snprintf(why, whylen, "unexpected argument '%s'", name);
            return -1;
        }
        if (i + 1 >= argc) {
            snprintf(why, whylen, "option %s needs a value", name);
            return -1;
        }
        const char *value = argv[++i];
        int rc, seed = 0;
        if (!strcmp(name, "--sizes"))
            rc = parse_sizes(value, opt, why, whylen);
        else if (!strcmp(name, "--iters"))
            rc = parse_count(name, value, 1, 100000000, &opt->iters, why, whylen);
        else if (!strcmp(name, "--iters-large"))
            rc = parse_count(name, value, 1, 100000000, &opt->iters_large, why, whylen);
        else if (!strcmp(name, "--warmup"))
            rc = parse_count(name, value, 0, 100000000, &opt->warmup, why, whylen);
        else if (!strcmp(name, "--window"))
            rc = parse_count(name, value, 1, 4096, &opt->window, why, whylen);
        else if (!strcmp(name, "--prtt-n"))
            rc = parse_count(name, value, 2, 4096, &opt->prtt_n, why, whylen);
        else if (!strcmp(name, "--seed")) {
            rc = parse_count(name, value, 0, 2147483647, &seed, why, whylen);
            opt->seed = (unsigned)seed;
        } else if (!strcmp(name, "--mode")) {
            rc = 0;
            if (!*value || strlen(value) >= sizeof opt->mode) {
                snprintf(why, whylen, "bad --mode '%s'", value);
                rc = -1;
            } else {
                snprintf(opt->mode, sizeof opt->mode, "%s", value);
            }
        } else if (!strcmp(name, "--active"))
            rc = parse_counts(name, value, 4096, opt->active, &opt->nactive, why, whylen);
        else if (!strcmp(name, "--windows"))
            rc = parse_counts(name, value, 4096, opt->windows, &opt->nwindows, why, whylen);
        else if (!strcmp(name, "--messages"))
            rc = parse_count(name, value, 1, 1 << 20, &opt->messages, why, whylen);
        else if (!strcmp(name, "--table")) {
            int words = 0;
            rc = parse_count(name, value, 1, 1 << 27, &words, why, whylen);
            opt->table_words = words;
        } else if (!strcmp(name, "--rate")) {
            int ok = 1;
            if (!strcmp(value, "max"))
                opt->rate_Bps = -1;
            else
                opt->rate_Bps = (double)parse_bytes(value, &ok);
            rc = ok ? 0 : -1;
            if (!ok)
                snprintf(why, whylen, "bad --rate '%s' (want bytes per second like 0, 500MB, 2GB, or max)",
                         value);
        } else if (!strcmp(name, "--interval"))
            rc = parse_real(name, value, 0.001, 60, &opt->interval_s, why, whylen);
        else if (!strcmp(name, "--period"))
            rc = parse_real(name, value, 0, 3600, &opt->period_s, why, whylen);
        else if (!strcmp(name, "--on"))
            rc = parse_real(name, value, 0.001, 3600, &opt->on_s, why, whylen);
        else if (!strcmp(name, "--nice"))
            rc = parse_count(name, value, -20, 19, &opt->nice, why, whylen);
        else if (!strcmp(name, "--region")) {
            int ok = 1;
            opt->region = parse_bytes(value, &ok);
            rc = ok && opt->region >= 4096 && opt->region <= (16LL << 30) ? 0 : -1;
            if (rc)
                snprintf(why, whylen, "bad --region '%s' (want 4KiB to 16GiB)", value);
        } else if (!strcmp(name, "--dims"))
            rc = parse_dims(value, opt, why, whylen);
        else if (!strcmp(name, "--dim"))
            rc = parse_count(name, value, 0, MAX_DIMS - 1, &opt->dim, why, whylen);
        else if (!strcmp(name, "--hops"))
            rc = parse_count(name, value, 1, 1 << 20, &opt->hops, why, whylen);
        else if (!strcmp(name, "--duration"))
            rc = parse_real(name, value, 0.001, 3600, &opt->duration_s, why, whylen);
        else if (!strcmp(name, "--settle"))
            rc = parse_real(name, value, 0, 60, &opt->settle_s, why, whylen);
        else if (!strcmp(name, "--threshold"))
            rc = parse_real(name, value, 0, 1e9, &opt->threshold_ns, why, whylen);
        else if (!strcmp(name, "--max-detours"))
            rc = parse_count(name, value, 0, 10000000, &opt->max_detours, why, whylen);
        else if (!strcmp(name, "--pin"))
            rc = parse_count(name, value, 0, 1, &opt->pin, why, whylen);
        else if (!strcmp(name, "--pause"))
            rc = parse_real(name, value, 0, 60, &opt->pause_s, why, whylen);
        else if (!strcmp(name, "--round-times"))
            rc = parse_count(name, value, 0, 1, &opt->round_times, why, whylen);
        else {
            snprintf(why, whylen, "unknown option %s", name);
            rc = -1;
        }
        if (rc)
            return -1;
    }
    if (opt->iters_large < 0)
        opt->iters_large = opt->iters / 10 > 5 ? opt->iters / 10 : (opt->iters < 5 ? opt->iters : 5);
    return 0;
}
