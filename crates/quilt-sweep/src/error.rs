//! Error types of quilt-sweep.
//!
//! Every error that concerns a patch names it by its descriptor id
//! ([`PatchDesc::id`](crate::PatchDesc::id)); cells are given in patch-local
//! coordinates relative to the first *interior* cell, so ghost cells have
//! negative indices or indices `>=` the interior size.

use thiserror::Error;

/// Invalid solver or gas configuration.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    /// `gamma` must be finite and `> 1`.
    #[error("adiabatic index gamma = {0} must be finite and > 1")]
    Gamma(f64),
    /// A parameter of an equation of state is out of range.
    #[error("equation of state parameter {name} = {value} {why}")]
    Parameter {
        /// The parameter.
        name: &'static str,
        /// The offending value.
        value: f64,
        /// What it must be.
        why: &'static str,
    },
    /// A floor must be finite and `> 0`.
    #[error("{which} floor {value} must be finite and > 0")]
    Floor {
        /// `"density"` or `"pressure"`.
        which: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A CFL number must be finite, positive and at most the scheme's limit.
    #[error("CFL number {cfl} is outside (0, {limit}] allowed by the {scheme} scheme")]
    Cfl {
        /// Requested CFL number.
        cfl: f64,
        /// The scheme's stability limit.
        limit: f64,
        /// Scheme name.
        scheme: &'static str,
    },
    /// A name (scheme, limiter, flux, precision...) that is not known.
    #[error("unknown {what} `{name}` (expected one of: {expected})")]
    UnknownName {
        /// What was being parsed.
        what: &'static str,
        /// The name given.
        name: String,
        /// The accepted names.
        expected: &'static str,
    },
}

/// Inconsistent batch layout or patch descriptors.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LayoutError {
    /// The bin edge must be at least 1.
    #[error("bin edge must be >= 1, got {0}")]
    BinEdge(u32),
    /// At least one component is required.
    #[error("number of components must be >= 1")]
    NoComponents,
    /// One placement per patch is required.
    #[error("{patches} patches but {placements} placements")]
    PlacementCount {
        /// Number of patches.
        patches: usize,
        /// Number of placements.
        placements: usize,
    },
    /// Two descriptors carry the same id.
    #[error("patch id {0} appears more than once")]
    DuplicateId(u64),
    /// The ghost width leaves no interior cell.
    #[error("patch {patch}: extent {extent:?} leaves no interior cell with ghost width {ghost}")]
    NoInterior {
        /// Patch id.
        patch: u64,
        /// Extent including ghosts.
        extent: [u32; 3],
        /// Ghost width.
        ghost: u32,
    },
    /// The patch's bin index is not below the number of bins.
    #[error("patch {patch}: bin {bin} does not exist (batch has {nbins} bins)")]
    BinIndex {
        /// Patch id.
        patch: u64,
        /// Bin index given.
        bin: u32,
        /// Number of bins.
        nbins: u32,
    },
    /// The patch sticks out of its bin.
    #[error(
        "patch {patch}: box at offset {offset:?} with extent {extent:?} does not fit in bin {bin} of edge {bin_edge}"
    )]
    OutsideBin {
        /// Patch id.
        patch: u64,
        /// Bin index.
        bin: u32,
        /// Offset inside the bin.
        offset: [u32; 3],
        /// Extent including ghosts.
        extent: [u32; 3],
        /// Bin edge.
        bin_edge: u32,
    },
    /// Two patches share cells of one bin.
    #[error("patches {a} and {b} overlap in bin {bin} (first shared cell {cell:?})")]
    Overlap {
        /// First patch id.
        a: u64,
        /// Second patch id.
        b: u64,
        /// Bin index.
        bin: u32,
        /// First shared cell, bin coordinates.
        cell: [u32; 3],
    },
    /// The cell size must be finite and positive.
    #[error("patch {patch}: cell size {dx:?} must be finite and > 0")]
    Spacing {
        /// Patch id.
        patch: u64,
        /// Cell size.
        dx: [f64; 3],
    },
    /// The flux-buffer offset disagrees with the prefix sum of face sizes.
    #[error("patch {patch}: flux offset {found} but the layout requires {expected}")]
    FluxOffset {
        /// Patch id.
        patch: u64,
        /// Offset implied by the preceding patches.
        expected: u64,
        /// Offset stored in the descriptor.
        found: u64,
    },
    /// The batch's memory is too small for a layout.
    #[error("the batch holds {have} {what} values, the layout needs {need}")]
    Capacity {
        /// `"data"` or `"flux"`.
        what: &'static str,
        /// Values the memory holds.
        have: usize,
        /// Values the layout needs.
        need: usize,
    },
    /// The batch would not be addressable.
    #[error("batch of {nbins} bins x {ncomp} components x {bin_edge}^3 cells is too large")]
    TooLarge {
        /// Number of bins.
        nbins: u32,
        /// Number of components.
        ncomp: u32,
        /// Bin edge.
        bin_edge: u32,
    },
    /// A patch index or patch data slice does not match the layout.
    #[error("{0}")]
    Access(String),
}

/// An error raised while checking or advancing a batch.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SweepError {
    /// The layout is inconsistent.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The solver configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The batch does not hold the Euler components (passive scalars, if
    /// any, follow them).
    #[error("batch has {found} components, the Euler schemes need at least {required}")]
    Components {
        /// Components in the batch layout.
        found: u32,
        /// Components required.
        required: u32,
    },
    /// A patch has fewer ghost layers than the scheme consumes in one step.
    #[error("patch {patch}: ghost width {ghost} is below the {required} the {scheme} scheme needs")]
    GhostWidth {
        /// Patch id.
        patch: u64,
        /// Ghost width of the patch.
        ghost: u32,
        /// Ghost width the scheme needs.
        required: u32,
        /// Scheme name.
        scheme: &'static str,
    },
    /// A cell holds NaN/infinite values or non-positive density or pressure.
    #[error("patch {patch}, cell {cell:?}: {what} ({value}) {stage}")]
    BadState {
        /// Patch id.
        patch: u64,
        /// Cell, relative to the first interior cell.
        cell: [i64; 3],
        /// What is wrong, e.g. `"density is not positive"`.
        what: &'static str,
        /// The offending value.
        value: f64,
        /// Where it was found: `"in the input"` or `"after the y sweep"`...
        stage: &'static str,
    },
    /// The time step exceeds the scheme's CFL limit.
    #[error(
        "time step {dt} gives Courant number {courant} above the {scheme} limit {limit} at patch {patch}, cell {cell:?}"
    )]
    Cfl {
        /// Time step given.
        dt: f64,
        /// Largest Courant number `dt (|v_d| + c_s) / dx_d`.
        courant: f64,
        /// The scheme's limit.
        limit: f64,
        /// Scheme name.
        scheme: &'static str,
        /// Patch id where the maximum occurs.
        patch: u64,
        /// Cell where the maximum occurs.
        cell: [i64; 3],
    },
    /// The time step must be finite and positive.
    #[error("time step {0} must be finite and > 0")]
    TimeStep(f64),
    /// A per-level time step table misses a level.
    #[error("patch {patch} is on level {level} but only {levels} level time steps were given")]
    MissingLevel {
        /// Patch id.
        patch: u64,
        /// Its level.
        level: u32,
        /// Length of the table.
        levels: usize,
    },
}
