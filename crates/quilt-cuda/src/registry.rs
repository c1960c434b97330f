//! [`HostRegistry`]: host memory the process mapped and wrote itself,
//! page-locked for a device afterwards (`cuMemHostRegister`), and the
//! ranges so locked.
//!
//! Registering memory that is already written runs at 20–40 GB/s, while
//! `cuMemHostAlloc` zeroes and pins fresh pages at about 2 GB/s (H200
//! node, 2026-11-28; docs/quilt-cuda.md). Patch states kept in such memory
//! are read and written by the kernels in place
//! ([`CudaSolver::advance_external`](crate::CudaSolver::advance_external)),
//! which is only sound for memory this registry has locked: hence the
//! bookkeeping, which the solver asks before it hands a box's address to a
//! kernel.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, DriverError, sys};

use crate::error::{CudaError, DriverContext};

/// Flags of every registration: mapped into the device's address space
/// (kernels read and write it) and page-locked for every context.
const REGISTER_FLAGS: u32 = sys::CU_MEMHOSTREGISTER_DEVICEMAP | sys::CU_MEMHOSTREGISTER_PORTABLE;

/// Page-locks and maps the `bytes` bytes at `ptr` in `ctx` and checks that
/// the device sees them at the host's address: the load and store kernels
/// take host addresses as they are (unified addressing). On a mismatch the
/// range is unregistered again and an error returned.
///
/// # Safety
/// `ptr..ptr + bytes` is mapped memory that stays mapped until
/// [`unregister_range`] is called for `ptr`, and is registered once.
pub(crate) unsafe fn register_range(
    ctx: &Arc<CudaContext>,
    ptr: *mut u8,
    bytes: usize,
) -> Result<(), CudaError> {
    ctx.bind_to_thread().call("cuCtxSetCurrent")?;
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemHostRegister_v2(ptr.cast(), bytes, REGISTER_FLAGS) }
        .result()
        .map_err(|e| register_error(bytes, e))?;
    let mut dptr: sys::CUdeviceptr = 0;
    // SAFETY: `ptr` was registered just above; `dptr` is a valid out-pointer.
    let got = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, ptr.cast(), 0) }.result();
    if got.is_ok() && dptr == ptr as u64 {
        return Ok(());
    }
    // SAFETY: registered above, unregistered once.
    if let Err(e) = unsafe { sys::cuMemHostUnregister(ptr.cast()) }.result() {
        log::warn!("cuMemHostUnregister({ptr:p}) after a failed address check: {e}");
    }
    Err(match got {
        Err(source) => CudaError::Driver {
            call: "cuMemHostGetDevicePointer",
            source,
        },
        Ok(()) => CudaError::Unsupported(format!(
            "page-locked host memory at {ptr:p} appears at device address {dptr:#x}, not at its own: kernels reading it in place need unified addressing"
        )),
    })
}

/// Undoes [`register_range`].
///
/// # Safety
/// `ptr` was registered by [`register_range`] in `ctx` and nothing on the
/// device reads or writes it any more.
pub(crate) unsafe fn unregister_range(
    ctx: &Arc<CudaContext>,
    ptr: *mut u8,
) -> Result<(), CudaError> {
    ctx.bind_to_thread().call("cuCtxSetCurrent")?;
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemHostUnregister(ptr.cast()) }
        .result()
        .call("cuMemHostUnregister")
}

/// Out of memory (or over the locked-memory limit) as a memory error
/// naming the size; anything else as the driver's error.
fn register_error(bytes: usize, e: DriverError) -> CudaError {
    use cudarc::driver::sys::cudaError_enum as E;
    if e.0 == E::CUDA_ERROR_OUT_OF_MEMORY {
        CudaError::allocation("page-locked host memory", "cuMemHostRegister", bytes, e)
    } else {
        CudaError::Driver {
            call: "cuMemHostRegister",
            source: e,
        }
    }
}

