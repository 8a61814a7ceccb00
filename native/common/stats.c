#include "stats.h"

#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile_of_sorted(const double *sorted, int n, double q)
{
    double position = q * (n - 1);
    int below = (int)position;
    if (below >= n - 1)
        return sorted[n - 1];
    double weight = position - below;
    return sorted[below] * (1.0 - weight) + sorted[below + 1] * weight;
}

summary summarise(const double *samples, int n)
{
    summary s = {0};
    if (n <= 0)
        return s;
    double *sorted = malloc(sizeof(double) * n);
    memcpy(sorted, samples, sizeof(double) * n);
    qsort(sorted, n, sizeof(double), compare_doubles);
    double total = 0, kept = 0;
    int cut = n / 10;
    for (int i = 0; i < n; i++) {
        total += sorted[i];
        if (i >= cut && i < n - cut)
            kept += sorted[i];
    }
    s.n = n;
    s.min = sorted[0];
    s.max = sorted[n - 1];
    s.p50 = percentile_of_sorted(sorted, n, 0.50);
    s.p90 = percentile_of_sorted(sorted, n, 0.90);
    s.p99 = percentile_of_sorted(sorted, n, 0.99);
    s.mean = total / n;
    s.tmean = kept / (n - 2 * cut);
    free(sorted);
    return s;
}

double median(const double *samples, int n)
{
    return summarise(samples, n).p50;
}
