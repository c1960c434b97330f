//! The sections of the input deck, each a plain serde struct with its
//! documented defaults.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A physical boundary condition of one domain face.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Boundary {
    /// Zero gradient: ghost cells copy the nearest interior cell.
    Outflow,
    /// Mirror image with the normal momentum negated (a solid wall).
    Reflecting,
    /// The opposite face's cells (both faces of the axis must say so).
    Periodic,
}

/// Floating-point precision of the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision.
    F32,
    /// Double precision.
    F64,
}

impl Precision {
    /// `"f32"` or `"f64"`, as the deck spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F64 => "f64",
        }
    }

    /// Bytes of one value.
    pub fn bytes(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F64 => 8,
        }
    }
}

/// Which solve backend runs the batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// CUDA when a usable device exists, else the CPU.
    Auto,
    /// The CPU (rayon) reference.
    Cpu,
    /// CUDA; an error when no usable device exists.
    Cuda,
}

/// Where the hierarchy's state lives between steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Residency {
    /// In the backend when the state and the step's workspaces fit
    /// `run.device_memory_fraction` of its free memory (and
    /// `run.device_memory_limit`), else in host memory; decided again at
    /// every regrid, so a hierarchy that outgrows the device continues
    /// host-staged instead of failing. A backend without device memory of
    /// its own (the CPU) runs host-staged unless `run.device_memory_limit`
    /// gives it a budget.
    Auto,
    /// In host memory: every step prepares batches of patches on the CPU,
    /// solves them on the backend and closes them back (the mode for
    /// problems larger than device memory).
    Host,
    /// In the backend for the whole step: the ghost fill, the solve,
    /// refluxing and restriction run there over all patches at once; the
    /// host copy is brought up to date only at regrids, outputs and
    /// checkpoints.
    Device,
}

/// How batches are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchMode {
    /// The paper's knapsack selection: each batch's preparation fits the
    /// estimated solve time of the batch in flight.
    Adaptive,
    /// The paper's default scheme: a fixed number of patches per batch.
    Static,
}

/// How patches are laid out in a batch's bins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchLayoutKind {
    /// Patches packed into cubic bins by extreme-point bin packing, solved
    /// by the packed kernels (quilt's scheme).
    Packed,
    /// The paper's default scheme: every patch alone in its own bin, solved
    /// by per-patch kernels (one thread block per patch on a GPU). For
    /// comparison; it needs `max_bins` of at least `n_fixed` (or 0) to
    /// batch as the paper does.
    PerPatch,
}

/// Field a refinement criterion looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TagField {
    /// Mass density.
    Density,
    /// Pressure (derived from the conserved variables).
    Pressure,
}

/// Refinement detector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Detector {
    /// Jump to a neighbour larger than `tol` times its distance.
    Gradient,
    /// A gradient jump that also dominates the wider stencil.
    Shock,
}

/// Initial condition kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InitialKind {
    /// A dense, high-pressure sphere at rest.
    Sphere,
    /// A point explosion in a cold gas.
    Sedov,
    /// A planar Riemann problem.
    Riemann,
    /// A uniform state.
    Uniform,
}

/// A coordinate axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// x.
    X,
    /// y.
    Y,
    /// z.
    Z,
}

impl Axis {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }
}

/// Slope limiter of coarse-to-fine interpolation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interpolation {
    /// van Leer's monotonized central slopes.
    Mc,
    /// Minmod slopes.
    Minmod,
    /// Piecewise constant (zero slopes).
    Constant,
}

/// `[domain]`: the physical box and the level-0 grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DomainSection {
    /// Low corner of the physical domain. Default `[0, 0, 0]`.
    pub lo: [f64; 3],
    /// High corner of the physical domain. Default `[1, 1, 1]`.
    pub hi: [f64; 3],
    /// Level-0 cells per axis. Default `[32, 32, 32]`.
    pub base_cells: [i32; 3],
}

