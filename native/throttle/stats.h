/* This task's counters as one JSON line, appended to CONTEND_THROTTLE_STATS at MPI_Finalize, and a
 * warning on stderr when stall escapes let operations past a full pool. */
#ifndef CONTEND_THROTTLE_STATS_H
#define CONTEND_THROTTLE_STATS_H

void stats_report(void);

#endif
