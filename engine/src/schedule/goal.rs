//! GOAL text reader: streams a `.goal` or gzip-compressed `.goal.gz` file into a [`GoalProgram`].
//!
//! Grammar (one statement per line; `//` and `/* */` comments anywhere):
//! ```text
//! num_ranks <N>
//! rank <r> {                                   blocks in order 0..N-1
//!   [<label>:] send <bytes>b to <dest> [tag <t>] [cpu <c>] [nic <n>]
//!   [<label>:] recv <bytes>b from <src> [tag <t>] [cpu <c>] [nic <n>]    src/tag -1 = any
//!   (tag 4294967295 and 18446744073709551615, -1 in 32 and 64 bits as LogGOPSim and Schedgen v1
//!   write it, mean any tag as well)
//!   [<label>:] calc <duration> [mem <bytes>] [cpu <c>]   mem: bytes of memory traffic (NiMC)
//!   <A> requires <B>        A starts after B completes
//!   <A> irequires <B>       A starts after B starts
//! }
//! ```
//! Labels are scoped to their rank block and a dependency may only name labels defined earlier.
//! Every error names the file, line and column.

use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::store::GoalProgram;
use super::{Op, OpKind, ANY};

/// A malformed schedule: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalError {
    pub path: String,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl fmt::Display for GoalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.path, self.line, self.col, self.message)
        }
    }
}

impl std::error::Error for GoalError {}

/// Largest rank count accepted (ranks are u32 with u32::MAX reserved for "any").
const MAX_RANKS: u64 = (1 << 31) - 1;
const CHUNK: usize = 8 << 20;

/// Reads a GOAL file (plain or gzip, detected by its magic bytes).
pub fn read_goal_file(path: &Path) -> Result<GoalProgram, GoalError> {
    let name = path.display().to_string();
    let io_err = |e: std::io::Error| GoalError { path: name.clone(), line: 0, col: 0, message: format!("cannot read: {e}") };
    let mut file = BufReader::new(File::open(path).map_err(io_err)?);
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(io_err)?;
    let head = std::io::Cursor::new(magic[..n].to_vec());
    let chained = head.chain(file);
    if n == 2 && magic == [0x1f, 0x8b] {
        parse_goal(flate2::read::MultiGzDecoder::new(chained), &name)
    } else {
        parse_goal(chained, &name)
    }
}

/// Parses GOAL text from any reader. `name` is used in error messages.
pub fn parse_goal<R: Read>(mut input: R, name: &str) -> Result<GoalProgram, GoalError> {
    let mut parser = Parser::new(name);
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + 4096);
    loop {
        let old = buf.len();
        buf.resize(old + CHUNK, 0);
        let got = read_full(&mut input, &mut buf[old..]).map_err(|e| parser.err_at(0, format!("cannot read: {e}")))?;
        buf.truncate(old + got);
        let at_eof = got == 0;
        // Consume all complete lines; keep a trailing partial line for the next chunk.
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            parser.line(&buf[start..start + nl])?;
            start += nl + 1;
        }
        if at_eof {
            if start < buf.len() {
                let rest = buf[start..].to_vec();
                parser.line(&rest)?;
            }
            return parser.finish();
        }
        buf.drain(..start);
    }
}

