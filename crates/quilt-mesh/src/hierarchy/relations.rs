//! Relations derived from the layout alone: sibling and coarse copy tags,
//! coarse–fine and physical ghost regions and faces (AMReX computes the
//! same "copy tags" once per layout and caches them).

use super::layout::Hierarchy;
use super::patch::Overlap;
use crate::index::{BoxList, IndexBox, Side, box_difference};

pub(crate) fn compute(h: &mut Hierarchy) {
    let mut hits = Vec::new();
    for i in 0..h.patches.len() {
        let (level, interior, ghost_box) = {
            let p = &h.patches[i];
            (p.level, p.interior, p.ghost_box)
        };
        let lg = h.levels[level];
        let start = h.level_starts[level];
        let pdomain = lg.periodic_domain();
        let shifts = lg.periodic_shifts();

        let mut siblings = Vec::new();
        for shift in &shifts {
            h.bins[level].query_into(&ghost_box.shift(&-shift), &mut hits);
            for &n in &hits {
                let source = start + n;
                if source == i && *shift == crate::index::iv(0, 0, 0) {
                    continue;
                }
                let region = ghost_box.intersect(&h.bins[level].boxes()[n].shift(shift));
                if !region.is_empty() {
                    siblings.push(Overlap {
                        source,
                        region,
                        shift: *shift,
                    });
                }
            }
        }

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
                    phys_faces[axis][side.index()] = Some(interior.adjacent(axis, side, h.ghost));
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

        let mut coarse = Vec::new();
        if level > 0 {
            let clg = h.levels[level - 1];
            let cstart = h.level_starts[level - 1];
            let need: IndexBox = ghost_box.coarsen(lg.ratio).grow(1);
            for shift in clg.periodic_shifts() {
                h.bins[level - 1].query_into(&need.shift(&-shift), &mut hits);
                for &n in &hits {
                    let region = need.intersect(&h.bins[level - 1].boxes()[n].shift(&shift));
                    if !region.is_empty() {
                        coarse.push(Overlap {
                            source: cstart + n,
                            region,
                            shift,
                        });
                    }
                }
            }
        }

        let p = &mut h.patches[i];
        p.sibling_overlaps = siblings;
        p.coarse_fine_ghosts = cf;
        p.physical_ghosts = physical_ghosts;
        p.coarse_fine_faces = cf_faces;
        p.physical_faces = phys_faces;
        p.coarse_overlaps = coarse;
    }
}
