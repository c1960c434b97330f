//! Large device arrays (state, fluxes, stage and accumulator) of layout
//! states that were dropped, kept for the next layouts: allocating and
//! freeing device memory synchronises the device and costs far more than
//! a batch's transfers, and an integrator's batches change layout at every
//! batch of an adaptive step.

use std::sync::Arc;

use cudarc::driver::CudaContext;

use crate::buffer::DeviceBuffer;
use crate::error::CudaError;

/// Most spare arrays kept (a layout state has up to four).
const MAX_SPARE: usize = 12;

/// Room allocated above a new array's need (in quarters): the batches of
/// one step differ by a bin or two.
const ROOM_QUARTERS: usize = 5;

pub(crate) struct SpareBuffers<T> {
    bufs: Vec<DeviceBuffer<T>>,
    allocations: u64,
}

impl<T: Copy> SpareBuffers<T> {
    pub fn new() -> Self {
        Self {
            bufs: Vec::new(),
            allocations: 0,
        }
    }

    /// An array of `len` values: the smallest spare one large enough, or a
    /// new one with room.
    pub fn take(
        &mut self,
        ctx: &Arc<CudaContext>,
        len: usize,
    ) -> Result<DeviceBuffer<T>, CudaError> {
        let fit = (0..self.bufs.len())
            .filter(|&i| self.bufs[i].capacity() >= len)
            .min_by_key(|&i| self.bufs[i].capacity());
        if let Some(i) = fit {
            let b = self.bufs.swap_remove(i);
            return Ok(b
                .reuse(len)
                .unwrap_or_else(|_| unreachable!("capacity checked")));
        }
        self.allocations += 1;
        DeviceBuffer::with_room(ctx, len, (len * ROOM_QUARTERS).div_ceil(4))
    }

    /// Keeps an array for later layouts (dropping the smallest beyond
    /// [`MAX_SPARE`]).
    pub fn give(&mut self, b: DeviceBuffer<T>) {
        self.bufs.push(b);
        if self.bufs.len() > MAX_SPARE
            && let Some(i) = (0..self.bufs.len()).min_by_key(|&i| self.bufs[i].capacity())
        {
            self.bufs.swap_remove(i);
        }
    }

    /// Frees every spare array (the device is short of memory).
    pub fn clear(&mut self) {
        self.bufs.clear();
    }

    /// Whether no array is kept.
    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    /// Arrays allocated so far (not taken from the spares).
    pub fn allocations(&self) -> u64 {
        self.allocations
    }
}
