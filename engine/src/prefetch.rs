//! Software prefetching: asking the CPU to start loading a cache line that will be needed soon, so
//! that independent memory accesses overlap instead of waiting for each other.

/// Asks the CPU to bring `x` into cache (a hint that never faults and changes no result; nothing on
/// other architectures than x86-64).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint that never faults, and the pointer comes from a reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(x as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
