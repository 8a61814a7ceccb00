/* Summaries of a sample: min, percentiles, max, mean. */
#ifndef CONTEND_STATS_H
#define CONTEND_STATS_H

typedef struct {
    int n;
    double min, p50, p90, p99, max, mean;
} summary;

/* Summarise n samples (n may be 0: all fields become 0). Sorts a private copy; O(n log n).
 * Percentiles interpolate linearly between the two nearest ranks (numpy's default), so a
 * percentile is always between the smallest and the largest sample. */
summary summarise(const double *samples, int n);

/* The median of n samples (0 when n is 0). */
double median(const double *samples, int n);

#endif
