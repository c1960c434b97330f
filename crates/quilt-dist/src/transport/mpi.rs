//! MPI ranks through rsmpi (feature `mpi`).
//!
//! Sends are `MPI_Isend`s whose buffers the transport owns until they
//! complete; receives probe for a matching message and take it whole
//! (`MPI_Improbe` + `MPI_Mrecv`), so message sizes need not be known in
//! advance. Open MPI here has no asynchronous progress: the transport
//! advances its requests whenever it is called.
//!
//! MPI counts elements in a C `int`, so a message of 2 GiB or more (a
//! state gathered onto one rank, say) cannot be one send. Every message
//! therefore travels as chunks: all but the last hold exactly the
//! transport's chunk size, the last fewer bytes (possibly none), so the
//! receiver knows where a message ends without a header, and MPI's
//! non-overtaking rule keeps the chunks of one message in order.

use std::time::{Duration, Instant};

use mpi::datatype::Equivalence;
use mpi::environment::Universe;
use mpi::point_to_point::{Destination, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};

use super::{BytePool, MAX_TAG, Tag, Transport, check_peer, overdue};
use crate::error::DistError;

/// How long [`MpiRanks::recv`] waits by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// The default chunk size of a message: 1 GiB, below MPI's `int` count.
pub const MPI_CHUNK: usize = 1 << 30;

/// The most bytes of delivered messages a rank keeps for reuse.
const POOL_LIMIT: usize = 2 << 30;

/// A send in flight: the request and the buffer it reads, which the
/// transport frees once the request completes.
struct InFlight {
    request: Option<Request<'static, [u8]>>,
    buffer: *mut [u8],
}

// SAFETY: the buffer is owned by this `InFlight` alone (leaked from a
// `Box` in `send` and freed once in `complete`); MPI reads it only while
// the request is pending, and the one thread that owns the transport is
// the only one that touches either.
unsafe impl Send for InFlight {}

impl InFlight {
    /// The buffer of a completed request, for reuse.
    fn complete(mut self) -> Vec<u8> {
        self.request = None;
        // SAFETY: `buffer` came from `Box::leak` in `send`, and the request
        // that read it has completed (`test` or `wait` returned).
        unsafe { Box::from_raw(self.buffer) }.into_vec()
    }
}

/// The ranks of `MPI_COMM_WORLD`. Create it once per process, on the
/// thread that will make every MPI call; dropping it completes pending
/// sends and finalises MPI.
pub struct MpiRanks {
    world: SimpleCommunicator,
    in_flight: Vec<InFlight>,
    pool: BytePool,
    wait: Duration,
    chunk: usize,
    // Declared last: MPI is finalised after the requests are done.
    _universe: Universe,
}

impl std::fmt::Debug for MpiRanks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiRanks")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .field("in_flight", &self.in_flight.len())
            .finish()
    }
}

impl MpiRanks {
    /// Initialises MPI; errors if it was initialised before in this
    /// process.
    pub fn init() -> Result<Self, DistError> {
        let universe = mpi::initialize()
            .ok_or_else(|| DistError::Mpi("MPI was already initialised in this process".into()))?;
        Ok(Self {
            world: universe.world(),
            in_flight: Vec::new(),
            pool: BytePool::with_limit(POOL_LIMIT),
            wait: DEFAULT_WAIT,
            chunk: MPI_CHUNK,
            _universe: universe,
        })
    }

    /// Sets how long a receive waits before [`DistError::Timeout`].
    pub fn set_wait(&mut self, wait: Duration) {
        self.wait = wait;
    }

    /// Sets the chunk size of messages (at least 1 byte, at most
    /// [`MPI_CHUNK`]). Every rank of the run must set the same.
    pub fn set_chunk(&mut self, bytes: usize) {
        self.chunk = bytes.clamp(1, MPI_CHUNK);
    }

    /// Posts one chunk.
    fn post(&mut self, to: usize, tag: i32, data: Vec<u8>) {
        let buffer: &'static mut [u8] = Box::leak(data.into_boxed_slice());
        let raw: *mut [u8] = buffer;
        // SAFETY: `raw` stays valid until `complete` frees it, which happens
        // only after the request has completed.
        let shared: &'static [u8] = unsafe { &*raw };
        let request = self
            .world
            .process_at_rank(to as i32)
            .immediate_send_with_tag(StaticScope, shared, tag);
        self.in_flight.push(InFlight {
            request: Some(request),
            buffer: raw,
        });
    }

