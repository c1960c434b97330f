//! The conservative update shared by the split schemes.

use super::scratch::{prefix, prefix_mut};
use crate::physics::{Eos, FloorCounts, GasConsts, floor_state};
use crate::real::Real;

/// `U_i - a (F_{i+1/2} - F_{i-1/2})` with floors for cells `lo .. hi`,
/// where the face fluxes come from `face(v, f)`; returns the floor counts.
#[inline(always)]
pub(crate) fn update<E: Eos, T: Real>(
    k: &GasConsts<T>,
    a: T,
    u: [&[T]; 5],
    out: [&mut [T]; 5],
    lo: usize,
    hi: usize,
    face: impl Fn(usize, usize) -> T,
) -> FloorCounts {
    let [u0, u1, u2, u3, u4] = prefix(u, hi);
    let [o0, o1, o2, o3, o4] = prefix_mut(out, hi);
    let (mut nd, mut np) = (0u32, 0u32);
    for i in lo..hi {
        let w = [
            u0[i] - a * (face(0, i) - face(0, i - 1)),
            u1[i] - a * (face(1, i) - face(1, i - 1)),
            u2[i] - a * (face(2, i) - face(2, i - 1)),
            u3[i] - a * (face(3, i) - face(3, i - 1)),
            u4[i] - a * (face(4, i) - face(4, i - 1)),
        ];
        let (w, d, p) = floor_state::<E, T>(k, w);
        nd += u32::from(d);
        np += u32::from(p);
        o0[i] = w[0];
        o1[i] = w[1];
        o2[i] = w[2];
        o3[i] = w[3];
        o4[i] = w[4];
    }
    FloorCounts {
        density: u64::from(nd),
        pressure: u64::from(np),
    }
}
