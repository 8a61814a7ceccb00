//! The communication graph of a schedule: bytes and messages sent between each ordered pair of
//! ranks, every send counted once (receives only mirror them).

use std::path::Path;

use crate::schedule::goal::{read_goal_file, GoalError};
use crate::schedule::{OpKind, Program};

/// Per ordered pair `src[i] -> dst[i]` (sorted by `(src, dst)`, each pair once): `bytes[i]` sent in
/// `messages[i]` sends. Sends of a rank to itself are pairs like any other.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub ranks: u32,
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub bytes: Vec<u64>,
    pub messages: Vec<u64>,
}

impl Traffic {
    /// Aggregates the sends of `prog`. O(operations + pairs · log(peers per rank)); memory
    /// O(pairs).
    pub fn of<P: Program + ?Sized>(prog: &P) -> Traffic {
        let mut t = Traffic { ranks: prog.num_ranks(), ..Traffic::default() };
        let mut sends: Vec<(u32, u64)> = Vec::new();
        for r in 0..prog.num_ranks() {
            sends.clear();
            for i in 0..prog.num_ops(r) {
                let op = prog.op(r, i);
                if op.kind == OpKind::Send {
                    sends.push((op.peer, op.size));
                }
            }
            sends.sort_unstable_by_key(|&(peer, _)| peer);
            for run in sends.chunk_by(|x, y| x.0 == y.0) {
                t.src.push(r);
                t.dst.push(run[0].0);
                t.bytes.push(run.iter().map(|&(_, b)| b).sum());
                t.messages.push(run.len() as u64);
            }
        }
        t
    }

    /// Reads a GOAL file (plain or gzip) and aggregates its sends; the parsed schedule is dropped
    /// before returning.
    pub fn of_goal_file(path: &Path) -> Result<Traffic, GoalError> {
        Ok(Traffic::of(&read_goal_file(path)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::goal::parse_goal;

    #[test]
    fn sends_are_summed_per_ordered_pair() {
        let text = "num_ranks 3\n\
            rank 0 {\n send 10b to 1\n send 5b to 2\n send 7b to 1 tag 3\n recv 4b from 1\n}\n\
            rank 1 {\n recv 10b from 0\n recv 7b from 0 tag 3\n send 4b to 0\n calc 100\n}\n\
            rank 2 {\n recv 5b from 0\n send 1b to 2\n recv 1b from 2\n}\n";
        let prog = parse_goal(text.as_bytes(), "t.goal").unwrap();
        let t = Traffic::of(&prog);
        assert_eq!(t.ranks, 3);
        assert_eq!(t.src, vec![0, 0, 1, 2]);
        assert_eq!(t.dst, vec![1, 2, 0, 2]);
        assert_eq!(t.bytes, vec![17, 5, 4, 1]);
        assert_eq!(t.messages, vec![2, 1, 1, 1]);
    }
}
