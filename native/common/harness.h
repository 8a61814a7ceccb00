/* The one harness every benchmark pattern runs in.
 *
 * It parses the command line, learns the world (ranks, nodes, host names, MPI library), runs one
 * pattern, and writes JSON lines on stdout (rank 0 only):
 *   {"type":"meta", ...}      once, first: library, ranks, nodes, host names, options, load
 *   {"type":"result", ...}    one per measured quantity (size x rank x metric), same columns for all
 *   {"type":"detour", ...}    noise pattern only: one per detour
 *   {"type":"progress", ...}  after each step (a size), so a caller can draw a progress bar
 *   {"type":"tally", ...}     once per rank at the end: bytes and messages it really moved
 *   {"type":"end", ...}       last: the run completed
 * Errors in the command line print one line on stderr and exit with code 2 on every rank.
 *
 * Times are nanoseconds. In a result, t_* summarise the time per message (or per one-sided op):
 * min, p50, p90, p99, max, mean and tmean (the mean without the extreme tenths, see stats.h);
 * bandwidth_Bps = bytes / t_p50 * 1e9 and msg_rate = 1e9 / t_p50: the median, because a shared
 * host's occasional millisecond stalls would otherwise decide the mean. */
#ifndef CONTEND_HARNESS_H
#define CONTEND_HARNESS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"

#define MAX_SIZES 64
#define MAX_DIMS 6
#define MAX_EXTRAS 10

typedef struct {
    int64_t sizes[MAX_SIZES];
    int nsizes;
    int iters;          /* timed repetitions per size */
    int iters_large;    /* timed repetitions for sizes >= LARGE_MESSAGE */
    int warmup;         /* untimed repetitions before timing */
    int window;         /* messages in flight per peer (msgrate, incast, outcast, put/get bw) */
    int prtt_n;         /* loggp: messages per parametrised round trip */
    char mode[16];      /* --mode as given ("" if not): each pattern checks it with pattern_mode() */
    unsigned seed;      /* pairs --mode random: the permutation's seed */
    int dims[MAX_DIMS]; /* hops: the topology map (rank = x + X*(y + Y*z) ...) */
    int ndims;
    int dim;            /* hops: the dimension pairs are taken along */
    int hops;           /* hops: distance between partners */
    double duration_s;  /* noise: length of the selfish-detour loop */
    double threshold_ns;/* noise: an iteration longer than this is a detour (0: 10 x resolution) */
    int max_detours;    /* noise: detours kept per rank for the detour lines */
    int pin;            /* noise: 1 pins rank r to the (r mod n)-th allowed CPU */
    double pause_s;     /* pingpong: the initiator sleeps this long after each round trip */
    double settle_s;    /* busy collectives before the first measurement */
    int active[MAX_SIZES]; /* nicrate, outstanding: ranks per node injecting at once (0 entries: default) */
    int nactive;
    int windows[MAX_SIZES]; /* nicrate, outstanding, randomaccess: outstanding ops per rank, swept */
    int nwindows;
    int messages;       /* nicrate, outstanding: messages per active rank per round */
    int round_times;    /* nicrate, outstanding: 1 writes a "round" line per injecting rank and round */
    int64_t table_words;/* randomaccess: 64-bit words of the table on each rank */
    double rate_Bps;    /* nimc: bytes per second the interferer injects (< 0: as fast as it can) */
    double interval_s;  /* nimc: length of one triad sample */
    int64_t region;     /* nimc: bytes of the buffer the injected traffic lands in */
    int nice;           /* nimc: scheduling priority both ranks ask for (0: leave it) */
    double period_s;    /* nimc: traffic comes in bursts, one per period (0: continuous) */
    double on_s;        /* nimc: length of each burst */
    int argc;           /* the command line, echoed in the meta line */
    char **argv;
} options;

#define LARGE_MESSAGE 65536

/* Bytes and messages a rank really moved, counted from MPI statuses (not from intentions). */
typedef struct {
    int64_t bytes_sent, bytes_received;
    int64_t messages_sent, messages_received;
    int64_t rma_bytes;  /* bytes this rank moved by put/get as origin */
    int verified;       /* data checked after the run: 1 correct, 0 corrupt, -1 not checked */
} tally;

typedef struct {
    MPI_Comm comm;
    int rank, size;
    int node;           /* index of this rank's node (in order of first appearance) */
    int nodes;
    const char *pattern;
    options opt;
    tally count;
} bench;

/* One row of output. Fill with result_init, add extras, hand to report(). */
typedef struct {
    int valid;
    char metric[24];
    int64_t bytes;
    int rank, peer;
    int window;
    summary t;
    int nextras;
    struct {
        char key[24];
        double value;
    } extras[MAX_EXTRAS];
} result;

typedef struct {
    const char *name;
    const char *summary;
    int min_ranks;
    int even_ranks;     /* needs an even number of ranks (it pairs them) */
    int (*run)(bench *b);
} pattern;

/* The table of patterns, defined in bench/patterns.c. Ends with a zeroed entry. */
extern const pattern patterns[];

/* Repetitions for a message of this size (fewer for large messages, which take longer). */
int iterations_for(const bench *b, int64_t bytes);

/* Index of --mode in modes (a NULL-terminated list; the first is the default when --mode was not
 * given); a usage error naming the choices for any other mode. */
int pattern_mode(const bench *b, const char *const *modes);

/* The largest size in --sizes. */
int64_t largest_size(const bench *b);

/* A page-aligned buffer of n bytes, touched so first use costs no page faults. Free with free(). */
/* The 1-minute load average from /proc/loadavg; -1 where it cannot be read. */
double load_average(void);

void *alloc_buffer(int64_t n);

/* Separate send and receive buffers, as OSU, IMB and HPCC use: a rank does not send the very bytes it
 * has just received (which would still sit in its cache). */
typedef struct {
    void *send, *recv;
} buffers;
buffers alloc_buffers(int64_t n);
void free_buffers(buffers io);

result result_init(const char *metric, int64_t bytes, int rank, int peer, const double *samples,
                   int nsamples);
void result_extra(result *r, const char *key, double value);

/* Rank 0 only: write one row. */
void report_row(const bench *b, const result *r);

/* Collective: every rank passes its row or NULL; rank 0 writes the rows in rank order. */
void report(bench *b, const result *mine);

/* Rank 0 writes {"type":"progress","done":done,"total":total}. */
void progress(const bench *b, int done, int total);

/* A command-line style error found inside a pattern (same on all ranks): exit 2 everywhere. */
void fail_usage(const bench *b, const char *fmt, ...);

/* Counted point-to-point: every byte goes through these so the tally is real. */
void send_msg(bench *b, const void *buf, int64_t n, int peer, int tag);
void recv_msg(bench *b, void *buf, int64_t n, int peer, int tag);
void post_send(bench *b, const void *buf, int64_t n, int peer, int tag, MPI_Request *req);
void post_recv(bench *b, void *buf, int64_t n, int peer, int tag, MPI_Request *req);
void wait_sends(bench *b, int n, MPI_Request *reqs);
void wait_recvs(bench *b, int n, MPI_Request *reqs);
/* Wait for any of n receives; counts it and returns its index. */
int wait_any_recv(bench *b, int n, MPI_Request *reqs);

/* Initiator: send n bytes to peer, receive n back; returns the round-trip time in ns.
 * Responder: receive then send back; returns 0. */
double round_trip(bench *b, buffers io, int64_t n, int peer, int initiator);

#endif
