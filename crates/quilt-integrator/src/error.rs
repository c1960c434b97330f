//! The integrator's error type.

use quilt_mesh::PatchId;
use thiserror::Error;

use crate::backend::SolveError;
use crate::deck::DeckError;

/// Everything that can stop a run.
#[derive(Debug, Error)]
pub enum IntegratorError {
    /// The deck was rejected.
    #[error(transparent)]
    Deck(#[from] DeckError),
    /// A state with NaN/infinite values or non-positive density or pressure.
    #[error(
        "step {step} (t = {time}): level {level}, patch {patch}, cell {cell:?}: {what} ({value}) {stage}"
    )]
    BadState {
        /// The step being taken (1-based: the first step is step 1).
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// Level of the patch.
        level: usize,
        /// The patch's stable id.
        patch: PatchId,
        /// The cell, in the level's global index space.
        cell: [i64; 3],
        /// What is wrong (`"density is not positive"`...).
        what: &'static str,
        /// The offending value.
        value: f64,
        /// When it was found (`"at the start of the step"`, `"after the y sweep"`...).
        stage: &'static str,
    },
    /// The scheme applied a density or pressure floor and the deck says
    /// `hydro.on_floor = "error"`.
    #[error(
        "step {step} (t = {time}): the density floor was applied {density} times and the pressure floor {pressure} times (hydro.on_floor = \"error\"); {location}"
    )]
    Floor {
        /// The step that applied them.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// Density floor applications.
        density: u64,
        /// Pressure floor applications.
        pressure: u64,
        /// Where: the first floored cell, or why none is known.
        location: String,
    },
    /// The solve backend failed for another reason.
    #[error("step {step}: {backend} backend: {source}")]
    Solve {
        /// The step being taken.
        step: u64,
        /// Backend name.
        backend: String,
        /// The backend's error.
        #[source]
        source: SolveError,
    },
    /// A mesh operation (ghost fill, restriction, refluxing, hierarchy
    /// construction) failed.
    #[error("{context}: {source}")]
    Mesh {
        /// What the integrator was doing.
        context: String,
        /// The mesh error.
        #[source]
        source: quilt_mesh::MeshError,
    },
    /// Tagging, clustering or regrid failed.
    #[error("regrid at step {step}: {source}")]
    Regrid {
        /// The step after which the regrid ran.
        step: u64,
        /// The error.
        #[source]
        source: quilt_mesh::regrid::RegridError,
    },
    /// Tagging failed.
    #[error("tagging at step {step}: {source}")]
    Tag {
        /// The step after which tagging ran.
        step: u64,
        /// The error.
        #[source]
        source: quilt_mesh::tag::TagError,
    },
    /// Bin packing failed.
    #[error("packing the hierarchy into bins: {0}")]
    Pack(#[from] quilt_pack::PackError),
    /// Batch selection or the cost model failed.
    #[error("batch selection: {0}")]
    Batch(#[from] quilt_batch::BatchError),
    /// The solve backend the deck asks for could not be created (no usable
    /// CUDA device or compiler, a kernel that does not compile).
    #[error("solve backend: {0}")]
    Backend(#[source] quilt_cuda::CudaError),
    /// A batch layout could not be built.
    #[error("batch layout: {0}")]
    Layout(#[from] quilt_sweep::LayoutError),
    /// A checkpoint could not be written or read.
    #[error(transparent)]
    Io(#[from] quilt_io::IoError),
    /// Host memory for a batch could not be had.
    #[error("batch memory: {0}")]
    HostMemory(#[from] quilt_sweep::AllocError),
    /// The deck contradicts the hierarchy it is to continue (a restart
    /// with another domain, base grid, ratio or periodicity, or fewer
    /// levels than exist).
    #[error("{source_name}: deck key {key} = {deck} contradicts the stored mesh's {stored}")]
    Contradiction {
        /// Where the hierarchy came from (the checkpoint's path).
        source_name: String,
        /// The dotted deck key.
        key: String,
        /// The deck's value.
        deck: String,
        /// The hierarchy's value.
        stored: String,
    },
    /// A configuration the integrator cannot run.
    #[error("{0}")]
    Config(String),
    /// Ranks could not agree or talk (a peer stopped, a wait ran out, a
    /// malformed message).
    #[error("ranks: {0}")]
    Ranks(#[from] quilt_dist::DistError),
    /// An invariant of the integrator itself failed (a bug).
    #[error("internal error: {0}")]
    Internal(String),
}

impl IntegratorError {
    /// Wraps a mesh error with what was being done.
    pub(crate) fn mesh(context: impl Into<String>) -> impl FnOnce(quilt_mesh::MeshError) -> Self {
        let context = context.into();
        move |source| IntegratorError::Mesh { context, source }
    }
}