    /// The next chunk from `from` with `tag`, if one has arrived.
    fn try_chunk(&mut self, from: usize, tag: i32) -> Option<Vec<u8>> {
        self.complete_sends();
        let (message, status) = self
            .world
            .process_at_rank(from as i32)
            .immediate_matched_probe_with_tag(tag)?;
        let len = status.count(u8::equivalent_datatype()).max(0) as usize;
        let mut buf = self.pool.take(len);
        message.matched_receive_into(&mut buf[..]);
        Some(buf)
    }

    /// The next chunk from `from` with `tag`, waiting at most the bound.
    fn wait_chunk(&mut self, from: usize, tag: i32) -> Result<Vec<u8>, DistError> {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if let Some(d) = self.try_chunk(from, tag) {
                return Ok(d);
            }
            overdue(self.rank(), from, tag as Tag, start, self.wait)?;
            spins += 1;
            // Without asynchronous progress this rank's own sends move only
            // while it calls into MPI: it sleeps only when none is in
            // flight, or a peer's receive would advance at the pace of
            // these sleeps.
            if spins > 1000 && self.in_flight.is_empty() {
                std::thread::sleep(Duration::from_micros(50));
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// `first` and the chunks that follow it, up to the short one.
    fn rest_of(&mut self, from: usize, tag: i32, first: Vec<u8>) -> Result<Vec<u8>, DistError> {
        let mut message = first;
        let mut last = message.len();
        while last == self.chunk {
            let next = self.wait_chunk(from, tag)?;
            last = next.len();
            message.extend_from_slice(&next);
        }
        Ok(message)
    }

    /// Completes the sends that are done, keeps the others.
    fn complete_sends(&mut self) {
        let flights = std::mem::take(&mut self.in_flight);
        for mut f in flights {
            match f.request.take().map(Request::test) {
                Some(Err(pending)) => {
                    f.request = Some(pending);
                    self.in_flight.push(f);
                }
                _ => self.pool.put(f.complete()),
            }
        }
    }

    fn check_tag(&self, tag: Tag) -> Result<i32, DistError> {
        if tag > MAX_TAG {
            return Err(DistError::Mpi(format!(
                "rank {}: tag {tag} is above the largest portable MPI tag {MAX_TAG}",
                self.rank()
            )));
        }
        Ok(tag as i32)
    }
}

impl Drop for MpiRanks {
    fn drop(&mut self) {
        for mut f in self.in_flight.drain(..) {
            if let Some(r) = f.request.take() {
                r.wait();
            }
            drop(f.complete());
        }
    }
}

impl Transport for MpiRanks {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn send(&mut self, to: usize, tag: Tag, data: Vec<u8>) -> Result<(), DistError> {
        check_peer(self.rank(), self.size(), to)?;
        let tag = self.check_tag(tag)?;
        if data.len() < self.chunk {
            self.post(to, tag, data);
        } else {
            let full = data.len() / self.chunk;
            for k in 0..full {
                let piece = data[k * self.chunk..(k + 1) * self.chunk].to_vec();
                self.post(to, tag, piece);
            }
            self.post(to, tag, data[full * self.chunk..].to_vec());
        }
        self.complete_sends();
        Ok(())
    }

    fn try_recv(&mut self, from: usize, tag: Tag) -> Result<Option<Vec<u8>>, DistError> {
        check_peer(self.rank(), self.size(), from)?;
        let tag = self.check_tag(tag)?;
        match self.try_chunk(from, tag) {
            Some(first) => self.rest_of(from, tag, first).map(Some),
            None => Ok(None),
        }
    }

    fn recv(&mut self, from: usize, tag: Tag) -> Result<Vec<u8>, DistError> {
        check_peer(self.rank(), self.size(), from)?;
        let tag = self.check_tag(tag)?;
        let first = self.wait_chunk(from, tag)?;
        self.rest_of(from, tag, first)
    }

    fn progress(&mut self) -> Result<(), DistError> {
        self.complete_sends();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), DistError> {
        for mut f in std::mem::take(&mut self.in_flight) {
            if let Some(r) = f.request.take() {
                r.wait();
            }
            self.pool.put(f.complete());
        }
        Ok(())
    }

    fn buffer(&mut self, len: usize) -> Vec<u8> {
        self.pool.take(len)
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.put(buf);
    }
}
