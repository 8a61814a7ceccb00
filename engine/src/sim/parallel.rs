//! Thread orchestration of windowed execution (`crate::sim::window`): how many workers share a
//! run, the window-by-window loop that runs them at once, and the merge of their results.

use std::ops::Range;
use std::sync::{Mutex, RwLock};

use crate::schedule::Program;
use crate::sim::handoff::{Handoff, StopOnDrop};
use crate::sim::loggops::{Mail, Sim};
use crate::sim::result::{Deadlock, SimResult};
use crate::sim::window::{FinalKeys, Windows, MAX_WORKERS};
use crate::time::Time;

/// How many workers share a windowed run of `ranks` ranks with `threads` asked for (0: the cores
/// of the machine, each with a block of at least [`MIN_BLOCK`] ranks, since the workers meet at
/// the end of every window and small blocks would spend their time waiting).
pub(super) fn workers(threads: usize, ranks: usize) -> usize {
    let wanted = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()).min(ranks / MIN_BLOCK),
        k => k.min(ranks),
    };
    wanted.clamp(1, MAX_WORKERS)
}

/// The smallest block of ranks a worker takes when the number of threads is chosen.
const MIN_BLOCK: usize = 1 << 14;

/// Windowed execution (windows of `width`) shared by workers, each handling the events of its
/// block of ranks: inside a window no host affects another (see `crate::sim::window`), so the
/// workers run a window at once, worker 0 on this thread and the others on helper threads. Between
/// windows this thread replays the keys of all workers together, as one window of the single
/// loop's; then, in parallel again, each worker gives its queued events their final keys, takes the
/// arrivals other workers sent its ranks, and runs the next window.
pub(super) fn run_in_parallel<P: Program>(sims: &mut [Sim<'_, P>], width: Time, progress: &mut impl FnMut(u64) -> bool) -> bool {
    let mut next_key = sims[0].next_key;
    let helpers = sims.len() - 1;
    // mail[from][to]: the arrivals of the last window that change workers.
    let mail = sims.iter().map(|s| vec![Vec::new(); s.outbox.len()]).collect();
    // Each worker behind a lock that only one thread at a time wants (the phases keep them apart).
    let cells: Vec<Mutex<&mut Sim<'_, P>>> = sims.iter_mut().map(Mutex::new).collect();
    let shared = RwLock::new(WindowShare { window: 0, finals: FinalKeys::default(), mail });
    let handoff = Handoff::default();
    std::thread::scope(|scope| {
        for cell in &cells[1..] {
            let (shared, handoff) = (&shared, &handoff);
            scope.spawn(move || {
                let mut seen = 0;
                while handoff.next(&mut seen) {
                    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let phase = shared.read().expect("no writer panicked");
                        cell.lock().expect("no worker panicked").step(phase.window, &phase.finals, &phase.mail);
                    }))
                    .is_err();
                    handoff.done(failed);
                }
            });
        }
        let _stop = StopOnDrop(&handoff);
        loop {
            {
                let phase = &mut *shared.write().expect("no reader panicked");
                let mut sims: Vec<_> = cells.iter().map(|c| c.lock().expect("no worker panicked")).collect();
                phase.mail.iter_mut().flatten().for_each(Vec::clear);
                let earliest_mail = sims.iter().map(|s| s.earliest_out).min().filter(|&t| t != Time::MAX);
                for (k, s) in sims.iter_mut().enumerate() {
                    std::mem::swap(&mut phase.mail[k], &mut s.outbox);
                    s.earliest_out = Time::MAX;
                }
                let queued = sims.iter().filter_map(|s| s.windows.as_ref().expect("windowed").next_window());
                match queued.chain(earliest_mail.map(|t| t / width)).min() {
                    Some(window) => phase.window = window,
                    None => return true,
                }
            }
            handoff.start();
            {
                let phase = shared.read().expect("no writer panicked");
                cells[0].lock().expect("no worker panicked").step(phase.window, &phase.finals, &phase.mail);
            }
            handoff.wait_for(helpers);
            let phase = &mut *shared.write().expect("no reader panicked");
            let mut sims: Vec<_> = cells.iter().map(|c| c.lock().expect("no worker panicked")).collect();
            let mut windows: Vec<&mut Windows> = sims.iter_mut().map(|s| s.windows.as_mut().expect("windowed")).collect();
            Windows::finish_joint(&mut windows, &mut next_key, &mut phase.finals);
            if !progress(sims.iter().map(|s| s.ops_started).sum()) {
                return false;
            }
        }
    })
}

/// What the workers of a parallel run share in a window: which it is, the final keys of the last
/// one, and the arrivals that changed workers in it.
struct WindowShare {
    window: u64,
    finals: FinalKeys,
    mail: Vec<Vec<Vec<Mail>>>,
}

/// The result of a parallel run: each rank's from the worker that handled it.
pub(super) fn merge<P: Program>(sims: Vec<Sim<'_, P>>) -> SimResult {
    let blocks: Vec<Range<u32>> = sims.iter().map(|s| s.owned.clone()).collect();
    let mut parts = sims.into_iter().map(Sim::finish);
    let mut all = parts.next().expect("workers");
    for (part, block) in parts.zip(blocks.iter().skip(1).cloned()) {
        for r in block {
            all.finish[r as usize] = part.finish[r as usize];
        }
        all.ops += part.ops;
        all.messages += part.messages;
        all.events += part.events;
        all.requeues += part.requeues;
        all.peak_queue += part.peak_queue;
        all.noise += part.noise;
        if let Some(more) = part.deadlock {
            all.deadlock.get_or_insert_with(Deadlock::default).absorb(more);
        }
    }
    all.makespan = all.finish.iter().copied().max().unwrap_or(0);
    all.threads = blocks.len();
    all
}
