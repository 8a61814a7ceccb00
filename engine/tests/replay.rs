//! The trace converter on in-memory call streams: one-sided epochs become the schedules one would
//! write by hand and simulate to the closed forms of docs/models.md.

use contend_engine::replay::emit::{convert, Options};
use contend_engine::replay::event::{Call, Event, Rma, RmaOp, RmaSync, WORLD};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::schedule::{CONTEXT_TAGS, SPINNING_TAGS};
use contend_engine::sim::{simulate, Options as SimOptions, Params, Scenario};

fn call(start: u64, end: u64, event: Event) -> Call {
    Call { start, end, line: 0, event }
}

const NS: u64 = 1000; // ps
const PAR: Params = Params { L: 2500 * NS, o: 1500 * NS, g: 1000 * NS, G: 6 * NS, O: 0, S: 65535, unit: NS, rendezvous: None };

fn hop(bytes: u64) -> u64 {
    2 * PAR.o + PAR.L + (bytes.max(1) - 1) * PAR.G
}

/// Converts, checks the text, simulates; returns (GOAL text, finish time per rank in ps).
fn run(calls: Vec<Vec<Call>>) -> (String, Vec<u64>) {
    let mut out = Vec::new();
    convert(&calls, &Options::default(), &mut out, &mut |_, _| true).unwrap();
    let text = String::from_utf8(out).unwrap();
    let prog = parse_goal(text.as_bytes(), "converted").unwrap();
    let r = simulate(&prog, &Scenario::new(PAR), &SimOptions::default(), |_| true).unwrap();
    assert!(r.deadlock.is_none(), "{text}");
    (text, r.finish)
}

fn window(rank_calls: Vec<Call>) -> Vec<Call> {
    let mut v = vec![call(1000, 1000, Event::Other), call(1000, 1000, Event::WinCreate { win: 7, comm: WORLD })];
    v.extend(rank_calls);
    v
}

#[test]
fn put_then_flush() {
    let data = CONTEXT_TAGS | (2047 << 20);
    let ack = SPINNING_TAGS | (2047 << 20) | 5;
    let (text, finish) = run(vec![
        window(vec![
            call(2000, 2100, Event::Rma(Rma { op: RmaOp::Put, win: 7, target: 1, bytes: 1000, req: None, in_place: false })),
            call(2100, 9000, Event::RmaSync { win: 7, sync: RmaSync::Flush { target: 1 } }),
            call(12000, 12000, Event::Other),
        ]),
        window(vec![call(5000, 5000, Event::Other)]),
    ]);
    let expect = format!(
        "num_ranks 2\n\nrank 0 {{\nl0: calc 1000\nl1: send 1000b to 1 tag {data}\nl1 requires l0\n\
         l2: recv 0b from 1 tag {ack}\nl2 irequires l1\nl3: calc 3000\nl3 requires l1\nl3 requires l2\n}}\n\n\
         rank 1 {{\nl0: recv 1000b from 0 tag {data}\nl1: send 0b to 0 tag {ack}\nl1 requires l0\nl2: calc 4000\n}}\n"
    );
    assert_eq!(text, expect);
    // The flush completes the put at the target: the origin waits (spinning) for the target's
    // acknowledgement, sent once the data is in, then computes 3 us. The target receives the data
    // while its program runs (its 4 us end before the data arrives) and acknowledges it.
    assert_eq!(finish, vec![1000 * NS + hop(1000) + hop(0) + 3000 * NS, 1000 * NS + hop(1000) + PAR.o]);
}