/// One range of [`Ranges`]: its length, and whether its registration has
/// completed (a range being registered already blocks overlapping ones but
/// does not count as page-locked yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    bytes: usize,
    ready: bool,
}

/// The bookkeeping of a [`HostRegistry`], free of CUDA: disjoint ranges
/// `start → bytes` by start address.
#[derive(Debug, Default)]
pub(crate) struct Ranges {
    map: BTreeMap<usize, Entry>,
}

impl Ranges {
    /// Claims `start .. start + bytes` (not yet page-locked); refuses an
    /// empty or overflowing range and one that overlaps a range held.
    pub fn reserve(&mut self, start: usize, bytes: usize) -> Result<(), String> {
        let end = start
            .checked_add(bytes)
            .filter(|_| bytes > 0)
            .ok_or_else(|| format!("{bytes} bytes at {start:#x} are no range to page-lock"))?;
        let before = self.map.range(..=start).next_back();
        let after = self.map.range(start..).next();
        for (&s, e) in before.into_iter().chain(after) {
            if s < end && start < s + e.bytes {
                return Err(format!(
                    "{bytes} bytes at {start:#x} overlap the {} bytes at {s:#x} already page-locked",
                    e.bytes
                ));
            }
        }
        self.map.insert(
            start,
            Entry {
                bytes,
                ready: false,
            },
        );
        Ok(())
    }

    /// Marks the range reserved at `start` as page-locked.
    pub fn confirm(&mut self, start: usize) {
        if let Some(e) = self.map.get_mut(&start) {
            e.ready = true;
        }
    }

    /// Forgets the range that starts at `start`; its length, and whether it
    /// was confirmed.
    pub fn remove(&mut self, start: usize) -> Option<(usize, bool)> {
        self.map.remove(&start).map(|e| (e.bytes, e.ready))
    }

    /// Forgets the confirmed range that starts at `start`; its length.
    /// A range still pending stays.
    pub fn take_confirmed(&mut self, start: usize) -> Option<usize> {
        match self.map.get(&start) {
            Some(e) if e.ready => self.remove(start).map(|r| r.0),
            _ => None,
        }
    }

    /// Whether `start .. start + bytes` lies inside one confirmed range.
    pub fn contains(&self, start: usize, bytes: usize) -> bool {
        let Some(end) = start.checked_add(bytes) else {
            return false;
        };
        self.map
            .range(..=start)
            .next_back()
            .is_some_and(|(&s, e)| e.ready && end <= s + e.bytes)
    }

    /// Confirmed ranges and their bytes.
    pub fn totals(&self) -> (usize, usize) {
        self.map
            .values()
            .filter(|e| e.ready)
            .fold((0, 0), |(n, b), e| (n + 1, b + e.bytes))
    }

    /// Takes every confirmed range out, `(start, bytes)`.
    pub fn drain_confirmed(&mut self) -> Vec<(usize, usize)> {
        let all = std::mem::take(&mut self.map);
        let (ready, pending): (Vec<_>, Vec<_>) = all.into_iter().partition(|(_, e)| e.ready);
        self.map.extend(pending);
        ready.into_iter().map(|(s, e)| (s, e.bytes)).collect()
    }
}

/// Host memory page-locked and mapped for one CUDA context
/// (`cuMemHostRegister` with `DEVICEMAP | PORTABLE`), with the ranges it
/// holds. One per [`CudaSolver`](crate::CudaSolver), from
/// [`CudaSolver::page_lock`](crate::CudaSolver::page_lock); it is the
/// [`quilt_mesh::locked::PageLock`] a mesh hands its own mappings to, and
/// [`CudaSolver::advance_external`](crate::CudaSolver::advance_external)
/// reads and writes patch boxes in place only where this registry says
/// they are locked.
///
/// Every registration is checked to appear at the same address on the
/// device (unified addressing). Ranges are disjoint; registering an
/// overlapping one is an error, not a second lock. Dropping the registry
/// unregisters, with a warning, whatever its owner left registered.
pub struct HostRegistry {
    ctx: Arc<CudaContext>,
    ranges: Mutex<Ranges>,
}

