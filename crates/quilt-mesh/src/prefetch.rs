//! Software prefetches for strided row copies.
//!
//! A row copy into a bin or out of one reads and writes rows of 10–40
//! values a bin row (64 values or more) apart, a few cache lines each: the
//! hardware prefetchers do not follow the jumps between rows, so every
//! row waits for memory. The copy loops ask for the rows of the plane
//! after the one they copy ([`rows`]) while they copy it.
//! `QUILT_PREFETCH=0` turns the prefetches off, for comparison.

/// Whether prefetches are issued (x86-64, unless `QUILT_PREFETCH=0`).
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        cfg!(target_arch = "x86_64") && std::env::var("QUILT_PREFETCH").map_or(true, |v| v != "0")
    })
}

/// Prefetches `count` rows of `len` values starting at `first`, `stride`
/// values apart; `write` asks for the lines in a state ready for writing.
/// Addresses are only hints: nothing is read, and none needs to be valid.
#[inline]
pub fn rows<T>(first: *const T, count: usize, stride: usize, len: usize, write: bool) {
    #[cfg(target_arch = "x86_64")]
    if enabled() {
        use std::arch::x86_64::{_MM_HINT_ET0, _MM_HINT_T0, _mm_prefetch};
        let bytes = len * std::mem::size_of::<T>();
        if bytes == 0 {
            return;
        }
        for r in 0..count {
            let row = first.wrapping_add(r * stride) as *const i8;
            // Every cache line the row touches, once: from the line of its
            // first byte to the line of its last.
            let skip = row as usize % 64;
            let mut off = 0;
            while off < skip + bytes {
                let p = row.wrapping_sub(skip).wrapping_add(off);
                // SAFETY: a prefetch never faults and reads nothing into
                // the program; SSE is part of x86-64.
                unsafe {
                    if write {
                        _mm_prefetch::<_MM_HINT_ET0>(p);
                    } else {
                        _mm_prefetch::<_MM_HINT_T0>(p);
                    }
                }
                off += 64;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (first, count, stride, len, write);
}