fn read_full<R: Read>(input: &mut R, out: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < out.len() {
        match input.read(&mut out[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[derive(Clone, Copy)]
struct Token {
    start: u32,
    end: u32,
}

const MAX_TOKENS: usize = 24;

/// The bytes of a word token (names, numbers, -1): letters, digits, '_' and '-'. A table, since the
/// tokenizer looks at every byte of the file.
const WORD: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        c += 1;
    }
    t
};

struct Parser<'n> {
    name: &'n str,
    line_no: u32,
    in_comment: bool,
    num_ranks: Option<u32>,
    /// Rank whose block is open, if any.
    open_rank: Option<u32>,
    next_rank: u32,
    prog: GoalProgram,
    labels: Labels,
    done_pairs: Vec<(u32, u32)>,
    start_pairs: Vec<(u32, u32)>,
    /// The current line with comments blanked out.
    clean: Vec<u8>,
}

impl<'n> Parser<'n> {
    fn new(name: &'n str) -> Self {
        Parser {
            name,
            line_no: 0,
            in_comment: false,
            num_ranks: None,
            open_rank: None,
            next_rank: 0,
            prog: GoalProgram::new(0),
            labels: Labels::default(),
            done_pairs: Vec::new(),
            start_pairs: Vec::new(),
            clean: Vec::new(),
        }
    }

    fn err_at(&self, col: u32, message: String) -> GoalError {
        GoalError { path: self.name.to_string(), line: self.line_no, col, message }
    }

    fn err(&self, tok: Token, message: String) -> GoalError {
        self.err_at(tok.start + 1, message)
    }

    /// Blanks comments out of `raw` into `self.clean`, tracking `/* */` across lines.
    fn strip_comments(&mut self, raw: &[u8]) {
        self.clean.clear();
        self.clean.extend_from_slice(raw);
        let s = &mut self.clean;
        let mut i = 0;
        while i < s.len() {
            if self.in_comment {
                if s[i] == b'*' && i + 1 < s.len() && s[i + 1] == b'/' {
                    s[i] = b' ';
                    s[i + 1] = b' ';
                    self.in_comment = false;
                    i += 2;
                    continue;
                }
                s[i] = b' ';
                i += 1;
            } else if s[i] == b'/' && i + 1 < s.len() && s[i + 1] == b'/' {
                s.truncate(i);
                break;
            } else if s[i] == b'/' && i + 1 < s.len() && s[i + 1] == b'*' {
                s[i] = b' ';
                s[i + 1] = b' ';
                self.in_comment = true;
                i += 2;
            } else {
                i += 1;
            }
        }
    }

    fn line(&mut self, raw: &[u8]) -> Result<(), GoalError> {
        self.line_no += 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if self.in_comment || raw.contains(&b'/') {
            self.strip_comments(raw);
            let clean = std::mem::take(&mut self.clean);
            let result = self.tokens_and_statement(&clean);
            self.clean = clean;
            result
        } else {
            self.tokens_and_statement(raw)
        }
    }

    fn tokens_and_statement(&mut self, s: &[u8]) -> Result<(), GoalError> {
        let mut toks = [Token { start: 0, end: 0 }; MAX_TOKENS];
        let n = self.tokenize(s, &mut toks)?;
        if n == 0 {
            return Ok(());
        }
        self.statement(s, &toks[..n])
    }

    fn tokenize(&self, s: &[u8], toks: &mut [Token; MAX_TOKENS]) -> Result<usize, GoalError> {
        let mut n = 0;
        let mut i = 0;
        while i < s.len() {
            let c = s[i];
            if c == b' ' || c == b'\t' {
                i += 1;
                continue;
            }
            let start = i;
            if c == b'{' || c == b'}' || c == b':' {
                i += 1;
            } else if WORD[c as usize] {
                while i < s.len() && WORD[s[i] as usize] {
                    i += 1;
                }
            } else {
                let ch = String::from_utf8_lossy(&s[i..(i + 4).min(s.len())]).chars().next().unwrap_or('?');
                return Err(self.err_at(i as u32 + 1, format!("unexpected character '{ch}'")));
            }
            if n == MAX_TOKENS {
                return Err(self.err_at(start as u32 + 1, "statement too long".into()));
            }
            toks[n] = Token { start: start as u32, end: i as u32 };
            n += 1;
        }
        Ok(n)
    }

    fn statement(&mut self, s: &[u8], t: &[Token]) -> Result<(), GoalError> {
        let word = |k: usize| &s[t[k].start as usize..t[k].end as usize];
        match word(0) {
            b"num_ranks" => return self.num_ranks_stmt(s, t),
            b"rank" => return self.rank_stmt(s, t),
            b"}" => {
                if t.len() > 1 {
                    return Err(self.err(t[1], "unexpected text after '}'".into()));
                }
                return self.close_rank(t[0]);
            }
            _ => {}
        }
        let rank = match self.open_rank {
            Some(r) => r,
            None => {
                return Err(self.err(
                    t[0],
                    if self.num_ranks.is_none() {
                        "expected 'num_ranks <N>' as the first statement".into()
                    } else {
                        format!("statement outside a rank block: '{}'", show(word(0)))
                    },
                ))
            }
        };
        // Dependency: A requires B / A irequires B
        if t.len() >= 2 && (word(1) == b"requires" || word(1) == b"irequires") {
            if t.len() != 3 {
                return Err(self.err(t[t.len().min(3) - 1], format!("expected '<label> {} <label>'", show(word(1)))));
            }
            let a = self.lookup(s, t[0])?;
            let b = self.lookup(s, t[2])?;
            if a == b {
                return Err(self.err(t[2], format!("'{}' cannot depend on itself", show(word(0)))));
            }
            if word(1) == b"requires" {
                self.done_pairs.push((b, a));
            } else {
                self.start_pairs.push((b, a));
            }
            return Ok(());
        }
        // Operation, optionally labelled.
        let (label, rest) = if t.len() >= 2 && word(1) == b":" {
            check_label(self, word(0), t[0])?;
            (Some(t[0]), &t[2..])
        } else {
            (None, t)
        };
        if rest.is_empty() {
            return Err(self.err(t[t.len() - 1], "expected an operation after the label".into()));
        }
        let op = self.operation(s, rest)?;
        let line = self.line_no;
        let gid = self.prog.push_op(op, line);
        let local = gid - *self.prog.rank_start.last().unwrap();
        if let Some(l) = label {
            let text = &s[l.start as usize..l.end as usize];
            if !self.labels.insert(text, local) {
                return Err(self.err(l, format!("label '{}' defined twice in rank {rank}", show(text))));
            }
        }
        Ok(())
    }

    fn lookup(&self, s: &[u8], tok: Token) -> Result<u32, GoalError> {
        let text = &s[tok.start as usize..tok.end as usize];
        self.labels.get(text).ok_or_else(|| {
            self.err(tok, format!("undefined label '{}' (labels must be defined earlier in the same rank)", show(text)))
        })
    }

    fn operation(&self, s: &[u8], t: &[Token]) -> Result<Op, GoalError> {
        let word = |k: usize| &s[t[k].start as usize..t[k].end as usize];
        let kind = match word(0) {
            b"send" => OpKind::Send,
            b"recv" => OpKind::Recv,
            b"calc" => OpKind::Calc,
            other => {
                return Err(self.err(t[0], format!("unknown statement '{}' (expected send, recv, calc, requires or irequires)", show(other))))
            }
        };
        let mut k = 1;
        let mut op = Op::calc(0);
        op.kind = kind;
        if k >= t.len() {
            return Err(self.err(t[0], format!("'{}' needs a size", show(word(0)))));
        }
        if kind == OpKind::Calc {
            op.size = self.number(s, t[k], "duration")?;
            k += 1;
        } else {
            // "<bytes>b" or "<bytes> b"
            let w = word(k);
            let (digits, has_b) = match w.strip_suffix(b"b") {
                Some(d) if !d.is_empty() => (Token { start: t[k].start, end: t[k].end - 1 }, true),
                _ => (t[k], false),
            };
            op.size = self.number(s, digits, "message size")?;
            k += 1;
            if !has_b {
                if k < t.len() && word(k) == b"b" {
                    k += 1;
                } else {
                    return Err(self.err(t[k - 1], "expected 'b' after the message size (e.g. '8b')".into()));
                }
            }
            let (dir, dir_name) = if kind == OpKind::Send { (&b"to"[..], "to") } else { (&b"from"[..], "from") };
            if k >= t.len() || word(k) != dir {
                let at = if k < t.len() { t[k] } else { t[k - 1] };
                return Err(self.err(at, format!("expected '{dir_name} <rank>'")));
            }
            k += 1;
            if k >= t.len() {
                return Err(self.err(t[k - 1], format!("expected a rank after '{dir_name}'")));
            }
            op.peer = self.rank_ref(s, t[k], kind == OpKind::Recv)?;
            k += 1;
        }
        let mut seen = [false; 4];
        while k < t.len() {
            let key = word(k);
            let slot = match key {
                b"tag" if kind != OpKind::Calc => 0,
                b"cpu" => 1,
                b"nic" if kind != OpKind::Calc => 2,
                b"mem" if kind == OpKind::Calc => 3,
                _ if kind == OpKind::Calc => return Err(self.err(t[k], format!("unexpected '{}' (expected mem or cpu)", show(key)))),
                _ => return Err(self.err(t[k], format!("unexpected '{}' (expected tag, cpu or nic)", show(key)))),
            };
            if seen[slot] {
                return Err(self.err(t[k], format!("'{}' given twice", show(key))));
            }
            seen[slot] = true;
            if k + 1 >= t.len() {
                return Err(self.err(t[k], format!("'{}' needs a value", show(key))));
            }
            let vt = t[k + 1];
            match slot {
                0 => op.tag = self.tag_value(s, vt)?,
                1 => op.cpu = self.small(s, vt, "cpu")?,
                2 => op.nic = self.small(s, vt, "nic")?,
                _ => {
                    let mem = self.number(s, vt, "memory traffic (bytes)")?;
                    (op.peer, op.tag) = ((mem >> 32) as u32, mem as u32);
                }
            }
            k += 2;
        }
        Ok(op)
    }

    fn number(&self, s: &[u8], tok: Token, what: &str) -> Result<u64, GoalError> {
        let w = &s[tok.start as usize..tok.end as usize];
        // One pass for the common case; anything else goes to number_error for its message. No
        // overflow: v <= MAX_VALUE = 2^48 before each step, so v * 10 + 9 fits.
        let mut v: u64 = 0;
        for &c in w {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return Err(self.number_error(w, tok, what));
            }
            v = v * 10 + d as u64;
            if v > MAX_VALUE {
                return Err(self.number_error(w, tok, what));
            }
        }
        if w.is_empty() {
            return Err(self.number_error(w, tok, what));
        }
        Ok(v)
    }

    #[cold]
    fn number_error(&self, w: &[u8], tok: Token, what: &str) -> GoalError {
        if w.first() == Some(&b'-') {
            self.err(tok, format!("{what} must not be negative: '{}'", show(w)))
        } else if w.is_empty() || !w.iter().all(u8::is_ascii_digit) {
            self.err(tok, format!("expected a number for the {what}, found '{}'", show(w)))
        } else {
            self.err(tok, format!("{what} too large: '{}' (at most {MAX_VALUE})", show(w)))
        }
    }

    fn rank_ref(&self, s: &[u8], tok: Token, any_ok: bool) -> Result<u32, GoalError> {
        let w = &s[tok.start as usize..tok.end as usize];
        if w == b"-1" && any_ok {
            return Ok(ANY);
        }
        let v = self.number(s, tok, "rank")?;
        let n = self.num_ranks.unwrap_or(0) as u64;
        if v >= n {
            return Err(self.err(tok, format!("rank {v} out of range (num_ranks is {n})")));
        }
        Ok(v as u32)
    }

    fn tag_value(&self, s: &[u8], tok: Token) -> Result<u32, GoalError> {
        let w = &s[tok.start as usize..tok.end as usize];
        if w == b"-1" {
            return Ok(ANY);
        }
        if w.first() == Some(&b'-') {
            return Err(self.err(tok, format!("tag must not be negative (except -1 for any tag): '{}'", show(w))));
        }
        if w.is_empty() || !w.iter().all(u8::is_ascii_digit) {
            return Err(self.err(tok, format!("expected a number for the tag, found '{}'", show(w))));
        }
        // -1 written as an unsigned number means any tag too: Schedgen v1 writes MPI_ANY_TAG as its
        // 64-bit form, LogGOPSim's binary schedules hold it as the 32-bit one. Any other tag beyond
        // 32 bits is refused: LogGOPSim would cut it to 32 bits, which can make distinct tags equal.
        match w.iter().try_fold(0u64, |v, &c| v.checked_mul(10)?.checked_add((c - b'0') as u64)) {
            Some(u64::MAX) => Ok(ANY),
            Some(v) if v <= ANY as u64 => Ok(v as u32),
            _ => Err(self.err(tok, format!(
                "tag out of range: '{}' (tags are 0 to {}; -1, {} or {} mean any tag)",
                show(w), ANY - 1, ANY, u64::MAX
            ))),
        }
    }

    fn small(&self, s: &[u8], tok: Token, what: &str) -> Result<u8, GoalError> {
        let v = self.number(s, tok, what)?;
        if v > 255 {
            return Err(self.err(tok, format!("{what} index {v} out of range (0..255)")));
        }
        Ok(v as u8)
    }

    fn num_ranks_stmt(&mut self, s: &[u8], t: &[Token]) -> Result<(), GoalError> {
        if self.num_ranks.is_some() {
            return Err(self.err(t[0], "'num_ranks' given twice".into()));
        }
        if t.len() != 2 {
            return Err(self.err(t[t.len().min(2) - 1], "expected 'num_ranks <N>'".into()));
        }
        let n = self.number(s, t[1], "rank count")?;
        if n == 0 || n > MAX_RANKS {
            return Err(self.err(t[1], format!("num_ranks must be between 1 and {MAX_RANKS}, not {n}")));
        }
        self.num_ranks = Some(n as u32);
        self.prog.num_ranks = n as u32;
        Ok(())
    }

    fn rank_stmt(&mut self, s: &[u8], t: &[Token]) -> Result<(), GoalError> {
        let Some(n) = self.num_ranks else {
            return Err(self.err(t[0], "expected 'num_ranks <N>' before the first rank block".into()));
        };
        if let Some(r) = self.open_rank {
            return Err(self.err(t[0], format!("rank {r} block is not closed (missing '}}')")));
        }
        if t.len() < 2 {
            return Err(self.err(t[0], "expected 'rank <r> {'".into()));
        }
        let r = self.number(s, t[1], "rank")?;
        if r >= n as u64 {
            return Err(self.err(t[1], format!("rank {r} out of range (num_ranks is {n})")));
        }
        if r != self.next_rank as u64 {
            return Err(self.err(t[1], format!("rank blocks must come in order: expected rank {}, found {r}", self.next_rank)));
        }
        if t.len() < 3 || &s[t[2].start as usize..t[2].end as usize] != b"{" {
            return Err(self.err(t[t.len() - 1], "expected '{' after the rank number".into()));
        }
        self.open_rank = Some(r as u32);
        if t.len() == 4 && &s[t[3].start as usize..t[3].end as usize] == b"}" {
            return self.close_rank(t[3]);
        }
        if t.len() > 3 {
            return Err(self.err(t[3], "unexpected text after '{'".into()));
        }
        Ok(())
    }

    fn close_rank(&mut self, tok: Token) -> Result<(), GoalError> {
        if self.open_rank.is_none() {
            return Err(self.err(tok, "'}' without an open rank block".into()));
        }
        self.prog.finish_rank(&self.done_pairs, &self.start_pairs);
        self.done_pairs.clear();
        self.start_pairs.clear();
        self.labels.clear();
        self.open_rank = None;
        self.next_rank += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<GoalProgram, GoalError> {
        self.line_no += 1;
        if self.in_comment {
            return Err(self.err_at(1, "unexpected end of file inside a /* comment".into()));
        }
        let Some(n) = self.num_ranks else {
            return Err(self.err_at(1, "empty schedule: expected 'num_ranks <N>'".into()));
        };
        if let Some(r) = self.open_rank {
            return Err(self.err_at(1, format!("unexpected end of file inside rank {r} (missing '}}'): truncated file?")));
        }
        if self.next_rank != n {
            return Err(self.err_at(1, format!("unexpected end of file after {} of {n} rank blocks: truncated file?", self.next_rank)));
        }
        self.prog.shrink_to_fit();
        Ok(self.prog)
    }
}

/// Largest number accepted in a schedule (sizes and durations): 2^48, far beyond any real message
/// and small enough that no cost computation can overflow picoseconds.
pub const MAX_VALUE: u64 = 1 << 48;

fn check_label(p: &Parser, w: &[u8], tok: Token) -> Result<(), GoalError> {
    let ok = w.first().is_some_and(|c| c.is_ascii_alphabetic()) && w.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    let reserved = matches!(w, b"send" | b"recv" | b"calc" | b"requires" | b"irequires" | b"rank" | b"num_ranks");
    if !ok || reserved {
        return Err(p.err(tok, format!("invalid label '{}' (letters, digits and '_', starting with a letter)", show(w))));
    }
    Ok(())
}

fn show(w: &[u8]) -> String {
    String::from_utf8_lossy(w).into_owned()
}

/// Labels of the rank being parsed: a hash table over an arena of label bytes, cleared per rank.
#[derive(Default)]
struct Labels {
    table: crate::u64_map::U64Map<u32>,
    /// Per label entry: (arena start, length, local op index, next entry with the same hash).
    entries: Vec<(u32, u32, u32, u32)>,
    arena: Vec<u8>,
}

const NO_ENTRY: u32 = u32::MAX;

impl Labels {
    fn hash(text: &[u8]) -> u64 {
        // FNV-1a: fast on short labels; collisions are resolved by comparing bytes.
        let mut h: u64 = 0xcbf29ce484222325;
        for &b in text {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h
    }

    fn find(&self, text: &[u8], mut e: u32) -> Option<u32> {
        while e != NO_ENTRY {
            let (start, len, op, next) = self.entries[e as usize];
            if &self.arena[start as usize..(start + len) as usize] == text {
                return Some(op);
            }
            e = next;
        }
        None
    }

    fn get(&self, text: &[u8]) -> Option<u32> {
        let head = *self.table.get(&Self::hash(text))?;
        self.find(text, head)
    }

    /// Returns false if the label already exists.
    fn insert(&mut self, text: &[u8], op: u32) -> bool {
        let h = Self::hash(text);
        let head = self.table.get(&h).copied().unwrap_or(NO_ENTRY);
        if self.find(text, head).is_some() {
            return false;
        }
        let start = self.arena.len() as u32;
        self.arena.extend_from_slice(text);
        self.entries.push((start, text.len() as u32, op, head));
        self.table.insert(h, self.entries.len() as u32 - 1);
        true
    }

    fn clear(&mut self) {
        self.table.clear();
        self.entries.clear();
        self.arena.clear();
    }
}
