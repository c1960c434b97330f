//! [`FlatFill`]: the ghost fill of every patch as flat items.
//!
//! Every patch's ghost-grown box lives somewhere in the store (a
//! [`Strided`] placement); its interior already holds the old state.
//! [`FlatFill`] turns a [`GhostFill`]'s plans into items that read only
//! interiors and write only ghost cells, in five phases:
//!
//! 1. **copies** ([`CopyItem`]): sibling copy tags (periodic images
//!    included) into the ghost cells, and the coarse cells that
//!    interpolation needs gathered into a scratch array, one region per
//!    patch (the CPU's [`crate::fill::FillScratch`] made permanent);
//! 2. **interpolation** ([`InterpItem`]): the coarse–fine ghost boxes from
//!    the scratch, with the plan's stencil flags;
//! 3. – 5. **physical boundaries** ([`BoundaryItem`]) along `x`, then `y`,
//!    then `z`: each phase reads cells set by the ones before it (the
//!    CPU's corner rule).
//!
//! Within a phase no item reads what another writes. Every cell is
//! computed with the operations of the CPU fill in the same order
//! ([`FlatFill::run`] states them), so a fill through these items is the
//! CPU's bit for bit. User boundary conditions run host code and have no
//! item form: [`FlatFill::new`] refuses them.

use bytemuck::{Pod, Zeroable};

use rayon::prelude::*;

use super::{CopyItem, Strided, bounds, ext, last_index, rel, split_at_bounds};
use crate::error::MeshError;
use crate::fill::boundary::PhysicalSlab;
use crate::fill::{GhostFill, PhysicalBc};
use crate::index::{IndexBox, Side};
use crate::real::Real;

/// A box of coarse–fine ghost cells interpolated from a gathered coarse
/// region (see [`crate::interp`] for the scheme).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct InterpItem {
    /// The box's first fine cell in the store.
    pub dst: Strided,
    /// The gathered region's first coarse cell (`clo`) in the scratch.
    pub src: Strided,
    /// Index in [`FlatFill::flags`] of the flags of coarse cell `flo`.
    pub flags: u64,
    /// First fine cell (the level's index space).
    pub lo: [i32; 3],
    /// Fine cells along `x`, `y`, `z`.
    pub n: [u32; 3],
    /// The gathered region's first coarse cell.
    pub clo: [i32; 3],
    /// First coarse cell of the flags' box (`x` fastest).
    pub flo: [i32; 3],
    /// Coarse cells of the flags' box along `x` and `y`.
    pub fn_: [u32; 2],
    /// Refinement ratio (2 or 4).
    pub ratio: u32,
    /// 1 if the slope terms are summed `y, x, z` (the CPU's thin-box
    /// kernel), 0 for `x, y, z`.
    pub thin: u32,
}

/// A slab of physical ghost cells of one patch set from cells of the same
/// patch's box.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BoundaryItem {
    /// The patch's ghost-grown box (its low corner) in the store.
    pub bx: Strided,
    /// The slab's first cell, from the box's low corner.
    pub lo: [u32; 3],
    /// Cells along `x`, `y`, `z`.
    pub n: [u32; 3],
    /// Axis normal to the domain face.
    pub axis: u32,
    /// [`BoundaryItem::OUTFLOW`] or [`BoundaryItem::REFLECTING`].
    pub kind: u32,
    /// The domain's edge cell along `axis`, from the box's low corner.
    pub edge: i32,
    /// 0 for the low face, 1 for the high one.
    pub side: u32,
    /// Bit `c` set: component `c` changes sign (reflecting walls).
    pub negate: u32,
    /// Padding (zero).
    pub pad: u32,
}

impl BoundaryItem {
    /// Zero gradient: copies the edge cell.
    pub const OUTFLOW: u32 = 0;
    /// Mirror across the face, vector components negated.
    pub const REFLECTING: u32 = 1;

    /// The cell (along `axis`, from the box's corner) that cell `x` copies.
    #[inline(always)]
    pub fn source(&self, x: i64) -> i64 {
        let e = i64::from(self.edge);
        match (self.kind, self.side) {
            (Self::OUTFLOW, _) => e,
            (_, 0) => 2 * e - 1 - x,
            _ => 2 * e + 1 - x,
        }
    }
}

