//! The CFL time step over every patch of every level, and the state check
//! that comes with it.
//!
//! The signal rate is quilt-sweep's `Gas::signal_rate`
//! (`max_d (|v_d| + c_s) / dx_d`, in `f64` from the stored values). The
//! solvers' scan computes it by faster operations; their CFL check allows
//! 1e-12 for the rounding, so a step of `cfl / rate` never trips it.

use quilt_mesh::{Hierarchy, HierarchyData, IntVect, iv};
use quilt_sweep::physics::{Rows, Thermo};
use rayon::prelude::*;

use crate::Real;

/// A bad cell found by the scan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BadCell {
    /// Hierarchy index of the patch.
    pub patch: usize,
    /// The cell, in the level's index space.
    pub cell: IntVect,
    /// What is wrong.
    pub what: &'static str,
    /// The offending value.
    pub value: f64,
}

/// The largest signal rate over the old interiors of every patch (of
/// those `only` marks, when given), or the first bad cell ([`reduce`]).
pub(crate) fn max_rate<T: Real>(
    h: &Hierarchy,
    data: &HierarchyData<T>,
    gas: &dyn Thermo,
    only: Option<&[bool]>,
) -> Result<f64, BadCell> {
    let rates: Vec<PatchRate> = (0..h.num_patches())
        .into_par_iter()
        .map(|i| {
            let mut acc = PatchRate::default();
            if only.is_none_or(|o| o[i]) {
                let d = data.old(i);
                let dx = level_dx(h, h.patches()[i].level());
                for k in d.interior().lo.z..=d.interior().hi.z {
                    acc.plane(d, i, k, dx, gas);
                }
            }
            acc
        })
        .collect();
    reduce(h, &rates)
}

/// The cell sizes of level `level`.
pub(crate) fn level_dx(h: &Hierarchy, level: usize) -> [f64; 3] {
    h.level_geometry(level)
        .map_or([1.0; 3], |g| [g.dx.x, g.dx.y, g.dx.z])
}

/// The largest signal rate over patches' rates (hierarchy order), or the
/// first bad cell of the finest level that has one (patch order, then z,
/// y, x). Restriction copies a bad fine value onto the levels below, so
/// the finest occurrence is where it arose.
pub(crate) fn reduce(h: &Hierarchy, rates: &[PatchRate]) -> Result<f64, BadCell> {
    let mut best = 0.0f64;
    for l in (0..h.num_levels()).rev() {
        for r in &rates[h.level_range(l)] {
            if let Some(b) = r.bad {
                return Err(b);
            }
            best = best.max(r.best);
        }
    }
    Ok(best)
}

/// One patch's part of the scan, built plane after plane in ascending
/// order: the largest rate of the planes so far, or the patch's first bad
/// cell (after which later planes are not read).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PatchRate {
    best: f64,
    bad: Option<BadCell>,
}

impl PatchRate {
    /// A patch's part whose largest rate someone else found.
    pub(crate) fn of_max(best: f64) -> Self {
        Self { best, bad: None }
    }

    /// Adds the interior rows of plane `k` of patch `index`, whose old or
    /// new state is `d`.
    pub(crate) fn plane<T: Real>(
        &mut self,
        d: &quilt_mesh::PatchData<T>,
        index: usize,
        k: i32,
        dx: [f64; 3],
        gas: &dyn Thermo,
    ) {
        if self.bad.is_some() {
            return;
        }
        let b = d.interior();
        let comps: [&[T]; 5] = std::array::from_fn(|c| d.comp(c));
        let n = (b.hi.x - b.lo.x + 1).max(0) as usize;
        let [_, sy, _] = d.strides();
        // The next plane's rows, while this one is scanned (see
        // `quilt_mesh::prefetch`).
        if k < b.hi.z {
            let next = d.index(&iv(b.lo.x, b.lo.y, k + 1));
            let rows = (b.hi.y - b.lo.y + 1) as usize;
            for c in comps {
                quilt_mesh::prefetch::rows(c[next..].as_ptr(), rows, sy, n, false);
            }
        }
        let plane = d.index(&iv(b.lo.x, b.lo.y, k));
        let rows = Rows {
            first: plane,
            count: (b.hi.y - b.lo.y + 1).max(0) as usize,
            stride: sy,
            len: n,
        };
        match gas.max_signal_rate_rows(comps, rows, dx) {
            Ok(rate) => self.best = self.best.max(rate),
            Err(jn) => {
                let row = plane + jn * sy;
                let cells: [&[T]; 5] = std::array::from_fn(|c| &comps[c][row..row + n]);
                let j = b.lo.y + jn as i32;
                self.bad = Some(first_bad(cells, [b.lo.x, j, k], index, dx, gas));
            }
        }
    }
}