impl Default for DomainSection {
    fn default() -> Self {
        Self {
            lo: [0.0; 3],
            hi: [1.0; 3],
            base_cells: [32; 3],
        }
    }
}

/// `[amr]`: levels, patch sizes, clustering and regrid cadence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AmrSection {
    /// Levels including the base level (1 = uniform grid). Default 4; at
    /// most 8.
    pub max_levels: usize,
    /// Refinement ratio of each finer level (2 or 4): one value for all
    /// levels, or `max_levels - 1` values. Default `[2]`.
    pub ratios: Vec<i32>,
    /// Fewest cells per patch side, ghosts included. Default 16 (the paper's).
    pub min_patch: i32,
    /// Most cells per patch side, ghosts included; at most the bin edge.
    /// Default 64.
    pub max_patch: i32,
    /// Most interior cells per side of a level-0 patch (the base grid is
    /// cut into near-equal patches no larger). Default 32.
    pub base_patch: i32,
    /// Berger–Rigoutsos acceptance efficiency (tagged / cells of a box).
    /// Default 0.7.
    pub efficiency: f64,
    /// Two boxes merge when their bounding box reaches this efficiency.
    /// Default 0.85.
    pub combine_efficiency: f64,
    /// Coarse cells kept between new patches and uncovered coarse cells
    /// (at least what the ghost width needs). Default 1.
    pub nesting_buffer: i32,
    /// Buffer cells added around tags, so features stay inside fine patches
    /// between regrids. Default 2.
    pub tag_buffer: i32,
    /// Coarse steps between regrids; 0 keeps the initial hierarchy.
    /// Default 4.
    pub regrid_interval: u64,
    /// Slope limiter of the coarse-to-fine interpolation: `mc`, `minmod`
    /// or `constant`. Default `mc`.
    pub interpolation: Interpolation,
    /// Uniform patches instead of Berger–Rigoutsos clustering: fine
    /// levels made of the aligned blocks of this many interior cells per
    /// side that hold tags (a multiple of every ratio whose patches,
    /// ghosts included, lie within `min_patch ..= max_patch`); blocks at
    /// the edge of the coarser level keep only their parts inside it. 0
    /// (the default): Berger–Rigoutsos, patches of any shape.
    pub blocks: i32,
}

impl Default for AmrSection {
    fn default() -> Self {
        Self {
            max_levels: 4,
            ratios: vec![2],
            min_patch: 16,
            max_patch: 64,
            base_patch: 32,
            efficiency: 0.7,
            combine_efficiency: 0.85,
            nesting_buffer: 1,
            tag_buffer: 2,
            regrid_interval: 4,
            interpolation: Interpolation::Mc,
            blocks: 0,
        }
    }
}

/// One refinement criterion, an entry of `[[tagging]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagSection {
    /// Field the detector runs on: `density` or `pressure`.
    pub field: TagField,
    /// Detector: `gradient` (jump over a face above `tol · h`) or `shock`
    /// (the jump must also dominate the wider stencil, see `onset`).
    pub detector: Detector,
    /// Tolerance in field units per unit length (`>= 0`).
    pub tol: f64,
    /// Shock onset ratio in `[0, 1]` (shock detector only). Default 0.85.
    #[serde(default = "default_onset")]
    pub onset: f64,
}

fn default_onset() -> f64 {
    0.85
}

/// The default criteria: SAMRAI's Euler example tags the sphere problem by
/// pressure gradient and pressure shock.
pub fn default_tagging() -> Vec<TagSection> {
    vec![
        TagSection {
            field: TagField::Pressure,
            detector: Detector::Gradient,
            tol: 20.0,
            onset: default_onset(),
        },
        TagSection {
            field: TagField::Pressure,
            detector: Detector::Shock,
            tol: 4.0,
            onset: default_onset(),
        },
    ]
}

