//! Raw device and pinned host buffers with explicit ranges.
//!
//! The chunked pipeline copies and computes disjoint ranges of one buffer on
//! several streams at once, which cudarc's safe slices (one event pair per
//! allocation) would serialise; these two owners keep the raw pointers and
//! free them on drop, and every copy names its stream and range.

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, result, sys};

use crate::error::{CudaError, DriverContext};

/// `len` values of `T` in device memory.
pub(crate) struct DeviceBuffer<T> {
    ptr: sys::CUdeviceptr,
    len: usize,
    cap: usize,
    ctx: Arc<CudaContext>,
    _t: PhantomData<T>,
}

// SAFETY: a device pointer is a plain address; access is ordered by streams.
unsafe impl<T> Send for DeviceBuffer<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for DeviceBuffer<T> {}

/// Bytes of `len` values (at least one, so that a pointer is valid), or
/// an error when the count overflows the address space.
fn byte_len<T>(len: usize, what: &str) -> Result<usize, CudaError> {
    len.checked_mul(std::mem::size_of::<T>())
        .map(|b| b.max(1))
        .ok_or_else(|| {
            CudaError::Config(format!(
                "{what} for {len} values overflows the address space"
            ))
        })
}

impl<T: Copy> DeviceBuffer<T> {
    /// Uninitialised device memory for `len` values (at least one byte is
    /// allocated so that the pointer is valid).
    pub fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, CudaError> {
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let bytes = byte_len::<T>(len, "device memory")?;
        // SAFETY: plain allocation, freed in Drop.
        let ptr = unsafe { result::malloc_sync(bytes) }
            .map_err(|e| CudaError::allocation("device memory", "cuMemAlloc", bytes, e))?;
        Ok(Self {
            ptr,
            len,
            cap: len,
            ctx: ctx.clone(),
            _t: PhantomData,
        })
    }

    /// No memory: a placeholder for an array a layout state gets later
    /// (see `LayoutState::attach`); dropping it frees nothing.
    pub fn empty(ctx: &Arc<CudaContext>) -> Self {
        Self {
            ptr: 0,
            len: 0,
            cap: 0,
            ctx: ctx.clone(),
            _t: PhantomData,
        }
    }

    /// Device memory for `len` values with room for `cap` (at least `len`),
    /// so that it can serve larger layouts later.
    pub fn with_room(ctx: &Arc<CudaContext>, len: usize, cap: usize) -> Result<Self, CudaError> {
        let mut b = Self::new(ctx, cap.max(len))?;
        b.len = len;
        Ok(b)
    }

    /// The same allocation holding `len` values, if it is large enough
    /// (allocating and freeing device memory synchronises the device:
    /// buffers are recycled across layouts).
    pub fn reuse(mut self, len: usize) -> Result<Self, Self> {
        if len <= self.cap {
            self.len = len;
            Ok(self)
        } else {
            Err(self)
        }
    }

    /// Values the allocation can hold.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Values held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Device address of value `i` (`i <= len`).
    pub fn at(&self, i: usize) -> u64 {
        debug_assert!(i <= self.len);
        self.ptr + (i * std::mem::size_of::<T>()) as u64
    }

    /// Copies `src` to values `at ..` on `stream`. `src` must stay valid
    /// (and, for overlap, be pinned) until the stream passes this point.
    pub fn upload(&self, at: usize, src: &[T], stream: &CudaStream) -> Result<(), CudaError> {
        assert!(at + src.len() <= self.len, "upload out of range");
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: range checked; the caller keeps `src` alive until the copy ends.
        unsafe { result::memcpy_htod_async(self.at(at), src, stream.cu_stream()) }
            .call("cuMemcpyHtoDAsync")
    }

