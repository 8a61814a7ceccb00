//! A cache prefetch hint: asks the CPU to start loading the line holding an address, so that a
//! later access to state of a rank (or link) the simulation is about to touch finds it in cache.
//! Never faults (any address is allowed) and changes no result; a no-op on other architectures.

/// Starts loading the cache line of `p` (into all cache levels but the first).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint that never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