impl std::fmt::Debug for HostRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, bytes) = self.totals();
        f.debug_struct("HostRegistry")
            .field("ranges", &n)
            .field("bytes", &bytes)
            .finish_non_exhaustive()
    }
}

impl HostRegistry {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Self {
        Self {
            ctx,
            ranges: Mutex::new(Ranges::default()),
        }
    }

    fn ranges(&self) -> std::sync::MutexGuard<'_, Ranges> {
        self.ranges.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Page-locks the `bytes` bytes at `ptr` and maps them for the device
    /// at the same address. Several threads may register disjoint ranges at
    /// once (the driver's work is not done under the registry's lock). An
    /// empty range, one that overlaps a range held, a failed registration
    /// or a device address other than `ptr` is an error, and then nothing
    /// stays registered.
    ///
    /// # Safety
    /// `ptr..ptr + bytes` is mapped memory that stays mapped until
    /// [`HostRegistry::unregister`] is called for `ptr` (or the registry is
    /// dropped). Writing every page once before registering makes
    /// registration fast.
    pub unsafe fn register(&self, ptr: *mut u8, bytes: usize) -> Result<(), CudaError> {
        let start = ptr as usize;
        self.ranges()
            .reserve(start, bytes)
            .map_err(CudaError::Config)?;
        // SAFETY: the caller's contract; the range is claimed, so no other
        // call registers any part of it meanwhile.
        match unsafe { register_range(&self.ctx, ptr, bytes) } {
            Ok(()) => {
                self.ranges().confirm(start);
                Ok(())
            }
            Err(e) => {
                self.ranges().remove(start);
                Err(e)
            }
        }
    }

    /// Undoes [`HostRegistry::register`] of the range starting at `ptr`.
    /// A pointer that starts no range registered here is an error and is
    /// left alone (it may be another owner's).
    ///
    /// # Safety
    /// Nothing on the device still reads or writes the range.
    pub unsafe fn unregister(&self, ptr: *mut u8) -> Result<(), CudaError> {
        let start = ptr as usize;
        // A range still being registered by another thread is not one to undo.
        if self.ranges().take_confirmed(start).is_none() {
            return Err(CudaError::Config(format!(
                "no range page-locked by this registry starts at {ptr:p}"
            )));
        }
        // SAFETY: registered by `register` in this context; the caller's
        // contract for the device's accesses.
        unsafe { unregister_range(&self.ctx, ptr) }
    }

    /// Whether the `bytes` bytes at `ptr` lie inside one range registered
    /// here (registration completed).
    pub fn contains(&self, ptr: *const u8, bytes: usize) -> bool {
        self.ranges().contains(ptr as usize, bytes)
    }

    /// Whether the values of `s` lie inside one range registered here.
    pub fn contains_slice<T>(&self, s: &[T]) -> bool {
        self.contains(s.as_ptr().cast(), std::mem::size_of_val(s))
    }

    /// Ranges registered and their bytes.
    pub fn totals(&self) -> (usize, usize) {
        self.ranges().totals()
    }
}

impl quilt_mesh::locked::PageLock for HostRegistry {
    unsafe fn lock(&self, ptr: *mut u8, bytes: usize) -> Result<(), String> {
        // SAFETY: PageLock::lock's contract is register's.
        unsafe { self.register(ptr, bytes) }.map_err(|e| e.to_string())
    }

    unsafe fn unlock(&self, ptr: *mut u8) {
        // SAFETY: PageLock::unlock's contract is unregister's.
        if let Err(e) = unsafe { self.unregister(ptr) } {
            log::warn!("page-locked host memory at {ptr:p} not unlocked: {e}");
        }
    }

    fn kind(&self) -> &'static str {
        "page-locked (CUDA)"
    }
}