    /// Copies values `at .. at + dst.len()` into `dst` on `stream`. `dst`
    /// must stay valid and untouched until the stream passes this point.
    pub fn download(&self, at: usize, dst: &mut [T], stream: &CudaStream) -> Result<(), CudaError> {
        assert!(at + dst.len() <= self.len, "download out of range");
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: range checked; the caller keeps `dst` alive until the copy ends.
        unsafe { result::memcpy_dtoh_async(dst, self.at(at), stream.cu_stream()) }
            .call("cuMemcpyDtoHAsync")
    }

    /// Copies the runs `(start, len)` of `src` to the same places on the
    /// device, on `stream`: one [`DeviceBuffer::upload`] (a plain
    /// `cuMemcpyHtoDAsync`) per run, same rules.
    pub fn upload_runs(
        &self,
        runs: &[(usize, usize)],
        src: &[T],
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        for &(s, n) in runs {
            self.upload(s, &src[s..s + n], stream)?;
        }
        Ok(())
    }

    /// Copies the runs `(start, len)` of the device buffer into the same
    /// places of `dst`, on `stream`: one [`DeviceBuffer::download`] per
    /// run, same rules.
    pub fn download_runs(
        &self,
        runs: &[(usize, usize)],
        dst: &mut [T],
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        for &(s, n) in runs {
            self.download(s, &mut dst[s..s + n], stream)?;
        }
        Ok(())
    }

    /// Sets the bytes of values `at .. at + n` to `byte` on `stream`.
    pub fn fill_bytes(
        &self,
        at: usize,
        n: usize,
        byte: u8,
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        assert!(at + n <= self.len, "fill out of range");
        if n == 0 {
            return Ok(());
        }
        // SAFETY: range checked.
        unsafe {
            result::memset_d8_async(
                self.at(at),
                byte,
                n * std::mem::size_of::<T>(),
                stream.cu_stream(),
            )
        }
        .call("cuMemsetD8Async")
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr != 0 && self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by cuMemAlloc, freed once; every stream using it
            // is synchronised before the owner drops it.
            if let Err(e) = unsafe { result::free_sync(self.ptr) } {
                log::warn!("cuMemFree: {e}");
            }
        }
    }
}

/// Buffers from this size on are mapped by the process, written once and
/// then registered ([`crate::registry`]); smaller ones come from
/// `cuMemHostAlloc`. A mapping is whole huge pages (2 MiB), and a layout
/// state holds five buffers of a few kilobytes each, dozens of states
/// alive: mapped, they would pin hundreds of megabytes for nothing, while
/// the driver's slow allocation only costs on sizes where neither matters.
pub(crate) const MAPPED_MIN_BYTES: usize = 1 << 20;

/// Where a [`PinnedBuffer`]'s memory comes from.
enum Backing {
    /// The process's own mapping, registered with the driver.
    Mapped(quilt_mesh::locked::Mapping),
    /// `cuMemHostAlloc`.
    Driver,
}

/// `len` values of `T` in page-locked host memory (not write-combined: the
/// host reads results back from it), mapped into the device's address
/// space at the same address.
pub(crate) struct PinnedBuffer<T> {
    ptr: *mut T,
    len: usize,
    cap: usize,
    backing: Backing,
    ctx: Arc<CudaContext>,
}

// SAFETY: owned page-locked memory; accesses are ordered by stream events.
unsafe impl<T: Send> Send for PinnedBuffer<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for PinnedBuffer<T> {}