/// The first cell of a row (starting at cell `first`) that
/// `Gas::signal_rate` refuses, as the error naming it.
fn first_bad<T: Real>(
    cells: [&[T]; 5],
    first: [i32; 3],
    patch: usize,
    dx: [f64; 3],
    gas: &dyn Thermo,
) -> BadCell {
    for (i, _) in cells[0].iter().enumerate() {
        let u: [f64; 5] = std::array::from_fn(|c| quilt_mesh::Real::as_f64(cells[c][i]));
        if let Err((what, value)) = gas.signal_rate(u, dx) {
            return BadCell {
                patch,
                cell: iv(first[0] + i as i32, first[1], first[2]),
                what,
                value,
            };
        }
    }
    // `max_signal_rate` refuses exactly the rows holding such a cell.
    BadCell {
        patch,
        cell: iv(first[0], first[1], first[2]),
        what: "a cell the row scan refused",
        value: f64::NAN,
    }
}

/// The largest signal rate over the interiors of descriptors `descs` of a
/// batch, or `None` if any of those cells is bad (the hierarchy scan then
/// names it).
pub(crate) fn batch_rate<T: Real>(
    batch: &quilt_sweep::Batch<T>,
    descs: std::ops::Range<usize>,
    gas: &dyn Thermo,
) -> Option<f64> {
    let l = batch.layout();
    let (b, nc) = (l.bin_edge() as usize, l.ncomp() as usize);
    let data = batch.data();
    let rates: Vec<Option<f64>> = l.patches()[descs]
        .par_iter()
        .map(|d| {
            let g = d.ghost as usize;
            let n = d.interior().map(|v| v as usize);
            let at = |c, cell| quilt_sweep::layout::data_index(b, nc, d.bin as usize, c, cell);
            // Each component's part of the bin, and the interior's rows
            // plane by plane at the same offsets in every part.
            let comps: [&[T]; 5] = std::array::from_fn(|c| &data[at(c, [0; 3])..]);
            let o = [0, 1, 2].map(|a| d.offset[a] as usize + g);
            let stride = at(0, [0, 1, 0]) - at(0, [0; 3]);
            let mut best = 0.0f64;
            for k in 0..n[2] {
                let rows = Rows {
                    first: at(0, [o[0], o[1], o[2] + k]) - at(0, [0; 3]),
                    count: n[1],
                    stride,
                    len: n[0],
                };
                best = best.max(gas.max_signal_rate_rows(comps, rows, d.dx).ok()?);
            }
            Some(best)
        })
        .collect();
    rates.into_iter().try_fold(0.0f64, |a, r| Some(a.max(r?)))
}

/// The first interior cell (finest level first, then patch order, z, y, x)
/// whose density or pressure sits at its floor: where a floor the solver
/// reported was applied, found from the state alone so that every backend
/// is covered. `None` when the floored cells have risen above the floors
/// since (a later sweep of the same step).
pub(crate) fn find_floored<T: Real>(
    h: &Hierarchy,
    data: &HierarchyData<T>,
    gas: &dyn Thermo,
    floors: [f64; 2],
) -> Option<BadCell> {
    // A floored pressure is recomputed from energies that carry rounding.
    let [rho_floor, p_floor] = floors.map(|f| f + 1e-6 * f.abs());
    let found: Vec<Option<BadCell>> = (0..h.num_patches())
        .into_par_iter()
        .map(|i| {
            let d = data.old(i);
            let b = d.interior();
            for q in b.iter() {
                let u: [f64; 5] = std::array::from_fn(|c| quilt_mesh::Real::as_f64(d.get(c, &q)));
                let (_, _, p) = gas.primitive(u);
                let bad = |what, value| BadCell {
                    patch: i,
                    cell: q,
                    what,
                    value,
                };
                if u[0] <= rho_floor {
                    return Some(bad("density at its floor", u[0]));
                }
                if p <= p_floor {
                    return Some(bad("pressure at its floor", p));
                }
            }
            None
        })
        .collect();
    (0..h.num_levels())
        .rev()
        .find_map(|l| found[h.level_range(l)].iter().find_map(|f| *f))
}