/// `[hydro]`: scheme, limiter, CFL number and gas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HydroSection {
    /// `rtvd`, `tvd` or `waf`. Default `rtvd`.
    pub scheme: String,
    /// The scheme's limiter (`vanleer`/`minmod` for RTVD, `mc`/`minmod`
    /// for TVD, `superbee`/`vanleer`/`vanalbada`/`minbee` for WAF); empty
    /// for the scheme's default.
    pub limiter: String,
    /// Courant number, in `(0, limit]` of the scheme (1 for RTVD and WAF,
    /// 0.5 for TVD). Default 0.8.
    pub cfl: f64,
    /// Ratio of specific heats, `> 1`. Default 1.4.
    pub gamma: f64,
    /// Smallest density the scheme may produce. Default 1e-10.
    pub density_floor: f64,
    /// Smallest pressure the scheme may produce. Default 1e-10.
    pub pressure_floor: f64,
    /// What a floor application means: `apply` (raise the value, count
    /// it, log the first with its cell) or `error` (stop the run, naming
    /// the cell). Default `apply`.
    pub on_floor: FloorAction,
    /// Names of passive scalars carried with the gas (a dye, a species),
    /// stored after the Euler components as partial densities `ρ φ`
    /// ([`quilt_sweep::scheme::scalar`]); at most
    /// [`MAX_SCALARS`](super::MAX_SCALARS). The decks' initial conditions
    /// set each to the density of the gas that starts inside the sphere,
    /// the Sedov deposit or the Riemann problem's left state (everywhere
    /// for `uniform`). Default none.
    pub scalars: Vec<String>,
}

/// What the integrator does when the scheme applies a density or pressure
/// floor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FloorAction {
    /// Raise the value to the floor and go on; the first application is
    /// logged with its location, all are counted.
    #[default]
    Apply,
    /// Stop the run with an error naming the step and the floored cell.
    Error,
}

impl Default for HydroSection {
    fn default() -> Self {
        Self {
            scheme: "rtvd".into(),
            limiter: String::new(),
            cfl: 0.8,
            gamma: 1.4,
            density_floor: 1e-10,
            pressure_floor: 1e-10,
            on_floor: FloorAction::Apply,
            scalars: Vec::new(),
        }
    }
}

/// `[boundary]`: the condition on each face of the domain: `outflow`
/// (zero gradient), `reflecting` (mirror, normal momentum negated) or
/// `periodic` (both faces of an axis). Default `outflow` everywhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BoundarySection {
    /// Low x face.
    pub x_lo: Boundary,
    /// High x face.
    pub x_hi: Boundary,
    /// Low y face.
    pub y_lo: Boundary,
    /// High y face.
    pub y_hi: Boundary,
    /// Low z face.
    pub z_lo: Boundary,
    /// High z face.
    pub z_hi: Boundary,
}

impl Default for BoundarySection {
    fn default() -> Self {
        Self::all(Boundary::Outflow)
    }
}

impl BoundarySection {
    /// The six conditions in face order `x_lo, x_hi, y_lo, y_hi, z_lo, z_hi`.
    pub fn faces(&self) -> [Boundary; 6] {
        [
            self.x_lo, self.x_hi, self.y_lo, self.y_hi, self.z_lo, self.z_hi,
        ]
    }

    /// All six faces set to `b`.
    pub fn all(b: Boundary) -> Self {
        Self {
            x_lo: b,
            x_hi: b,
            y_lo: b,
            y_hi: b,
            z_lo: b,
            z_hi: b,
        }
    }
}

/// `[initial]`: which initial condition, with one optional sub-table per
/// kind holding its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InitialSection {
    /// `sphere`, `sedov`, `riemann` or `uniform`. Default `sphere`.
    pub kind: InitialKind,
    /// Parameters of `kind = "sphere"`.
    pub sphere: SphereIc,
    /// Parameters of `kind = "sedov"`.
    pub sedov: SedovIc,
    /// Parameters of `kind = "riemann"`.
    pub riemann: RiemannIc,
    /// Parameters of `kind = "uniform"`.
    pub uniform: UniformIc,
}

