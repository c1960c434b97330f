//! Host memory a device reads and writes directly: anonymous mappings
//! with transparent huge pages ([`Mapping`]), the hook that page-locks them
//! for a device ([`PageLock`]), and the arena patch states come from when
//! a GPU backend reads them in place ([`LockedArena`], [`PatchBuf`]).
//!
//! Page-locking memory the process has already written is fast (the
//! driver pins existing pages); allocating page-locked memory from the
//! driver is not (it zeroes and pins 4 KiB pages one at a time). So state
//! memory is mapped here, written once by all cores, and then handed to
//! the device's [`PageLock`].

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::error::MeshError;

/// Makes host memory accessible to a device (page-locked and mapped into
/// its address space) and undoes it. A GPU backend implements it; the
/// mesh only calls it on memory it mapped itself.
pub trait PageLock: Send + Sync {
    /// Page-locks the `bytes` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr..ptr + bytes` is a live mapping, every page written once, that
    /// stays mapped until [`PageLock::unlock`] is called for `ptr`.
    unsafe fn lock(&self, ptr: *mut u8, bytes: usize) -> Result<(), String>;

    /// Undoes [`PageLock::lock`] of the range starting at `ptr`.
    ///
    /// # Safety
    /// `ptr` was locked by this object and is unlocked once, with nothing
    /// on the device still reading or writing it.
    unsafe fn unlock(&self, ptr: *mut u8);

    /// A short description for logs (`"page-locked (CUDA)"`).
    fn kind(&self) -> &'static str;
}

/// Transparent huge pages are 2 MiB on x86-64 and most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// A private anonymous mapping, zero-filled, with transparent huge pages
/// asked for (`madvise`), every page written once by threads of its own;
/// unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    bytes: usize,
}

// SAFETY: owned memory, like a `Box<[u8]>`.
unsafe impl Send for Mapping {}
// SAFETY: as above; shared access hands out no references by itself.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// At least `bytes` bytes (rounded up to whole huge pages) for `what`;
    /// a refused mapping is [`MeshError::OutOfMemory`].
    pub fn new(bytes: usize, what: &str) -> Result<Self, MeshError> {
        let refused = || MeshError::OutOfMemory {
            what: what.to_string(),
            need: bytes as u64,
            available: crate::memory::available_bytes(),
        };
        let bytes = bytes
            .max(1)
            .checked_next_multiple_of(HUGE_PAGE)
            .ok_or_else(refused)?;
        // SAFETY: a fresh private anonymous mapping, unmapped in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(refused());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(refused)?;
        // Huge pages are a request: without them the mapping still works,
        // its first writes are only slower.
        // SAFETY: the mapping above. (Miri has no `madvise`.)
        #[cfg(not(miri))]
        unsafe {
            libc::madvise(p, bytes, libc::MADV_HUGEPAGE)
        };
        let m = Self { ptr, bytes };
        m.touch();
        Ok(m)
    }

    /// Writes every page once, huge pages split among as many threads as
    /// rayon has: the kernel's zeroing of fresh pages is the cost of new
    /// memory, and one thread does it at a few GB/s.
    ///
    /// The threads are scoped threads of this call, not rayon's workers:
    /// mappings are made while callers hold locks (the batch ring's, a
    /// prepare task's), and a rayon worker waiting here for its stolen
    /// halves may run a job that blocks on that same lock, or every worker
    /// may already be blocked on it; either way the touch never finishes.
    fn touch(&self) {
        let pages = self.bytes / HUGE_PAGE;
        let threads = rayon::current_num_threads().clamp(1, pages.max(1));
        let span = |from: usize, to: usize| {
            for page in (from * HUGE_PAGE..to * HUGE_PAGE).step_by(4096) {
                // SAFETY: inside the mapping; a write of zero into
                // zeroed memory changes no value.
                unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(page), 0) };
            }
        };
        if threads == 1 {
            span(0, pages);
            return;
        }
        std::thread::scope(|s| {
            let each = pages.div_ceil(threads);
            for t in 1..threads {
                let (from, to) = ((t * each).min(pages), ((t + 1) * each).min(pages));
                let spawned = std::thread::Builder::new()
                    .name("quilt-touch".into())
                    .spawn_scoped(s, move || span(from, to));
                // No thread to be had: this one writes the span too.
                if spawned.is_err() {
                    span(from, to);
                }
            }
            span(0, each.min(pages));
        });
    }

    /// The start of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether the mapping is empty (never: at least one huge page).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length, unmapped once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.bytes) };
    }
}

