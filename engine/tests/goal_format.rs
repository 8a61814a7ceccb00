//! GOAL reading and writing: the full grammar, round trips, and one test per error class.

use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::{parse_goal, read_goal_file};
use contend_engine::schedule::store::GoalProgram;
use contend_engine::schedule::writer::{write_goal, write_goal_file};
use contend_engine::schedule::{OpKind, Program, ANY};
use contend_engine::sim::{simulate, Options, Params, Scenario};

fn parse(text: &str) -> GoalProgram {
    parse_goal(text.as_bytes(), "t.goal").unwrap_or_else(|e| panic!("{e}"))
}

fn error(text: &str) -> String {
    parse_goal(text.as_bytes(), "t.goal").expect_err("should not parse").to_string()
}

fn roundtrip<P: Program>(p: &P) -> GoalProgram {
    let mut out = Vec::new();
    write_goal(p, &mut out).unwrap();
    parse_goal(&out[..], "written.goal").unwrap()
}

/// Same ops and dependencies (source line numbers aside).
fn same_program<A: Program, B: Program>(a: &A, b: &B) {
    assert_eq!(a.num_ranks(), b.num_ranks());
    assert_eq!(a.num_cpus(), b.num_cpus());
    assert_eq!(a.num_nics(), b.num_nics());
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for r in 0..a.num_ranks() {
        assert_eq!(a.num_ops(r), b.num_ops(r));
        for i in 0..a.num_ops(r) {
            assert_eq!(a.op(r, i), b.op(r, i));
            assert_eq!(a.dep_count(r, i), b.dep_count(r, i));
            x.clear();
            y.clear();
            a.after_done(r, i, &mut x);
            b.after_done(r, i, &mut y);
            assert_eq!(x, y);
            x.clear();
            y.clear();
            a.after_start(r, i, &mut x);
            b.after_start(r, i, &mut y);
            assert_eq!(x, y);
        }
    }
}

const FULL: &str = "\
// a schedule using every feature
num_ranks 3
/* block
   comment */
rank 0 {
  first: send 10b to 1 tag 5 cpu 1 nic 1
  second: recv 10 b from -1 tag -1 // any source, any tag
  work_2: calc 100 cpu 1
  work_2 requires second
  third: send 0b to 2
  third irequires first
}
rank 1 {
  a: recv 10b from 0 tag 5 nic 1
  b: calc 50
  c: send 10b to 0 tag 9
  b requires a
  c requires b
}

rank 2 {
  x: recv 0b from 0
}
";

#[test]
fn reads_the_full_grammar() {
    let p = parse(FULL);
    assert_eq!(p.num_ranks(), 3);
    assert_eq!(p.num_cpus(), 2);
    assert_eq!(p.num_nics(), 2);
    assert_eq!(p.num_ops(0), 4);
    let op = p.op(0, 1);
    assert_eq!((op.kind, op.peer, op.tag, op.size), (OpKind::Recv, ANY, ANY, 10));
    let op = p.op(0, 0);
    assert_eq!((op.kind, op.peer, op.tag, op.cpu, op.nic), (OpKind::Send, 1, 5, 1, 1));
    assert_eq!(p.dep_count(0, 2), 1);
    assert_eq!(p.dep_count(0, 3), 1);
    let mut d = Vec::new();
    p.after_start(0, 0, &mut d);
    assert_eq!(d, vec![3]);
    assert_eq!(p.source_line(0, 0), Some(6));
}

#[test]
fn the_full_example_simulates_without_deadlock() {
    let p = parse(FULL);
    let r = simulate(&p, &Scenario::new(Params::loggopsim_defaults()), &Options { records: true, timeline: true, ..Options::default() }, |_| true).unwrap();
    assert!(r.deadlock.is_none(), "{:?}", r.deadlock);
    let rec = r.records.unwrap();
    assert_eq!(rec.len(), 3);
    // bytes sent = bytes received; every message's delay split adds up.
    for k in 0..rec.len() {
        let parts = rec.ideal[k] + rec.nic_queue[k] + rec.link[k] + rec.target_queue[k] + rec.late_receiver[k] + rec.noise[k];
        assert_eq!(parts, rec.completed[k] - rec.posted[k]);
    }
}

#[test]
fn write_then_read_is_identity() {
    let p = parse(FULL);
    same_program(&p, &roundtrip(&p));
    for pattern in Pattern::ALL {
        let Ok(c) = Collective::new(pattern, 12, 100, 3, 5) else { continue };
        let g = roundtrip(&c);
        same_program(&c, &g);
        same_program(&g, &roundtrip(&g));
    }
}

