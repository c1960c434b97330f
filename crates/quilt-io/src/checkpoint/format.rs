//! Names and constants of the checkpoint format (version 1).
//!
//! ```text
//! /                              root
//!   @format          fixed ASCII "quilt-checkpoint"
//!   @format_version  uint32      1
//!   @real_type       fixed ASCII "f32" | "f64"
//!   /run
//!     @time  float64             simulation time, finite and >= 0
//!     @step  uint64              coarse steps taken
//!     deck   uint8[n]            the input deck, UTF-8
//!     /counters   @<name> uint64 one attribute per counter
//!     /values     @<name> float64 one attribute per value, finite
//!   /geometry
//!     @prob_lo float64[3]  @prob_hi float64[3]  @base_cells int32[3]
//!     @ratios  int32[L]    (ratio of each level to the one below; 1 for level 0)
//!     @periodic uint8[3]
//!   /hierarchy
//!     @ghost int32   @size_limits int32[2] (min, max)   @num_levels uint32 (1..=32)
//!     /level<l>
//!       ids      uint32[n]       stable patch ids
//!       parents  int64[n]        parent patch id on level l-1, -1 on level 0
//!       boxes    int32[n, 6]     lo.x lo.y lo.z hi.x hi.y hi.z (inclusive interior)
//!   /state
//!     @ncomp uint32                   >= 1
//!     offsets  uint64[npatches + 1]   start of each patch in old/new
//!     old      T[total]   chunked, Fletcher-32 checksummed
//!     new      T[total]   chunked, Fletcher-32 checksummed
//! ```
//!
//! Written in the HDF5 1.10 file format, whose metadata (object headers
//! with their attributes, group links, chunk indices) carries checksums;
//! every dataset above is chunked with the Fletcher-32 filter (the small
//! ones as one chunk), so HDF5 refuses damaged bytes on read.
//!
//! Patches appear in hierarchy order (level by level, in the order the
//! hierarchy holds them), each as its whole ghost-grown array in
//! quilt-mesh's layout (component-major, then `z`, `y`, `x` fastest), so the
//! bytes read back are the bytes written.
//!
//! The rules on the scalars (`RunState::validate` and the size checks in
//! `meta`) hold on both sides: the writer refuses to write a state that
//! breaks them, the readers report a file that breaks them as damaged.

use hdf5::H5Type;
use quilt_mesh::Real;

/// The `format` attribute of every quilt checkpoint.
pub const CHECKPOINT_FORMAT: &str = "quilt-checkpoint";

/// The format version this build writes and reads.
pub const CHECKPOINT_VERSION: u32 = 1;

/// Most refinement levels a checkpoint may hold. Level index spaces are
/// `i32` and every level refines the one below by at least 2, so no real
/// hierarchy is deeper; a larger stored count is damage, refused before it
/// can drive a loop over billions of level groups.
pub const MAX_LEVELS: usize = 32;

/// Elements per HDF5 chunk of the state datasets: whole chunks are written
/// at once, and the checksum covers each chunk.
pub(crate) const STATE_CHUNK: usize = 1 << 18;

/// A floating-point type a checkpoint can hold: `f32` or `f64`.
pub trait CheckpointReal: Real + H5Type {}

impl<T: Real + H5Type> CheckpointReal for T {}