/// Arena blocks are whole multiples of this many bytes, so that a patch
/// state freed at a regrid fits the next state of a similar shape.
const BLOCK: usize = 64 << 10;

/// Page-locked memory for patch states: mappings of `chunk` bytes (or one
/// request's size, if larger), page-locked once by a device's
/// [`PageLock`], cut into blocks that return to the arena when their
/// [`PatchBuf`] drops. Nothing is unmapped before the arena itself drops:
/// a run's states are reused from regrid to regrid.
#[derive(Clone)]
pub struct LockedArena {
    inner: Arc<ArenaInner>,
}

struct ArenaInner {
    lock: Arc<dyn PageLock>,
    chunk: usize,
    state: Mutex<ArenaState>,
    /// Why the device refused to lock a chunk: asked once, so that a run
    /// whose device cannot lock memory neither retries for every state nor
    /// logs each refusal.
    refused: std::sync::OnceLock<String>,
}

#[derive(Default)]
struct ArenaState {
    chunks: Vec<Mapping>,
    /// Free blocks by size: addresses.
    free: BTreeMap<usize, Vec<usize>>,
    /// The unused tail of the last chunk: `[bump, end)`.
    bump: usize,
    end: usize,
    /// Bytes in blocks handed out and not returned.
    in_use: usize,
}

impl std::fmt::Debug for LockedArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (mapped, in_use) = self.usage();
        f.debug_struct("LockedArena")
            .field("kind", &self.inner.lock.kind())
            .field("mapped", &mapped)
            .field("in_use", &in_use)
            .finish()
    }
}

impl LockedArena {
    /// An arena whose mappings `lock` page-locks, mapped `chunk_bytes` at
    /// a time (at least one huge page).
    pub fn new(lock: Arc<dyn PageLock>, chunk_bytes: usize) -> Self {
        Self {
            inner: Arc::new(ArenaInner {
                lock,
                chunk: chunk_bytes.max(HUGE_PAGE),
                state: Mutex::new(ArenaState::default()),
                refused: std::sync::OnceLock::new(),
            }),
        }
    }

    /// What page-locks the arena's memory.
    pub fn kind(&self) -> &'static str {
        self.inner.lock.kind()
    }

    /// `(bytes mapped and page-locked, bytes in blocks in use)`.
    pub fn usage(&self) -> (usize, usize) {
        let s = self.inner.state();
        (s.chunks.iter().map(Mapping::len).sum(), s.in_use)
    }

    /// A block of `len` values for `what`, contents unspecified (zeros in
    /// fresh memory, else what the block's last owner left: any bit
    /// pattern is a valid `T`).
    pub fn alloc<T: bytemuck::Pod>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<PatchBuf<T>, MeshError> {
        let size = std::mem::size_of::<T>().max(1);
        let need = len
            .checked_mul(size)
            .and_then(|b| b.max(1).checked_next_multiple_of(BLOCK))
            .ok_or_else(|| MeshError::OutOfMemory {
                what: what.to_string(),
                need: u64::MAX,
                available: crate::memory::available_bytes(),
            })?;
        // The guard must drop before the arm that maps a chunk locks again.
        let free = self.inner.state().take(need);
        let (addr, bytes) = match free {
            Some(a) => a,
            None => {
                let refused = |why: &str, need: usize| MeshError::OutOfMemory {
                    what: format!("{what} ({} page-locking: {why})", self.kind()),
                    need: need as u64,
                    available: crate::memory::available_bytes(),
                };
                if let Some(why) = self.inner.refused.get() {
                    return Err(refused(why, need));
                }
                // Mapped and locked outside the arena's lock: both take
                // long, and the other callers need not wait for them.
                let chunk = need.max(self.inner.chunk);
                crate::memory::check_fits(chunk as u64, what)?;
                let m = Mapping::new(chunk, what)?;
                // SAFETY: a live mapping, every page written, unlocked in
                // `ArenaInner::drop` before it is unmapped.
                if let Err(why) = unsafe { self.inner.lock.lock(m.as_ptr(), m.len()) } {
                    if self.inner.refused.set(why.clone()).is_ok() {
                        log::warn!(
                            "{} memory refused ({why}): patch states stay in pageable memory",
                            self.kind()
                        );
                    }
                    return Err(refused(&why, m.len()));
                }
                let mut s = self.inner.state();
                s.adopt(m);
                s.take(need).ok_or_else(|| MeshError::BadAccess {
                    field: what.to_string(),
                    why: format!("a new arena chunk cannot hold {need} bytes"),
                })?
            }
        };
        let ptr = NonNull::new(addr as *mut T).ok_or_else(|| MeshError::BadAccess {
            field: what.to_string(),
            why: "an arena block at address 0".into(),
        })?;
        Ok(PatchBuf {
            repr: Repr::Locked(Block {
                ptr,
                len,
                bytes,
                arena: self.inner.clone(),
            }),
        })
    }
}