#[test]
fn gzip_files_read_like_plain_ones() {
    let dir = std::env::temp_dir().join(format!("contend-goal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = Collective::new(Pattern::Dissemination, 9, 8, 0, 0).unwrap();
    let plain = dir.join("d.goal");
    let gz = dir.join("d.goal.gz");
    write_goal_file(&c, &plain).unwrap();
    write_goal_file(&c, &gz).unwrap();
    let a = read_goal_file(&plain).unwrap();
    let b = read_goal_file(&gz).unwrap();
    same_program(&a, &b);
    same_program(&a, &c);
    assert!(std::fs::read_dir(&dir).unwrap().count() == 2, "no temporary files left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_deadlock_is_reported_with_ranks_ops_and_lines() {
    let p = parse("num_ranks 2\nrank 0 {\nr: recv 4b from 1\ns: send 4b to 1\ns requires r\n}\nrank 1 {\nr: recv 4b from 0\ns: send 4b to 0\ns requires r\n}\n");
    let r = simulate(&p, &Scenario::new(Params::loggopsim_defaults()), &Options::default(), |_| true).unwrap();
    let d = r.deadlock.expect("both ranks wait for each other");
    assert_eq!(d.unmatched_recv_count, 2);
    assert_eq!(d.never_started_count, 2);
    assert_eq!(d.never_started[0].rank, 0);
    assert_eq!(d.never_started[0].line, Some(4));
}

fn expect_error(text: &str, line: u32, col: u32, needle: &str) {
    let e = error(text);
    assert!(e.starts_with(&format!("t.goal:{line}:{col}: ")), "{e}");
    assert!(e.contains(needle), "{e} should mention {needle}");
}

#[test]
fn errors_name_file_line_and_column() {
    expect_error("rank 0 {\n}\n", 1, 1, "num_ranks");
    expect_error("num_ranks 0\n", 1, 11, "between 1");
    expect_error("num_ranks 2\nrank 1 {\n}\n", 2, 6, "in order");
    expect_error("num_ranks 1\nrank 3 {\n}\n", 2, 6, "out of range");
    expect_error("num_ranks 1\nrank 0 {\n  sned 4b to 0\n}\n", 3, 3, "unknown statement 'sned'");
    expect_error("num_ranks 1\nrank 0 {\n  send 4 to 0\n}\n", 3, 8, "expected 'b'");
    expect_error("num_ranks 1\nrank 0 {\n  send 4b 0\n}\n", 3, 11, "expected 'to");
    expect_error("num_ranks 2\nrank 0 {\n  send 4b to 2\n}\n", 3, 14, "out of range");
    expect_error("num_ranks 2\nrank 0 {\n  send 4b to -1\n}\n", 3, 14, "negative");
    expect_error("num_ranks 1\nrank 0 {\n  calc -5\n}\n", 3, 8, "negative");
    expect_error("num_ranks 1\nrank 0 {\n  calc 99999999999999999999999\n}\n", 3, 8, "too large");
    expect_error("num_ranks 1\nrank 0 {\n  calc abc\n}\n", 3, 8, "expected a number");
    expect_error("num_ranks 1\nrank 0 {\n  a: calc 1\n  a requires b\n}\n", 4, 14, "undefined label 'b'");
    expect_error("num_ranks 1\nrank 0 {\n  a requires b\n  a: calc 1\n  b: calc 1\n}\n", 3, 3, "undefined label 'a'");
    expect_error("num_ranks 1\nrank 0 {\n  a: calc 1\n  a: calc 2\n}\n", 4, 3, "defined twice");
    expect_error("num_ranks 1\nrank 0 {\n  a: calc 1\n  a requires a\n}\n", 4, 14, "itself");
    expect_error("num_ranks 1\nrank 0 {\n  calc 1 tag 3\n}\n", 3, 10, "unexpected 'tag'");
    expect_error("num_ranks 1\nrank 0 {\n  send 1b to 0 cpu 300\n}\n", 3, 20, "out of range");
    expect_error("num_ranks 1\nrank 0 {\n  send 1b to 0 tag 1 tag 2\n}\n", 3, 22, "twice");
    expect_error("num_ranks 1\nrank 0 {\n  send 1b to 0 tag\n}\n", 3, 16, "needs a value");
    expect_error("num_ranks 1\nrank 0 {\n  send 1b to 0 $\n}\n", 3, 16, "unexpected character");
    expect_error("num_ranks 1\n  calc 1\n", 2, 3, "outside a rank block");
    expect_error("num_ranks 1\n}\n", 2, 1, "without an open rank");
    expect_error("num_ranks 2\nrank 0 {\nrank 1 {\n", 3, 1, "not closed");
    expect_error("num_ranks 1\nnum_ranks 1\n", 2, 1, "twice");
    expect_error("num_ranks 1\nrank 0 {\n  9x: calc 1\n}\n", 3, 3, "invalid label");
}

#[test]
fn truncated_files_are_reported() {
    expect_error("num_ranks 2\nrank 0 {\n  calc 1\n", 4, 1, "inside rank 0");
    expect_error("num_ranks 2\nrank 0 {\n}\n", 4, 1, "after 1 of 2 rank blocks");
    expect_error("num_ranks 1\nrank 0 {\n/* never closed\n}\n", 5, 1, "comment");
    expect_error("", 1, 1, "empty schedule");
    // A gzip stream cut short is an I/O error, not a panic.
    let c = Collective::new(Pattern::BinomialBcast, 64, 1, 0, 0).unwrap();
    let dir = std::env::temp_dir().join(format!("contend-trunc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gz = dir.join("b.goal.gz");
    write_goal_file(&c, &gz).unwrap();
    let bytes = std::fs::read(&gz).unwrap();
    std::fs::write(&gz, &bytes[..bytes.len() / 2]).unwrap();
    let e = read_goal_file(&gz).expect_err("truncated gzip").to_string();
    assert!(e.contains("b.goal.gz"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_file_is_an_error() {
    let e = read_goal_file(std::path::Path::new("/nonexistent/x.goal")).expect_err("missing").to_string();
    assert!(e.contains("/nonexistent/x.goal") && e.contains("cannot read"), "{e}");
}

#[test]
fn rendezvous_sends_that_wait_for_each_other_deadlock() {
    // Both ranks send a rendezvous message before posting their receive: neither send completes.
    let text = "num_ranks 2\nrank 0 {\ns: send 100000b to 1\nr: recv 100000b from 1\nr requires s\n}\nrank 1 {\ns: send 100000b to 0\nr: recv 100000b from 0\nr requires s\n}\n";
    let r = simulate(&parse(text), &Scenario::new(Params::loggopsim_defaults()), &Options::default(), |_| true).unwrap();
    let d = r.deadlock.expect("classic send-send deadlock");
    assert_eq!((d.unmatched_send_count, d.unmatched_recv_count, d.never_started_count), (2, 0, 2));
    assert!(d.never_started.iter().all(|p| p.kind == OpKind::Recv && p.line.is_some()));
    // The same with eager messages completes.
    let eager = text.replace("100000b", "1000b");
    assert!(simulate(&parse(&eager), &Scenario::new(Params::loggopsim_defaults()), &Options::default(), |_| true).unwrap().deadlock.is_none());
}

/// -1 spelled as an unsigned number is the any-tag wildcard: Schedgen v1 writes MPI_ANY_TAG as
/// 18446744073709551615 (its 64-bit form), LogGOPSim's binary schedules hold 4294967295 (32 bits).
/// Any other tag of 32 bits or more is refused, since cutting it to 32 bits could merge tags.
#[test]
fn any_tag_as_the_field_writes_it() {
    for any in ["-1", "4294967295", "18446744073709551615"] {
        let p = parse(&format!("num_ranks 2\nrank 0 {{\n  send 4b to 1 tag 7\n}}\nrank 1 {{\n  recv 4b from 0 tag {any}\n}}\n"));
        assert_eq!(p.op(1, 0).tag, ANY, "{any}");
        let r = simulate(&p, &Scenario::new(Params::loggopsim_defaults()), &Options::default(), |_| true).unwrap();
        assert!(r.deadlock.is_none(), "tag {any} must match tag 7");
    }
    let p = parse("num_ranks 1\nrank 0 {\n  send 4b to 0 tag 4294967294\n}\n");
    assert_eq!(p.op(0, 0).tag, 4294967294);
    for bad in ["4294967296", "18446744073709551614", "18446744073709551616", "99999999999999999999999"] {
        expect_error(&format!("num_ranks 1\nrank 0 {{\n  recv 1b from 0 tag {bad}\n}}\n"), 3, 22, "tag out of range");
    }
    expect_error("num_ranks 1\nrank 0 {\n  recv 1b from 0 tag -2\n}\n", 3, 22, "must not be negative");
}
