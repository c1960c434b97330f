//! [`Gas::max_signal_rate`]: the time step's signal rate over a row of
//! cells at once.
//!
//! The CFL scan runs [`Gas::signal_rate`] over every interior cell of the
//! hierarchy before each step: seven divisions and a square root per cell
//! (five divisions for cubic cells), which cell by cell leave the vector
//! units idle. Here the same operations run on a row of cells laid out by
//! component, so that the compiler computes several cells per instruction
//! (twice as many again with AVX2, chosen at run time); divisions and
//! square roots are exactly rounded in every vector width and no
//! multiply-add is formed, so each cell's rate is bitwise the one
//! `signal_rate` gives, and the maximum of exact values does not depend
//! on their order.

use super::eos::{EOS_PARAMS, Eos};
use super::gas::Gas;
use crate::real::Real;

/// Cells computed per pass before their rates are reduced.
const CHUNK: usize = 32;

/// Rows of cells in component slices: `count` rows of `len` cells, the
/// first starting at index `first`, each `stride` values after the one
/// before (a plane of a patch's interior, for instance).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    /// Index of the first row's first cell.
    pub first: usize,
    /// Number of rows.
    pub count: usize,
    /// Values from one row's start to the next's.
    pub stride: usize,
    /// Cells per row.
    pub len: usize,
}

impl<E: Eos> Gas<E> {
    /// [`Gas::max_signal_rate`] over several rows of the component slices
    /// `comps` at once (the parameters derived and the vector width chosen
    /// once): the largest rate, or `Err(r)` with the first row `r` that
    /// `signal_rate` refuses somewhere (or whose cells lie outside a
    /// slice).
    pub fn max_signal_rate_rows<T: Real>(
        &self,
        comps: [&[T]; 5],
        rows: Rows,
        dx: [f64; 3],
    ) -> Result<f64, usize> {
        if rows.count == 0 {
            return Ok(0.0);
        }
        let end = (rows.count - 1)
            .checked_mul(rows.stride)
            .and_then(|v| v.checked_add(rows.first))
            .and_then(|v| v.checked_add(rows.len));
        if end.is_none_or(|e| comps.iter().any(|c| c.len() < e)) {
            return Err(0);
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { rows_avx2::<E, T>(&self.eos, comps, rows, dx) };
        }
        rows_of::<E, T>(&self.eos, comps, rows, dx)
    }

    /// The largest [`Gas::signal_rate`] over the cells of a row, given as
    /// its five components (`u[c][i]`, all of one length), in cells of
    /// size `dx`; `None` if `signal_rate` refuses any cell of the row (the
    /// caller then asks it cell by cell for the reason). 0 for an empty
    /// row.
    pub fn max_signal_rate<T: Real>(&self, u: [&[T]; 5], dx: [f64; 3]) -> Option<f64> {
        let n = u[0].len();
        if u.iter().any(|c| c.len() != n) {
            return None;
        }
        let row = Rows {
            first: 0,
            count: 1,
            stride: 0,
            len: n,
        };
        self.max_signal_rate_rows(u, row, dx).ok()
    }
}

/// [`rows_of`] compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn rows_avx2<E: Eos, T: Real>(
    eos: &E,
    comps: [&[T]; 5],
    rows: Rows,
    dx: [f64; 3],
) -> Result<f64, usize> {
    rows_of::<E, T>(eos, comps, rows, dx)
}

/// The rows' largest rate (their bounds checked by the caller).
#[inline(always)]
fn rows_of<E: Eos, T: Real>(
    eos: &E,
    comps: [&[T]; 5],
    rows: Rows,
    dx: [f64; 3],
) -> Result<f64, usize> {
    let (k, p_min) = (eos.params(), eos.min_pressure());
    let mut best = 0.0f64;
    for r in 0..rows.count {
        let s = rows.first + r * rows.stride;
        let u = comps.map(|c| &c[s..s + rows.len]);
        best = best.max(rates_with::<E, T>(&k, p_min, u, dx).ok_or(r)?);
    }
    Ok(best)
}