/// The ghost fill of every patch of a hierarchy as flat item lists (see
/// the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatFill {
    /// Components per cell.
    pub ncomp: u32,
    /// The interpolation limiter (executors take [`limiter_code`]).
    pub limiter: crate::interp::Limiter,
    /// Phase 1: sibling copies and coarse gathers.
    pub copies: Vec<CopyItem>,
    /// Phase 2: interpolated boxes.
    pub interp: Vec<InterpItem>,
    /// Phases 3–5: physical boundary slabs along `x`, `y`, `z`.
    pub boundary: [Vec<BoundaryItem>; 3],
    /// Stencil flags of the interpolated boxes' coarse cells (bit `2d`: the
    /// low neighbour along `d` holds data, bit `2d + 1`: the high one).
    pub flags: Vec<u8>,
    /// Values of scratch the gathers need.
    pub scratch_len: u64,
    /// Values of store the items touch (the largest index plus one).
    pub store_len: u64,
}

impl FlatFill {
    /// The items of `fill`'s plans with patch `i`'s ghost-grown box at
    /// `places[i]`, `ncomp` components. Errors if `places` does not hold
    /// one placement per patch, or a face with physical ghost cells has a
    /// user boundary condition.
    pub fn new<T: Real>(
        fill: &GhostFill<T>,
        places: &[Strided],
        ncomp: usize,
    ) -> Result<Self, MeshError> {
        let plan = fill.plan();
        crate::flat::check_places(places.len(), plan.len())?;
        fill.boundary_conditions().check_ncomp(ncomp)?;
        let nc = u32::try_from(ncomp)
            .ok()
            .filter(|&n| (1..=32).contains(&n))
            .ok_or_else(|| {
                MeshError::invalid(
                    "flat fill components",
                    format!("{ncomp} (1 to 32 are supported)"),
                )
            })?;
        let bc = fill.boundary_conditions();
        let patches = plan.patches();
        // Every patch's items depend on its plan alone, given where its
        // part of each list (and of the scratch) starts: the parts are
        // counted, then written side by side in patch order.
        let sizes: Vec<[usize; 4]> = patches
            .par_iter()
            .map(|p| {
                if p.interp.is_empty() {
                    return [p.copies.len(), 0, 0, 0];
                }
                [
                    p.copies.len() + p.gather.len(),
                    p.interp.len(),
                    p.interp.iter().map(|g| g.flags.len()).sum(),
                    p.coarse_box.num_cells() as usize * nc as usize,
                ]
            })
            .collect();
        let starts: [Vec<usize>; 4] = std::array::from_fn(|k| bounds(sizes.iter().map(|s| s[k])));
        let total = |k: usize| starts[k][patches.len()];
        let mut out = FlatFill {
            ncomp: nc,
            limiter: fill.limiter(),
            copies: bytemuck::zeroed_vec(total(0)),
            interp: bytemuck::zeroed_vec(total(1)),
            flags: vec![0; total(2)],
            scratch_len: total(3) as u64,
            ..Default::default()
        };
        let store_len = split_at_bounds(&mut out.copies, &starts[0])
            .into_par_iter()
            .zip(split_at_bounds(&mut out.interp, &starts[1]))
            .zip(split_at_bounds(&mut out.flags, &starts[2]))
            .enumerate()
            .map(|(i, ((copies, interp), flags))| {
                let p = &patches[i];
                let place = places[i];
                let gb = p.ghost_box;
                let tags = p
                    .copies
                    .iter()
                    .map(|o| (o, place, gb.lo, CopyItem::IN_STORE));
                // A patch with interpolated ghost cells gathers its coarse
                // region into its part of the scratch.
                let gathers = (!p.interp.is_empty()).then(|| {
                    let cb = p.coarse_box;
                    let cn = cb.size();
                    let scratch = Strided {
                        base: starts[3][i] as u64,
                        sy: cn.x as u64,
                        sz: cn.x as u64 * cn.y as u64,
                        sc: cb.num_cells() as u64,
                    };
                    (cb, scratch)
                });
                let gathered = gathers.iter().flat_map(|&(cb, scratch)| {
                    p.gather
                        .iter()
                        .map(move |o| (o, scratch, cb.lo, CopyItem::TO_SCRATCH))
                });
                for (slot, (o, to, lo, route)) in copies.iter_mut().zip(tags.chain(gathered)) {
                    let src_gb = patches[o.source].ghost_box;
                    *slot = CopyItem {
                        src: places[o.source].at(rel(&(o.region.lo - o.shift), &src_gb.lo)),
                        dst: to.at(rel(&o.region.lo, &lo)),
                        n: ext(&o.region),
                        route,
                    };
                }
                if let Some((cb, scratch)) = gathers {
                    let mut at = starts[2][i];
                    let mut flags = &mut flags[..];
                    for (slot, g) in interp.iter_mut().zip(&p.interp) {
                        let (mine, rest) = std::mem::take(&mut flags).split_at_mut(g.flags.len());
                        mine.copy_from_slice(&g.flags);
                        flags = rest;
                        *slot = InterpItem {
                            dst: place.at(rel(&g.fine.lo, &gb.lo)),
                            src: scratch,
                            flags: at as u64,
                            lo: [g.fine.lo.x, g.fine.lo.y, g.fine.lo.z],
                            n: ext(&g.fine),
                            clo: [cb.lo.x, cb.lo.y, cb.lo.z],
                            flo: [g.coarse.lo.x, g.coarse.lo.y, g.coarse.lo.z],
                            fn_: [g.coarse.size().x as u32, g.coarse.size().y as u32],
                            ratio: p.ratio as u32,
                            thin: u32::from(crate::interp::is_thin(&g.fine)),
                        };
                        at += g.flags.len();
                    }
                }
                last_index(&place, ext(&gb), nc) + 1
            })
            .max()
            .unwrap_or(0);
        for (i, p) in patches.iter().enumerate() {
            for s in &p.physical {
                out.boundary[s.axis].push(boundary_item(bc, s, &places[i], &p.ghost_box, p)?);
            }
        }
        out.store_len = store_len;
        Ok(out)
    }