#[test]
fn get_is_a_request_and_a_reply() {
    let (text, finish) = run(vec![
        window(vec![
            call(1000, 1100, Event::Rma(Rma { op: RmaOp::Get, win: 7, target: 1, bytes: 500, req: None, in_place: false })),
            call(1100, 9000, Event::RmaSync { win: 7, sync: RmaSync::Flush { target: 1 } }),
            call(9000, 9000, Event::Other),
        ]),
        window(vec![call(1000, 1000, Event::Other)]),
    ]);
    assert!(text.contains("rank 1 {\nl0: recv 0b from 0 tag"), "{text}");
    assert!(text.contains("l1: send 500b to 0 tag"), "{text}");
    // request out and answered, reply back: the flush completes when the data has arrived
    assert_eq!(finish[0], hop(0) + hop(500));
}

#[test]
fn fence_is_a_barrier_after_the_epochs_operations() {
    let fence = |t: u64| call(t, t + 10, Event::RmaSync { win: 7, sync: RmaSync::Fence });
    let put = |t: u64, target: u32| call(t, t + 10, Event::Rma(Rma { op: RmaOp::Put, win: 7, target, bytes: 8, req: None, in_place: false }));
    let (text, finish) = run(vec![
        window(vec![fence(1000), put(1010, 1), fence(1020), call(1030, 1030, Event::Other)]),
        window(vec![fence(1000), put(1010, 0), fence(1020), call(1030, 1030, Event::Other)]),
    ]);
    // each rank: its incoming put and its acknowledgement, a barrier (one exchange), the put, the
    // closing barrier requiring the put's acknowledgement
    assert_eq!(text.matches("send 8b").count(), 2, "{text}");
    assert_eq!(text.matches("send 0b").count(), 6, "{text}");
    // first barrier: one 0-byte exchange; the puts cross (hop(8)), each target acknowledges
    // (hop(0)), then the second barrier's exchange
    assert_eq!(finish, vec![3 * hop(0) + hop(8); 2]);
}

/// A fetch-and-op of 8 bytes, flushed: the operand goes to the target, its old value comes back, and
/// the flush returns when it has: two hops of 8 bytes.
#[test]
fn fetch_and_op_is_a_hop_there_and_a_hop_back() {
    let (text, finish) = run(vec![
        window(vec![
            call(1000, 1100, Event::Rma(Rma { op: RmaOp::GetAccumulate, win: 7, target: 1, bytes: 8, req: None, in_place: false })),
            call(1100, 9000, Event::RmaSync { win: 7, sync: RmaSync::Flush { target: 1 } }),
            call(9000, 9000, Event::Other),
        ]),
        window(vec![call(1000, 1000, Event::Other)]),
    ]);
    assert!(text.contains("rank 1 {\nl0: recv 8b from 0 tag") && text.contains("l1: send 8b to 0 tag"), "{text}");
    assert_eq!(finish[0], 2 * hop(8));
}

/// One post/start/complete/wait epoch, rank 0 putting 8 bytes into rank 1: the target's post reaches
/// the origin (hop(0)), whose start returns and whose put leaves; the put's data takes the target's
/// CPU when it arrives (hop(8) after the put), and the target acknowledges it (hop(0)). The origin's
/// complete waits for the acknowledgement, then sends its note (its o: the origin ends), which the
/// target's wait receives a hop(0) after the acknowledgement.
#[test]
fn a_pscw_epoch_completes_the_put_before_the_targets_wait() {
    let sync = |sync: RmaSync| call(1000, 1000, Event::RmaSync { win: 7, sync });
    let (text, finish) = run(vec![
        window(vec![
            sync(RmaSync::Start { group: vec![1] }),
            call(1000, 1000, Event::Rma(Rma { op: RmaOp::Put, win: 7, target: 1, bytes: 8, req: None, in_place: false })),
            sync(RmaSync::Complete),
            call(1000, 1000, Event::Other),
        ]),
        window(vec![sync(RmaSync::Post { group: vec![0] }), sync(RmaSync::Wait), call(1000, 1000, Event::Other)]),
    ]);
    assert_eq!(text.matches("send 0b").count(), 3, "{text}");
    assert_eq!(finish, vec![2 * hop(0) + hop(8) + PAR.o, 3 * hop(0) + hop(8)], "{text}");
}

