//! The cache of parsed GOAL schedules (schedule/cache.rs): an entry gives exactly the parsed
//! program, and is never used once the text could have changed.

use std::fs::{self, File, FileTimes};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use contend_engine::schedule::cache::{entry_path, read_goal_cached, MIN_SOURCE_BYTES, SETTLED};
use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::read_goal_file;
use contend_engine::schedule::writer::write_goal;
use contend_engine::schedule::Program;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("contend-goal-cache-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A GOAL text above the cache's size threshold: a dissemination with `bytes` per message.
fn text(bytes: u64) -> Vec<u8> {
    let mut out = Vec::new();
    write_goal(&Collective::new(Pattern::Dissemination, 16384, bytes, 0, 0).unwrap(), &mut out).unwrap();
    assert!(out.len() as u64 > MIN_SOURCE_BYTES);
    out
}

/// Writes `content` to `path` with its mtime set an hour back (its ctime stays now).
fn write_old(path: &Path, content: &[u8]) {
    let mut f = File::create(path).unwrap();
    f.write_all(content).unwrap();
    f.set_times(FileTimes::new().set_modified(SystemTime::now() - Duration::from_secs(3600))).unwrap();
}

/// Waits until a file written now counts as settled (its ctime cannot be set back).
fn settle() {
    std::thread::sleep(SETTLED + Duration::from_millis(200));
}

fn makespan(p: &impl Program) -> u64 {
    contend_engine::sim::simulate(p, &contend_engine::sim::Scenario::new(contend_engine::sim::Params::loggopsim_defaults()), &Default::default(), |_| true).unwrap().makespan
}

#[test]
fn cache_hits_give_the_parsed_program_and_any_change_is_seen() {
    let dir = scratch("hits");
    let cache = dir.join("cache");
    let (goal, fresh) = (dir.join("a.goal"), dir.join("fresh.goal"));
    let (one, two) = (text(8), text(9));
    assert_eq!(one.len(), two.len()); // the same shape, other message sizes
    write_old(&goal, &one);
    settle();
    let parsed = read_goal_file(&goal).unwrap();
    let first = read_goal_cached(&goal, Some(&cache)).unwrap();
    let entry = entry_path(&cache, &goal).unwrap();
    assert!(entry.exists(), "a settled source is cached");
    let hit = read_goal_cached(&goal, Some(&cache)).unwrap();
    assert_eq!(first, parsed);
    assert_eq!(hit, parsed);

    // Same length, the mtime put back: the ctime moved, so the entry is not used.
    let stamp = fs::metadata(&goal).unwrap().modified().unwrap();
    fs::write(&goal, &two).unwrap();
    File::options().write(true).open(&goal).unwrap().set_times(FileTimes::new().set_modified(stamp)).unwrap();
    let changed = read_goal_cached(&goal, Some(&cache)).unwrap();
    assert_eq!(changed, read_goal_file(&goal).unwrap());
    assert_ne!(makespan(&changed), makespan(&parsed));
    assert_eq!(read_goal_cached(&goal, Some(&cache)).unwrap(), changed);

    // A source written just now is parsed but not cached (its times may not yet move on a rewrite).
    fs::write(&fresh, &one).unwrap();
    assert_eq!(read_goal_cached(&fresh, Some(&cache)).unwrap(), parsed);
    assert!(!entry_path(&cache, &fresh).unwrap().exists());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_entries_and_unwritable_places_mean_no_cache() {
    let dir = scratch("damaged");
    let cache = dir.join("cache");
    let goal = dir.join("b.goal");
    write_old(&goal, &text(8));
    settle();
    let parsed = read_goal_file(&goal).unwrap();
    read_goal_cached(&goal, Some(&cache)).unwrap();
    let entry = entry_path(&cache, &goal).unwrap();
    let whole = fs::read(&entry).unwrap();
    // Cut short, or an edge pointing past its rank: ignored, parsed again, and rewritten whole.
    fs::write(&entry, &whole[..whole.len() - 3]).unwrap();
    assert_eq!(read_goal_cached(&goal, Some(&cache)).unwrap(), parsed);
    assert_eq!(fs::read(&entry).unwrap(), whole);
    let mut bad = whole.clone();
    let last = bad.len() - 4;
    bad[last..].copy_from_slice(&u32::MAX.to_le_bytes());
    fs::write(&entry, &bad).unwrap();
    assert_eq!(read_goal_cached(&goal, Some(&cache)).unwrap(), parsed);

    // A cache directory that cannot be made (a file is in the way): parsed, nothing written.
    let blocked = dir.join("file");
    fs::write(&blocked, b"x").unwrap();
    assert_eq!(read_goal_cached(&goal, Some(&blocked.join("cache"))).unwrap(), parsed);
    // No temporary files are left behind anywhere.
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 1);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_are_the_readers_with_or_without_a_cache() {
    let dir = scratch("errors");
    let goal = dir.join("c.goal");
    let mut bad = text(8);
    bad.extend_from_slice(b"rank 16384 {\n}\n");
    write_old(&goal, &bad);
    let want = read_goal_file(&goal).unwrap_err();
    assert_eq!(read_goal_cached(&goal, Some(&dir.join("cache"))).unwrap_err(), want);
    assert_eq!(read_goal_cached(&dir.join("missing.goal"), Some(&dir)).unwrap_err(), read_goal_file(&dir.join("missing.goal")).unwrap_err());
    fs::remove_dir_all(&dir).unwrap();
}