impl Drop for HostRegistry {
    fn drop(&mut self) {
        let left = self.ranges().drain_confirmed();
        if left.is_empty() {
            return;
        }
        let bytes: usize = left.iter().map(|r| r.1).sum();
        log::warn!(
            "host registry dropped with {} ranges ({}) still page-locked: unregistering them",
            left.len(),
            quilt_mesh::memory::format_bytes(bytes as u64)
        );
        for (start, _) in left {
            // SAFETY: registered here; with the registry gone nothing can
            // hand the range to a kernel any more.
            if let Err(e) = unsafe { unregister_range(&self.ctx, start as *mut u8) } {
                log::warn!("host registry: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ranges;

    #[test]
    fn ranges_answer_containment_inside_one_range_only() {
        let mut r = Ranges::default();
        r.reserve(0x1000, 0x1000).unwrap();
        r.reserve(0x2000, 0x800).unwrap();
        // Pending ranges are not page-locked yet.
        assert!(!r.contains(0x1000, 8));
        r.confirm(0x1000);
        r.confirm(0x2000);
        assert!(r.contains(0x1000, 0x1000));
        assert!(r.contains(0x1800, 0x800));
        assert!(r.contains(0x2000, 0x800));
        assert!(r.contains(0x2100, 0x10));
        // Across two adjacent ranges: not inside one.
        assert!(!r.contains(0x1ff8, 0x10));
        // Past the end, before the start, overflowing.
        assert!(!r.contains(0x2000, 0x801));
        assert!(!r.contains(0xff8, 0x10));
        assert!(!r.contains(0x800, 8));
        assert!(!r.contains(usize::MAX - 4, 8));
        assert!(!r.contains(0x3000, 1));
        assert_eq!(r.totals(), (2, 0x1800));
    }

    #[test]
    fn ranges_refuse_overlaps_and_empty_ranges() {
        let mut r = Ranges::default();
        r.reserve(0x1000, 0x1000).unwrap();
        for (s, b) in [
            (0x1000, 0x1000),
            (0x800, 0x801),
            (0x1fff, 1),
            (0x1800, 0x10),
            (0x0, 0x4000),
        ] {
            assert!(r.reserve(s, b).is_err(), "{s:#x} + {b:#x} overlaps");
        }
        assert!(r.reserve(0x3000, 0).is_err());
        assert!(r.reserve(usize::MAX - 4, 8).is_err());
        // Touching ranges are fine.
        r.reserve(0x800, 0x800).unwrap();
        r.reserve(0x2000, 0x10).unwrap();
        assert_eq!(r.totals(), (0, 0));
    }

    #[test]
    fn removed_ranges_are_gone_and_drained_ranges_confirmed_only() {
        let mut r = Ranges::default();
        r.reserve(0x1000, 0x100).unwrap();
        r.reserve(0x2000, 0x100).unwrap();
        r.reserve(0x3000, 0x100).unwrap();
        r.confirm(0x1000);
        r.confirm(0x3000);
        assert_eq!(r.remove(0x1000), Some((0x100, true)));
        assert_eq!(r.remove(0x1000), None);
        assert!(!r.contains(0x1000, 1));
        // The range is free again.
        r.reserve(0x1000, 0x200).unwrap();
        // Only confirmed ranges are taken for unregistering.
        assert_eq!(r.take_confirmed(0x2000), None);
        assert_eq!(r.take_confirmed(0x3000), Some(0x100));
        r.reserve(0x3000, 0x100).unwrap();
        r.confirm(0x3000);
        assert_eq!(r.drain_confirmed(), vec![(0x3000, 0x100)]);
        // Pending ranges stay (their registration is still running).
        assert_eq!(r.remove(0x2000), Some((0x100, false)));
        assert_eq!(r.remove(0x1000), Some((0x200, false)));
        assert!(r.drain_confirmed().is_empty());
    }
}