impl Default for InitialSection {
    fn default() -> Self {
        Self {
            kind: InitialKind::Sphere,
            sphere: SphereIc::default(),
            sedov: SedovIc::default(),
            riemann: RiemannIc::default(),
            uniform: UniformIc::default(),
        }
    }
}

/// `[initial.sphere]`: a gas sphere at rest in a uniform gas at rest (the
/// sphere problem of SAMRAI's Euler application).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SphereIc {
    /// Centre. Default `[0.5, 0.5, 0.5]`.
    pub center: [f64; 3],
    /// Radius. Default 0.125.
    pub radius: f64,
    /// Density inside. Default 8.
    pub rho_in: f64,
    /// Pressure inside. Default 40.
    pub p_in: f64,
    /// Density outside. Default 1.
    pub rho_out: f64,
    /// Pressure outside. Default 1.
    pub p_out: f64,
}

impl Default for SphereIc {
    fn default() -> Self {
        Self {
            center: [0.5; 3],
            radius: 0.125,
            rho_in: 8.0,
            p_in: 40.0,
            rho_out: 1.0,
            p_out: 1.0,
        }
    }
}

/// `[initial.sedov]`: energy `energy` deposited uniformly (as pressure) in
/// a sphere of radius `radius` around `center` in a cold uniform gas.
///
/// Inside the sphere the pressure is `p_ambient + (γ−1) energy / V`, with
/// `V` the volume the level's cell sample points inside the sphere stand
/// for, so the cell averages of every level hold exactly `energy` above
/// the ambient gas (`4/3 π radius³` would be off by the discretisation of
/// a sphere a few cells across). `energy` is the whole sphere's: a blast
/// centred on a corner of the domain (reflecting walls) holds `energy / 8`
/// of it, one centred on a face `energy / 2`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SedovIc {
    /// Centre. Default `[0.5, 0.5, 0.5]`.
    pub center: [f64; 3],
    /// Blast energy of the whole sphere, above the ambient gas. Default 1.
    pub energy: f64,
    /// Radius of the deposit. Default 0.04.
    pub radius: f64,
    /// Ambient density. Default 1.
    pub rho: f64,
    /// Ambient pressure. Default 1e-5.
    pub p_ambient: f64,
}

impl Default for SedovIc {
    fn default() -> Self {
        Self {
            center: [0.5; 3],
            energy: 1.0,
            radius: 0.04,
            rho: 1.0,
            p_ambient: 1e-5,
        }
    }
}

/// `[initial.riemann]`: a planar Riemann problem (e.g. a shock tube) with
/// its discontinuity at `x0` across `axis`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RiemannIc {
    /// Normal axis: `x`, `y` or `z`. Default `x`.
    pub axis: Axis,
    /// Position of the discontinuity. Default 0.5.
    pub x0: f64,
    /// `[rho, u_normal, p]` on the low side. Default Sod's `[1, 0, 1]`.
    pub left: [f64; 3],
    /// `[rho, u_normal, p]` on the high side. Default Sod's `[0.125, 0, 0.1]`.
    pub right: [f64; 3],
}

impl Default for RiemannIc {
    fn default() -> Self {
        Self {
            axis: Axis::X,
            x0: 0.5,
            left: [1.0, 0.0, 1.0],
            right: [0.125, 0.0, 0.1],
        }
    }
}

/// `[initial.uniform]`: a uniform state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UniformIc {
    /// Density. Default 1.
    pub rho: f64,
    /// Velocity. Default `[0, 0, 0]`.
    pub velocity: [f64; 3],
    /// Pressure. Default 1.
    pub p: f64,
}

impl Default for UniformIc {
    fn default() -> Self {
        Self {
            rho: 1.0,
            velocity: [0.0; 3],
            p: 1.0,
        }
    }
}