impl ArenaInner {
    fn state(&self) -> std::sync::MutexGuard<'_, ArenaState> {
        // A panic while the state was held leaves it consistent: every
        // change is a single insertion or removal.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ArenaState {
    /// A free block of `need` bytes (one up to a quarter larger is taken
    /// whole), else one from the last chunk's tail: `(address, bytes)`.
    fn take(&mut self, need: usize) -> Option<(usize, usize)> {
        let found = self
            .free
            .range_mut(need..=need + need / 4)
            .next()
            .and_then(|(&size, list)| Some((size, list.pop()?)));
        if let Some((size, addr)) = found {
            if self.free.get(&size).is_some_and(Vec::is_empty) {
                self.free.remove(&size);
            }
            self.in_use += size;
            return Some((addr, size));
        }
        (self.end - self.bump >= need).then(|| {
            let a = self.bump;
            self.bump += need;
            self.in_use += need;
            (a, need)
        })
    }

    /// Makes `m` the chunk blocks are cut from; the last chunk's tail goes
    /// to the free blocks.
    fn adopt(&mut self, m: Mapping) {
        let tail = self.end - self.bump;
        if tail >= BLOCK {
            let size = tail - tail % BLOCK;
            self.free.entry(size).or_default().push(self.bump);
        }
        self.bump = m.as_ptr() as usize;
        self.end = self.bump + m.len();
        self.chunks.push(m);
    }

    fn give(&mut self, addr: usize, bytes: usize) {
        self.free.entry(bytes).or_default().push(addr);
        self.in_use -= bytes;
    }
}

impl Drop for ArenaInner {
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for m in &s.chunks {
            // SAFETY: locked in `alloc`, unlocked once; every block is
            // gone (each holds this arena), so no device work uses it.
            unsafe { self.lock.unlock(m.as_ptr()) };
        }
    }
}

/// The memory of one patch state: a vector, or a block of a
/// [`LockedArena`] that a device reads and writes in place.
pub struct PatchBuf<T> {
    repr: Repr<T>,
}

enum Repr<T> {
    Heap(Vec<T>),
    Locked(Block<T>),
}

struct Block<T> {
    ptr: NonNull<T>,
    len: usize,
    bytes: usize,
    arena: Arc<ArenaInner>,
}

// SAFETY: a block is owned memory, like a vector's.
unsafe impl<T: Send> Send for Block<T> {}
// SAFETY: as above; `&Block` gives shared access to the values, and
// writes only through `FillTarget::shared_ghosts`, whose caller keeps them
// apart from every read of the same values.
unsafe impl<T: Sync> Sync for Block<T> {}

impl<T> Drop for Block<T> {
    fn drop(&mut self) {
        self.arena
            .state()
            .give(self.ptr.as_ptr() as usize, self.bytes);
    }
}

impl<T> Default for PatchBuf<T> {
    fn default() -> Self {
        Self {
            repr: Repr::Heap(Vec::new()),
        }
    }
}

impl<T> From<Vec<T>> for PatchBuf<T> {
    fn from(v: Vec<T>) -> Self {
        Self {
            repr: Repr::Heap(v),
        }
    }
}

impl<T> PatchBuf<T> {
    /// Values the memory can hold.
    pub fn capacity(&self) -> usize {
        match &self.repr {
            Repr::Heap(v) => v.capacity(),
            Repr::Locked(b) => b.bytes / std::mem::size_of::<T>().max(1),
        }
    }

    /// Whether the values live in an arena's page-locked memory.
    pub fn is_page_locked(&self) -> bool {
        matches!(self.repr, Repr::Locked(_))
    }

    /// The values.
    pub fn as_slice(&self) -> &[T] {
        match &self.repr {
            Repr::Heap(v) => v,
            // SAFETY: `len` initialised values inside the block (zeroed or
            // written memory; `T` is Pod for every block handed out).
            Repr::Locked(b) => unsafe { std::slice::from_raw_parts(b.ptr.as_ptr(), b.len) },
        }
    }