/// A post between an access epoch's put and its complete (a rank both origin and target) completes
/// nothing of its own: the complete still waits for the put.
#[test]
fn a_post_inside_an_access_epoch_leaves_its_operations_to_the_complete() {
    let sync = |sync: RmaSync| call(1000, 1000, Event::RmaSync { win: 7, sync });
    let (text, _) = run(vec![
        window(vec![
            sync(RmaSync::Start { group: vec![1] }),
            call(1000, 1000, Event::Rma(Rma { op: RmaOp::Put, win: 7, target: 1, bytes: 8, req: None, in_place: false })),
            sync(RmaSync::Post { group: vec![1] }),
            sync(RmaSync::Complete),
            sync(RmaSync::Wait),
        ]),
        window(vec![sync(RmaSync::Post { group: vec![0] }), sync(RmaSync::Start { group: vec![0] }), sync(RmaSync::Complete),
            sync(RmaSync::Wait)]),
    ]);
    let rank0 = text.split("rank 1 {").next().unwrap();
    let label = |needle: &str| rank0.lines().find(|l| l.contains(needle)).unwrap().split(':').next().unwrap().to_string();
    let (put, posts) = (label("send 8b to 1"), rank0.lines().filter(|l| l.contains("send 0b to 1")).count());
    assert_eq!(posts, 2, "{text}"); // the post, then the complete
    let done = rank0.lines().filter(|l| l.contains("send 0b to 1")).nth(1).unwrap().split(':').next().unwrap();
    assert!(rank0.contains(&format!("{done} requires {put}\n")), "{text}");
}

use contend_engine::replay::event::{CollKind, Collective};

fn coll(kind: CollKind, comm: u64, root: Option<u32>, bytes: u64, p: u32) -> Event {
    let v = matches!(kind, CollKind::Gatherv | CollKind::Scatterv | CollKind::Allgatherv | CollKind::Alltoallv);
    let counts = if v { vec![bytes; p as usize] } else { Vec::new() };
    Event::Collective(Collective { kind, comm, root, bytes, send_counts: counts.clone(), recv_counts: counts, req: None })
}

/// Every collective, at sizes on both sides of MPICH's thresholds, on the world and on a
/// sub-communicator whose ranks run backwards, with the last rank as root: the converted schedule
/// runs to its end (every message has its receive) and all members finish after the root started.
#[test]
fn every_collective_runs_through_on_any_communicator() {
    use CollKind::*;
    let kinds = [
        Barrier, Bcast, Reduce, Allreduce, Gather, Gatherv, Scatter, Scatterv, Allgather, Allgatherv, Alltoall, Alltoallv,
        ReduceScatter, ReduceScatterBlock, Scan, Exscan,
    ];
    for p in [2u32, 3, 5, 8, 9] {
        for bytes in [8u64, 4096, 600_000] {
            let mut ranks: Vec<Vec<Call>> = Vec::new();
            for r in 0..p {
                let mut calls = vec![call(0, 0, Event::Other)];
                // A sub-communicator of the even ranks, highest first.
                let members: Vec<u32> = (0..p).rev().filter(|m| m % 2 == 0).collect();
                if members.contains(&r) {
                    calls.push(call(0, 0, Event::CommCreate { comm: 3, members: members.clone() }));
                }
                let mut t = 10;
                for &kind in &kinds {
                    for (comm, size) in [(WORLD, p), (3, members.len() as u32)] {
                        if comm == 3 && !members.contains(&r) {
                            continue;
                        }
                        let root = matches!(kind, Bcast | Reduce | Gather | Gatherv | Scatter | Scatterv).then_some(size - 1);
                        calls.push(call(t, t + 5, coll(kind, comm, root, bytes, size)));
                        t += 10;
                    }
                }
                calls.push(call(t, t, Event::Other));
                ranks.push(calls);
            }
            let (_, finish) = run(ranks);
            assert!(finish.iter().all(|&f| f > 0), "P={p} bytes={bytes}: {finish:?}");
        }
    }
}