    /// Runs every phase on the CPU: `store` holds the patches' boxes (their
    /// interiors set), `scratch` at least [`FlatFill::scratch_len`] values.
    /// The statement of what each item computes, and the CPU reference of
    /// other executors.
    pub fn run<T: Real>(&self, store: &mut [T], scratch: &mut [T]) -> Result<(), MeshError> {
        if (store.len() as u64) < self.store_len || (scratch.len() as u64) < self.scratch_len {
            return Err(MeshError::invalid(
                "flat fill",
                format!(
                    "store of {} and scratch of {} values, the items need {} and {}",
                    store.len(),
                    scratch.len(),
                    self.store_len,
                    self.scratch_len
                ),
            ));
        }
        super::run_copies(&self.copies, self.ncomp, store, scratch)?;
        let nc = u64::from(self.ncomp);
        run_interp(
            &self.interp,
            self.ncomp,
            self.limiter,
            &self.flags,
            store,
            scratch,
        );
        for phase in &self.boundary {
            for it in phase {
                let a = it.axis as usize;
                for c in 0..nc {
                    let neg = it.negate >> c & 1 == 1;
                    for_cells(it.n, |d| {
                        let mut at = [0, 1, 2].map(|e| u64::from(it.lo[e]) + d[e]);
                        let to = it.bx.index(at, c) as usize;
                        at[a] = it.source(at[a] as i64) as u64;
                        let v = store[it.bx.index(at, c) as usize];
                        store[to] = if neg { -v } else { v };
                    });
                }
            }
        }
        Ok(())
    }
}

