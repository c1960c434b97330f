//! # quilt-cuda
//!
//! quilt's CUDA backend: the RTVD, TVD and WAF sweeps of
//! [`quilt_sweep`] as CUDA kernels over THE batch layout, compiled at run
//! time by NVRTC for the device's own architecture, with the paper's
//! default scheme (one thread block per patch) as a baseline and the packed
//! bins and kernel optimisations of Raghavan & Vadhiyar (2015, sec. 3.1 and
//! 3.4) as the fast path.
//!
//! | module | holds |
//! |---|---|
//! | [`mod@probe`] | finding a usable driver, device and NVRTC without panicking; the `auto`/`cpu`/`cuda` [`Backend`] choice |
//! | [`source`] | the embedded `kernels/*.cu`, their entry points, NVRTC compilation |
//! | [`CudaSolver`] | one step of a [`quilt_sweep::Batch`] on the GPU, mirroring [`quilt_sweep::Solver::advance`]; patches kept in their own page-locked boxes read and written in place ([`CudaSolver::advance_external`]) |
//! | [`HostRegistry`] | host memory the process mapped itself, page-locked for the device afterwards |
//!
//! The kernels reproduce the CPU reference bit for bit with FMA
//! contraction off ([`CudaConfig::fma`], the default); see
//! `docs/quilt-cuda.md` for the design, the checks and the measurements.
//!
//! cudarc loads `libcuda` and `libnvrtc` at run time (`dynamic-loading`),
//! so this crate builds and its tests run on machines without CUDA; every
//! entry point probes first and returns [`CudaError::NoDriver`] /
//! [`CudaError::NoNvrtc`] instead of panicking.
//!
//! # Example
//!
//! ```no_run
//! use quilt_cuda::{CudaConfig, CudaSolver};
//! use quilt_sweep::physics::{Gas, Primitive};
//! use quilt_sweep::{Batch, BatchLayout, PatchShape, Scheme, SweepOrder};
//!
//! let mut gpu = CudaSolver::<f64>::new(Scheme::rtvd(), Gas::ideal(1.4), CudaConfig::default())?;
//! let g = gpu.cpu().ghost_width();
//! let shapes = [PatchShape::new(7, [8, 8, 8], g, [0.1; 3])];
//! let mut batch = Batch::<f64>::new(BatchLayout::one_per_slot(64, 5, &shapes)?);
//! let u = Primitive::at_rest(1.0, 1.0).to_conserved(&gpu.cpu().gas());
//! let n = 8 + 2 * g;
//! for k in 0..n { for j in 0..n { for i in 0..n { for c in 0..5 {
//!     batch.set(0, c, [i, j, k], u[c as usize])?;
//! }}}}
//! let dt = gpu.cpu().max_dt(&batch, 0.8)?;
//! let report = gpu.advance(&mut batch, dt, SweepOrder::Xyz)?;
//! assert_eq!(report.cells, 512);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod bandwidth;
mod buffer;
pub mod cache;
mod copies;
mod device;
mod eos;
mod error;
mod params;
mod plan;
pub mod probe;
mod real;
mod registry;
mod solver;
pub mod source;

pub use bandwidth::{Bandwidth, measure_bandwidth};
pub use buffer::PinnedAlloc;
pub use eos::{CudaEos, IDEAL_GAS_CUH};
pub use error::CudaError;
pub use plan::{MAX_EDGE, step_traffic};
pub use probe::{Backend, DeviceInfo, Selected, probe, probe_device, select_backend};
pub use real::GpuReal;
pub use registry::HostRegistry;
pub use solver::{
    CudaConfig, CudaSolver, ExternalBox, ItemStager, KernelInfo, LayoutStager, MAX_SCALARS,
    RECENT_LAYOUTS, ResidentSeconds, SolveTotals, StagedItems, StagedLayout, StepTiming, Variant,
};

/// Compiles the kernel files of `schemes` for device `ordinal` with FMA
/// contraction off and/or on (`fma`), in parallel, so that later
/// [`CudaSolver::new`] calls find them ready (each file takes seconds).
pub fn precompile(
    ordinal: usize,
    schemes: &[quilt_sweep::Scheme],
    fma: &[bool],
) -> Result<(), CudaError> {
    let dev = device::device(ordinal)?;
    let mut wanted = Vec::new();
    for s in schemes {
        let f = match s {
            quilt_sweep::Scheme::Rtvd { .. } => source::KernelFile::Rtvd,
            quilt_sweep::Scheme::Tvd { .. } => source::KernelFile::Tvd,
            quilt_sweep::Scheme::Waf { .. } => source::KernelFile::Waf,
        };
        for &m in fma {
            if !wanted.contains(&(f, m)) {
                wanted.push((f, m));
            }
        }
    }
    device::precompile(&dev, &wanted)
}
