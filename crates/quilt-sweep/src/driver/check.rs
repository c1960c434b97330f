//! The state scan that precedes every step: rejects NaN/infinite values and
//! non-positive density or pressure anywhere in a patch (ghosts included) and
//! finds the fastest signal `max_d (|v_d| + c_s) / dx_d` over interior cells.

use rayon::prelude::*;

use crate::batch::Batch;
use crate::error::SweepError;
use crate::layout::{PatchDesc, data_index};
use crate::physics::Gas;
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

fn scan_patch<T: Real>(batch: &Batch<T>, gas: &Gas, d: &PatchDesc) -> Result<Rate, SweepError> {
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
    for k in 0..e[2] {
        for j in 0..e[1] {
            let rows: [&[T]; 5] = std::array::from_fn(|v| {
                let start = data_index(b, nc, d.bin as usize, v, [o[0], o[1] + j, o[2] + k]);
                &data[start..start + e[0]]
            });
            let interior_row = (g..e[1] - g).contains(&j) && (g..e[2] - g).contains(&k);
            for i in 0..e[0] {
                let u: [f64; 5] = std::array::from_fn(|v| rows[v][i].as_f64());
                let c = [i, j, k];
                // Ghost cells are checked; interior cells also give the
                // rate, by the integrator's own statement of it.
                let rate = if interior_row && (g..e[0] - g).contains(&i) {
                    gas.signal_rate(u, d.dx)
                } else {
                    gas.checked_primitive(u).map(|_| 0.0)
                };
                let rate = rate.map_err(|(what, value)| bad(d, c, what, value))?;
                if rate > best.rate {
                    best = Rate {
                        rate,
                        cell: rel_cell(d, c),
                    };
                }
            }
        }
    }
    Ok(best)
}

/// Scans every patch; returns the per-patch rates or the first bad cell in
/// patch order (deterministic whatever the thread count).
pub(crate) fn scan<T: Real>(batch: &Batch<T>, gas: &Gas) -> Result<Vec<Rate>, SweepError> {
    batch
        .layout()
        .patches()
        .par_iter()
        .map(|d| scan_patch(batch, gas, d))
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}