    /// Address of the first value, taken without borrowing the values:
    /// reads through it may run beside writes to other values of the
    /// buffer (see [`crate::PatchData::row`]).
    pub(crate) fn base_ptr(&self) -> *const T {
        match &self.repr {
            // `Vec::as_ptr` materialises no reference to the elements.
            Repr::Heap(v) => v.as_ptr(),
            Repr::Locked(b) => b.ptr.as_ptr(),
        }
    }

    /// The block's address, for writes through a shared reference
    /// (`None` for a vector, whose values only `&mut` may write). The
    /// block's memory is reached only through this pointer, never through
    /// a reference held by the buffer, so such writes are sound as long as
    /// no reference to the written values is alive
    /// ([`crate::fill::FillTarget::shared_ghosts`] states the contract).
    pub(crate) fn shared_mut_ptr(&self) -> Option<NonNull<T>> {
        match &self.repr {
            Repr::Heap(_) => None,
            Repr::Locked(b) => Some(b.ptr),
        }
    }

    /// The values, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.repr {
            Repr::Heap(v) => v,
            // SAFETY: as above, uniquely borrowed.
            Repr::Locked(b) => unsafe { std::slice::from_raw_parts_mut(b.ptr.as_ptr(), b.len) },
        }
    }
}

impl<T: bytemuck::Zeroable + Clone> PatchBuf<T> {
    /// The same memory holding `len` values if it can (contents as they
    /// are, zeros past a vector's old length), else `None`.
    pub fn refit(mut self, len: usize) -> Option<Self> {
        if self.capacity() < len {
            return None;
        }
        match &mut self.repr {
            Repr::Heap(v) => {
                v.truncate(len);
                v.resize(len, T::zeroed());
            }
            Repr::Locked(b) => b.len = len,
        }
        Some(self)
    }
}

impl<T> std::ops::Deref for PatchBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> std::ops::DerefMut for PatchBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

/// A copy in a vector: clones are for checkpoints and tests, which need
/// no device access.
impl<T: Clone> Clone for PatchBuf<T> {
    fn clone(&self) -> Self {
        self.as_slice().to_vec().into()
    }

    fn clone_from(&mut self, source: &Self) {
        if self.len() == source.len() {
            self.as_mut_slice().clone_from_slice(source);
        } else if let Repr::Heap(v) = &mut self.repr {
            v.clear();
            v.extend_from_slice(source);
        } else {
            *self = source.clone();
        }
    }
}

