//! # quilt
//!
//! Block-structured adaptive mesh refinement (AMR) hydrodynamics for GPUs.
//! This facade re-exports the member crates so that applications depend on
//! one package:
//!
//! | module | crate | answers |
//! |---|---|---|
//! | [`mesh`] | `quilt-mesh` | where are the cells? (index space, patch hierarchy, ghost fill, restriction, flux registers, tagging, clustering, regrid) |
//! | [`pack`] | `quilt-pack` | how do patches fill GPU bins? (extreme-point 3D bin packing) |
//! | [`batch`] | `quilt-batch` | which bins go to the GPU next? (cost model, calibration, knapsack selection) |
//! | [`sweep`] | `quilt-sweep` | how is a batch advanced? (Euler physics, batch layout, RTVD/TVD/WAF) |
//! | [`cuda`] | `quilt-cuda` | how is a batch advanced on the GPU? (CUDA kernels, NVRTC, packed bins) |
//! | [`integrator`] | `quilt-integrator` | how does a run advance? (input deck, problems, CFL step, pipelined batches, refluxing, regrid) |
//! | [`io`] | `quilt-io` | how is a run written? (VTKHDF output for ParaView, checkpoints) |
//! | [`dist`] | `quilt-dist` | how is a run spread over ranks? (distribution, halo exchange, transports) |
#![warn(missing_docs)]

pub use quilt_batch as batch;
pub use quilt_cuda as cuda;
pub use quilt_dist as dist;
pub use quilt_integrator as integrator;
pub use quilt_io as io;
pub use quilt_mesh as mesh;
pub use quilt_pack as pack;
pub use quilt_sweep as sweep;
