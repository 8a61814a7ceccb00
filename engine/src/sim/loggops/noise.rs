//! The noise model's state during a run (docs/models.md, "Noise"): detours that stretch CPU work.
//! It schedules nothing: the core asks it when a piece of CPU work ends.

use crate::noise::random::LastWindow;
use crate::noise::{FreeSpan, Noise, Phase};
use crate::time::Time;
use crate::u64_map::U64Map;

pub(super) struct NoiseSim<'p> {
    noise: &'p Noise,
    /// Detour time charged so far.
    pub(super) charged: Time,
    last_window: LastWindow,
    /// Records only: detour time in each message's send and receive overheads, by message slot.
    per_message: Option<U64Map<(Time, Time)>>,
}

impl<'p> NoiseSim<'p> {
    pub(super) fn new(noise: &'p Noise, records: bool) -> NoiseSim<'p> {
        NoiseSim { noise, charged: 0, last_window: LastWindow::default(), per_message: records.then(U64Map::default) }
    }

    pub(super) fn phase(&self) -> Phase {
        self.noise.phase()
    }

    /// Whether per-byte CPU work (O) is stretched too.
    #[inline]
    pub(super) fn per_byte(&self) -> bool {
        self.noise.per_byte
    }

    /// When CPU work of `w` that may start at `t` on rank `h` ends (`free`: the rank's stretch
    /// known to hold no detour).
    #[inline]
    pub(super) fn stretch(&mut self, h: u32, t: Time, w: Time, free: &mut FreeSpan) -> Time {
        let end = self.noise.stretch_cached(h, t, w, free, &mut self.last_window);
        self.charged += end - t - w;
        end
    }

    /// Records: message `id`'s send overhead took `detour` longer.
    #[inline]
    pub(super) fn sent(&mut self, id: u32, detour: Time) {
        if let Some(map) = &mut self.per_message {
            map.insert(id as u64, (detour, 0));
        }
    }

    /// Records: message `id`'s receive overhead took `detour` longer.
    #[inline]
    pub(super) fn received(&mut self, id: u32, detour: Time) {
        if let Some(map) = &mut self.per_message {
            map.entry(id as u64).or_default().1 = detour;
        }
    }

    /// Records: the detours of message `id`'s send and receive overheads (its slot is freed).
    pub(super) fn take(&mut self, id: u32) -> (Time, Time) {
        self.per_message.as_mut().and_then(|map| map.remove(&(id as u64))).unwrap_or_default()
    }
}
