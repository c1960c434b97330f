//! Turning what the kernels flagged into the errors of the CPU solver.

use quilt_sweep::{Batch, PatchDesc, Real, Solver, SweepError, SweepOrder, Workspace};

use super::run::DtSpec;
use crate::error::CudaError;
use crate::plan::PassSpec;

const NONFINITE: [&str; 5] = [
    "density is not finite",
    "x momentum is not finite",
    "y momentum is not finite",
    "z momentum is not finite",
    "energy is not finite",
];
const AFTER_SWEEP: [&str; 3] = [
    "after the x sweep",
    "after the y sweep",
    "after the z sweep",
];
const AFTER_STAGE: [&str; 2] = ["after TVD stage 1", "after TVD stage 2"];

/// Decodes an error key of slot `slot` (see `check_finite` in
/// `kernels/common.cuh`) into the [`SweepError::BadState`] the CPU driver
/// reports for the same cell.
pub(crate) fn decode_sweep_error(
    descs: &[PatchDesc],
    passes: &[PassSpec],
    slot: usize,
    key: u64,
) -> SweepError {
    let patch = (key >> 23) as usize;
    let lin = (key >> 5) & 0x3ffff;
    let (tb, ta, i) = (
        (lin >> 12) as i64,
        ((lin >> 6) & 63) as i64,
        (lin & 63) as i64,
    );
    let comp = ((key >> 2) & 7) as usize;
    let value = match key & 3 {
        0 => f64::NAN,
        1 => f64::INFINITY,
        _ => f64::NEG_INFINITY,
    };
    let tvd = passes.iter().any(|p| p.sub != 0);
    // The checked pass of a slot is its last one (TVD: the stage update).
    let pass = passes
        .iter()
        .rev()
        .find(|p| p.slot as usize == slot)
        .copied()
        .unwrap_or(passes[0]);
    let axis = pass.geom.axis;
    let (a, b) = match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let d = descs.get(patch).copied().unwrap_or_default();
    let g = i64::from(d.ghost);
    let mut cell = [0i64; 3];
    cell[axis] = g - i64::from(pass.geom.read_halo) + i - g;
    cell[a] = ta - g;
    cell[b] = tb - g;
    SweepError::BadState {
        patch: d.id,
        cell,
        what: NONFINITE[comp.min(4)],
        value,
        stage: if tvd {
            AFTER_STAGE[(pass.stage as usize).min(1)]
        } else {
            AFTER_SWEEP[axis]
        },
    }
}

/// The error of a step the GPU refused, reproduced by the CPU solver on a
/// copy of the (untouched) input batch so that it is exactly the CPU's. If
/// the CPU finds none, the GPU's own finding is returned.
#[allow(clippy::too_many_arguments)]
pub(crate) fn input_error<T: Real>(
    cpu: &Solver,
    batch: &Batch<T>,
    dt: DtSpec<'_>,
    order: SweepOrder,
    bad: bool,
    courant: f64,
    gpu: Option<SweepError>,
) -> CudaError {
    let mut copy = batch.clone();
    let mut ws = Workspace::new();
    let cpu_result = match dt {
        DtSpec::Uniform(dt) => cpu.advance(&mut copy, dt, order, &mut ws),
        DtSpec::Levels(levels) => cpu.advance_levels(&mut copy, levels, order, &mut ws),
    };
    match (cpu_result, gpu) {
        (Err(e), _) => e.into(),
        (Ok(_), Some(e)) => e.into(),
        (Ok(_), None) => CudaError::Internal(format!(
            "the GPU input scan flagged the batch (bad state: {bad}, Courant {courant}) but the CPU reference accepts it"
        )),
    }
}
