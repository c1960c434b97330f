//! # quilt-integrator
//!
//! The time integrator of quilt: one coarse step of a block-structured AMR
//! hierarchy with uniform time stepping (the mode of Raghavan & Vadhiyar
//! 2015), with packed bins solved batch by batch through a [`SolveBackend`]
//! while the CPU prepares the next batch and closes the previous one.
//!
//! | module | holds |
//! |---|---|
//! | [`deck`] | the TOML input deck: sections, defaults, validation with key and line |
//! | [`cli`] | command-line overrides (`--config`, `--max-steps`, `--end-time`, `--out`, `--backend`) |
//! | [`backend`] | [`SolveBackend`], the CPU backend over `quilt_sweep::Solver`, the CUDA backend over `quilt_cuda::CudaSolver`, the deck's choice between them |
//! | [`Integrator`] | the hierarchy, its data, one coarse step, regrid |
//! | `plan` | per-hierarchy plans: ghost fill, bins, work descriptions, flux probes, registers |
//! | `stages` | assemble, prepare and close of one batch |
//! | `pipeline` | the batch loop, sequential or pipelined |
//! | [`resident`] | device residency: the whole hierarchy kept in the backend |
//! | `residency` | `run.residency = "auto"`: the resident state weighed against device memory |
//! | `schedule` | adaptive / static batch selection through quilt-batch |
//! | [`stop`] | the graceful stop on SIGINT, SIGTERM and SIGHUP |
//! | [`timing`] | time per phase |
//! | [`problem`] | [`Problem`]: initial state, refinement criteria, boundary conditions; the deck's sphere, Sedov, Riemann and uniform problems |
#![warn(missing_docs)]

pub mod backend;
pub mod calibration;
mod cfl;
pub mod cli;
pub mod deck;
mod error;
mod integrator;
mod pipeline;
mod plan;
pub mod problem;
mod ranks;
mod residency;
pub mod resident;
mod ring;
mod schedule;
mod stages;
pub mod stop;
mod tagging;
pub mod timing;

pub use backend::{
    BoxPart, BoxRate, CpuBackend, CudaBackend, DeviceMemory, InPlaceBox, ItemStage, LayoutStage,
    Restricted, SolveBackend, SolveError, StagedItems, StagedLayout, backend_for, load_in_place,
};
pub use error::IntegratorError;
pub use integrator::{Integrator, IntegratorBuilder, RunTotals, StepInfo};
pub use problem::{AfterStep, DeckProblem, Problem};
pub use timing::{EstimateErrors, PhaseTimes};

/// The floating-point types the integrator runs in: quilt's precision
/// trait ([`quilt_mesh::Real`], also the sweeps') for the types the CUDA
/// kernels support (`f32`, `f64`).
pub trait Real: quilt_cuda::GpuReal {}

impl<T: quilt_cuda::GpuReal> Real for T {}