impl<T: PartialEq> PartialEq for PatchBuf<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T> std::fmt::Debug for PatchBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PatchBuf({} values{})",
            self.len(),
            if self.is_page_locked() {
                ", page-locked"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A mapping made while every rayon worker waits for a lock its caller
    /// holds (a prepare task taking a batch from the ring while others
    /// wait for the ring) is written and returned: its first writes need
    /// no rayon worker.
    #[test]
    fn a_mapping_needs_no_rayon_worker() {
        let lock = Arc::new(Mutex::new(()));
        let guard = lock.lock().unwrap();
        let workers = rayon::current_num_threads();
        let waiting = Arc::new(AtomicUsize::new(0));
        for _ in 0..workers {
            let (lock, waiting) = (lock.clone(), waiting.clone());
            rayon::spawn(move || {
                waiting.fetch_add(1, Ordering::SeqCst);
                drop(lock.lock());
            });
        }
        while waiting.load(Ordering::SeqCst) < workers {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(Mapping::new(4 * HUGE_PAGE, "test").map(|m| m.len()));
        });
        let made = rx.recv_timeout(std::time::Duration::from_secs(60));
        // The workers go on either way.
        drop(guard);
        assert!(
            matches!(made, Ok(Ok(n)) if n == 4 * HUGE_PAGE),
            "no mapping within 60 s while rayon's workers wait: {made:?}"
        );
    }

    /// Counts locks and unlocks instead of talking to a device.
    #[derive(Default)]
    struct Counting {
        locked: AtomicUsize,
        unlocked: AtomicUsize,
    }

    impl PageLock for Counting {
        unsafe fn lock(&self, _ptr: *mut u8, _bytes: usize) -> Result<(), String> {
            self.locked.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        unsafe fn unlock(&self, _ptr: *mut u8) {
            self.unlocked.fetch_add(1, Ordering::SeqCst);
        }
        fn kind(&self) -> &'static str {
            "counting"
        }
    }

    struct Refusing;

    impl PageLock for Refusing {
        unsafe fn lock(&self, _ptr: *mut u8, _bytes: usize) -> Result<(), String> {
            Err("no device".into())
        }
        unsafe fn unlock(&self, _ptr: *mut u8) {
            unreachable!("nothing was locked");
        }
        fn kind(&self) -> &'static str {
            "refusing"
        }
    }

    #[test]
    fn blocks_are_reused_and_chunks_unlocked_once_everything_is_gone() {
        let lock = Arc::new(Counting::default());
        let arena = LockedArena::new(lock.clone(), HUGE_PAGE);
        let mut a = arena.alloc::<f64>(1000, "a").unwrap();
        assert!(a.is_page_locked());
        assert_eq!(a.len(), 1000);
        assert!(a.iter().all(|&v| v == 0.0), "fresh memory is zeroed");
        a[999] = 7.0;
        let b = arena.alloc::<f64>(1000, "b").unwrap();
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_eq!(
            lock.locked.load(Ordering::SeqCst),
            1,
            "one chunk holds both"
        );
        let addr = a.as_ptr();
        drop(a);
        let c = arena.alloc::<f64>(900, "c").unwrap();
        assert_eq!(c.as_ptr(), addr, "a freed block of the same size is reused");
        // Larger than the chunk: a mapping of its own.
        let big = arena.alloc::<f32>(HUGE_PAGE, "big").unwrap();
        assert_eq!(big.capacity(), HUGE_PAGE);
        assert_eq!(lock.locked.load(Ordering::SeqCst), 2);
        let (mapped, in_use) = arena.usage();
        assert!(mapped >= 3 * HUGE_PAGE && in_use == 2 * BLOCK + 4 * HUGE_PAGE);
        let copy = c.clone();
        assert!(!copy.is_page_locked() && copy == c);
        drop(arena);
        assert_eq!(
            lock.unlocked.load(Ordering::SeqCst),
            0,
            "blocks keep the arena"
        );
        drop((b, c, big));
        assert_eq!(lock.unlocked.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_larger_free_block_goes_back_whole() {
        let arena = LockedArena::new(Arc::new(Counting::default()), HUGE_PAGE);
        let a = arena.alloc::<u8>(5 * BLOCK, "a").unwrap();
        let at = a.as_ptr();
        drop(a);
        // Four blocks take the free five-block one whole...
        let b = arena.alloc::<u8>(4 * BLOCK, "b").unwrap();
        assert_eq!((b.as_ptr(), b.capacity()), (at, 5 * BLOCK));
        assert_eq!(arena.usage().1, 5 * BLOCK);
        drop(b);
        // ...and return all five, which a five-block request gets again.
        assert_eq!(arena.usage().1, 0);
        let c = arena.alloc::<u8>(5 * BLOCK, "c").unwrap();
        assert_eq!(c.as_ptr(), at);
    }

    #[test]
    fn refit_keeps_memory_that_is_large_enough() {
        let arena = LockedArena::new(Arc::new(Counting::default()), HUGE_PAGE);
        let mut a = arena.alloc::<f64>(100, "a").unwrap();
        a[5] = 3.0;
        let p = a.as_ptr();
        let a = a.refit(BLOCK / 8).unwrap();
        assert_eq!((a.as_ptr(), a.len(), a[5]), (p, BLOCK / 8, 3.0));
        assert!(a.refit(BLOCK / 8 + 1).is_none());
        let mut v = Vec::with_capacity(6);
        v.extend([1.0_f32; 4]);
        let v = PatchBuf::from(v).refit(6).unwrap();
        assert_eq!(v.as_slice(), &[1.0, 1.0, 1.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn a_refused_lock_is_an_error_naming_what() {
        let arena = LockedArena::new(Arc::new(Refusing), HUGE_PAGE);
        let e = arena.alloc::<f64>(10, "patch 7").unwrap_err().to_string();
        assert!(e.contains("patch 7") && e.contains("no device"), "{e}");
        // Asked once: the next state gets the same answer without a mapping.
        let e = arena.alloc::<f64>(10, "patch 8").unwrap_err().to_string();
        assert!(e.contains("patch 8") && e.contains("no device"), "{e}");
        assert_eq!(arena.usage(), (0, 0));
        let mut pool = crate::BufferPool::<f64>::with_arena(Some(arena));
        assert!(
            !pool.take(10).is_page_locked(),
            "the pool falls back to the heap"
        );
    }
}
