//! [`Thermo`]: a fluid behind a pointer, for code that is not generic over
//! its equation of state.
//!
//! The schemes are monomorphised per equation of state ([`Gas<E>`]); the
//! integrator, its CFL scan, tagging and problems hold whatever fluid the
//! backend solves as an `Arc<dyn Thermo>`. Its row functions are
//! monomorphised inside, so a call covers a row of cells, and compute
//! exactly what the schemes' functions compute in the row's precision.

use std::any::TypeId;
use std::fmt::Debug;

use quilt_mesh::tag::{TagError, pressure_with};

use super::eos::{EOS_PARAMS, Eos};
use super::gas::Gas;
use super::rate_row::Rows;
use crate::real::Real;

/// A fluid of some equation of state with its floors, object safe.
/// Every [`Gas<E>`] is one.
pub trait Thermo: Debug + Send + Sync {
    /// The equation of state's name.
    fn name(&self) -> &'static str;
    /// The equation of state's parameters ([`Eos::params`]).
    fn params(&self) -> [f64; EOS_PARAMS];
    /// [`Eos::ideal_gamma`].
    fn ideal_gamma(&self) -> Option<f64>;
    /// The density floor and [`Gas::lowest_pressure`].
    fn floors(&self) -> [f64; 2];
    /// [`Gas::primitive`].
    fn primitive(&self, u: [f64; 5]) -> (f64, [f64; 3], f64);
    /// [`Gas::total_energy`].
    fn total_energy(&self, rho: f64, vel: [f64; 3], p: f64) -> f64;
    /// [`Gas::sound_speed`].
    fn sound_speed(&self, rho: f64, p: f64) -> f64;
    /// [`Gas::signal_rate`].
    fn signal_rate(&self, u: [f64; 5], dx: [f64; 3]) -> Result<f64, (&'static str, f64)>;
    /// [`Gas::max_signal_rate_rows`] of `f32` rows.
    fn max_signal_rate_rows_f32(
        &self,
        comps: [&[f32]; 5],
        rows: Rows,
        dx: [f64; 3],
    ) -> Result<f64, usize>;
    /// [`Gas::max_signal_rate_rows`] of `f64` rows.
    fn max_signal_rate_rows_f64(
        &self,
        comps: [&[f64]; 5],
        rows: Rows,
        dx: [f64; 3],
    ) -> Result<f64, usize>;
    /// The pressure of each cell of conserved `f32` values into `out`:
    /// quilt-mesh's [`pressure_with`] with [`Eos::pressure`].
    fn pressure_row_f32(
        &self,
        rho: &[f32],
        momentum: [&[f32]; 3],
        energy: &[f32],
        out: &mut [f32],
    ) -> Result<(), TagError>;
    /// The same in `f64`.
    fn pressure_row_f64(
        &self,
        rho: &[f64],
        momentum: [&[f64]; 3],
        energy: &[f64],
        out: &mut [f64],
    ) -> Result<(), TagError>;
}

impl<E: Eos> Thermo for Gas<E> {
    fn name(&self) -> &'static str {
        self.eos.name()
    }
    fn params(&self) -> [f64; EOS_PARAMS] {
        self.eos.params()
    }
    fn ideal_gamma(&self) -> Option<f64> {
        self.eos.ideal_gamma()
    }
    fn floors(&self) -> [f64; 2] {
        [self.density_floor, self.lowest_pressure()]
    }
    fn primitive(&self, u: [f64; 5]) -> (f64, [f64; 3], f64) {
        Gas::primitive(self, u)
    }
    fn total_energy(&self, rho: f64, vel: [f64; 3], p: f64) -> f64 {
        Gas::total_energy(self, rho, vel, p)
    }
    fn sound_speed(&self, rho: f64, p: f64) -> f64 {
        Gas::sound_speed(self, rho, p)
    }
    fn signal_rate(&self, u: [f64; 5], dx: [f64; 3]) -> Result<f64, (&'static str, f64)> {
        Gas::signal_rate(self, u, dx)
    }
    fn max_signal_rate_rows_f32(
        &self,
        comps: [&[f32]; 5],
        rows: Rows,
        dx: [f64; 3],
    ) -> Result<f64, usize> {
        Gas::max_signal_rate_rows(self, comps, rows, dx)
    }
    fn max_signal_rate_rows_f64(
        &self,
        comps: [&[f64]; 5],
        rows: Rows,
        dx: [f64; 3],
    ) -> Result<f64, usize> {
        Gas::max_signal_rate_rows(self, comps, rows, dx)
    }
    fn pressure_row_f32(
        &self,
        rho: &[f32],
        momentum: [&[f32]; 3],
        energy: &[f32],
        out: &mut [f32],
    ) -> Result<(), TagError> {
        pressure_row::<E, f32>(&self.eos, rho, momentum, energy, out)
    }
    fn pressure_row_f64(
        &self,
        rho: &[f64],
        momentum: [&[f64]; 3],
        energy: &[f64],
        out: &mut [f64],
    ) -> Result<(), TagError> {
        pressure_row::<E, f64>(&self.eos, rho, momentum, energy, out)
    }
}

