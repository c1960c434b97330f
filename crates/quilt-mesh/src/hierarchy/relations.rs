//! Relations derived from the layout alone: sibling and coarse copy tags,
//! coarse–fine and physical ghost regions and faces (AMReX computes the
//! same "copy tags" once per layout and caches them).

use rayon::prelude::*;

use super::bins::BoxBins;
use super::layout::Hierarchy;
use super::patch::{Overlap, Patch};
use crate::geometry::LevelGeometry;
use crate::index::{BoxList, IndexBox, IntVect, Side, box_difference, iv};

pub(crate) fn compute(h: &mut Hierarchy) {
    // Each patch's relations depend on the layout alone: computed for all
    // patches at once.
    let (levels, level_starts, bins, ghost) = (&h.levels, &h.level_starts, &h.bins, h.ghost);
    let patches = &mut h.patches;
    patches
        .par_iter_mut()
        .enumerate()
        .for_each_init(Vec::new, |hits, (i, p)| {
            relate(levels, level_starts, bins, ghost, i, p, hits)
        });
}

/// The relations of patch `i` (`p`) in the layout of `levels`,
/// `level_starts` and `bins`.
fn relate(
    levels: &[LevelGeometry],
    level_starts: &[usize],
    bins: &[BoxBins],
    ghost: i32,
    i: usize,
    p: &mut Patch,
    hits: &mut Vec<usize>,
) {
    let (level, interior, ghost_box) = (p.level, p.interior, p.ghost_box);
    let lg = levels[level];
    let start = level_starts[level];
    let pdomain = lg.periodic_domain();
    let shifts = lg.periodic_shifts();

    let siblings = overlaps(&bins[level], start, &ghost_box, &shifts, Some(i), hits);

    let mut cf = BoxList::from_box(ghost_box.intersect(&pdomain));
    cf.subtract(&interior);
    cf.subtract_all(siblings.iter().map(|o| &o.region));

    let physical = box_difference(&ghost_box, &pdomain);
    let mut physical_ghosts = BoxList::new();
    for b in physical {
        physical_ghosts.push_disjoint(b);
    }

    let mut cf_faces: [[BoxList; 2]; 3] = Default::default();
    let mut phys_faces = [[None; 2]; 3];
    for axis in 0..3 {
        for side in Side::BOTH {
            let slab = interior.adjacent(axis, side, 1);
            if !pdomain.contains_box(&slab) {
                phys_faces[axis][side.index()] = Some(interior.adjacent(axis, side, ghost));
                continue;
            }
            let mut l = BoxList::from_box(slab);
            for o in &siblings {
                if o.region.intersects(&slab) {
                    l.subtract(&o.region);
                }
            }
            cf_faces[axis][side.index()] = l;
        }
    }

    let coarse = if level > 0 {
        let shifts = levels[level - 1].periodic_shifts();
        let need: IndexBox = ghost_box.coarsen(lg.ratio).grow(1);
        overlaps(
            &bins[level - 1],
            level_starts[level - 1],
            &need,
            &shifts,
            None,
            hits,
        )
    } else {
        Vec::new()
    };

    p.sibling_overlaps = siblings;
    p.coarse_fine_ghosts = cf;
    p.physical_ghosts = physical_ghosts;
    p.coarse_fine_faces = cf_faces;
    p.physical_faces = phys_faces;
    p.coarse_overlaps = coarse;
}

/// The parts of `bx` that the boxes of `bins` (hierarchy indices from
/// `start`) cover, each box also at its periodic images `box + shift`;
/// `me`, at no shift, is left out (a patch is not its own sibling).
fn overlaps(
    bins: &BoxBins,
    start: usize,
    bx: &IndexBox,
    shifts: &[IntVect],
    me: Option<usize>,
    hits: &mut Vec<usize>,
) -> Vec<Overlap> {
    let mut out = Vec::new();
    for shift in shifts {
        bins.query_into(&bx.shift(&-shift), hits);
        for &n in hits.iter() {
            let source = start + n;
            if Some(source) == me && *shift == iv(0, 0, 0) {
                continue;
            }
            let region = bx.intersect(&bins.boxes()[n].shift(shift));
            if !region.is_empty() {
                out.push(Overlap {
                    source,
                    region,
                    shift: *shift,
                });
            }
        }
    }
    out
}
