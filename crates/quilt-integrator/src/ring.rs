//! [`BatchRing`]: the batch buffers of the step loop, reused across batches
//! and steps.
//!
//! A pipelined loop has several batches alive at once (those prepared
//! ahead of the solver, the one solving and those closing), a sequential
//! one a single batch. Each is taken
//! from the ring, given the next layout ([`Batch::relayout`]: its memory
//! and contents are kept; prepare overwrites every patch cell and the
//! solver every flux value, and no sweep reads the rest of a bin) and
//! given back after close. Memory comes from the backend's allocator
//! (page-locked for a GPU, so that nothing is staged on the host) and is
//! allocated only when no free batch is large enough: with some room above
//! the first batches, a run allocates in its first step and then not again.
//!
//! Page-locking is slow (about a second per 2 GB, and no faster from
//! several threads: docs/performance.md), and a GPU's ring holds
//! gigabytes, which the first step would wait for. Such a ring is
//! therefore filled ahead ([`BatchRing::prefetch`]): a thread of
//! its own allocates the batches the loop keeps alive, sized for the
//! largest batch the selection's bound on bins allows, while the initial
//! hierarchy is built.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use quilt_sweep::{AllocError, Batch, BatchLayout, HostAlloc, HostMemory};

use crate::Real;
use crate::error::IntegratorError;

/// Room allocated above the largest batch seen (in quarters): batches
/// differ by their probe bins, and grow a little as refined regions do.
const ROOM_QUARTERS: usize = 5;

/// Bins of probes a batch carries per plan bin, at most as measured: the
/// coarse patches under a refined region carry the probes of the fine
/// patches above them (an eighth of their cells, with ghost shells), and a
/// batch of eight plan bins of such patches needed 24 bins on the large
/// sphere.
const PROBE_BINS_PER_BIN: usize = 2;

/// One batch's memory: data and fluxes.
type Memory<T> = (Box<dyn HostMemory<T>>, Box<dyn HostMemory<T>>);

/// Batches being allocated ahead on a thread of their own.
struct Prefetch<T> {
    arrived: mpsc::Receiver<Result<Memory<T>, AllocError>>,
    /// Batches still to come.
    left: usize,
    /// Tells the thread to stop allocating.
    cancel: Arc<AtomicBool>,
}

/// Free batch buffers and the allocator they came from.
pub(crate) struct BatchRing<T> {
    alloc: Arc<dyn HostAlloc<T>>,
    /// Bins a new batch's memory holds at least (the batch selection's
    /// bound on a batch's bins).
    min_bins: usize,
    free: Vec<Batch<T>>,
    /// Most bins and flux values a batch has needed.
    high_water: (usize, usize),
    /// Capacity of the last allocation: smaller batches given back are
    /// dropped, so that the ring converges on batches that all fit.
    target: (usize, usize),
    allocations: u64,
    bytes: usize,
    prefetch: Option<Prefetch<T>>,
}

impl<T: Real> BatchRing<T> {
    /// An empty ring over `alloc` for batches of at most `max_bins` bins
    /// of the step plan (0: no bound) and the bins of their probes.
    pub fn new(alloc: Arc<dyn HostAlloc<T>>, max_bins: usize) -> Self {
        Self {
            alloc,
            min_bins: max_bins * (1 + PROBE_BINS_PER_BIN),
            free: Vec::new(),
            high_water: (0, 0),
            target: (0, 0),
            allocations: 0,
            bytes: 0,
            prefetch: None,
        }
    }

    /// Starts allocating `batches` batches of bins of edge `bin_edge` with
    /// `ncomp` components ahead of need, on a thread of its own, sized as
    /// [`BatchRing::take`] sizes its first allocation when the selection
    /// bounds a batch's bins. Nothing happens if the allocator is fast
    /// ([`HostAlloc::allocate_ahead`]), if batches are unbounded, or if
    /// the ring holds or awaits memory already.
    pub fn prefetch(&mut self, batches: usize, bin_edge: u32, ncomp: usize) {
        if !self.alloc.allocate_ahead()
            || self.min_bins == 0
            || batches == 0
            || self.prefetch.is_some()
            || !self.free.is_empty()
            || self.allocations > 0
        {
            return;
        }
        let bins = with_room(self.min_bins);
        let (data, flux) = bin_values(bins, bin_edge, ncomp);
        let (tx, arrived) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let (alloc, stop) = (self.alloc.clone(), cancel.clone());
        let spawned = std::thread::Builder::new()
            .name("quilt-ring".into())
            .spawn(move || {
                for _ in 0..batches {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    let memory = alloc
                        .alloc(data)
                        .and_then(|d| alloc.alloc(flux).map(|f| (d, f)));
                    if tx.send(memory).is_err() {
                        return;
                    }
                }
            });
        match spawned {
            Ok(_) => {
                log::debug!(
                    "batch ring: allocating {batches} {} batches of {bins} bins ahead",
                    self.alloc.kind()
                );
                self.prefetch = Some(Prefetch {
                    arrived,
                    left: batches,
                    cancel,
                });
            }
            Err(e) => log::debug!("batch ring: no thread to allocate ahead ({e})"),
        }
    }

