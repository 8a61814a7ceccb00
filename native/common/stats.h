/* Summaries of a sample: min, percentiles, max, mean, trimmed mean. */
#ifndef CONTEND_STATS_H
#define CONTEND_STATS_H

typedef struct {
    int n;
    double min, p50, p90, p99, max, mean;
    double tmean; /* mean without the smallest and the largest tenth of the samples */
} summary;

/* Summarise n samples (n may be 0: all fields become 0). Sorts a private copy; O(n log n).
 * Percentiles interpolate linearly between the two nearest ranks (numpy's default), so a
 * percentile is always between the smallest and the largest sample. The trimmed mean drops
 * floor(n/10) samples at each end: robust to stalls like the median, but where the samples of one
 * size fall into two modes (fast and slow round trips on a shared virtual machine) it moves
 * smoothly with their mix, while the median jumps from one mode to the other. */
summary summarise(const double *samples, int n);

/* The median of n samples (0 when n is 0). */
double median(const double *samples, int n);

#endif
