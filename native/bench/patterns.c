/* The table of patterns contend-bench knows. Each pattern lives in its own file. */
#include "harness.h"

int run_pingpong(bench *b);
int run_barrier(bench *b);
int run_collective(bench *b);
int run_put(bench *b);
int run_get(bench *b);
int run_msgrate(bench *b);
int run_incast(bench *b);
int run_outcast(bench *b);
int run_loggp(bench *b);
int run_master(bench *b);
int run_pairs(bench *b);
int run_hops(bench *b);
int run_noise(bench *b);
int run_alltoall(bench *b);
int run_alltoall_pairwise(bench *b);
int run_alltoall_bruck(bench *b);
int run_alltoall_mpi(bench *b);
int run_nicrate(bench *b);
int run_outstanding(bench *b);
int run_randomaccess(bench *b);
int run_nimc(bench *b);

const pattern patterns[] = {
    {"pingpong", "ping-pong latency and bandwidth between ranks 0 and 1", 2, 0, run_pingpong},
    {"barrier", "MPI_Barrier of all ranks: its time on rank 0 (the size is ignored)", 2, 0, run_barrier},
    {"collective", "a 2-rank MPI_Allgather against one MPI_Sendrecv: a collective's cost beyond its messages", 2, 0,
     run_collective},
    {"put", "one-sided put latency and bandwidth, passive target, flush", 2, 0, run_put},
    {"get", "one-sided get latency and bandwidth, passive target, flush", 2, 0, run_get},
    {"msgrate", "message rate and bandwidth of disjoint pairs streaming windows", 2, 1, run_msgrate},
    {"incast", "n-into-1: ranks 1..P-1 stream into rank 0, share per sender", 2, 0, run_incast},
    {"outcast", "1-into-n: rank 0 streams to ranks 1..P-1, share per receiver", 2, 0, run_outcast},
    {"loggp", "LogGP parameters by parametrised round trips (Netgauge method)", 2, 0, run_loggp},
    {"master", "Bhatele-Kale Benchmark I: master to each rank in turn", 2, 0, run_master},
    {"pairs", "Bhatele-Kale Benchmark II: all pairs at once, neighbour or random", 2, 1, run_pairs},
    {"hops", "Bhatele-Kale Benchmark III: all pairs n hops apart on one dimension", 2, 1, run_hops},
    {"noise", "selfish-detour OS noise per rank", 1, 0, run_noise},
    {"alltoall", "overlapped all-to-all: every rank sends to all others at once", 2, 0, run_alltoall},
    {"alltoall-pairwise", "pairwise-exchange all-to-all: P-1 blocking steps, rank+k and rank-k", 2, 0,
     run_alltoall_pairwise},
    {"alltoall-bruck", "Bruck all-to-all: log2(P) steps of packed blocks (small messages)", 2, 0,
     run_alltoall_bruck},
    {"alltoall-mpi", "the MPI library's MPI_Alltoall", 2, 0, run_alltoall_mpi},
    {"nicrate", "node injection throughput vs active cores per node x size (Luo et al. 2012, Fig. 1)", 2, 0,
     run_nicrate},
    {"outstanding", "node injection throughput vs messages in flight per core x size (Luo et al. 2012, Fig. 2)", 2,
     0, run_outstanding},
    {"randomaccess", "GUPS-like random XOR updates by MPI_Accumulate, verified; updates/s", 2, 0,
     run_randomaccess},
    {"nimc", "STREAM triad on one core while another injects memory traffic (put, rma, tcp, memcpy, spin)", 2, 0,
     run_nimc},
    {0},
};
