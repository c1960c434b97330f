//! Memory of patch states kept for reuse across a regrid.

use std::collections::BTreeMap;

use super::data::HierarchyData;

/// Value buffers of released patch states, handed out again by size.
///
/// A regrid replaces most patches of the fine levels: allocating their
/// states afresh faults gigabytes of new pages in (the kernel zeroing each
/// one, serialised on the process's memory map), while the states they
/// replace are freed at the same moment. A pool lets the new states take
/// the memory of the old ones instead.
#[derive(Debug, Default)]
pub struct BufferPool<T> {
    /// Buffers by capacity.
    by_capacity: BTreeMap<usize, Vec<Vec<T>>>,
    count: usize,
}

impl<T> BufferPool<T> {
    /// An empty pool.
    pub fn new() -> Self {
        Self {
            by_capacity: BTreeMap::new(),
            count: 0,
        }
    }

    /// Keeps `buf` for reuse (a buffer without capacity is dropped).
    pub fn put(&mut self, buf: Vec<T>) {
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

    /// The smallest buffer of at least `len` values, or an empty vector if
    /// none is that large.
    pub fn take(&mut self, len: usize) -> Vec<T> {
        let Some((&cap, list)) = self.by_capacity.range_mut(len..).next() else {
            return Vec::new();
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
            p.put(Vec::with_capacity(cap));
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
