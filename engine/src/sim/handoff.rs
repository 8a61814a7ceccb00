//! Phases handed between a coordinating thread and helper threads, for windowed execution shared
//! by threads: the coordinator starts a phase, every thread runs its share, the coordinator waits
//! for the helpers, works alone, and starts the next. A phase lasts microseconds to milliseconds and
//! there are thousands, so waiting spins and then yields the CPU instead of sleeping: waking a
//! sleeping thread (a futex) costs tens of microseconds on this kind of virtual machine, and starting
//! a thread per phase costs more.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// How many times a waiting thread spins before it starts yielding its CPU.
const SPINS: u32 = 2_000;

#[derive(Default)]
pub struct Handoff {
    /// Count of phases started; a helper runs one when it sees the count move.
    phase: AtomicU64,
    /// Helpers done with the current phase.
    done: AtomicUsize,
    stop: AtomicBool,
    failed: AtomicBool,
}

impl Handoff {
    /// Coordinator: starts a phase (everything written before is visible to the helpers).
    pub fn start(&self) {
        self.done.store(0, Ordering::Relaxed);
        self.phase.fetch_add(1, Ordering::Release);
    }

    /// Coordinator: tells the helpers to return instead of running another phase.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.phase.fetch_add(1, Ordering::Release);
    }

    /// Coordinator: waits until `helpers` helpers are done with the phase. Panics if one panicked.
    pub fn wait_for(&self, helpers: usize) {
        wait_until(|| self.done.load(Ordering::Acquire) == helpers);
        assert!(!self.failed.load(Ordering::Relaxed), "a helper thread panicked");
    }

    /// Helper: waits for the phase after `seen` (and notes it); false when told to stop.
    pub fn next(&self, seen: &mut u64) -> bool {
        wait_until(|| self.phase.load(Ordering::Acquire) != *seen);
        *seen = self.phase.load(Ordering::Acquire);
        !self.stop.load(Ordering::Relaxed)
    }

    /// Helper: done with the phase, having `failed` (panicked) or not.
    pub fn done(&self, failed: bool) {
        if failed {
            self.failed.store(true, Ordering::Relaxed);
        }
        self.done.fetch_add(1, Ordering::Release);
    }
}

/// Stops the helpers when dropped: when the coordinator is done, or unwinds from a panic (the
/// helpers would otherwise wait for another phase forever, and a thread scope for them).
pub struct StopOnDrop<'a>(pub &'a Handoff);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

fn wait_until(ready: impl Fn() -> bool) {
    let mut spins = 0;
    while !ready() {
        if spins < SPINS {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn helpers_run_each_phase_once_and_stop() {
        // Three helpers add their index to a total in each of 500 phases; the coordinator checks
        // the total after every phase, so a lost or doubled phase shows.
        let handoff = Handoff::default();
        let total = Mutex::new(0u64);
        std::thread::scope(|scope| {
            for k in 1..=3u64 {
                let (handoff, total) = (&handoff, &total);
                scope.spawn(move || {
                    let mut seen = 0;
                    while handoff.next(&mut seen) {
                        *total.lock().unwrap() += k;
                        handoff.done(false);
                    }
                });
            }
            for phase in 1..=500u64 {
                handoff.start();
                handoff.wait_for(3);
                assert_eq!(*total.lock().unwrap(), 6 * phase);
            }
            handoff.stop();
        });
    }
}
