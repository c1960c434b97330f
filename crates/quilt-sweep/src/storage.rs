//! [`HostMemory`]: the host memory a [`Batch`](crate::Batch) keeps its
//! values in, and [`HostAlloc`], what hands such memory out.
//!
//! A batch is prepared, solved and closed in place. On the CPU any memory
//! will do, and a plain vector is used. A GPU backend copies every batch to
//! the device and back; when the batch already lives in page-locked memory
//! the copies run straight from it at the bus's speed, with no staging copy
//! on the host. The backend therefore owns the allocator, and the
//! integrator prepares batches in whatever memory it hands out.

use std::fmt;

/// Host memory holding the values of a batch (the data array or the flux
/// buffer). Its length is the capacity: a batch uses a prefix of it, and
/// the rest is left as it is.
pub trait HostMemory<T>: Send + Sync {
    /// All values.
    fn as_slice(&self) -> &[T];

    /// All values, mutable.
    fn as_mut_slice(&mut self) -> &mut [T];

    /// Whether the memory is page-locked, so that a device may copy to and
    /// from it directly and asynchronously.
    fn page_locked(&self) -> bool {
        false
    }
}

impl<T: Send + Sync> HostMemory<T> for Vec<T> {
    fn as_slice(&self) -> &[T] {
        self
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        self
    }
}

/// Why host memory could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allocating {bytes} bytes of {kind} host memory: {why}")]
pub struct AllocError {
    /// Bytes asked for.
    pub bytes: usize,
    /// What kind of memory (`"page-locked"`, `"pageable"`).
    pub kind: &'static str,
    /// The allocator's reason.
    pub why: String,
}

/// Hands out host memory for batches. Allocation happens rarely (the
/// integrator keeps a ring of batches and reuses them across batches and
/// steps), so an allocator may be slow, as page-locking is.
pub trait HostAlloc<T>: Send + Sync {
    /// `len` values, contents unspecified (but initialised: any bit pattern
    /// of `T` the caller may read).
    fn alloc(&self, len: usize) -> Result<Box<dyn HostMemory<T>>, AllocError>;

    /// A short description for logs (`"pageable"`, `"page-locked (CUDA)"`).
    fn kind(&self) -> &'static str;

    /// Whether allocating is slow enough to be worth doing ahead of need,
    /// on a thread of its own: page-locking runs at about 2 GB/s whatever
    /// the number of threads, while pageable memory costs nothing until
    /// it is first written.
    fn allocate_ahead(&self) -> bool {
        false
    }
}

/// Plain vectors from the global allocator, zero-filled.
#[derive(Clone, Copy, Debug, Default)]
pub struct VecAlloc;

impl<T: crate::Real> HostAlloc<T> for VecAlloc {
    fn alloc(&self, len: usize) -> Result<Box<dyn HostMemory<T>>, AllocError> {
        let fail = |why: String| AllocError {
            bytes: len.saturating_mul(std::mem::size_of::<T>()),
            kind: "pageable",
            why,
        };
        if len == 0 || std::mem::size_of::<T>() == 0 {
            return Ok(Box::new(Vec::<T>::new()));
        }
        let layout = std::alloc::Layout::array::<T>(len).map_err(|e| fail(e.to_string()))?;
        // Zeroed pages from the system: bin space no patch uses is never
        // touched and costs no memory, and a failed allocation is an error
        // instead of an abort.
        // SAFETY: `layout` has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
        if ptr.is_null() {
            return Err(fail("the system has no memory for it".into()));
        }
        // SAFETY: allocated by the global allocator with the layout of
        // `len` values of `T`; all-zero bits are a valid `T` (`Pod`).
        let v = unsafe { Vec::from_raw_parts(ptr, len, len) };
        Ok(Box::new(v))
    }

    fn kind(&self) -> &'static str {
        "pageable"
    }
}

impl<T> fmt::Debug for dyn HostMemory<T> + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostMemory")
            .field("len", &self.as_slice().len())
            .field("page_locked", &self.page_locked())
            .finish()
    }
}
