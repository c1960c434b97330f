//! A hierarchy's step as flat lists of work items over one store of
//! patches, for executors that run every patch at once: the GPU of a
//! device-resident run, where one launch per phase covers all patches of
//! all levels, and the CPU statement of the same items that tests hold it
//! to.
//!
//! Every patch's ghost-grown box lives somewhere in a flat store of values
//! ([`Strided`]: base, row, plane and component strides). A step's
//! operations on it are:
//!
//! - the ghost fill ([`FlatFill`]): copies, gathers, interpolation,
//!   physical boundaries;
//! - copies between boxes of the store ([`CopyItem`], e.g. the flux probes
//!   of a step, copied from their coarse patches after the fill);
//! - refluxing ([`FlatReflux`], built by
//!   [`crate::flux_register::FluxRegister::flat`]) and restriction
//!   ([`RestrictItem`]) level by level, finest first.
//!
//! and a regrid's, for executors that regrid without the host's copy of
//! the data: tagging every patch into one array of bits ([`FlatTag`]),
//! and moving the data from the old hierarchy's store into the new one's
//! ([`FlatTransfer`]).
//!
//! Each item states the operations of quilt-mesh's own routine on the same
//! cells in the same order, so an executor that follows an item's `run`
//! reproduces the CPU bit for bit. Within a phase (a pass, for
//! refluxing) no item reads what another writes.

mod fill;
mod reflux;
mod restrict;
mod tag;
mod transfer;

pub use fill::{
    BoundaryItem, FlatFill, InterpItem, LIMITER_CONSTANT, LIMITER_MC, LIMITER_MINMOD, limiter_code,
};
pub use reflux::{FlatReflux, RefluxItem};
pub use restrict::{RestrictItem, restrict_items, run_restrict_items};
pub use tag::{FlatTag, TAG_REACH, TagCriterionSpec, TagDetector, TagField, TagItem, TagRule};
pub use transfer::{FlatTransfer, TransferLevel, TransferPieces};

use bytemuck::{Pod, Zeroable};

use crate::error::MeshError;
use crate::index::{IndexBox, IntVect};

/// Where one box's values live in a flat array: component `c` of the cell
/// at `(x, y, z)` from the box's low corner at
/// `base + x + sy·y + sz·z + sc·c`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Strided {
    /// Index of component 0 of the low corner.
    pub base: u64,
    /// Stride between rows (`y`).
    pub sy: u64,
    /// Stride between planes (`z`).
    pub sz: u64,
    /// Stride between components.
    pub sc: u64,
}

impl Strided {
    /// The place of a box whose low corner is cell `offset` of bin `bin`
    /// in bins of shape `bins`.
    pub fn in_bin(bins: crate::BinGeometry, bin: usize, offset: [usize; 3]) -> Self {
        let [sy, sz, sc] = bins.strides().map(|s| s as u64);
        Self {
            base: bins.index(bin, 0, offset) as u64,
            sy,
            sz,
            sc,
        }
    }

    /// The same strides with the base moved to cell `d` of the box.
    pub fn at(&self, d: [u64; 3]) -> Self {
        Self {
            base: self.base + d[0] + self.sy * d[1] + self.sz * d[2],
            ..*self
        }
    }

    /// Index of component `c` of cell `d` (from the base).
    #[inline(always)]
    pub fn index(&self, d: [u64; 3], c: u64) -> u64 {
        self.base + d[0] + self.sy * d[1] + self.sz * d[2] + self.sc * c
    }
}

/// A box of values copied unchanged: `n` cells from `src` to `dst`, each
/// in the store or in a second array (the scratch) as `route` says.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct CopyItem {
    /// The first source cell.
    pub src: Strided,
    /// The first destination cell.
    pub dst: Strided,
    /// Cells along `x`, `y`, `z`.
    pub n: [u32; 3],
    /// [`CopyItem::IN_STORE`], [`CopyItem::TO_SCRATCH`] or
    /// [`CopyItem::FROM_SCRATCH`].
    pub route: u32,
}

impl CopyItem {
    /// From the store to the store.
    pub const IN_STORE: u32 = 0;
    /// From the store to the scratch.
    pub const TO_SCRATCH: u32 = 1;
    /// From the scratch to the store.
    pub const FROM_SCRATCH: u32 = 2;

    /// The same box copied the other way.
    pub fn reversed(&self) -> Self {
        Self {
            src: self.dst,
            dst: self.src,
            n: self.n,
            route: match self.route {
                Self::TO_SCRATCH => Self::FROM_SCRATCH,
                Self::FROM_SCRATCH => Self::TO_SCRATCH,
                r => r,
            },
        }
    }
}

/// Where each part of a list starts when part `n` holds `lens[n]` items:
/// `0`, then the running sums (one more entry than parts, the last the
/// list's length), as [`split_at_bounds`] takes them.
pub(crate) fn bounds(lens: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut out = vec![0];
    let mut at = 0;
    out.extend(lens.into_iter().map(|n| {
        at += n;
        at
    }));
    out
}

/// `v` cut at `bounds` (ascending, the last `v.len()`): part `n` is
/// `bounds[n]..bounds[n + 1]`.
pub(crate) fn split_at_bounds<'a, X>(mut v: &'a mut [X], bounds: &[usize]) -> Vec<&'a mut [X]> {
    let mut parts = Vec::with_capacity(bounds.len().saturating_sub(1));
    for w in bounds.windows(2) {
        let (part, rest) = std::mem::take(&mut v).split_at_mut(w[1] - w[0]);
        parts.push(part);
        v = rest;
    }
    parts
}

