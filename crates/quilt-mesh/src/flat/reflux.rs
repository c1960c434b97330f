//! [`RefluxItem`]: refluxing as flat items.

use super::Strided;
use crate::error::MeshError;
use crate::real::Real;

/// One piece of a register's correction as a flat item over a store of
/// patches (see [`crate::flat`]): for coarse cell `d` of the piece
/// (one layer thick along `axis`) and component `c`,
///
/// ```text
/// δ = 0 + 1·F_c − Σ_f F_f / r²        (in f64, F_f in z, y, x order)
/// U = T(U + factor · δ)
/// ```
///
/// with `F_c` the coarse flux named by [`FlatReflux::coarse`] and the
/// `r²` fine fluxes `F_f` from `fine` at `r · d` (along the face) — the
/// operations of [`crate::flux_register::FluxRegister`]'s accumulation and refluxing, in their
/// order.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RefluxItem {
    /// The piece's first coarse cell in the store.
    pub dst: Strided,
    /// The fine face array at the first fine face of the piece.
    pub fine: Strided,
    /// `±1 / dx[axis]`: `+` where the fine patch lies on the cells' high
    /// side.
    pub factor: f64,
    /// Index in [`FlatReflux::coarse`] of the piece's first cell.
    pub coarse: u64,
    /// Coarse cells along `x`, `y`, `z`.
    pub n: [u32; 3],
    /// Axis normal to the faces.
    pub axis: u32,
    /// Refinement ratio.
    pub ratio: u32,
    /// Items of one pass touch distinct cells; passes run in order.
    pub pass: u32,
}

/// The refluxing of one register as flat items (see [`RefluxItem`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatReflux {
    /// Components.
    pub ncomp: u32,
    /// Items, in the register's order.
    pub items: Vec<RefluxItem>,
    /// Per cell of every item (items in order, cells `x` fastest): index
    /// in the flux array of component 0 of its coarse flux, and the stride
    /// between components.
    pub coarse: Vec<[u64; 2]>,
    /// Number of passes.
    pub passes: u32,
}

impl FlatReflux {
    /// Runs every pass on the CPU (the statement of what the items
    /// compute): `store` holds the coarse patches, `flux` the fluxes the
    /// items name.
    pub fn run<T: Real>(&self, store: &mut [T], flux: &[T]) -> Result<(), MeshError> {
        let oob = |what: &str, i: u64, len: usize| {
            MeshError::invalid(
                "reflux item",
                format!("{what} index {i} outside an array of {len}"),
            )
        };
        for pass in 0..self.passes {
            for it in self.items.iter().filter(|i| i.pass == pass) {
                let r = u64::from(it.ratio);
                let scale = 1.0 / (r * r) as f64;
                let a = it.axis as usize;
                let n = it.n.map(u64::from);
                let span = [0, 1, 2].map(|e| if e == a { 1 } else { r });
                for c in 0..u64::from(self.ncomp) {
                    let mut k = it.coarse;
                    for z in 0..n[2] {
                        for y in 0..n[1] {
                            for x in 0..n[0] {
                                let d = [x, y, z];
                                let [ci, cs] = *self
                                    .coarse
                                    .get(k as usize)
                                    .ok_or_else(|| oob("coarse list", k, self.coarse.len()))?;
                                k += 1;
                                let fc = ci + c * cs;
                                let mut acc = 0.0f64;
                                acc += 1.0
                                    * flux
                                        .get(fc as usize)
                                        .ok_or_else(|| oob("coarse flux", fc, flux.len()))?
                                        .as_f64();
                                let f0 = [0, 1, 2].map(|e| if e == a { 0 } else { d[e] * r });
                                for kz in 0..span[2] {
                                    for ky in 0..span[1] {
                                        for kx in 0..span[0] {
                                            let fi = it
                                                .fine
                                                .index([f0[0] + kx, f0[1] + ky, f0[2] + kz], c);
                                            let v = flux
                                                .get(fi as usize)
                                                .ok_or_else(|| oob("fine flux", fi, flux.len()))?;
                                            acc -= scale * v.as_f64();
                                        }
                                    }
                                }
                                let di = it.dst.index(d, c) as usize;
                                let u = store
                                    .get_mut(di)
                                    .ok_or_else(|| oob("store", di as u64, 0))?;
                                *u = T::from_f64(u.as_f64() + it.factor * acc);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
