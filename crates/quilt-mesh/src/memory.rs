//! How much memory a run may use, and allocations that fail with an error
//! instead of aborting the process.
//!
//! Rust's global allocator aborts when an allocation fails. A mesh that a
//! deck sizes can be arbitrarily large, so quilt checks every large request
//! against a budget before making it ([`check_fits`]) and allocates patch
//! states with [`try_filled_vec`], which turns a refused allocation into
//! [`MeshError::OutOfMemory`] naming what was being allocated.
//!
//! The budget is the memory the system reports as available (`MemAvailable`
//! of `/proc/meminfo`, capped by a cgroup limit when the process runs in
//! one), or `QUILT_MEMORY_LIMIT` when set (bytes, or a number with a `K`,
//! `M`, `G` or `T` suffix): schedulers and tests use it to give a run less
//! than the machine has.

use crate::error::MeshError;

/// The environment variable that overrides the detected memory budget.
pub const MEMORY_LIMIT_VAR: &str = "QUILT_MEMORY_LIMIT";

/// Bytes this process may still allocate: `QUILT_MEMORY_LIMIT` if set and
/// valid, else what the system reports available; `None` where neither is
/// known (no check is made then).
pub fn available_bytes() -> Option<u64> {
    if let Ok(text) = std::env::var(MEMORY_LIMIT_VAR) {
        match parse_bytes(&text) {
            Some(b) => return Some(b),
            None => log::warn!(
                "{MEMORY_LIMIT_VAR}={text:?} is not a byte count (e.g. 8G, 512M, 1048576); ignored"
            ),
        }
    }
    let system = meminfo_available();
    let cgroup = cgroup_headroom();
    match (system, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Parses `"1048576"`, `"512M"`, `"8G"`, `"1.5T"` (binary multiples) into
/// bytes.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return None,
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let v: f64 = num.trim().parse().ok()?;
    let bytes = v * mult as f64;
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// `bytes` for people: `"144 GB"`, `"3.2 MB"` (decimal units; any
/// unsigned integer, so that estimates beyond any machine print as what
/// they are).
pub fn format_bytes(bytes: impl Into<u128>) -> String {
    let bytes: u128 = bytes.into();
    let b = bytes as f64;
    let units = [
        (1e24, "YB"),
        (1e21, "ZB"),
        (1e18, "EB"),
        (1e15, "PB"),
        (1e12, "TB"),
        (1e9, "GB"),
        (1e6, "MB"),
        (1e3, "kB"),
    ];
    for (scale, unit) in units {
        if b >= scale {
            let v = b / scale;
            return if v >= 100.0 {
                format!("{v:.0} {unit}")
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{bytes} B")
}

/// Refuses `need` bytes for `what` when they exceed the budget
/// ([`available_bytes`]); `what` says in the user's terms what needs them
/// (e.g. `"level 0 of domain.base_cells [1024, 1024, 1024]"`).
pub fn check_fits(need: u64, what: &str) -> Result<(), MeshError> {
    check_fits_in(need, what, available_bytes())
}

/// [`check_fits`] against a given budget (`None`: no check).
pub fn check_fits_in(need: u64, what: &str, available: Option<u64>) -> Result<(), MeshError> {
    match available {
        Some(available) if need > available => Err(MeshError::OutOfMemory {
            what: what.to_string(),
            need,
            available: Some(available),
        }),
        _ => Ok(()),
    }
}

/// A vector of `len` copies of `value`, or [`MeshError::OutOfMemory`] for
/// `what` when the allocator refuses (where `vec![value; len]` would abort).
pub fn try_filled_vec<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>, MeshError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| MeshError::OutOfMemory {
            what: what.to_string(),
            need: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
            available: available_bytes(),
        })?;
    v.resize(len, value);
    Ok(v)
}

/// A vector of `len` zeros as [`try_filled_vec`], from zeroed memory: a
/// large one comes as fresh pages the kernel zeroes on first touch, so
/// values never written cost no memory traffic.
pub fn try_zeroed_vec<T: bytemuck::Zeroable>(len: usize, what: &str) -> Result<Vec<T>, MeshError> {
    bytemuck::allocation::try_zeroed_vec(len).map_err(|()| MeshError::OutOfMemory {
        what: what.to_string(),
        need: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        available: available_bytes(),
    })
}

/// `buf` cut into consecutive parts of `lens` values from its start, each
/// for its own task (a message's pieces, a compact array's patches).
/// Panics if they exceed it.
pub fn split_parts<T>(buf: &mut [T], lens: impl IntoIterator<Item = usize>) -> Vec<&mut [T]> {
    let mut parts = Vec::new();
    let mut rest = buf;
    for n in lens {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(n);
        parts.push(part);
        rest = tail;
    }
    parts
}

/// `MemAvailable` of `/proc/meminfo` in bytes.
fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What the process's cgroup (v2, else v1) still allows, if it sets a limit.
/// The cgroup's usage counts the page cache, which the kernel reclaims
/// before it fails an allocation: the inactive part of it counts as free
/// (the "working set" measure of container runtimes), or a build that
/// filled the cache would make every deck look too large.
fn cgroup_headroom() -> Option<u64> {
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let stat = |p: &str, key: &str| -> u64 {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    (k == key).then(|| v.trim().parse().ok())?
                })
            })
            .unwrap_or(0)
    };
    let (limit, used, cache) = match read("/sys/fs/cgroup/memory.max") {
        Some(l) => (
            l,
            read("/sys/fs/cgroup/memory.current")?,
            stat("/sys/fs/cgroup/memory.stat", "inactive_file"),
        ),
        None => (
            read("/sys/fs/cgroup/memory/memory.limit_in_bytes")?,
            read("/sys/fs/cgroup/memory/memory.usage_in_bytes")?,
            stat("/sys/fs/cgroup/memory/memory.stat", "total_inactive_file"),
        ),
    };
    // v1 reports "no limit" as a number near 2^63.
    (limit < 1 << 60).then(|| limit.saturating_sub(used.saturating_sub(cache)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_parse_with_binary_suffixes() {
        assert_eq!(parse_bytes("1048576"), Some(1 << 20));
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes(" 8g "), Some(8 << 30));
        assert_eq!(parse_bytes("1.5K"), Some(1536));
        assert_eq!(parse_bytes("-1G"), None);
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(parse_bytes("12X"), None);
        assert_eq!(parse_bytes(""), None);
    }

    #[test]
    fn byte_counts_format_in_decimal_units() {
        assert_eq!(format_bytes(512u64), "512 B");
        assert_eq!(format_bytes(3_200_000u64), "3.2 MB");
        assert_eq!(format_bytes(144_000_000_000u64), "144 GB");
        assert_eq!(format_bytes(6_700_000_000_000_000u64), "6.7 PB");
        assert_eq!(format_bytes(130_000_000_000_000_000_000u128), "130 EB");
    }

    #[test]
    fn a_refused_allocation_is_an_error_naming_what() {
        // More than any address space can hold: the allocator refuses at
        // once, without touching memory.
        let e = try_filled_vec(usize::MAX / 16, 0.0f64, "level 3 patch 7").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("level 3 patch 7"), "{text}");
        assert!(matches!(e, MeshError::OutOfMemory { .. }));
        let v = try_filled_vec(5, 1.5f32, "small").unwrap();
        assert_eq!(v, vec![1.5; 5]);
    }

    #[test]
    fn the_system_reports_some_memory() {
        if std::env::var_os(MEMORY_LIMIT_VAR).is_none() && cfg!(target_os = "linux") {
            assert!(available_bytes().is_some_and(|b| b > 0));
        }
    }
}
