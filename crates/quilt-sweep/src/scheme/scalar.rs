//! Passive scalars carried by the mass flux: consistent multifluid
//! advection (Plewa & Müller 1999, A&A 342, 179).
//!
//! A passive scalar is stored as a partial density `s = ρ φ` (a dye, a
//! species, a colour) and obeys `∂s/∂t + ∇·(s v) = 0`. Rather than give
//! every scheme and its CUDA port a flux for each scalar, the scalar's face
//! flux is the scheme's own mass flux times an upwind value of the mass
//! fraction `φ = s / ρ`:
//!
//! `F_s = F_ρ φ_face`, `φ_face = φ_D ± ½ (1 − ν) lim(Δφ_D⁻, Δφ_D⁺)`,
//!
//! where `D` is the donor cell (left of the face where `F_ρ ≥ 0`, right
//! otherwise), `lim` the van Leer limiter and `ν = dt |F_ρ| / (dx ρ_D)` the
//! Courant number of the mass transport (0 for the method-of-lines TVD
//! stages). Because `F_s` is `F_ρ` scaled by a value of `φ`, a scalar that
//! is a constant multiple of the density stays that multiple to round-off,
//! and the scalars of several species sum to the density's update.
//!
//! One column at a time, like the schemes: the driver calls
//! [`scalar_column`] after the scheme's column function, with the
//! column's density before the sweep and the face mass fluxes it produced.

use std::ops::Range;

use crate::real::Real;

use super::RtvdLimiter;

/// Reused arrays of one scalar column of up to `cap` cells.
#[derive(Clone, Debug, Default)]
pub struct ScalarScratch<T> {
    /// The scalar's column before the sweep (input).
    pub s: Vec<T>,
    /// Mass fraction `s / ρ` per cell.
    phi: Vec<T>,
    /// Face fluxes: entry `f` is the flux through the face between cells
    /// `f` and `f + 1`.
    pub flux: Vec<T>,
    /// The scalar's change `−dt/dx (F_{i+1/2} − F_{i−1/2})` per cell.
    pub du: Vec<T>,
}

impl<T: Real> ScalarScratch<T> {
    /// Scratch for columns of up to `cap` cells.
    pub fn new(cap: usize) -> Self {
        Self {
            s: vec![T::zero(); cap],
            phi: vec![T::zero(); cap],
            flux: vec![T::zero(); cap],
            du: vec![T::zero(); cap],
        }
    }

    /// Capacity (cells per column).
    pub fn capacity(&self) -> usize {
        self.s.len()
    }
}

/// Computes the face fluxes of the scalar in `sc.s` for faces
/// `cells.start - 1 ..= cells.end - 1` and its change `sc.du` on `cells`
/// of a column of `len` cells, given the column's density `rho` (the state the
/// sweep started from) and the scheme's face mass fluxes `mass` (same face
/// numbering). `dtdx` is `dt / dx` of the update; `courant` says whether
/// the face values are centred in time by the `(1 − ν)` factor (the
/// one-step split schemes) or not (a Runge–Kutta stage).
///
/// Requires `2 <= cells.start` and `cells.end + 2 <= len`: a face reads
/// two cells on each side.
pub fn scalar_column<T: Real>(
    rho: &[T],
    mass: &[T],
    dtdx: T,
    courant: bool,
    len: usize,
    cells: Range<usize>,
    sc: &mut ScalarScratch<T>,
) {
    let (lo, hi) = (cells.start, cells.end);
    assert!(
        lo >= 2 && hi + 2 <= len && lo < hi && len <= sc.capacity(),
        "scalar column of {len} cells, updating {lo}..{hi}"
    );
    let (rho, mass) = (&rho[..len], &mass[..len]);
    let (s, phi) = (&sc.s[..len], &mut sc.phi[..len]);
    for i in lo - 2..hi + 2 {
        phi[i] = s[i] / rho[i];
    }
    let (zero, one, half) = (T::zero(), T::one(), T::from_f64(0.5));
    let time = if courant { dtdx } else { zero };
    let flux = &mut sc.flux[..len];
    for f in lo - 1..hi {
        let m = mass[f];
        // Both donors are evaluated and one selected, so the loop has no
        // branch on the flow direction.
        let nu_l = (time * m / rho[f]).max(zero).min(one);
        let left = phi[f] + half * (one - nu_l) * limit(phi[f] - phi[f - 1], phi[f + 1] - phi[f]);
        let nu_r = (zero - time * m / rho[f + 1]).max(zero).min(one);
        let right =
            phi[f + 1] - half * (one - nu_r) * limit(phi[f + 1] - phi[f], phi[f + 2] - phi[f + 1]);
        flux[f] = m * if m >= zero { left } else { right };
    }
    let du = &mut sc.du[..len];
    for i in lo..hi {
        du[i] = dtdx * (flux[i - 1] - flux[i]);
    }
}