    /// Stops allocating ahead (the batches are not needed: the state went
    /// to the device); what was allocated is dropped.
    pub fn cancel_prefetch(&mut self) {
        if let Some(p) = self.prefetch.take() {
            p.cancel.store(true, Ordering::Release);
        }
    }

    /// The next batch allocated ahead, if one is still to come: waits for
    /// it (it was asked for earlier than this call could ask). `None` once
    /// none is left or when allocating ahead failed (then the caller
    /// allocates and reports any error itself).
    fn prefetched(&mut self) -> Option<Memory<T>> {
        let p = self.prefetch.as_mut()?;
        let got = if p.left > 0 {
            p.left -= 1;
            p.arrived.recv().ok()
        } else {
            None
        };
        if p.left == 0 || !matches!(got, Some(Ok(_))) {
            self.prefetch = None;
        }
        match got {
            Some(Ok(m)) => Some(m),
            Some(Err(e)) => {
                log::debug!("batch ring: allocating ahead failed ({e})");
                None
            }
            None => None,
        }
    }

    /// A batch for `layout`: the smallest free one large enough, or else
    /// new memory with room above the largest batch so far (the smallest
    /// free batch is then dropped, so that the ring never holds more
    /// batches than the loop keeps alive).
    ///
    /// `plan_bins` is the number of bins of the step plan: no batch needs
    /// more than those and their probes.
    pub fn take(
        &mut self,
        layout: BatchLayout,
        plan_bins: usize,
    ) -> Result<Batch<T>, IntegratorError> {
        let (dn, fnn) = (layout.data_len(), layout.flux_len());
        self.high_water.0 = self.high_water.0.max(layout.nbins() as usize);
        self.high_water.1 = self.high_water.1.max(fnn);
        let fit = self
            .free
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity().0 >= dn && b.capacity().1 >= fnn)
            .min_by_key(|(_, b)| b.capacity().0)
            .map(|(i, _)| i);
        if let Some(i) = fit {
            let mut b = self.free.swap_remove(i);
            b.relayout(layout)?;
            return Ok(b);
        }
        if let Some((data, flux)) = self.prefetched() {
            if data.as_slice().len() >= dn && flux.as_slice().len() >= fnn {
                return Ok(self.adopt(Batch::in_memory(layout, data, flux)?));
            }
            // Too small for this layout (a batch beyond the bound on
            // probes): the rest are the same size, so none is awaited.
            self.cancel_prefetch();
        }
        if let Some(i) = (0..self.free.len()).min_by_key(|&i| self.free[i].capacity().0) {
            let b = self.free.swap_remove(i);
            self.bytes -= bytes_of(&b);
        }
        // Room in whole bins above the largest batch so far.
        let bins = self
            .high_water
            .0
            .max(self.min_bins.min(plan_bins + plan_bins.div_ceil(2)));
        let bins = with_room(bins).max(1);
        let (bin_data, face_room) = bin_values(bins, layout.bin_edge(), layout.ncomp() as usize);
        let data_cap = bin_data.max(dn);
        // A batch's fluxes vary more than its bins (many small patches have
        // many faces), but they are small: room for twice the most seen,
        // and for six full bin faces per bin.
        let flux_cap = (2 * self.high_water.1).max(face_room).max(fnn);
        let data = self.alloc.alloc(data_cap)?;
        let flux = self.alloc.alloc(flux_cap)?;
        let b = self.adopt(Batch::in_memory(layout, data, flux)?);
        log::debug!(
            "batch ring: new {} batch of {:.1} MB ({} allocations, {:.1} MB held)",
            self.alloc.kind(),
            bytes_of(&b) as f64 / 1e6,
            self.allocations,
            self.bytes as f64 / 1e6
        );
        Ok(b)
    }

    /// Counts a batch in new memory as the ring's and makes its size the
    /// one batches given back must have.
    fn adopt(&mut self, b: Batch<T>) -> Batch<T> {
        self.target = b.capacity();
        self.allocations += 1;
        self.bytes += bytes_of(&b);
        b
    }

    /// Returns a batch for reuse (or drops it, if it is smaller than the
    /// batches allocated since it was).
    pub fn give(&mut self, b: Batch<T>) {
        let (d, f) = b.capacity();
        if d < self.target.0 || f < self.target.1 {
            self.bytes -= bytes_of(&b);
        } else {
            self.free.push(b);
        }
    }

    /// Batch buffers allocated so far.
    pub fn allocations(&self) -> u64 {
        self.allocations
    }

    /// Bytes of batch memory allocated and not yet dropped.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The kind of memory the batches are in.
    pub fn kind(&self) -> &'static str {
        self.alloc.kind()
    }
}

