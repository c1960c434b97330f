//! How ranks talk: point-to-point messages of bytes, and the few
//! collectives quilt needs built on them.
//!
//! One thread of each rank owns its transport and makes every call (Open
//! MPI on quilt's machines has no asynchronous progress), so the trait
//! takes `&mut self`; the MPI transport is not even `Send`, since MPI is
//! initialised for the thread that will call it. Sends return without
//! waiting for the receiver; receives are either polled
//! ([`Transport::try_recv`], between batches) or waited for with a bound
//! ([`Transport::recv`]), so that a rank that died is reported rather than
//! waited for forever. Messages between two ranks with the same tag arrive
//! in the order they were sent (MPI's non-overtaking rule).

mod pool;
mod solo;
mod threads;

#[cfg(feature = "mpi")]
mod mpi;

#[cfg(feature = "mpi")]
pub use self::mpi::{MPI_CHUNK, MpiRanks};
pub use pool::BytePool;
pub use solo::Solo;
pub use threads::{ThreadRank, run_ranks, thread_ranks};

use crate::error::DistError;

/// A message tag: which exchange a message belongs to.
pub type Tag = u32;

/// The largest tag every transport carries (MPI guarantees tags up to
/// 32767).
pub const MAX_TAG: Tag = 32_767;

/// Tags below this are free for callers; the collectives use the ones
/// from here to [`MAX_TAG`].
pub const FIRST_RESERVED_TAG: Tag = 32_000;
const TAG_GATHER: Tag = FIRST_RESERVED_TAG;

/// Point-to-point messages between the ranks of one run.
pub trait Transport {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// Posts `data` to rank `to`; returns without waiting for the
    /// receiver (the transport keeps the buffer until it is delivered).
    fn send(&mut self, to: usize, tag: Tag, data: Vec<u8>) -> Result<(), DistError>;

    /// The next message from `from` with `tag`, if one has arrived; never
    /// waits.
    fn try_recv(&mut self, from: usize, tag: Tag) -> Result<Option<Vec<u8>>, DistError>;

    /// The next message from `from` with `tag`, waiting at most the
    /// transport's bound ([`DistError::Timeout`] after it).
    fn recv(&mut self, from: usize, tag: Tag) -> Result<Vec<u8>, DistError>;

    /// A buffer of `len` bytes for a message the caller fills whole and
    /// sends (its contents are unspecified). A transport that keeps the
    /// memory of delivered messages hands it out again: a fresh buffer of
    /// many megabytes costs a page fault per page on every exchange.
    fn buffer(&mut self, len: usize) -> Vec<u8> {
        vec![0; len]
    }

    /// Gives a received message's memory back for later buffers.
    fn recycle(&mut self, buf: Vec<u8>) {
        drop(buf);
    }

    /// Waits until every message this rank posted has left its buffers
    /// (MPI completes its requests; in-process ranks need nothing).
    fn flush(&mut self) -> Result<(), DistError>;

    /// Advances posted sends without waiting. MPI here has no
    /// asynchronous progress: a large message moves only while its sender
    /// and receiver call into MPI, so a rank that overlaps transfers with
    /// work calls this (and polls its receives) while the work runs.
    fn progress(&mut self) -> Result<(), DistError> {
        Ok(())
    }

    /// Every rank's `data`, by rank, on every rank.
    fn all_gather(&mut self, data: Vec<u8>) -> Result<Vec<Vec<u8>>, DistError> {
        let (me, n) = (self.rank(), self.size());
        for to in (0..n).filter(|&r| r != me) {
            self.send(to, TAG_GATHER, data.clone())?;
        }
        let mut all = Vec::with_capacity(n);
        for from in 0..n {
            if from == me {
                all.push(Vec::new());
            } else {
                all.push(self.recv(from, TAG_GATHER)?);
            }
        }
        all[me] = data;
        self.flush()?;
        Ok(all)
    }

    /// The minimum of `x` over all ranks (exact: the same `f64` on every
    /// rank whatever the rank count).
    fn all_min(&mut self, x: f64) -> Result<f64, DistError> {
        let all = self.all_gather(x.to_le_bytes().to_vec())?;
        let mut m = x;
        for (r, b) in all.iter().enumerate() {
            let v =
                f64::from_le_bytes(b.as_slice().try_into().map_err(|_| DistError::Malformed {
                    rank: self.rank(),
                    from: r,
                    tag: TAG_GATHER,
                    why: format!("{} bytes for one f64", b.len()),
                })?);
            // NaN wins, so that a bad state on any rank stops every rank.
            if v.is_nan() || v < m {
                m = v;
            }
        }
        Ok(m)
    }

    /// Returns when every rank has called it.
    fn barrier(&mut self) -> Result<(), DistError> {
        self.all_gather(Vec::new()).map(|_| ())
    }
}

/// The timeout error of a receive that started at `start`, once `wait`
/// has passed.
pub(crate) fn overdue(
    rank: usize,
    from: usize,
    tag: Tag,
    start: std::time::Instant,
    wait: std::time::Duration,
) -> Result<std::time::Duration, DistError> {
    let waited = start.elapsed();
    if waited >= wait {
        Err(DistError::Timeout {
            rank,
            from,
            tag,
            waited,
        })
    } else {
        Ok(waited)
    }
}

/// Checks `peer` against the rank count.
pub(crate) fn check_peer(rank: usize, size: usize, peer: usize) -> Result<(), DistError> {
    if peer < size {
        Ok(())
    } else {
        Err(DistError::NoSuchRank { rank, peer, size })
    }
}
