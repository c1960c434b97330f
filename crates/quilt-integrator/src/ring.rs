//! [`BatchRing`]: the batch buffers of the step loop, reused across batches
//! and steps.
//!
//! A pipelined loop has three batches alive at once (the one being closed,
//! solved and prepared), a sequential one a single batch. Each is taken
//! from the ring, given the next layout ([`Batch::relayout`]: its memory
//! and contents are kept; prepare overwrites every patch cell and the
//! solver every flux value, and no sweep reads the rest of a bin) and
//! given back after close. Memory comes from the backend's allocator
//! (page-locked for a GPU, so that nothing is staged on the host) and is
//! allocated only when no free batch is large enough: with some room above
//! the first batches, a run allocates in its first step and then not again.

use std::sync::Arc;

use quilt_sweep::{Batch, BatchLayout, HostAlloc};

use crate::Real;
use crate::error::IntegratorError;

/// Room allocated above the largest batch seen (in quarters): batches
/// differ by their probe bins, and grow a little as refined regions do.
const ROOM_QUARTERS: usize = 5;

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
}

impl<T: Real> BatchRing<T> {
    /// An empty ring over `alloc` for batches of at most `max_bins` bins
    /// of the step plan (0: no bound) and the bins of their probes.
    pub fn new(alloc: Arc<dyn HostAlloc<T>>, max_bins: usize) -> Self {
        Self {
            alloc,
            // Probes fill about one extra bin per two plan bins.
            min_bins: max_bins + max_bins.div_ceil(2),
            free: Vec::new(),
            high_water: (0, 0),
            target: (0, 0),
            allocations: 0,
            bytes: 0,
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
        if let Some(i) = (0..self.free.len()).min_by_key(|&i| self.free[i].capacity().0) {
            let b = self.free.swap_remove(i);
            self.bytes -= bytes_of(&b);
        }
        // Room in whole bins above the largest batch so far.
        let per_bin = layout.ncomp() as usize * (layout.bin_edge() as usize).pow(3);
        let bins = self
            .high_water
            .0
            .max(self.min_bins.min(plan_bins + plan_bins.div_ceil(2)));
        let bins = (bins * ROOM_QUARTERS).div_ceil(4).max(1);
        let data_cap = (bins * per_bin).max(dn);
        // A batch's fluxes vary more than its bins (many small patches have
        // many faces), but they are small: room for twice the most seen,
        // and for six full bin faces per bin.
        let g = layout.bins();
        let face_room = bins * 6 * g.plane() * g.ncomp();
        let flux_cap = (2 * self.high_water.1).max(face_room).max(fnn);
        let data = self.alloc.alloc(data_cap)?;
        let flux = self.alloc.alloc(flux_cap)?;
        let b = Batch::in_memory(layout, data, flux)?;
        self.target = b.capacity();
        self.allocations += 1;
        self.bytes += bytes_of(&b);
        log::debug!(
            "batch ring: new {} batch of {:.1} MB ({} allocations, {:.1} MB held)",
            self.alloc.kind(),
            bytes_of(&b) as f64 / 1e6,
            self.allocations,
            self.bytes as f64 / 1e6
        );
        Ok(b)
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

fn bytes_of<T>(b: &Batch<T>) -> usize
where
    T: Real,
{
    let (d, f) = b.capacity();
    (d + f) * std::mem::size_of::<T>()
}