/// The tags of every send a converted schedule holds, by whether admission control applies to them.
fn send_tags(text: &str) -> Vec<(u32, bool)> {
    use contend_engine::schedule::{admitted, OpKind, Program};
    let prog = parse_goal(text.as_bytes(), "converted").unwrap();
    let mut tags = Vec::new();
    for rank in 0..prog.num_ranks() {
        for i in 0..prog.num_ops(rank) {
            let op = prog.op(rank, i);
            if op.kind == OpKind::Send {
                tags.push((op.tag, admitted(op.tag)));
            }
        }
    }
    tags
}

/// What libcontend-throttle.so admits, the engine admits in a converted trace, and nothing else: the
/// blocking all-to-all and all-gather (the library runs them as sends of its own), a put's data, a
/// get's request and a get-accumulate's data; not the other collectives (MPI makes their messages below
/// the PMPI layer), a nonblocking all-to-all, a reply or a fence.
#[test]
fn converted_traffic_is_admitted_where_the_library_admits_it() {
    use contend_engine::schedule::spins;
    use CollKind::*;
    let p = 4u32;
    let convert_one = |event: &dyn Fn(u32) -> Vec<Call>| {
        let calls: Vec<Vec<Call>> = (0..p).map(|r| {
            let mut v = vec![call(1000, 1000, Event::Other), call(1000, 1000, Event::WinCreate { win: 7, comm: WORLD })];
            v.extend(event(r));
            v.push(call(90_000, 90_000, Event::Other));
            v
        }).collect();
        run(calls).0
    };
    for kind in [Barrier, Bcast, Reduce, Allreduce, Gather, Scatter, Allgather, Allgatherv, Alltoall, Alltoallv, Scan] {
        let root = matches!(kind, Bcast | Reduce | Gather | Scatter).then_some(0);
        let text = convert_one(&|_| vec![call(2000, 3000, coll(kind, WORLD, root, 4096, p))]);
        let library = matches!(kind, Allgather | Allgatherv | Alltoall | Alltoallv);
        let tags = send_tags(&text);
        assert!(
            !tags.is_empty() && tags.iter().all(|&(_, a)| a == library),
            "{kind:?}: {tags:?}"
        );
        // MPICH's point-to-point algorithms (`mpich`) wait yielding; only `mpich-shm`'s
        // release-gather calls spin (a_shared_memory_collective_spins_from_mpich_s_threshold).
        assert!(
            tags.iter().all(|&(tag, _)| !spins(tag)),
            "{kind:?}: {tags:?}"
        );
        // Nonblocking, the library passes it to MPI whole; its waits yield.
        let mut c = match coll(kind, WORLD, root, 4096, p) { Event::Collective(c) => c, _ => unreachable!() };
        c.req = Some(1);
        let text = convert_one(&|_| vec![call(2000, 2100, Event::Collective(c.clone())), call(2100, 3000, Event::Complete(vec![1]))]);
        assert!(send_tags(&text).iter().all(|&(tag, a)| !a && !spins(tag)), "I{kind:?}");
    }
    let rma = |op: RmaOp| {
        convert_one(&|r| if r == 0 {
            vec![call(2000, 2100, Event::Rma(Rma { op, win: 7, target: 1, bytes: 64, req: None, in_place: false })),
                 call(2100, 3000, Event::RmaSync { win: 7, sync: RmaSync::Flush { target: 1 } })]
        } else { Vec::new() })
    };
    // A put: its data admitted, the target's acknowledgement (MPICH's, below the PMPI layer) not.
    assert_eq!(send_tags(&rma(RmaOp::Put)).iter().map(|&(_, a)| a).collect::<Vec<_>>(), vec![true, false]);
    // A get: the request admitted (rank 0 sends 0 bytes), the reply (rank 1 sends the data) not.
    let text = rma(RmaOp::Get);
    assert!(text.contains("send 0b to 1 tag") && text.contains("send 64b to 0 tag"), "{text}");
    assert_eq!(send_tags(&text).iter().map(|&(_, a)| a).collect::<Vec<_>>(), vec![true, false], "{text}");
    // A get-accumulate (fetch-and-op, compare-and-swap): its data admitted, the reply not.
    let text = rma(RmaOp::GetAccumulate);
    assert_eq!(send_tags(&text).iter().map(|&(_, a)| a).collect::<Vec<_>>(), vec![true, false], "{text}");
    // A fence: its barrier is not admitted.
    let fence = convert_one(&|_| vec![call(2000, 2100, Event::RmaSync { win: 7, sync: RmaSync::Fence })]);
    assert!(!send_tags(&fence).is_empty() && send_tags(&fence).iter().all(|&(_, a)| !a));
}