/// The van Leer limiter of the mass-fraction differences (zero at
/// extrema, so a fraction within `[0, 1]` stays there).
#[inline(always)]
fn limit<T: Real>(a: T, b: T) -> T {
    RtvdLimiter::VanLeer.limit(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(rho: &[f64], s: &[f64], mass: &[f64], dtdx: f64, courant: bool) -> Vec<f64> {
        let n = rho.len();
        let mut sc = ScalarScratch::new(n);
        sc.s[..n].copy_from_slice(s);
        scalar_column(rho, mass, dtdx, courant, n, 2..n - 2, &mut sc);
        (2..n - 2).map(|i| s[i] + sc.du[i]).collect()
    }

    #[test]
    fn a_multiple_of_the_density_stays_that_multiple() {
        let rho: Vec<f64> = (0..16)
            .map(|i| 1.0 + 0.3 * (i as f64 * 0.7).sin())
            .collect();
        let mass: Vec<f64> = (0..16).map(|i| 0.4 * (i as f64 * 0.3).cos()).collect();
        let dtdx = 0.5;
        let new_rho: Vec<f64> = (2..14)
            .map(|i| rho[i] + dtdx * (mass[i - 1] - mass[i]))
            .collect();
        for courant in [true, false] {
            let c = 0.37;
            let s: Vec<f64> = rho.iter().map(|r| c * r).collect();
            let out = column(&rho, &s, &mass, dtdx, courant);
            for (o, r) in out.iter().zip(&new_rho) {
                assert!((o - c * r).abs() <= 1e-15, "{o} vs {}", c * r);
            }
        }
    }

    #[test]
    fn a_fraction_step_is_carried_downwind_without_new_extrema() {
        // Uniform density moving right at Courant number 0.5: the step in
        // the fraction moves right and stays within [0, 1].
        let n = 20;
        let rho = vec![2.0; n];
        let mass = vec![1.0; n];
        let s: Vec<f64> = (0..n).map(|i| if i < 8 { 2.0 } else { 0.0 }).collect();
        let dtdx = 1.0;
        let out = column(&rho, &s, &mass, dtdx, true);
        for (k, o) in out.iter().enumerate() {
            let i = k + 2;
            assert!((-1e-15..=2.0 + 1e-15).contains(o), "cell {i}: {o}");
            if i < 8 {
                assert_eq!(*o, 2.0, "upstream cell {i}");
            }
            if i > 9 {
                assert_eq!(*o, 0.0, "downstream cell {i}");
            }
        }
        // Mass of the scalar moved through the face at 7|8 in one step:
        // exactly the donor's fraction times the mass flux.
        let gained: f64 = out[8 - 2..].iter().sum::<f64>() - s[8..n - 2].iter().sum::<f64>();
        assert!((gained - 1.0).abs() < 1e-14, "{gained}");
    }

    #[test]
    fn flow_to_the_left_takes_the_right_donor() {
        let n = 12;
        let rho = vec![1.0; n];
        let mass = vec![-0.5; n];
        let s: Vec<f64> = (0..n).map(|i| if i >= 6 { 1.0 } else { 0.0 }).collect();
        let out = column(&rho, &s, &mass, 1.0, true);
        // Cell 5 receives from cell 6; cell 3 receives nothing.
        assert!(out[5 - 2] > 0.0);
        assert_eq!(out[3 - 2], 0.0);
    }
}
