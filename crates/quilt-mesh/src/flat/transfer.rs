//! [`FlatTransfer`]: a regrid's data transfer
//! ([`crate::regrid::transfer`]) as flat items from the old hierarchy's
//! store into the new one's.
//!
//! 1. **copies** ([`CopyItem`], route [`CopyItem::FROM_SCRATCH`] with the
//!    old store as the second array): every new patch's interior cells
//!    that an old patch of the same level covers, whole interiors for
//!    unchanged patches and level 0;
//! 2. then, level by level from the first fine one: the new coarser
//!    level's interiors gathered into the scratch ([`CopyItem::TO_SCRATCH`],
//!    the region the host transfer gathers, without periodic images), and
//!    the uncovered cells interpolated from it ([`InterpItem`]).
//!
//! Interpolated and copied cells are disjoint, and a level's gathers read
//! only the level below, which is complete by then. Every value is the
//! host transfer's bit for bit; ghost cells are left to the next fill.

use rayon::prelude::*;

use super::fill::run_interp;
use super::{CopyItem, InterpItem, Strided, bounds, ext, last_index, rel, split_at_bounds};
use crate::error::MeshError;
use crate::hierarchy::Hierarchy;
use crate::index::{BoxList, IndexBox};
use crate::interp::{Limiter, is_thin, stencil_flags};
use crate::real::Real;
use crate::regrid::RegridError;

/// The gathers and interpolations of one fine level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransferLevel {
    /// The new level.
    pub level: usize,
    /// The new coarser level's cells into the scratch.
    pub gathers: Vec<CopyItem>,
    /// The uncovered cells, from the scratch.
    pub interp: Vec<InterpItem>,
}

/// A regrid's data transfer as flat items (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatTransfer {
    /// Components per cell.
    pub ncomp: u32,
    /// The interpolation limiter (executors take
    /// [`super::limiter_code`]).
    pub limiter: Limiter,
    /// Phase 1: from the old store into the new one.
    pub copies: Vec<CopyItem>,
    /// Then each fine level, coarse first.
    pub levels: Vec<TransferLevel>,
    /// Stencil flags of the interpolations' coarse cells (as
    /// [`super::FlatFill::flags`]).
    pub flags: Vec<u8>,
    /// Values of scratch one level needs (levels reuse it).
    pub scratch_len: u64,
    /// Values of the old store the copies read (the largest index plus one).
    pub old_len: u64,
    /// Values of the new store the items touch.
    pub new_len: u64,
}

/// A place in the new store before the new hierarchy is placed: cell `d`
/// of new patch `patch`'s ghost-grown box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NewPlace {
    patch: usize,
    d: [u64; 3],
}

impl NewPlace {
    fn at(&self, places: &[Strided]) -> Strided {
        places[self.patch].at(self.d)
    }
}

/// One new patch's items, with their places in the new store still to be
/// given: each copy's and interpolation's destination, each gather's
/// source.
#[derive(Debug, Default)]
struct PatchItems {
    copies: Vec<(CopyItem, NewPlace)>,
    gathers: Vec<(CopyItem, NewPlace)>,
    interp: Vec<(InterpItem, NewPlace, Vec<u8>)>,
    scratch: u64,
}

/// A regrid's data transfer before the new hierarchy's patches have places
/// ([`TransferPieces::place`] makes the [`FlatTransfer`]): everything the
/// hierarchies decide, which is nearly all of the work, so that it can be
/// made while the new hierarchy is packed.
#[derive(Debug)]
pub struct TransferPieces {
    ncomp: u32,
    limiter: Limiter,
    per_patch: Vec<PatchItems>,
    levels: Vec<std::ops::Range<usize>>,
}

impl TransferPieces {
    /// The transfer from `old_h` (patch `i`'s ghost-grown box at
    /// `old_places[i]`) onto `new_h`, `ncomp` components. The hierarchies
    /// share the geometry and level 0.
    pub fn new(
        old_h: &Hierarchy,
        old_places: &[Strided],
        new_h: &Hierarchy,
        ncomp: usize,
        limiter: Limiter,
    ) -> Result<Self, RegridError> {
        super::check_places(old_places.len(), old_h.num_patches())?;
        if !crate::regrid::same_level0(old_h, new_h) {
            return Err(RegridError::Level0Changed);
        }
        let per_patch: Vec<PatchItems> = (0..new_h.num_patches())
            .into_par_iter()
            .map(|i| patch_items(old_h, old_places, new_h, i))
            .collect::<Result<_, RegridError>>()?;
        Ok(Self {
            ncomp: ncomp as u32,
            limiter,
            per_patch,
            levels: (0..new_h.num_levels())
                .map(|l| new_h.level_range(l))
                .collect(),
        })
    }