/// `bins` with [`ROOM_QUARTERS`] of room.
fn with_room(bins: usize) -> usize {
    (bins * ROOM_QUARTERS).div_ceil(4)
}

/// The data values of `bins` bins of edge `edge` with `ncomp` components,
/// and the flux values of six full faces of each.
fn bin_values(bins: usize, edge: u32, ncomp: usize) -> (usize, usize) {
    let e = edge as usize;
    (bins * ncomp * e.pow(3), bins * 6 * e.pow(2) * ncomp)
}

fn bytes_of<T>(b: &Batch<T>) -> usize
where
    T: Real,
{
    let (d, f) = b.capacity();
    (d + f) * std::mem::size_of::<T>()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use quilt_sweep::{PatchShape, VecAlloc};

    use super::*;

    /// Pageable memory that asks to be allocated ahead, counting its
    /// allocations.
    #[derive(Default)]
    struct Ahead {
        calls: AtomicUsize,
    }

    impl HostAlloc<f64> for Ahead {
        fn alloc(&self, len: usize) -> Result<Box<dyn HostMemory<f64>>, AllocError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            HostAlloc::<f64>::alloc(&VecAlloc, len)
        }

        fn kind(&self) -> &'static str {
            "test"
        }

        fn allocate_ahead(&self) -> bool {
            true
        }
    }

    /// A layout of `bins` bins of edge 8, one 6³ patch (ghosts included)
    /// in each.
    fn layout(bins: u32) -> BatchLayout {
        let shapes: Vec<PatchShape> = (0..bins)
            .map(|i| PatchShape::new(u64::from(i), [2, 2, 2], 2, [1.0; 3]))
            .collect();
        let places: Vec<(u32, [u32; 3])> = (0..bins).map(|i| (i, [0, 0, 0])).collect();
        BatchLayout::packed(8, 5, &shapes, &places).unwrap()
    }

    #[test]
    fn batches_allocated_ahead_serve_the_first_takes() {
        let alloc = Arc::new(Ahead::default());
        let mut ring = BatchRing::<f64>::new(alloc.clone(), 2);
        ring.prefetch(3, 8, 5);
        // Bound: 2 plan bins and 4 of probes, with a quarter of room.
        let per_bin = 5 * 8 * 8 * 8;
        let taken: Vec<Batch<f64>> = (0..3)
            .map(|n| ring.take(layout(1 + n), 2).unwrap())
            .collect();
        for b in &taken {
            assert_eq!(b.capacity().0, 8 * per_bin);
        }
        assert_eq!(ring.allocations(), 3);
        assert_eq!(alloc.calls.load(Ordering::Relaxed), 6);
        for b in taken {
            ring.give(b);
        }
        // Given back and reused: nothing more is allocated.
        let b = ring.take(layout(6), 2).unwrap();
        assert_eq!(alloc.calls.load(Ordering::Relaxed), 6);
        ring.give(b);
        // A batch beyond the bound gets memory of its own.
        let big = ring.take(layout(9), 2).unwrap();
        assert!(big.capacity().0 >= 9 * per_bin);
        assert_eq!(ring.allocations(), 4);
    }

    #[test]
    fn a_cancelled_or_fast_ring_allocates_on_demand() {
        let alloc = Arc::new(Ahead::default());
        let mut ring = BatchRing::<f64>::new(alloc.clone(), 2);
        ring.prefetch(4, 8, 5);
        ring.cancel_prefetch();
        let b = ring.take(layout(1), 2).unwrap();
        assert_eq!(ring.allocations(), 1);
        ring.give(b);
        // Memory held: a second prefetch does nothing.
        ring.prefetch(4, 8, 5);
        assert!(ring.prefetch.is_none());
        // Pageable memory is never allocated ahead.
        let mut plain = BatchRing::<f64>::new(Arc::new(VecAlloc), 2);
        plain.prefetch(4, 8, 5);
        assert!(plain.prefetch.is_none());
        assert_eq!(plain.allocations(), 0);
    }
}