fn pressure_row<E: Eos, T: Real>(
    eos: &E,
    rho: &[T],
    momentum: [&[T]; 3],
    energy: &[T],
    out: &mut [T],
) -> Result<(), TagError> {
    let k = eos.params().map(T::from_f64);
    pressure_with(rho, momentum, energy, out, |r, e| E::pressure(&k, r, e))
}

/// Whether `T` is `X` (the two precisions of [`Real`]).
fn is<T: 'static, X: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<X>()
}

impl dyn Thermo + '_ {
    /// [`Thermo::max_signal_rate_rows_f32`] or `_f64`, by the working
    /// precision.
    pub fn max_signal_rate_rows<T: Real>(
        &self,
        comps: [&[T]; 5],
        rows: Rows,
        dx: [f64; 3],
    ) -> Result<f64, usize> {
        if is::<T, f32>() {
            self.max_signal_rate_rows_f32(comps.map(bytemuck::cast_slice), rows, dx)
        } else if is::<T, f64>() {
            self.max_signal_rate_rows_f64(comps.map(bytemuck::cast_slice), rows, dx)
        } else {
            // Another `Real`: cell by cell in f64.
            let mut best = 0.0f64;
            for r in 0..rows.count {
                let s = rows.first + r * rows.stride;
                for i in s..s + rows.len {
                    let cell = comps.map(|c| c.get(i).map_or(f64::NAN, |v| v.as_f64()));
                    best = best.max(self.signal_rate(cell, dx).map_err(|_| r)?);
                }
            }
            Ok(best)
        }
    }

    /// [`Thermo::pressure_row_f32`] or `_f64`, by the working precision.
    pub fn pressure_row<T: Real>(
        &self,
        rho: &[T],
        momentum: [&[T]; 3],
        energy: &[T],
        out: &mut [T],
    ) -> Result<(), TagError> {
        if is::<T, f32>() {
            let m = momentum.map(bytemuck::cast_slice);
            let (r, e) = (bytemuck::cast_slice(rho), bytemuck::cast_slice(energy));
            self.pressure_row_f32(r, m, e, bytemuck::cast_slice_mut(out))
        } else if is::<T, f64>() {
            let m = momentum.map(bytemuck::cast_slice);
            let (r, e) = (bytemuck::cast_slice(rho), bytemuck::cast_slice(energy));
            self.pressure_row_f64(r, m, e, bytemuck::cast_slice_mut(out))
        } else {
            // Another `Real`: in f64.
            pressure_with(rho, momentum, energy, out, |r, e| {
                let (_, _, p) = self.primitive([r.as_f64(), 0.0, 0.0, 0.0, e.as_f64()]);
                T::from_f64(p)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_through_the_pointer_are_the_gas_rows() {
        let gas = Gas::ideal(5.0 / 3.0);
        let thermo: &dyn Thermo = &gas;
        let rho = [1.0f32, 2.0, 0.5];
        let mx = [0.1f32, -0.3, 0.0];
        let z = [0.0f32; 3];
        let en = [2.0f32, 3.0, 1.0];
        let dx = [0.1; 3];
        let whole = Rows {
            first: 0,
            count: 1,
            stride: 0,
            len: 3,
        };
        assert_eq!(
            thermo
                .max_signal_rate_rows([&rho, &mx, &z, &z, &en], whole, dx)
                .ok(),
            gas.max_signal_rate([&rho, &mx, &z, &z, &en], dx)
        );
        let mut p = [0.0f32; 3];
        thermo
            .pressure_row(&rho, [&mx, &z, &z], &en, &mut p)
            .unwrap();
        let mut q = [0.0f32; 3];
        quilt_mesh::tag::euler_pressure(&rho, [&mx, &z, &z], &en, 5.0 / 3.0, &mut q).unwrap();
        assert_eq!(p, q);
        let rows = Rows {
            first: 0,
            count: 2,
            stride: 1,
            len: 2,
        };
        let got = thermo.max_signal_rate_rows([&rho, &mx, &z, &z, &en], rows, dx);
        let by_row = (0..2)
            .map(|s| {
                let u = [&rho, &mx, &z, &z, &en].map(|c| &c[s..s + 2]);
                gas.max_signal_rate(u, dx).unwrap()
            })
            .fold(0.0f64, f64::max);
        assert_eq!(got, Ok(by_row));
        let short = Rows { count: 3, ..rows };
        assert_eq!(
            thermo.max_signal_rate_rows([&rho, &mx, &z, &z, &en], short, dx),
            Err(0)
        );
    }
}