impl<T: bytemuck::Pod> PinnedBuffer<T> {
    /// Zeroed pinned memory for `len` values: from [`MAPPED_MIN_BYTES`] on
    /// an anonymous mapping with huge pages, written by all cores and then
    /// registered (`cuMemHostRegister` runs at 20–40 GB/s on written
    /// memory, `cuMemHostAlloc` at 1.4–2 GB/s), below that from the driver.
    pub fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, CudaError> {
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let bytes = byte_len::<T>(len, "page-locked host memory")?;
        let (ptr, cap, backing) = if bytes >= MAPPED_MIN_BYTES {
            // Fresh anonymous pages are zero.
            let m = quilt_mesh::locked::Mapping::new(bytes, "page-locked host memory")
                .map_err(CudaError::HostMemory)?;
            // SAFETY: the mapping is written and stays mapped until Drop,
            // which unregisters it first.
            unsafe { crate::registry::register_range(ctx, m.as_ptr(), m.len()) }?;
            // Whole huge pages: the rest serves a larger layout later.
            let cap = m.len() / std::mem::size_of::<T>().max(1);
            (m.as_ptr().cast::<T>(), cap.max(len), Backing::Mapped(m))
        } else {
            // SAFETY: plain allocation, freed in Drop.
            let p = unsafe { result::malloc_host(bytes, 0) }.map_err(|e| {
                CudaError::allocation("page-locked host memory", "cuMemHostAlloc", bytes, e)
            })? as *mut T;
            assert!(!p.is_null() && p.is_aligned());
            // SAFETY: `bytes` writable bytes; zero is a valid `T` (Pod).
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
            (p, len, Backing::Driver)
        };
        assert!(ptr.is_aligned());
        Ok(Self {
            ptr,
            len,
            cap,
            backing,
            ctx: ctx.clone(),
        })
    }

    /// The same allocation holding `len` values, if it is large enough
    /// (pinning gigabytes takes long: buffers are kept across layouts).
    pub fn reuse(mut self, len: usize) -> Option<Self> {
        (len <= self.cap).then(|| {
            self.len = len;
            self
        })
    }

    /// The values. The caller makes sure no copy into this memory is in
    /// flight (stream or event synchronised).
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `len` initialised values (zeroed at allocation).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The values, mutable; same rule as [`PinnedBuffer::as_slice`].
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        match &self.backing {
            Backing::Mapped(m) => {
                // Unregistered before the mapping goes (when `backing` is
                // dropped after this): unmapping pinned pages would leave
                // them pinned until the process ends.
                // SAFETY: registered in `new`, once; no copy in flight.
                if let Err(e) = unsafe { crate::registry::unregister_range(&self.ctx, m.as_ptr()) }
                {
                    log::warn!("page-locked host memory at {:p}: {e}", m.as_ptr());
                }
            }
            Backing::Driver => {
                if self.ctx.bind_to_thread().is_ok() {
                    // SAFETY: allocated by cuMemHostAlloc, freed once, no copy in flight.
                    if let Err(e) = unsafe { result::free_host(self.ptr.cast()) } {
                        log::warn!("cuMemFreeHost: {e}");
                    }
                }
            }
        }
    }
}

impl<T: bytemuck::Pod + Send + Sync> quilt_sweep::HostMemory<T> for PinnedBuffer<T> {
    fn as_slice(&self) -> &[T] {
        PinnedBuffer::as_slice(self)
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        PinnedBuffer::as_mut_slice(self)
    }

    fn page_locked(&self) -> bool {
        true
    }
}

/// Page-locked host memory in a device's context: batches prepared in it
/// travel to the device and back with no staging copy on the host
/// ([`quilt_sweep::HostAlloc`] for the integrator's batch ring).
#[derive(Clone)]
pub struct PinnedAlloc {
    ctx: Arc<CudaContext>,
}

impl PinnedAlloc {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Self {
        Self { ctx }
    }
}

impl<T: crate::GpuReal> quilt_sweep::HostAlloc<T> for PinnedAlloc {
    fn alloc(
        &self,
        len: usize,
    ) -> Result<Box<dyn quilt_sweep::HostMemory<T>>, quilt_sweep::AllocError> {
        PinnedBuffer::<T>::new(&self.ctx, len)
            .map(|b| Box::new(b) as Box<dyn quilt_sweep::HostMemory<T>>)
            .map_err(|e| quilt_sweep::AllocError {
                bytes: len.saturating_mul(std::mem::size_of::<T>()),
                kind: "page-locked",
                why: e.to_string(),
            })
    }

    fn kind(&self) -> &'static str {
        "page-locked (CUDA)"
    }

    fn allocate_ahead(&self) -> bool {
        true
    }
}