/// The error for placements that are not one per patch of a hierarchy.
pub(crate) fn check_places(places: usize, patches: usize) -> Result<(), MeshError> {
    if places == patches {
        return Ok(());
    }
    Err(MeshError::LayoutMismatch {
        why: format!("{places} placements for a hierarchy of {patches} patches"),
    })
}

pub(crate) fn ext(b: &IndexBox) -> [u32; 3] {
    let s = b.size();
    [s.x, s.y, s.z].map(|v| v.max(0) as u32)
}

/// `p − lo` as unsigned offsets (`p` inside a box with corner `lo`): the
/// cell argument of [`Strided::at`] and [`Strided::index`].
pub fn rel(p: &IntVect, lo: &IntVect) -> [u64; 3] {
    [0, 1, 2].map(|a| (p[a] - lo[a]) as u64)
}

/// Largest store index of `n` cells from `s` (all components).
pub(crate) fn last_index(s: &Strided, n: [u32; 3], ncomp: u32) -> u64 {
    let m = n.map(|v| u64::from(v.max(1) - 1));
    s.index(m, u64::from(ncomp.max(1) - 1))
}

/// Cells of each item of boxes `n`, as prefix sums: item `k` covers cells
/// `starts[k] .. starts[k + 1]` (what an executor bisects to find the item
/// of a cell).
pub fn starts(n: impl Iterator<Item = [u32; 3]>) -> Vec<u64> {
    let mut out = vec![0u64];
    let mut at = 0u64;
    for e in n {
        at += e.iter().map(|&v| u64::from(v)).product::<u64>();
        out.push(at);
    }
    out
}

/// Runs copy items on the CPU: every component of every cell, from the
/// store into the store or the scratch.
pub fn run_copies<T: Copy>(
    items: &[CopyItem],
    ncomp: u32,
    store: &mut [T],
    scratch: &mut [T],
) -> Result<(), MeshError> {
    for it in items {
        let src_last = last_index(&it.src, it.n, ncomp);
        let dst_last = last_index(&it.dst, it.n, ncomp);
        let (src_len, dst_len) = match it.route {
            CopyItem::IN_STORE => (store.len(), store.len()),
            CopyItem::TO_SCRATCH => (store.len(), scratch.len()),
            CopyItem::FROM_SCRATCH => (scratch.len(), store.len()),
            r => {
                return Err(MeshError::invalid(
                    "copy item",
                    format!("route {r} is none of store, to scratch, from scratch"),
                ));
            }
        };
        if src_last >= src_len as u64 || dst_last >= dst_len as u64 {
            return Err(MeshError::invalid(
                "copy item",
                format!(
                    "reads up to {src_last} of {src_len} values and writes up to {dst_last} of {dst_len}"
                ),
            ));
        }
        match it.route {
            CopyItem::TO_SCRATCH => copy_between(it, ncomp, store, scratch),
            CopyItem::FROM_SCRATCH => copy_between(it, ncomp, scratch, store),
            _ => {
                for c in 0..u64::from(ncomp) {
                    for z in 0..u64::from(it.n[2]) {
                        for y in 0..u64::from(it.n[1]) {
                            for x in 0..u64::from(it.n[0]) {
                                let s = it.src.index([x, y, z], c) as usize;
                                let d = it.dst.index([x, y, z], c) as usize;
                                store[d] = store[s];
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Copies the cells of `it` (every component) from `src` into `dst`, the
/// two arrays its route names, row by row; the caller has checked that
/// both hold the item's indices.
pub(crate) fn copy_between<T: Copy>(it: &CopyItem, ncomp: u32, src: &[T], dst: &mut [T]) {
    let nx = it.n[0] as usize;
    for c in 0..u64::from(ncomp) {
        for z in 0..u64::from(it.n[2]) {
            for y in 0..u64::from(it.n[1]) {
                let s = it.src.index([0, y, z], c) as usize;
                let d = it.dst.index([0, y, z], c) as usize;
                dst[d..d + nx].copy_from_slice(&src[s..s + nx]);
            }
        }
    }
}

/// Refluxing and restriction of one fine level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelItems {
    /// The fine level.
    pub level: usize,
    /// Corrections of the coarse cells next to the level's patches.
    pub reflux: FlatReflux,
    /// The level restricted onto the one below.
    pub restrict: Vec<RestrictItem>,
}

/// A whole step of a hierarchy as items over one store: the fill, copies
/// after it, the solve (by the executor), then each level's refluxing and
/// restriction, finest level first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepItems {
    /// Components per cell.
    pub ncomp: u32,
    /// The ghost fill.
    pub fill: FlatFill,
    /// Copies between boxes of the store after the fill (store to store).
    pub after: Vec<CopyItem>,
    /// Fine levels, finest first.
    pub levels: Vec<LevelItems>,
    /// Every patch's interior from the store into a compact array (the
    /// scratch of these items: patch after patch, component after
    /// component, `x` fastest); reversed ([`CopyItem::reversed`]), back
    /// into the store. Loads and stores of the state move only interiors.
    pub interiors: Vec<CopyItem>,
    /// Values of that compact array.
    pub interior_len: u64,
}

impl StepItems {
    /// The fill and the copies after it, on the CPU.
    pub fn run_fill<T: crate::Real>(
        &self,
        store: &mut [T],
        scratch: &mut [T],
    ) -> Result<(), MeshError> {
        self.fill.run(store, scratch)?;
        run_copies(&self.after, self.ncomp, store, scratch)
    }

    /// Refluxing and restriction of every level, finest first, on the CPU:
    /// `flux` holds the solve's fluxes.
    pub fn run_levels<T: crate::Real>(&self, store: &mut [T], flux: &[T]) -> Result<(), MeshError> {
        for l in &self.levels {
            l.reflux.run(store, flux)?;
            run_restrict_items(&l.restrict, self.ncomp as usize, store)?;
        }
        Ok(())
    }
}