/// The engine's list of the collectives the library admits is the library's: the collectives
/// native/throttle/collectives.c wraps (their large-count `_c` forms are the same collectives).
#[test]
fn the_collectives_admitted_are_the_ones_the_library_wraps() {
    use contend_engine::replay::emit::admitted_by_the_library;
    use CollKind::*;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../native/throttle/collectives.c");
    let source = std::fs::read_to_string(&path).unwrap();
    let mut wrapped: Vec<String> = source.lines()
        .filter_map(|l| l.strip_prefix("int MPI_")?.split('(').next().map(|n| n.trim_end_matches("_c").to_string()))
        .collect();
    wrapped.sort();
    wrapped.dedup();
    let all = [
        Barrier, Bcast, Reduce, Allreduce, Gather, Gatherv, Scatter, Scatterv, Allgather, Allgatherv, Alltoall, Alltoallv,
        ReduceScatter, ReduceScatterBlock, Scan, Exscan,
    ];
    let mut admitted: Vec<String> = all.into_iter()
        .filter(|&kind| match coll(kind, WORLD, Some(0), 8, 2) { Event::Collective(c) => admitted_by_the_library(&c), _ => false })
        .map(|kind| format!("{kind:?}"))
        .collect();
    admitted.sort();
    assert_eq!(admitted, wrapped);
}

/// MPICH's shared-memory broadcast (`mpich-shm`): a root runs at most `BCAST_CELLS` broadcasts ahead
/// of its readers, who note each cell they copied out of. Ten broadcasts from rank 0, then 5C of its
/// own work; its readers compute C before each receive. The first four are point-to-point (MPICH's
/// threshold), the fifth to tenth go through the cells: the root's tenth waits for the notes of its
/// sixth, which the readers send after about 6C, so it finishes after 11C; with MPICH's network
/// algorithms (no cells) after 5C. Every note is received: the schedule runs through.
#[test]
fn a_shared_memory_broadcast_root_runs_at_most_four_cells_ahead() {
    use contend_engine::replay::algorithms::{Algorithms, Preset, BCAST_CELLS};
    const C: u64 = 100_000; // ns
    let ranks: Vec<Vec<Call>> = (0..3u64)
        .map(|r| {
            let mut calls = vec![call(0, 0, Event::Other)];
            for k in 0..10u64 {
                let at = if r == 0 { 10 * k } else { (k + 1) * C };
                calls.push(call(at, at + 1, coll(CollKind::Bcast, WORLD, Some(0), 8, 3)));
            }
            let end = if r == 0 { 100 + 5 * C } else { 11 * C };
            calls.push(call(end, end, Event::Other));
            calls
        })
        .collect();
    let root_finish = |preset| {
        let mut out = Vec::new();
        let opts = Options { algorithms: Algorithms::new(preset), ..Options::default() };
        convert(&ranks, &opts, &mut out, &mut |_, _| true).unwrap();
        let text = String::from_utf8(out).unwrap();
        let prog = parse_goal(text.as_bytes(), "converted").unwrap();
        let r = simulate(&prog, &Scenario::new(PAR), &SimOptions::default(), |_| true).unwrap();
        assert!(r.deadlock.is_none());
        (text, r.finish[0])
    };
    let (text, cells) = root_finish(Preset::MpichShm);
    // Each reader notes the six broadcasts through the cells to the root, which receives every note.
    let notes = |line: &str| line.contains("send 0b to 0 tag");
    assert_eq!(text.lines().filter(|l| notes(l)).count(), 12);
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("recv 0b from 1 tag") || l.contains("recv 0b from 2 tag"))
            .count(),
        12
    );
    // The tenth waits for the notes of the sixth: 10 - BCAST_CELLS.
    assert_eq!(BCAST_CELLS, 4);
    // (each of the six rounds also costs the readers a receive and a note, o each)
    assert!(cells > 11 * C * NS && cells < 11 * C * NS + C * NS / 2, "{cells}");
    let (_, free) = root_finish(Preset::Mpich);
    assert!(free > 5 * C * NS && free < 5 * C * NS + C * NS / 2, "{free}");
}

