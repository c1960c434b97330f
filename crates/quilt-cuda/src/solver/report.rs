//! Turning what the kernels flagged into the errors of the CPU solver.

use quilt_sweep::physics::Eos;
use quilt_sweep::{Batch, PatchDesc, Real, Solver, SweepError, SweepOrder, Workspace};

use super::run::DtSpec;
use crate::error::CudaError;
use crate::plan::PassSpec;

use quilt_sweep::physics::{NCOMP, NOT_FINITE, scalar_not_finite};
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
    let patch = (key >> 24) as usize;
    let lin = (key >> 6) & 0x3ffff;
    let (tb, ta, i) = (
        (lin >> 12) as i64,
        ((lin >> 6) & 63) as i64,
        (lin & 63) as i64,
    );
    let comp = ((key >> 2) & 15) as usize;
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
        what: if comp < NCOMP {
            NOT_FINITE[comp]
        } else {
            scalar_not_finite(comp - NCOMP)
        },
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
pub(crate) fn input_error<T: Real, E: Eos>(
    cpu: &Solver<E>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::step_passes;
    use quilt_sweep::{BatchLayout, PatchShape, Scheme};

    /// The key `check_finite` in kernels/common.cuh builds.
    fn key(patch: u64, tb: u64, ta: u64, i: u64, comp: u64, class: u64) -> u64 {
        (patch << 24) | (((tb << 12) | (ta << 6) | i) << 6) | (comp << 2) | class
    }

    #[test]
    fn error_keys_decode_to_the_cpu_cell() {
        let shapes = [
            PatchShape::new(11, [10, 12, 14], 3, [0.1; 3]),
            PatchShape::new(42, [20, 8, 9], 3, [0.1; 3]),
        ];
        let l = BatchLayout::one_per_slot(64, 5, &shapes).unwrap();
        let passes = step_passes(
            &Scheme::rtvd(),
            SweepOrder::Xyz,
            [crate::plan::TableKind::Columns; 3],
        );
        // Slot 1 = the y sweep (read halo 3): column cell 5 is y = 5 - 3 + 3 - 3 = 2 rel.
        let e = decode_sweep_error(l.patches(), &passes, 1, key(1, 7, 4, 5, 3, 2));
        match e {
            SweepError::BadState {
                patch,
                cell,
                what,
                value,
                stage,
            } => {
                assert_eq!(patch, 42);
                assert_eq!(cell, [4 - 3, 5 - 3, 7 - 3]);
                assert_eq!(what, "z momentum is not finite");
                assert_eq!(value, f64::NEG_INFINITY);
                assert_eq!(stage, "after the y sweep");
            }
            e => panic!("{e}"),
        }
        let tvd = step_passes(
            &Scheme::tvd(),
            SweepOrder::Zyx,
            [crate::plan::TableKind::Columns; 3],
        );
        // TVD slot 0 = stage 1, checked in its last pass (axis x for Zyx, read halo 4).
        let e = decode_sweep_error(l.patches(), &tvd, 0, key(0, 2, 9, 0, 0, 0));
        match e {
            SweepError::BadState {
                patch,
                cell,
                value,
                stage,
                ..
            } => {
                assert_eq!(patch, 11);
                assert_eq!(cell, [-4, 9 - 3, 2 - 3]);
                assert!(value.is_nan());
                assert_eq!(stage, "after TVD stage 1");
            }
            e => panic!("{e}"),
        }
    }
}
