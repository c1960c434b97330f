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
use super::{CopyItem, InterpItem, Strided, ext, last_index, rel};
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

/// One new patch's items.
#[derive(Default)]
struct PatchItems {
    copies: Vec<CopyItem>,
    gathers: Vec<CopyItem>,
    interp: Vec<(InterpItem, Vec<u8>)>,
    scratch: u64,
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
        for (h, places) in [(old_h, old_places), (new_h, new_places)] {
            super::check_places(places.len(), h.num_patches())?;
        }
        if !crate::regrid::same_level0(old_h, new_h) {
            return Err(RegridError::Level0Changed);
        }
        let nc = ncomp as u32;
        let per_patch: Vec<PatchItems> = (0..new_h.num_patches())
            .into_par_iter()
            .map(|i| patch_items(old_h, old_places, new_h, new_places, i))
            .collect::<Result<_, RegridError>>()?;
        let mut out = FlatTransfer {
            ncomp: nc,
            limiter,
            ..Default::default()
        };
        for l in 0..new_h.num_levels() {
            let mut level = TransferLevel {
                level: l,
                ..Default::default()
            };
            let mut scratch = 0u64;
            for p in &per_patch[new_h.level_range(l)] {
                out.copies.extend_from_slice(&p.copies);
                let shift = |s: Strided| Strided {
                    base: s.base + scratch * u64::from(nc),
                    ..s
                };
                level.gathers.extend(p.gathers.iter().map(|g| CopyItem {
                    dst: shift(g.dst),
                    ..*g
                }));
                for (it, flags) in &p.interp {
                    level.interp.push(InterpItem {
                        src: shift(it.src),
                        flags: out.flags.len() as u64,
                        ..*it
                    });
                    out.flags.extend_from_slice(flags);
                }
                scratch += p.scratch;
            }
            out.scratch_len = out.scratch_len.max(scratch * u64::from(nc));
            if l > 0 {
                out.levels.push(level);
            }
        }
        for c in &out.copies {
            out.old_len = out.old_len.max(last_index(&c.src, c.n, nc) + 1);
            out.new_len = out.new_len.max(last_index(&c.dst, c.n, nc) + 1);
        }
        for it in out.levels.iter().flat_map(|l| &l.interp) {
            out.new_len = out.new_len.max(last_index(&it.dst, it.n, nc) + 1);
        }
        Ok(out)
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
/// it, with its scratch region at 0.
fn patch_items(
    old_h: &Hierarchy,
    old_places: &[Strided],
    new_h: &Hierarchy,
    new_places: &[Strided],
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
    let copy = |o: usize, region: &IndexBox| CopyItem {
        src: old_places[o].at(rel(&region.lo, &old_h.patches()[o].ghost_box().lo)),
        dst: new_places[i].at(rel(&region.lo, &gb.lo)),
        n: ext(region),
        route: CopyItem::FROM_SCRATCH,
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
            out.gathers.push(CopyItem {
                src: new_places[q].at(rel(&region.lo, &qp.ghost_box().lo)),
                dst: scratch.at(rel(&region.lo, &cbox.lo)),
                n: ext(&region),
                route: CopyItem::TO_SCRATCH,
            });
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
                    dst: new_places[i].at(rel(&b.lo, &gb.lo)),
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
