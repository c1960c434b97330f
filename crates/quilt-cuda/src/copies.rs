//! Many copies between page-locked host memory and the device, queued as
//! one batch (`cuMemcpyBatchAsync`, CUDA 13.0 on).
//!
//! A host-staged step moves every patch box on its own: a few hundred
//! kilobytes each. Queued one `cuMemcpyAsync` at a time, such copies pay a
//! fixed cost each in the copy engine, and copies in the two directions
//! then hardly overlap; queued as one batch they run at the bus's rate,
//! both directions at once (docs/performance.md has the figures).

use cudarc::driver::{CudaStream, sys};

use crate::error::{CudaError, DriverContext};

/// Which way the copies of a [`CopyBatch`] go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Host to device.
    ToDevice,
    /// Device to host.
    ToHost,
}

/// The first driver whose `cuMemcpyBatchAsync` takes this form.
const BATCH_DRIVER: i32 = 13000;

/// Whether a driver of `driver_version` (`cuDriverGetVersion`) queues a
/// [`CopyBatch`] as one batch.
pub(crate) fn batches(driver_version: i32) -> bool {
    driver_version >= BATCH_DRIVER
}

/// Copies gathered for one stream and direction, then queued together.
/// Its lists keep their room from batch to batch, so that a step queues
/// its copies without allocating.
#[derive(Debug, Default)]
pub(crate) struct CopyBatch {
    dsts: Vec<sys::CUdeviceptr>,
    srcs: Vec<sys::CUdeviceptr>,
    sizes: Vec<usize>,
}

impl CopyBatch {
    /// Adds a copy of `bytes` bytes from address `src` to address `dst`
    /// (unified addresses; an empty copy is dropped).
    pub fn push(&mut self, dst: u64, src: u64, bytes: usize) {
        if bytes > 0 {
            self.dsts.push(dst);
            self.srcs.push(src);
            self.sizes.push(bytes);
        }
    }

    /// Copies gathered and not yet queued.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Queues the gathered copies on `stream`, in stream order, and empties
    /// the batch: as one batch with `batched` (only where [`batches`]
    /// holds), else one `cuMemcpyAsync` each. `device` is the ordinal of
    /// the device end.
    ///
    /// # Safety
    ///
    /// Every range must be valid for its copy (device memory of this
    /// context, host memory page-locked for it) and stay so, untouched by
    /// the host, until `stream` passes this point.
    pub unsafe fn issue(
        &mut self,
        dir: Direction,
        device: usize,
        batched: bool,
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        let n = self.len();
        if n == 0 {
            return Ok(());
        }
        let s = stream.cu_stream();
        let r = if batched {
            let host = sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
                id: 0,
            };
            let dev = sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: device as i32,
            };
            let (src, dst) = match dir {
                Direction::ToDevice => (host, dev),
                Direction::ToHost => (dev, host),
            };
            let mut attrs = sys::CUmemcpyAttributes {
                srcAccessOrder: sys::CUmemcpySrcAccessOrder::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
                srcLocHint: src,
                dstLocHint: dst,
                flags: 0,
            };
            let mut first = [0usize];
            // SAFETY: three lists of `n` entries, one attribute applying
            // from copy 0 on; the ranges are the caller's to keep valid.
            unsafe {
                sys::cuMemcpyBatchAsync_v2(
                    self.dsts.as_mut_ptr(),
                    self.srcs.as_mut_ptr(),
                    self.sizes.as_mut_ptr(),
                    n,
                    &mut attrs,
                    first.as_mut_ptr(),
                    1,
                    s,
                )
            }
            .result()
            .call("cuMemcpyBatchAsync")
        } else {
            (0..n).try_for_each(|i| {
                // SAFETY: as above, one copy of unified addresses.
                unsafe { sys::cuMemcpyAsync(self.dsts[i], self.srcs[i], self.sizes[i], s) }
                    .result()
                    .call("cuMemcpyAsync")
            })
        };
        self.dsts.clear();
        self.srcs.clear();
        self.sizes.clear();
        r
    }
}