    /// The transfer with new patch `i`'s ghost-grown box at
    /// `new_places[i]`.
    pub fn place(self, new_places: &[Strided]) -> Result<FlatTransfer, RegridError> {
        super::check_places(new_places.len(), self.per_patch.len())?;
        let nc = self.ncomp;
        let per = &self.per_patch;
        let n = per.len();
        // Where each patch's items go (copies and flags in lists over all
        // patches; gathers, interpolations and scratch in its level's),
        // then every patch's part written side by side.
        let copies_at = bounds(per.iter().map(|p| p.copies.len()));
        let flags_at = bounds(
            per.iter()
                .map(|p| p.interp.iter().map(|(_, _, f)| f.len()).sum()),
        );
        let mut scratch_at = vec![0u64; n];
        let mut scratch_len = 0u64;
        let mut levels: Vec<(TransferLevel, [Vec<usize>; 2])> = Vec::new();
        for (l, range) in self.levels.iter().enumerate() {
            let mine = &per[range.clone()];
            let at = [
                bounds(mine.iter().map(|p| p.gathers.len())),
                bounds(mine.iter().map(|p| p.interp.len())),
            ];
            let mut scratch = 0u64;
            for (i, p) in range.clone().zip(mine) {
                scratch_at[i] = scratch;
                scratch += p.scratch;
            }
            scratch_len = scratch_len.max(scratch * u64::from(nc));
            let level = TransferLevel {
                level: l,
                gathers: bytemuck::zeroed_vec(at[0][mine.len()]),
                interp: bytemuck::zeroed_vec(at[1][mine.len()]),
            };
            levels.push((level, at));
        }
        let mut copies = bytemuck::zeroed_vec(copies_at[n]);
        let mut flags = vec![0; flags_at[n]];
        let mut gather_parts = Vec::with_capacity(n);
        let mut interp_parts = Vec::with_capacity(n);
        for (level, at) in &mut levels {
            gather_parts.extend(split_at_bounds(&mut level.gathers, &at[0]));
            interp_parts.extend(split_at_bounds(&mut level.interp, &at[1]));
        }
        let (old_len, new_len) = split_at_bounds(&mut copies, &copies_at)
            .into_par_iter()
            .zip(split_at_bounds(&mut flags, &flags_at))
            .zip(gather_parts)
            .zip(interp_parts)
            .enumerate()
            .map(|(i, (((copies, flags), gathers), interp))| {
                let p = &per[i];
                let shift = |s: Strided| Strided {
                    base: s.base + scratch_at[i] * u64::from(nc),
                    ..s
                };
                let (mut old_len, mut new_len) = (0, 0);
                for (slot, (c, at)) in copies.iter_mut().zip(&p.copies) {
                    *slot = CopyItem {
                        dst: at.at(new_places),
                        ..*c
                    };
                    old_len = old_len.max(last_index(&slot.src, slot.n, nc) + 1);
                    new_len = new_len.max(last_index(&slot.dst, slot.n, nc) + 1);
                }
                for (slot, (g, from)) in gathers.iter_mut().zip(&p.gathers) {
                    *slot = CopyItem {
                        src: from.at(new_places),
                        dst: shift(g.dst),
                        ..*g
                    };
                }
                let mut at = flags_at[i];
                let mut rest = &mut flags[..];
                for (slot, (it, to, f)) in interp.iter_mut().zip(&p.interp) {
                    let (mine, after) = std::mem::take(&mut rest).split_at_mut(f.len());
                    mine.copy_from_slice(f);
                    rest = after;
                    *slot = InterpItem {
                        dst: to.at(new_places),
                        src: shift(it.src),
                        flags: at as u64,
                        ..*it
                    };
                    new_len = new_len.max(last_index(&slot.dst, slot.n, nc) + 1);
                    at += f.len();
                }
                (old_len, new_len)
            })
            .reduce(|| (0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
        Ok(FlatTransfer {
            ncomp: nc,
            limiter: self.limiter,
            copies,
            // Level 0 has nothing to gather or interpolate.
            levels: levels.into_iter().skip(1).map(|(level, _)| level).collect(),
            flags,
            scratch_len,
            old_len,
            new_len,
        })
    }
}

impl FlatTransfer {
    /// The transfer from `old_h` (patch `i`'s ghost-grown box at
    /// `old_places[i]`) onto `new_h` (at `new_places`), `ncomp`
    /// components. The hierarchies share the geometry and level 0.
    pub fn new(
        old_h: &Hierarchy,
        old_places: &[Strided],
        new_h: &Hierarchy,
        new_places: &[Strided],
        ncomp: usize,
        limiter: Limiter,
    ) -> Result<Self, RegridError> {
        TransferPieces::new(old_h, old_places, new_h, ncomp, limiter)?.place(new_places)
    }

    /// Runs the transfer on the CPU from `old` into `new`; `scratch` holds
    /// at least [`FlatTransfer::scratch_len`] values. The statement of
    /// what executors compute.
    pub fn run<T: Real>(
        &self,
        old: &[T],
        new: &mut [T],
        scratch: &mut [T],
    ) -> Result<(), MeshError> {
        if (old.len() as u64) < self.old_len
            || (new.len() as u64) < self.new_len
            || (scratch.len() as u64) < self.scratch_len
        {
            return Err(MeshError::invalid(
                "flat transfer",
                format!(
                    "stores of {} and {} values and a scratch of {}; the items need {}, {} and {}",
                    old.len(),
                    new.len(),
                    scratch.len(),
                    self.old_len,
                    self.new_len,
                    self.scratch_len
                ),
            ));
        }
        for it in &self.copies {
            super::copy_between(it, self.ncomp, old, new);
        }
        for l in &self.levels {
            super::run_copies(&l.gathers, self.ncomp, new, scratch)?;
            run_interp(
                &l.interp,
                self.ncomp,
                self.limiter,
                &self.flags,
                new,
                scratch,
            );
        }
        Ok(())
    }
}

/// The items of new patch `i`: what [`crate::regrid::transfer`] does for
/// it, with its scratch region at 0. The new store's places are left
/// unset (base 0) beside the [`NewPlace`] each stands for.
fn patch_items(
    old_h: &Hierarchy,
    old_places: &[Strided],
    new_h: &Hierarchy,
    i: usize,
) -> Result<PatchItems, RegridError> {
    let p = &new_h.patches()[i];
    let l = p.level();
    let interior = p.interior();
    let gb = p.ghost_box();
    let mut out = PatchItems::default();
    let olds = if l < old_h.num_levels() {
        old_h.patches_intersecting(l, &interior)
    } else {
        Vec::new()
    };
    let unset = Strided::default();
    let copy = |o: usize, region: &IndexBox| {
        (
            CopyItem {
                src: old_places[o].at(rel(&region.lo, &old_h.patches()[o].ghost_box().lo)),
                dst: unset,
                n: ext(region),
                route: CopyItem::FROM_SCRATCH,
            },
            NewPlace {
                patch: i,
                d: rel(&region.lo, &gb.lo),
            },
        )
    };
    // An unchanged patch (every level-0 patch among them) is copied whole.
    if let Some(&o) = olds
        .iter()
        .find(|&&o| old_h.patches()[o].interior() == interior)
    {
        out.copies.push(copy(o, &interior));
        return Ok(out);
    }
    if l == 0 {
        return Err(RegridError::Level0Changed);
    }
    let mut open = BoxList::from_box(interior);
    let covered: Vec<IndexBox> = olds
        .iter()
        .map(|&o| old_h.patches()[o].interior())
        .collect();
    open.subtract_all(&covered);
    if let Some(bound) = open.boxes().iter().copied().reduce(|a, b| a.bounding(&b)) {
        let ratio = new_h.geometry().ratios()[l];
        let coarse_domain = new_h.geometry().level(l - 1)?.domain;
        let cbox = bound.coarsen(ratio).grow(1).intersect(&coarse_domain);
        let cn = cbox.size();
        let len = cbox.num_cells() as u64;
        let scratch = Strided {
            base: 0,
            sy: cn.x as u64,
            sz: cn.x as u64 * cn.y as u64,
            sc: len,
        };
        out.scratch = len;
        let mut mask = vec![0u8; len as usize];
        for q in new_h.patches_intersecting(l - 1, &cbox) {
            let qp = &new_h.patches()[q];
            let region = cbox.intersect(&qp.interior());
            for c in region.iter() {
                mask[cbox.offset(&c)] = 1;
            }
            out.gathers.push((
                CopyItem {
                    src: unset,
                    dst: scratch.at(rel(&region.lo, &cbox.lo)),
                    n: ext(&region),
                    route: CopyItem::TO_SCRATCH,
                },
                NewPlace {
                    patch: q,
                    d: rel(&region.lo, &qp.ghost_box().lo),
                },
            ));
        }
        for b in open.boxes() {
            let cg = b.coarsen(ratio);
            let flags = stencil_flags(&mask, &cbox, &cg).map_err(|q| MeshError::NotNested {
                level: l,
                id: p.id(),
                uncovered: IndexBox::new(q, q),
            })?;
            out.interp.push((
                InterpItem {
                    dst: unset,
                    src: scratch,
                    flags: 0,
                    lo: [b.lo.x, b.lo.y, b.lo.z],
                    n: ext(b),
                    clo: [cbox.lo.x, cbox.lo.y, cbox.lo.z],
                    flo: [cg.lo.x, cg.lo.y, cg.lo.z],
                    fn_: [cg.size().x as u32, cg.size().y as u32],
                    ratio: ratio as u32,
                    thin: u32::from(is_thin(b)),
                },
                NewPlace {
                    patch: i,
                    d: rel(&b.lo, &gb.lo),
                },
                flags,
            ));
        }
    }
    for o in olds {
        let region = interior.intersect(&old_h.patches()[o].interior());
        if !region.is_empty() {
            out.copies.push(copy(o, &region));
        }
    }
    Ok(out)
}
