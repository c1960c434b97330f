//! The run-level part of a checkpoint: time, step, counters, deck.

use std::collections::BTreeMap;

/// Everything about a run, besides the hierarchy and its data, that a
/// restart needs to continue exactly where the run stopped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunState {
    /// Simulation time.
    pub time: f64,
    /// Coarse steps taken.
    pub step: u64,
    /// Named integer counters (regrids done, outputs written, cells
    /// updated, next patch id, ...).
    pub counters: BTreeMap<String, u64>,
    /// Named real values (last time step, cost-model state, ...), stored
    /// bit-exactly.
    pub values: BTreeMap<String, f64>,
    /// The input deck the run was started with, verbatim.
    pub deck: String,
}

/// What [`super::read_checkpoint_info`] reports without loading the state.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointInfo {
    /// Format version of the file.
    pub version: u32,
    /// Element type of the state: `"f32"` or `"f64"`.
    pub real_type: String,
    /// The run state.
    pub run: RunState,
    /// Number of levels.
    pub num_levels: usize,
    /// Number of patches on all levels.
    pub num_patches: usize,
    /// Components per cell.
    pub ncomp: usize,
}
