//! [`RestrictItem`]: restriction as flat items.

use super::{Strided, rel};
use crate::error::MeshError;
use crate::hierarchy::Hierarchy;
use crate::real::Real;
use crate::restrict::{covered_coarse_cells, fine_ratio};

/// A box of coarse cells set to the mean of the fine cells under them, as
/// a flat item over a store of patches (see [`crate::flat`]):
/// coarse cell `d` from `coarse` gets the mean of the `ratio³` fine cells
/// from `fine` at `ratio · d`, summed `z`, then `y`, then `x` outermost to
/// innermost, as [`crate::restrict::restrict_patch`] sums them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RestrictItem {
    /// The first coarse cell.
    pub coarse: Strided,
    /// The first fine cell under it.
    pub fine: Strided,
    /// Coarse cells along `x`, `y`, `z`.
    pub n: [u32; 3],
    /// Refinement ratio.
    pub ratio: u32,
}

/// The restriction of level `fine_level` onto the level below as flat
/// items, with patch `i`'s ghost-grown box at `places[i]` (the pairs
/// [`crate::restrict::restrict_level`] visits; no two items share a coarse cell).
pub fn restrict_items(
    h: &Hierarchy,
    fine_level: usize,
    places: &[Strided],
) -> Result<Vec<RestrictItem>, MeshError> {
    if places.len() != h.num_patches() {
        return Err(MeshError::invalid(
            "restriction items",
            format!(
                "{} placements for {} patches",
                places.len(),
                h.num_patches()
            ),
        ));
    }
    let ratio = fine_ratio(h, fine_level)?;
    let mut out = Vec::new();
    for ci in h.level_range(fine_level - 1) {
        let cpatch = &h.patches()[ci];
        let under = cpatch.interior().refine(ratio);
        for fi in h.patches_intersecting(fine_level, &under) {
            let fpatch = &h.patches()[fi];
            let region =
                covered_coarse_cells(&fpatch.interior(), ratio).intersect(&cpatch.interior());
            if region.is_empty() {
                continue;
            }
            let s = region.size();
            out.push(RestrictItem {
                coarse: places[ci].at(rel(&region.lo, &cpatch.ghost_box().lo)),
                fine: places[fi].at(rel(&region.refine(ratio).lo, &fpatch.ghost_box().lo)),
                n: [s.x as u32, s.y as u32, s.z as u32],
                ratio: ratio as u32,
            });
        }
    }
    Ok(out)
}

/// Runs restriction items on the CPU (the statement of what they compute).
pub fn run_restrict_items<T: Real>(
    items: &[RestrictItem],
    ncomp: usize,
    store: &mut [T],
) -> Result<(), MeshError> {
    for it in items {
        let r = u64::from(it.ratio);
        let inv = T::from_f64(1.0 / (r * r * r) as f64);
        let n = it.n.map(u64::from);
        let last = it.coarse.index(n.map(|v| v.max(1) - 1), ncomp as u64 - 1);
        let flast = it
            .fine
            .index(n.map(|v| (v.max(1)) * r - 1), ncomp as u64 - 1);
        if last.max(flast) >= store.len() as u64 {
            return Err(MeshError::invalid(
                "restriction item",
                format!(
                    "reaches value {} of a store of {}",
                    last.max(flast),
                    store.len()
                ),
            ));
        }
        for c in 0..ncomp as u64 {
            for z in 0..n[2] {
                for y in 0..n[1] {
                    for x in 0..n[0] {
                        let mut a = T::zero();
                        for dz in 0..r {
                            for dy in 0..r {
                                for dx in 0..r {
                                    let f = [x * r + dx, y * r + dy, z * r + dz];
                                    a = a + store[it.fine.index(f, c) as usize];
                                }
                            }
                        }
                        store[it.coarse.index([x, y, z], c) as usize] = a * inv;
                    }
                }
            }
        }
    }
    Ok(())
}
