//! The state scan that precedes every step: rejects NaN/infinite values and
//! non-positive density or pressure anywhere in a patch (ghosts included) and
//! finds the fastest signal `max_d (|v_d| + c_s) / dx_d` over interior cells.

use rayon::prelude::*;

use crate::batch::Batch;
use crate::error::SweepError;
use crate::layout::{PatchDesc, data_index};
use crate::physics::{Eos, Gas, NCOMP, NOT_FINITE};
use crate::real::Real;

/// Fastest signal rate of one patch and where it occurs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rate {
    /// `max_d (|v_d| + c_s) / dx_d` over interior cells (1 / time).
    pub rate: f64,
    /// Cell of the maximum, relative to the first interior cell.
    pub cell: [i64; 3],
}

/// Cell `c` (ghosts included) relative to the first interior cell.
pub(crate) fn rel_cell(d: &PatchDesc, c: [usize; 3]) -> [i64; 3] {
    [0, 1, 2].map(|a| c[a] as i64 - i64::from(d.ghost))
}

fn bad(d: &PatchDesc, c: [usize; 3], what: &'static str, value: f64) -> SweepError {
    SweepError::BadState {
        patch: d.id,
        cell: rel_cell(d, c),
        what,
        value,
        stage: "in the input",
    }
}

// The cell index addresses five component rows and the error position.
//
// The rate is `Gas::signal_rate`'s by a reciprocal and multiplications
// instead of its divisions: the CUDA solvers' scan (`scan_cell` in
// kernels/common.cuh) computes these operations and quilt-cuda's GPU tests
// hold the two equal bit for bit, and divisions would make the scan a
// visible part of an f64 step (docs/quilt-sweep.md). The two rates may
// differ in their last bits; the step's CFL check allows 1e-12 for that.
#[allow(clippy::needless_range_loop)]
fn scan_patch<E: Eos, T: Real>(
    batch: &Batch<T>,
    gas: &Gas<E>,
    d: &PatchDesc,
) -> Result<Rate, SweepError> {
    let l = batch.layout();
    let (b, nc) = (l.bin_edge() as usize, l.ncomp() as usize);
    let data = batch.data();
    let mut best = Rate {
        rate: 0.0,
        cell: [0; 3],
    };
    let e = d.extent.map(|v| v as usize);
    let o = d.offset.map(|v| v as usize);
    let g = d.ghost as usize;
    let inv_dx = d.dx.map(|h| 1.0 / h);
    let par = gas.eos.params();
    let p_min = gas.eos.min_pressure();
    for k in 0..e[2] {
        for j in 0..e[1] {
            let rows: [&[T]; 5] = std::array::from_fn(|v| {
                let start = data_index(b, nc, d.bin as usize, v, [o[0], o[1] + j, o[2] + k]);
                &data[start..start + e[0]]
            });
            for v in NCOMP..nc {
                let start = data_index(b, nc, d.bin as usize, v, [o[0], o[1] + j, o[2] + k]);
                let row = &data[start..start + e[0]];
                if let Some(i) = row.iter().position(|x| !x.is_finite()) {
                    let what = crate::physics::scalar_not_finite(v - NCOMP);
                    return Err(bad(d, [i, j, k], what, row[i].as_f64()));
                }
            }
            let interior_row = (g..e[1] - g).contains(&j) && (g..e[2] - g).contains(&k);
            for i in 0..e[0] {
                let u: [f64; 5] = std::array::from_fn(|v| rows[v][i].as_f64());
                let c = [i, j, k];
                if let Some(v) = (0..5).find(|&v| !u[v].is_finite()) {
                    return Err(bad(d, c, NOT_FINITE[v], u[v]));
                }
                if u[0] <= 0.0 {
                    return Err(bad(d, c, "density is not positive", u[0]));
                }
                let inv = 1.0 / u[0];
                let vel = [u[1] * inv, u[2] * inv, u[3] * inv];
                let kinetic = 0.5 * (u[1] * vel[0] + u[2] * vel[1] + u[3] * vel[2]);
                let p = E::pressure(&par, u[0], u[4] - kinetic);
                if p.is_nan() || p <= p_min {
                    return Err(bad(d, c, gas.pressure_refusal(), p));
                }
                if interior_row && (g..e[0] - g).contains(&i) {
                    let cs = (E::bulk_modulus(&par, u[0], p) * inv).sqrt();
                    for a in 0..3 {
                        let r = (vel[a].abs() + cs) * inv_dx[a];
                        if r > best.rate {
                            best = Rate {
                                rate: r,
                                cell: rel_cell(d, c),
                            };
                        }
                    }
                }
            }
        }
    }
    Ok(best)
}

/// Scans every patch; returns the per-patch rates or the first bad cell in
/// patch order (deterministic whatever the thread count).
pub(crate) fn scan<E: Eos, T: Real>(
    batch: &Batch<T>,
    gas: &Gas<E>,
) -> Result<Vec<Rate>, SweepError> {
    batch
        .layout()
        .patches()
        .par_iter()
        .map(|d| scan_patch(batch, gas, d))
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}
