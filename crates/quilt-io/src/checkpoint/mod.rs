//! HDF5 checkpoints: everything a run needs to continue bit for bit.
//!
//! The format (tagged `quilt-checkpoint`, version
//! [`CHECKPOINT_VERSION`]) is described in [`mod@format`] and in
//! `docs/quilt-io.md`.

mod chunked;
pub mod format;
mod meta;
mod read;
mod write;

pub use format::{CHECKPOINT_FORMAT, CHECKPOINT_VERSION, CheckpointReal, MAX_LEVELS};
pub use meta::{CheckpointInfo, InvalidField, RunState};
pub use read::{Checkpoint, read_checkpoint, read_checkpoint_info};
pub use write::write_checkpoint;
