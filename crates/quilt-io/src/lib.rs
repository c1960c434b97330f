//! # quilt-io
//!
//! quilt's files:
//! - **ParaView output**: one VTKHDF 1.0 `OverlappingAMR` file (`.hdf`) per
//!   output holding every level, plus a `NAME.hdf.series` JSON time series
//!   ([`vtkhdf`]). The output is described by the mesh-agnostic
//!   [`AmrOutput`].
//! - **Checkpoints**: HDF5 files holding everything a bitwise restart needs.
//!
//! Every file is written atomically (temporary file in the same directory,
//! then rename), so a failed or interrupted write leaves earlier files
//! intact. A process killed mid-write leaves its temporary file behind;
//! [`remove_stale_temporaries`] sweeps those of dead processes, and every
//! atomic write first sweeps the dead temporaries of its own target. The
//! file layouts are documented in `docs/quilt-io.md`.
#![warn(missing_docs)]

mod atomic;
pub mod checkpoint;
mod error;
pub mod vtkhdf;

pub use atomic::{parse_temp_name, remove_stale_temporaries};
pub use checkpoint::{
    Checkpoint, CheckpointInfo, CheckpointReal, InvalidField, RunState, read_checkpoint,
    read_checkpoint_info, write_checkpoint,
};
pub use error::IoError;
pub use vtkhdf::{
    AmrOutput, CellArray, CellFields, CellValues, FileSeries, LevelOutput, VtkHdfSeries,
    euler_output, euler_output_with, write_vtkhdf,
};
