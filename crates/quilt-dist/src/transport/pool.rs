//! Memory of messages, kept for the next ones.

use std::collections::BTreeMap;

/// Buffers below this many bytes are neither kept nor handed out: they
/// fault few pages, and small messages must not carry large buffers off.
pub const MIN_POOLED: usize = 64 << 10;

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
    /// enough but not more than twice as large, else a new one. Reused
    /// bytes keep their old values. Small messages (a time step, a report)
    /// never take pooled memory, which would leave the pool with them.
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        if len < MIN_POOLED {
            return vec![0; len];
        }
        let Some((&cap, list)) = self
            .by_capacity
            .range_mut(len..=len.saturating_mul(2))
            .next()
        else {
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

    /// Keeps `buf` unless it is small or that would hold more than the
    /// limit.
    pub fn put(&mut self, buf: Vec<u8>) {
        let cap = buf.capacity();
        if cap < MIN_POOLED || self.held + cap > self.limit {
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
        const K: usize = MIN_POOLED;
        let mut p = BytePool::with_limit(3 * K);
        p.put(vec![7; K]);
        p.put(vec![8; 2 * K]);
        p.put(vec![9; K]); // over the limit: dropped
        p.put(vec![6; 100]); // small: dropped
        assert_eq!(p.held(), 3 * K);
        // Small requests never take pooled memory.
        assert_eq!(p.take(10).capacity(), 10);
        assert_eq!(p.held(), 3 * K);
        let a = p.take(K + 1);
        assert_eq!((a.len(), a.capacity(), a[0]), (K + 1, 2 * K, 8));
        let b = p.take(K);
        assert_eq!((b.len(), b[0]), (K, 7));
        assert_eq!(p.held(), 0);
        let c = p.take(K);
        assert_eq!((c.len(), c[0]), (K, 0));
        // A buffer more than twice the request stays in the pool.
        let mut p = BytePool::with_limit(8 * K);
        p.put(vec![5; 4 * K]);
        assert_eq!(p.take(K).capacity(), K);
        assert_eq!(p.held(), 4 * K);
    }
}
