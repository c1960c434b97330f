//! The two ceilings of a memory-bound step, measured on the device: a large
//! device-to-device copy (bytes read plus bytes written per second) and
//! pinned host-device copies.

use cudarc::driver::sys;

use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::device;
use crate::error::{CudaError, DriverContext};

/// Measured bandwidths in GB/s (1e9 bytes per second).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bandwidth {
    /// Device-to-device copy, counting bytes read and bytes written.
    pub device_copy: f64,
    /// Pinned host to device.
    pub host_to_device: f64,
    /// Device to pinned host.
    pub device_to_host: f64,
}

/// Median of `reps` timed repetitions (after one warm-up) of a device copy
/// of `device_bytes` and of pinned copies of `host_bytes`, on device
/// `ordinal`.
pub fn measure_bandwidth(
    ordinal: usize,
    device_bytes: usize,
    host_bytes: usize,
    reps: usize,
) -> Result<Bandwidth, CudaError> {
    if reps == 0 || device_bytes == 0 || host_bytes == 0 {
        return Err(CudaError::Config(
            "bandwidth: sizes and repetitions must be positive".into(),
        ));
    }
    let dev = device::device(ordinal)?;
    let ctx = &dev.ctx;
    ctx.bind_to_thread().call("cuCtxSetCurrent")?;
    let stream = ctx.new_stream().call("cuStreamCreate")?;
    let ev = || {
        ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .call("cuEventCreate")
    };
    let (a, b) = (ev()?, ev()?);
    let time = |op: &dyn Fn() -> Result<(), CudaError>| -> Result<f64, CudaError> {
        op()?;
        let mut t = Vec::with_capacity(reps);
        for _ in 0..reps {
            a.record(&stream).call("cuEventRecord")?;
            op()?;
            b.record(&stream).call("cuEventRecord")?;
            b.synchronize().call("cuEventSynchronize")?;
            t.push(f64::from(a.elapsed_ms(&b).call("cuEventElapsedTime")?));
        }
        t.sort_by(f64::total_cmp);
        Ok(t[t.len() / 2] * 1e-3)
    };
    let src = DeviceBuffer::<u8>::new(ctx, device_bytes)?;
    let dst = DeviceBuffer::<u8>::new(ctx, device_bytes)?;
    src.fill_bytes(0, device_bytes, 7, &stream)?;
    let d2d = time(&|| {
        // SAFETY: both buffers hold `device_bytes`.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                dst.at(0),
                src.at(0),
                device_bytes,
                stream.cu_stream(),
            )
        }
        .call("cuMemcpyDtoDAsync")
    })?;
    let host = PinnedBuffer::<u8>::new(ctx, host_bytes)?;
    let dbuf = DeviceBuffer::<u8>::new(ctx, host_bytes)?;
    let h2d = time(&|| dbuf.upload(0, host.as_slice(), &stream))?;
    let mut host = host;
    let d2h = {
        let hp = host.as_mut_slice().as_mut_ptr();
        time(&|| {
            // SAFETY: `hp` points to `host_bytes` pinned bytes that outlive the
            // copies; nothing else touches them meanwhile.
            let dst = unsafe { std::slice::from_raw_parts_mut(hp, host_bytes) };
            dbuf.download(0, dst, &stream)
        })?
    };
    stream.synchronize().call("cuStreamSynchronize")?;
    Ok(Bandwidth {
        device_copy: 2.0 * device_bytes as f64 / d2d / 1e9,
        host_to_device: host_bytes as f64 / h2d / 1e9,
        device_to_host: host_bytes as f64 / d2h / 1e9,
    })
}