fn boundary_item<T: Real>(
    bc: &crate::fill::BoundaryConditions<T>,
    s: &PhysicalSlab,
    place: &Strided,
    gb: &IndexBox,
    p: &crate::fill::PatchPlan,
) -> Result<BoundaryItem, MeshError> {
    let a = s.axis;
    let (kind, negate) = match bc.face(a, s.side) {
        PhysicalBc::Outflow => (BoundaryItem::OUTFLOW, 0),
        PhysicalBc::Reflecting => (
            BoundaryItem::REFLECTING,
            bc.vectors().iter().fold(0u32, |m, v| m | 1 << v[a]),
        ),
        PhysicalBc::Periodic => {
            return Err(MeshError::invalid(
                format!("boundary of patch {} (level {})", p.id, p.level),
                format!("physical ghost cells on the periodic axis {a}"),
            ));
        }
        PhysicalBc::User(_) => {
            return Err(MeshError::invalid(
                format!("boundary on axis {a}, {:?} face", s.side),
                "a user boundary condition runs host code and cannot be filled from flat items",
            ));
        }
    };
    Ok(BoundaryItem {
        bx: *place,
        lo: rel(&s.region.lo, &gb.lo).map(|v| v as u32),
        n: ext(&s.region),
        axis: a as u32,
        kind,
        edge: s.edge - gb.lo[a],
        side: match s.side {
            Side::Lo => 0,
            Side::Hi => 1,
        },
        negate,
        pad: 0,
    })
}

/// Runs interpolation items on the CPU (the items are checked by their
/// builder: [`FlatFill::new`] or [`super::FlatTransfer::new`]).
pub(crate) fn run_interp<T: Real>(
    items: &[InterpItem],
    ncomp: u32,
    limiter: crate::interp::Limiter,
    flags: &[u8],
    store: &mut [T],
    scratch: &[T],
) {
    for it in items {
        for_cells(it.n, |d| {
            let f = [0, 1, 2].map(|a| it.lo[a] + d[a] as i32);
            for c in 0..u64::from(ncomp) {
                store[it.dst.index(d, c) as usize] = interp_cell(it, limiter, flags, scratch, f, c);
            }
        });
    }
}

/// Calls `f` for every cell of an `n` box, `x` fastest.
#[inline(always)]
fn for_cells(n: [u32; 3], mut f: impl FnMut([u64; 3])) {
    for z in 0..u64::from(n[2]) {
        for y in 0..u64::from(n[1]) {
            for x in 0..u64::from(n[0]) {
                f([x, y, z]);
            }
        }
    }
}

/// Limiter codes of the items' executors.
pub const LIMITER_CONSTANT: u32 = 0;
/// minmod.
pub const LIMITER_MINMOD: u32 = 1;
/// van Leer's monotonized central.
pub const LIMITER_MC: u32 = 2;

/// The code of `limiter` for executors.
pub fn limiter_code(limiter: crate::interp::Limiter) -> u32 {
    use crate::interp::Limiter;
    match limiter {
        Limiter::PiecewiseConstant => LIMITER_CONSTANT,
        Limiter::MinMod => LIMITER_MINMOD,
        Limiter::MonotonizedCentral => LIMITER_MC,
    }
}

/// Fine cell `f`, component `c` of an interpolation item.
#[inline(always)]
fn interp_cell<T: Real>(
    it: &InterpItem,
    limiter: crate::interp::Limiter,
    flags: &[u8],
    scratch: &[T],
    f: [i32; 3],
    c: u64,
) -> T {
    let r = it.ratio as i32;
    let q = f.map(|v| v.div_euclid(r));
    let off = |t: i32| T::from_f64(((t & (r - 1)) as f64 + 0.5) / f64::from(r) - 0.5);
    let o = f.map(off);
    let fi = ((q[2] - it.flo[2]) as u64 * u64::from(it.fn_[1]) + (q[1] - it.flo[1]) as u64)
        * u64::from(it.fn_[0])
        + (q[0] - it.flo[0]) as u64;
    let fl = flags[(it.flags + fi) as usize];
    let d = [0, 1, 2].map(|a| (q[a] - it.clo[a]) as u64);
    let stride = [1, it.src.sy as usize, it.src.sz as usize];
    let at = it.src.index(d, c) as usize;
    let u = scratch[at];
    let s = crate::interp::flagged_slopes(limiter, scratch, at, fl, &stride);
    if it.thin == 1 {
        u + s[1] * o[1] + s[0] * o[0] + s[2] * o[2]
    } else {
        u + s[0] * o[0] + s[1] * o[1] + s[2] * o[2]
    }
}