/// MPICH's shared-memory collectives (`mpich-shm`) start from its threshold, per communicator: four
/// barriers of four ranks are two dissemination barriers, whose waits yield, then two flat
/// gather-and-release barriers whose receives spin. A program that ran with MPI_THREAD_MULTIPLE never
/// uses them (all four are dissemination barriers).
#[test]
fn a_shared_memory_collective_spins_from_mpich_s_threshold() {
    use contend_engine::replay::algorithms::{Algorithms, Preset};
    use contend_engine::replay::{RankCalls, TraceError, TraceSet};
    use contend_engine::schedule::{spins, OpKind, Program};
    struct Threaded(Vec<Vec<Call>>);
    impl TraceSet for Threaded {
        fn num_ranks(&self) -> u32 {
            self.0.num_ranks()
        }
        fn source(&self, rank: u32) -> String {
            self.0.source(rank)
        }
        fn open(&self, rank: u32) -> Result<RankCalls, TraceError> {
            self.0.open(rank)
        }
        fn threads_multiple(&self) -> bool {
            true
        }
    }
    let p = 4u32;
    let calls: Vec<Vec<Call>> = (0..p)
        .map(|_| {
            let mut v = vec![call(0, 0, Event::Other)];
            v.extend((0..4u64).map(|k| {
                call(
                    1000 * k + 100,
                    1000 * k + 200,
                    coll(CollKind::Barrier, WORLD, None, 0, p),
                )
            }));
            v.push(call(9000, 9000, Event::Other));
            v
        })
        .collect();
    let opts = Options {
        algorithms: Algorithms::new(Preset::MpichShm),
        ..Options::default()
    };
    // Rank 1's receives per barrier (sequence number: the tag's low bits), and whether they spin.
    let receives = |traces: &dyn TraceSet| {
        let mut out = Vec::new();
        convert(traces, &opts, &mut out, &mut |_, _| true).unwrap();
        let prog = parse_goal(&out[..], "converted").unwrap();
        let mut per: Vec<(u32, usize, bool)> = Vec::new();
        for op in (0..prog.num_ops(1))
            .map(|i| prog.op(1, i))
            .filter(|op| op.kind == OpKind::Recv)
        {
            let seq = op.tag & ((1 << 18) - 1);
            match per.iter_mut().find(|(s, _, _)| *s == seq) {
                Some(e) => {
                    e.1 += 1;
                    assert_eq!(e.2, spins(op.tag));
                }
                None => per.push((seq, 1, spins(op.tag))),
            }
        }
        per
    };
    // Dissemination on 4 ranks: 2 receives a rank; the flat barrier: rank 1 receives the release.
    assert_eq!(
        receives(&calls),
        vec![(0, 2, false), (1, 2, false), (2, 1, true), (3, 1, true)]
    );
    assert_eq!(
        receives(&Threaded(calls.clone())),
        vec![(0, 2, false), (1, 2, false), (2, 2, false), (3, 2, false)]
    );
}

