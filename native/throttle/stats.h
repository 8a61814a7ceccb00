/* This task's counters as one JSON line, appended to CONTEND_THROTTLE_STATS at MPI_Finalize, and a
 * warning on stderr when stall escapes let operations past a full pool. */
#ifndef CONTEND_THROTTLE_STATS_H
#define CONTEND_THROTTLE_STATS_H

void stats_report(void);

/* MPI_Pcontrol(0) pauses counting, MPI_Pcontrol(1) (any other level) resumes it: what the library counts
 * in between (operations, waits, tokens, their maxima) goes to the counters' "harness" object instead,
 * so a benchmark's own messages (setup, checks, the gathering of results) are counted apart from what
 * it measures. Throttling goes on unchanged. MPI_Pcontrol is MPI's call for a profiling library's
 * level; without the library it does nothing. */
void stats_pause(void);
void stats_resume(void);

#endif
