//! Memory of messages, kept for the next ones.

use std::collections::BTreeMap;

/// Byte buffers by capacity, up to a bound on the bytes held: what
/// [`super::Transport::buffer`] hands out and
/// [`super::Transport::recycle`] takes back. A halo exchange repeats the
/// same message sizes every step between regrids, so nearly every buffer
/// is reused whole.
#[derive(Debug, Default)]
pub struct BytePool {
    by_capacity: BTreeMap<usize, Vec<Vec<u8>>>,
    held: usize,
    limit: usize,
}

impl BytePool {
    /// A pool holding at most `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            by_capacity: BTreeMap::new(),
            held: 0,
            limit,
        }
    }

    /// A buffer of `len` bytes: the smallest kept one that is large
    /// enough, else a new one. Reused bytes keep their old values.
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        let Some((&cap, list)) = self.by_capacity.range_mut(len..).next() else {
            return vec![0; len];
        };
        let mut buf = list.pop().unwrap_or_default();
        if list.is_empty() {
            self.by_capacity.remove(&cap);
        }
        self.held -= buf.capacity();
        buf.resize(len, 0);
        buf.truncate(len);
        buf
    }

    /// Keeps `buf` unless that would hold more than the limit.
    pub fn put(&mut self, buf: Vec<u8>) {
        let cap = buf.capacity();
        if cap == 0 || self.held + cap > self.limit {
            return;
        }
        self.held += cap;
        self.by_capacity.entry(cap).or_default().push(buf);
    }

    /// Bytes held.
    pub fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_the_smallest_buffer_that_fits_within_the_limit() {
        let mut p = BytePool::with_limit(300);
        p.put(vec![7; 100]);
        p.put(vec![8; 200]);
        p.put(vec![9; 50]); // over the limit: dropped
        assert_eq!(p.held(), 300);
        let a = p.take(60);
        assert_eq!((a.len(), a.capacity(), a[0]), (60, 100, 7));
        let b = p.take(150);
        assert_eq!((b.len(), b[0]), (150, 8));
        assert_eq!(p.held(), 0);
        let c = p.take(10);
        assert_eq!((c.len(), c[0]), (10, 0));
    }
}