/// The library's cost of entering a collective (`Options::collective_entry_ns`) is a calc at the
/// start of every collective call of every rank, before its messages, blocking or not, and it is
/// not scaled with the CPU: a 2-rank Allgather (one exchange, `hop`) after 1 us of work takes
/// `1 us + entry + hop` on each rank, with `cpu_scale` 2 as well as 1, and an Iallgather's
/// entry delays the work after its call by as much.
#[test]
fn a_collective_s_entry_is_work_before_its_messages() {
    const ENTRY: u64 = 190;
    let blocking = |_: u32| {
        vec![call(0, 0, Event::Other), call(1000, 3000, coll(CollKind::Allgather, WORLD, None, 8, 2)), call(3000, 3000, Event::Other)]
    };
    let converted = |calls: Vec<Vec<Call>>, opts: &Options| {
        let mut out = Vec::new();
        convert(&calls, opts, &mut out, &mut |_, _| true).unwrap();
        let text = String::from_utf8(out).unwrap();
        let prog = parse_goal(text.as_bytes(), "converted").unwrap();
        let r = simulate(&prog, &Scenario::new(PAR), &SimOptions::default(), |_| true).unwrap();
        assert!(r.deadlock.is_none(), "{text}");
        (text, r.finish)
    };
    let plain = converted((0..2).map(blocking).collect(), &Options::default()).1;
    assert_eq!(plain, vec![1000 * NS + hop(8); 2]);
    for cpu_scale in [1.0, 2.0] {
        let opts = Options { collective_entry_ns: ENTRY, cpu_scale, ..Options::default() };
        let (text, finish) = converted((0..2).map(blocking).collect(), &opts);
        assert!(text.contains(&format!("calc {ENTRY}\n")), "{text}");
        let work = (1000.0 * cpu_scale) as u64 * NS;
        assert_eq!(finish, vec![work + ENTRY * NS + hop(8); 2]);
    }
    // Nonblocking: the entry is paid in the Iallgather's call, then its send's o; the 5 us of work
    // after the call follow, and the partner's message, which arrived during them, is handled after
    // them: entry, both overheads and the work, the latency hidden.
    let nonblocking = |_: u32| {
        let mut c = coll(CollKind::Allgather, WORLD, None, 8, 2);
        if let Event::Collective(ref mut x) = c {
            x.req = Some(1);
        }
        vec![
            call(0, 0, Event::Other),
            call(1000, 1100, c),
            call(6100, 6200, Event::Complete(vec![1])),
            call(6200, 6200, Event::Other),
        ]
    };
    let opts = Options { collective_entry_ns: ENTRY, ..Options::default() };
    let finish = converted((0..2).map(nonblocking).collect(), &opts).1;
    assert_eq!(finish, vec![1000 * NS + ENTRY * NS + 5000 * NS + hop(8) - PAR.L; 2]);
}

/// A put that no synchronization completes (a trace that ends inside its epoch) still has its
/// acknowledgement received, at the rank's end: no message is left without its receive, and the
/// origin ends once the acknowledgement is in.
#[test]
fn an_unsynchronized_put_is_acknowledged_at_the_rank_s_end() {
    let (text, finish) = run(vec![
        window(vec![
            call(2000, 2100, Event::Rma(Rma { op: RmaOp::Put, win: 7, target: 1, bytes: 8, req: None, in_place: false })),
            call(2100, 2100, Event::Other),
        ]),
        window(vec![call(1000, 1000, Event::Other)]),
    ]);
    assert_eq!(text.matches("recv 0b from 1").count(), 1, "{text}");
    assert_eq!(finish[0], 1000 * NS + hop(8) + hop(0), "{text}");
}