/// `[run]`: when to stop, precision, backend, threads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunSection {
    /// Simulated time to reach. Default 0.2 (about when the sphere's shock
    /// has travelled 0.25 from the centre).
    pub end_time: f64,
    /// Most coarse steps; 0 for no limit. Default 0.
    pub max_steps: u64,
    /// `f32` or `f64`. Default `f64`.
    pub precision: Precision,
    /// `auto` (CUDA when a usable device exists, else the CPU), `cpu` or
    /// `cuda`. Default `auto`.
    pub backend: BackendChoice,
    /// CPU threads; 0 for one per core. Default 0.
    pub threads: usize,
    /// `auto` (the backend when the state fits its memory, else the
    /// host), `host` (batches staged through host memory every step) or
    /// `device` (the state stays in the backend between regrids). Default
    /// `auto`.
    pub residency: Residency,
    /// Fraction of the device's free memory that `residency = "auto"`
    /// lets the resident state take (the rest stays for the kernels'
    /// tables, other processes and fragmentation). Default 0.9.
    pub device_memory_fraction: f64,
    /// Bytes the resident state may take at most under `residency =
    /// "auto"`; 0 for no limit beyond the fraction. Default 0.
    pub device_memory_limit: u64,
}

impl Default for RunSection {
    fn default() -> Self {
        Self {
            end_time: 0.2,
            max_steps: 0,
            precision: Precision::F64,
            backend: BackendChoice::Auto,
            threads: 0,
            residency: Residency::Auto,
            device_memory_fraction: 0.9,
            device_memory_limit: 0,
        }
    }
}

/// `[output]`: where and how often to write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutputSection {
    /// Output directory. Default `out`.
    pub dir: PathBuf,
    /// Base name of output files. Default `quilt`.
    pub name: String,
    /// Coarse steps between ParaView outputs; 0 writes only the initial
    /// and final states. Default 10.
    pub interval: u64,
    /// Coarse steps between checkpoints; 0 writes none. Default 0.
    pub checkpoint_interval: u64,
    /// Write the hierarchy file (JSON, for benchmark replay) at every
    /// regrid. Default true.
    pub hierarchy_files: bool,
    /// Fields derived from each cell's state written besides density,
    /// velocity, pressure, total energy and the passive scalars'
    /// fractions: any of `sound_speed`, `mach` and
    /// `specific_internal_energy` (`quilt_sweep::physics::Derived`),
    /// computed by the backend's fluid. Default none.
    pub derived: Vec<String>,
}

impl Default for OutputSection {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("out"),
            name: "quilt".into(),
            interval: 10,
            checkpoint_interval: 0,
            hierarchy_files: true,
            derived: Vec::new(),
        }
    }
}

/// `[batching]`: how bins are grouped into batches and how the stages
/// overlap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchingSection {
    /// `adaptive` (the paper's knapsack selection) or `static` (a fixed
    /// number of patches per batch). Default `adaptive`.
    pub mode: BatchMode,
    /// Patches per batch of the static mode. Default 120 (the paper's Tesla
    /// value: streams × multiprocessors).
    pub n_fixed: usize,
    /// Prepare batch i+1 and close batch i−1 while batch i is solved (with
    /// more than one thread). Default true.
    pub pipelined: bool,
    /// Edge of the cubic bins. Default 64 (the paper's).
    pub bin_edge: u32,
    /// Most bins in one batch (bounds the two batch buffers); 0 for no
    /// limit. Default 8.
    pub max_bins: usize,
    /// `packed` (bin packing, packed kernels) or `per_patch` (the paper's
    /// default scheme). Default `packed`.
    pub layout: BatchLayoutKind,
    /// Directory of the cost model's coefficient files, one per backend and
    /// device: read at start (no calibration when this device's file is
    /// there) and written after a calibration. Empty (the default): every
    /// run calibrates and nothing is stored.
    pub coefficients_dir: String,
}

impl Default for BatchingSection {
    fn default() -> Self {
        Self {
            mode: BatchMode::Adaptive,
            n_fixed: 120,
            pipelined: true,
            bin_edge: 64,
            max_bins: 8,
            layout: BatchLayoutKind::Packed,
            coefficients_dir: String::new(),
        }
    }
}
