//! Memory of patch states kept for reuse across a regrid.

use std::collections::BTreeMap;

use super::data::HierarchyData;
use crate::locked::{LockedArena, PatchBuf};

/// Value buffers of released patch states, handed out again by size.
///
/// A regrid replaces most patches of the fine levels: allocating their
/// states afresh faults gigabytes of new pages in (the kernel zeroing each
/// one, serialised on the process's memory map), while the states they
/// replace are freed at the same moment. A pool lets the new states take
/// the memory of the old ones instead.
///
/// A pool with an arena ([`BufferPool::with_arena`]) hands out the
/// arena's page-locked blocks where it has no buffer large enough, so that
/// every state it fills lives where a device reads it in place.
#[derive(Debug)]
pub struct BufferPool<T> {
    /// Buffers by capacity.
    by_capacity: BTreeMap<usize, Vec<PatchBuf<T>>>,
    count: usize,
    arena: Option<LockedArena>,
}

impl<T> Default for BufferPool<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> BufferPool<T> {
    /// An empty pool.
    pub fn new() -> Self {
        Self::with_arena(None)
    }

    /// An empty pool that allocates from `arena` when it has nothing to
    /// hand out.
    pub fn with_arena(arena: Option<LockedArena>) -> Self {
        Self {
            by_capacity: BTreeMap::new(),
            count: 0,
            arena,
        }
    }

    /// Keeps `buf` for reuse (a buffer without capacity is dropped).
    pub fn put(&mut self, buf: impl Into<PatchBuf<T>>) {
        let buf = buf.into();
        if buf.capacity() > 0 {
            self.by_capacity
                .entry(buf.capacity())
                .or_default()
                .push(buf);
            self.count += 1;
        }
    }

    /// Keeps every buffer of `data` (both time levels of every patch).
    pub fn reclaim(&mut self, data: HierarchyData<T>)
    where
        T: crate::real::Real,
    {
        for s in data.into_states() {
            self.put(s.old.into_buffer());
            self.put(s.new.into_buffer());
        }
    }

    /// The smallest buffer of at least `len` values; else a block of the
    /// arena if the pool has one, or an empty buffer (whose user
    /// allocates). Where the arena cannot give memory the empty buffer is
    /// returned: the state then lives in pageable memory (the arena logs
    /// a device's refusal once).
    pub fn take(&mut self, len: usize) -> PatchBuf<T>
    where
        T: bytemuck::Pod,
    {
        let Some((&cap, list)) = self.by_capacity.range_mut(len..).next() else {
            return match &self.arena {
                Some(a) if len > 0 => a.alloc(len, "a patch state").unwrap_or_else(|e| {
                    log::debug!("patch state in pageable memory: {e}");
                    PatchBuf::default()
                }),
                _ => PatchBuf::default(),
            };
        };
        let buf = list.pop().unwrap_or_default();
        if list.is_empty() {
            self.by_capacity.remove(&cap);
        }
        self.count -= 1;
        buf
    }

    /// Number of buffers held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the pool holds no buffer.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_smallest_buffer_that_fits() {
        let mut p = BufferPool::<f64>::new();
        for cap in [100, 10, 50, 50, 0] {
            p.put(Vec::<f64>::with_capacity(cap));
        }
        assert_eq!(p.len(), 4);
        assert!(p.take(40).capacity() >= 50);
        assert!(p.take(11).capacity() >= 50);
        assert!(p.take(60).capacity() >= 100);
        assert_eq!(p.take(60).capacity(), 0);
        assert!(p.take(1).capacity() >= 10);
        assert!(p.is_empty());
    }
}