/// The largest rate of one row, given the equation of state's parameters
/// `k` and minimum pressure `p_min`.
#[inline(always)]
fn rates_with<E: Eos, T: Real>(
    k: &[f64; EOS_PARAMS],
    p_min: f64,
    u: [&[T]; 5],
    dx: [f64; 3],
) -> Option<f64> {
    // Cubic cells (every level of quilt's decks): division by a positive
    // size and the addition of `cs` are monotonic in exact rounding, so
    // the largest `(|v_d| + cs) / dx` is `(max_d |v_d| + cs) / dx`, bit
    // for bit, with two divisions fewer per cell.
    if dx[0] == dx[1] && dx[1] == dx[2] {
        rates_by::<E, T>(k, p_min, u, |v, cs| {
            (v[0].abs().max(v[1].abs()).max(v[2].abs()) + cs) / dx[0]
        })
    } else {
        rates_by::<E, T>(k, p_min, u, |v, cs| {
            let x = (v[0].abs() + cs) / dx[0];
            let y = (v[1].abs() + cs) / dx[1];
            let z = (v[2].abs() + cs) / dx[2];
            x.max(y).max(z)
        })
    }
}

/// The row loop, with `axes(v, cs)` the largest of the three axes' rates.
#[inline(always)]
fn rates_by<E: Eos, T: Real>(
    par: &[f64; EOS_PARAMS],
    p_min: f64,
    u: [&[T]; 5],
    axes: impl Fn([f64; 3], f64) -> f64,
) -> Option<f64> {
    let mut best = [0.0f64; 4];
    let mut rate = [0.0f64; CHUNK];
    let mut start = 0;
    while start < u[0].len() {
        let len = CHUNK.min(u[0].len() - start);
        let end = start + len;
        // One slice per component, named: array maps and `from_fn` in this
        // loop are calls the compiler may leave out of line, and a call per
        // cell keeps the loop from being vectorised.
        let (rho, mx, my, mz, en) = (
            &u[0][start..end],
            &u[1][start..end],
            &u[2][start..end],
            &u[3][start..end],
            &u[4][start..end],
        );
        let rate = &mut rate[..len];
        let mut bad = false;
        // Gas::checked_primitive, Gas::sound_speed and Gas::signal_rate,
        // operation for operation, with their refusals folded into `bad`.
        for i in 0..len {
            let (r, m0, m1, m2, e) = (
                rho[i].as_f64(),
                mx[i].as_f64(),
                my[i].as_f64(),
                mz[i].as_f64(),
                en[i].as_f64(),
            );
            let v = [m0 / r, m1 / r, m2 / r];
            let kinetic = 0.5 * (m0 * v[0] + m1 * v[1] + m2 * v[2]);
            let p = E::pressure(par, r, e - kinetic);
            let cs = (E::bulk_modulus(par, r, p) / r).sqrt();
            let rt = 0.0f64.max(axes(v, cs));
            let finite = r.is_finite()
                && m0.is_finite()
                && m1.is_finite()
                && m2.is_finite()
                && e.is_finite()
                && rt.is_finite();
            bad |= !(finite && r > 0.0 && p > p_min);
            rate[i] = rt;
        }
        if bad {
            return None;
        }
        // Four running maxima: one would wait on each comparison.
        let mut quads = rate.chunks_exact(4);
        for q in quads.by_ref() {
            for k in 0..4 {
                best[k] = best[k].max(q[k]);
            }
        }
        for (k, &r) in quads.remainder().iter().enumerate() {
            best[k] = best[k].max(r);
        }
        start = end;
    }
    Some(best.into_iter().fold(0.0, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of varied states: moving either way, dense and light.
    fn row(n: usize) -> [Vec<f64>; 5] {
        let mut u: [Vec<f64>; 5] = Default::default();
        for i in 0..n {
            let t = i as f64;
            let rho = 0.5 + (0.37 * t).sin().abs() * 3.0;
            let v = [(0.11 * t).cos() * 2.0, -(0.07 * t).sin(), 0.3 - 0.01 * t];
            let p = 0.2 + (0.23 * t).cos().abs();
            let kin = 0.5 * rho * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
            let vals = [rho, rho * v[0], rho * v[1], rho * v[2], p / 0.4 + kin];
            for c in 0..5 {
                u[c].push(vals[c]);
            }
        }
        u
    }

    fn by_cell(gas: &Gas, u: &[Vec<f64>; 5], dx: [f64; 3]) -> Result<f64, (&'static str, f64)> {
        let mut best = 0.0f64;
        for (i, _) in u[0].iter().enumerate() {
            best = best.max(gas.signal_rate(std::array::from_fn(|c| u[c][i]), dx)?);
        }
        Ok(best)
    }

    #[test]
    fn the_row_rate_is_bitwise_the_largest_cell_rate() {
        let gas = Gas::default();
        // Cubic cells take the path with one division per cell for the
        // axes; every cell alone too, so that no maximum hides a cell.
        for dx in [[0.01, 0.02, 0.005], [0.01; 3], [3.0e-3; 3]] {
            let u = row(300);
            for i in 0..300 {
                let one: [&[f64]; 5] = std::array::from_fn(|c| &u[c][i..i + 1]);
                let cell = gas
                    .signal_rate(std::array::from_fn(|c| u[c][i]), dx)
                    .unwrap();
                assert_eq!(
                    gas.max_signal_rate(one, dx).unwrap().to_bits(),
                    cell.to_bits()
                );
            }
            rows_against_cells(&gas, dx);
        }
    }

    fn rows_against_cells(gas: &Gas, dx: [f64; 3]) {
        let gas = *gas;
        for n in [0, 1, 3, 31, 32, 33, 100, 257] {
            let u = row(n);
            let slices: [&[f64]; 5] = std::array::from_fn(|c| u[c].as_slice());
            let got = gas.max_signal_rate(slices, dx).unwrap();
            assert_eq!(
                got.to_bits(),
                by_cell(&gas, &u, dx).unwrap().to_bits(),
                "{n} cells"
            );
            // f32 data: each value widened as the scan widens it.
            let u32: [Vec<f32>; 5] =
                std::array::from_fn(|c| u[c].iter().map(|&v| v as f32).collect());
            let wide: [Vec<f64>; 5] =
                std::array::from_fn(|c| u32[c].iter().map(|&v| f64::from(v)).collect());
            let s32: [&[f32]; 5] = std::array::from_fn(|c| u32[c].as_slice());
            let got = gas.max_signal_rate(s32, dx).unwrap();
            assert_eq!(got.to_bits(), by_cell(&gas, &wide, dx).unwrap().to_bits());
        }
    }

    #[test]
    fn a_row_with_a_bad_cell_is_refused() {
        let gas = Gas::default();
        let dx = [1.0; 3];
        let base = row(70);
        let bad_cells: [(usize, usize, f64); 5] = [
            (0, 5, -1.0),          // negative density
            (0, 40, 0.0),          // zero density
            (4, 69, -5.0),         // negative pressure
            (2, 33, f64::NAN),     // not finite
            (1, 0, f64::INFINITY), // not finite
        ];
        for (c, i, v) in bad_cells {
            let mut u = base.clone();
            u[c][i] = v;
            assert!(by_cell(&gas, &u, dx).is_err());
            let slices: [&[f64]; 5] = std::array::from_fn(|c| u[c].as_slice());
            assert_eq!(
                gas.max_signal_rate(slices, dx),
                None,
                "component {c} of cell {i}"
            );
        }
        // A rate that overflows: a tiny cell.
        let slices: [&[f64]; 5] = std::array::from_fn(|c| base[c].as_slice());
        assert_eq!(gas.max_signal_rate(slices, [1e-308, 1.0, 1.0]), None);
        // Rows of unequal lengths are refused.
        let short: [&[f64]; 5] = std::array::from_fn(|c| &base[c][..70 - c]);
        assert_eq!(gas.max_signal_rate(short, dx), None);
    }
}
