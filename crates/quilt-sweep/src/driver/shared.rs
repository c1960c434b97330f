//! A slice shared by the rayon workers of one pass.

use std::marker::PhantomData;

/// Raw view of a mutable slice that several workers read and write at
/// disjoint indices, as CUDA threads do on global memory.
///
/// Soundness rests on the pass structure: within one pass every cell (and
/// every flux-buffer entry) is written by exactly one column, and a column
/// reads only cells that no other column of the same pass writes. Columns of
/// one patch are distinct lines, and patches of one bin never overlap
/// ([`BatchLayout`](crate::BatchLayout) rejects overlapping descriptors).
#[derive(Clone, Copy)]
pub(crate) struct Shared<'a, T> {
    ptr: *mut T,
    len: usize,
    _life: PhantomData<&'a mut [T]>,
}

// SAFETY: see the type's documentation; `T` values are plain numbers.
unsafe impl<T: Send> Send for Shared<'_, T> {}
// SAFETY: as above; all concurrent accesses are to disjoint indices.
unsafe impl<T: Send> Sync for Shared<'_, T> {}

impl<'a, T: Copy> Shared<'a, T> {
    pub(crate) fn new(s: &'a mut [T]) -> Self {
        Self {
            ptr: s.as_mut_ptr(),
            len: s.len(),
            _life: PhantomData,
        }
    }

    /// # Safety
    /// `i < len`, and no other worker writes index `i` during the pass.
    #[inline(always)]
    pub(crate) unsafe fn get(&self, i: usize) -> T {
        debug_assert!(i < self.len);
        // SAFETY: guaranteed by the caller.
        unsafe { *self.ptr.add(i) }
    }

    /// `n` values from `start`, read-only.
    ///
    /// # Safety
    /// `start + n <= len`, and no other worker writes them during the pass.
    #[inline(always)]
    pub(crate) unsafe fn slice(&self, start: usize, n: usize) -> &[T] {
        debug_assert!(start + n <= self.len);
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(self.ptr.add(start), n) }
    }

    /// # Safety
    /// `i < len`, and no other worker reads or writes index `i` during the pass.
    #[inline(always)]
    pub(crate) unsafe fn set(&self, i: usize, v: T) {
        debug_assert!(i < self.len);
        // SAFETY: guaranteed by the caller.
        unsafe { *self.ptr.add(i) = v }
    }
}
