//! Tagging every patch with the deck's criteria, for regrid.

use quilt_mesh::flat::{TagCriterionSpec, TagDetector, TagField as FlatField};
use quilt_mesh::tag::{TagBox, TagCriterion, TagError, TagInput};
use quilt_mesh::{Hierarchy, HierarchyData};
use quilt_sweep::physics::{ENE, MX, MY, MZ, RHO, Thermo};
use rayon::prelude::*;

use crate::Real;
use crate::problem::{Field, Refinement};

/// The criteria in the flat form of tagging in a backend
/// ([`quilt_mesh::flat::FlatTag`]): the same detectors on a component or
/// on the pressure of `gas` (its parameters; the backend computes it with
/// its equation of state); `None` if a criterion is the problem's own
/// (host code).
pub(crate) fn flat_criteria<T>(
    criteria: &[Refinement<T>],
    gas: &dyn Thermo,
) -> Option<Vec<TagCriterionSpec>> {
    criteria
        .iter()
        .map(|c| {
            let field = match c.field() {
                Field::Component(c) => FlatField::Component(c),
                Field::Pressure => FlatField::Pressure {
                    eos: gas.params(),
                    rho: RHO,
                    momentum: [MX, MY, MZ],
                    energy: ENE,
                },
            };
            let detector = match c {
                Refinement::Gradient(_, d) => TagDetector::Gradient(*d),
                Refinement::Shock(_, d) => TagDetector::Shock(*d),
                Refinement::Custom { .. } => return None,
            };
            Some(TagCriterionSpec { field, detector })
        })
        .collect()
}

/// Checks that every criterion's field exists among `ncomp` components.
pub(crate) fn check_fields<T>(criteria: &[Refinement<T>], ncomp: usize) -> Result<(), String> {
    for c in criteria {
        if let Field::Component(k) = c.field()
            && k >= ncomp
        {
            return Err(format!(
                "the refinement criterion {:?} reads component {k}, but the state has {ncomp}",
                c.name()
            ));
        }
    }
    Ok(())
}

/// Whether a regrid tags the patches of `level` (never those of the
/// finest level `max_levels` allows).
pub(crate) fn tagged_level(level: usize, max_levels: usize) -> bool {
    level + 1 < max_levels
}

/// Interiors are tagged in z slabs of about this many cells, in parallel:
/// a base-level patch of millions of cells would otherwise be one task that
/// every other waits for.
const SLAB_CELLS: i64 = 1 << 16;

/// One tag field per patch of `h` (over its interior), from the old state
/// whose ghost cells must be filled. Patches on levels that may not be
/// refined further (`level + 1 >= max_levels`) get empty fields. Every
/// criterion of a cell reads only the cell's neighbourhood, so slabs are
/// tagged independently and the fields are the same as patch by patch.
/// With `only`, just the patches it marks are tagged (a rank's own); the
/// others get empty fields.
pub(crate) fn tag_patches<T: Real>(
    h: &Hierarchy,
    data: &HierarchyData<T>,
    criteria: &[Refinement<T>],
    gas: &dyn Thermo,
    max_levels: usize,
    only: Option<&[bool]>,
) -> Result<Vec<TagBox>, TagError> {
    tag_in_slabs(h, data, criteria, gas, max_levels, SLAB_CELLS, only)
}

/// [`tag_patches`] with slabs of about `slab_cells` cells.
fn tag_in_slabs<T: Real>(
    h: &Hierarchy,
    data: &HierarchyData<T>,
    criteria: &[Refinement<T>],
    gas: &dyn Thermo,
    max_levels: usize,
    slab_cells: i64,
    only: Option<&[bool]>,
) -> Result<Vec<TagBox>, TagError> {
    let need_pressure = criteria.iter().any(|c| c.field() == Field::Pressure);
    // Criteria see the ghost width of planes on either side of a slab (the
    // built-in detectors reach two cells).
    let reach = h.ghost().max(2);
    // (patch, first and last interior z plane of a slab); untagged patches
    // have none and keep empty fields.
    let mut items: Vec<(usize, i32, i32)> = Vec::with_capacity(h.num_patches());
    for (i, p) in h.patches().iter().enumerate() {
        let b = p.interior();
        if !tagged_level(p.level(), max_levels)
            || criteria.is_empty()
            || b.is_empty()
            || only.is_some_and(|o| !o[i])
        {
            continue;
        }
        let n = b.size();
        let per = (slab_cells / (i64::from(n.x) * i64::from(n.y)).max(1)).max(1) as i32;
        let mut z = b.lo.z;
        while z <= b.hi.z {
            let z1 = z.saturating_add(per - 1).min(b.hi.z);
            items.push((i, z, z1));
            z = z1 + 1;
        }
    }
    let parts: Vec<(usize, TagBox)> = items
        .into_par_iter()
        .with_max_len(1)
        .map_init(Vec::new, |pressure: &mut Vec<T>, (i, z0, z1)| {
            let p = &h.patches()[i];
            let d = data.old(i);
            let db = d.data_box();
            let mut region = p.interior();
            region.lo.z = z0;
            region.hi.z = z1;
            let mut tags = TagBox::new(region)?;
            // The slab's planes with the detectors' reach (two cells) on
            // either side, as far as the data goes: a contiguous part of
            // every component (x fastest, then y, then z).
            let mut sub = db;
            sub.lo.z = (z0 - reach).max(db.lo.z);
            sub.hi.z = (z1 + reach).min(db.hi.z);
            let plane = db.size().x as usize * db.size().y as usize;
            let at = (sub.lo.z - db.lo.z) as usize * plane;
            let len = sub.size().z as usize * plane;
            let part = |c: usize| &d.comp(c)[at..at + len];
            if need_pressure {
                pressure.resize(len, T::zero());
                gas.pressure_row(
                    part(RHO),
                    [part(MX), part(MY), part(MZ)],
                    part(ENE),
                    pressure,
                )?;
            }
            let dx = h
                .level_geometry(p.level())
                .map_or([1.0; 3], |g| [g.dx.x, g.dx.y, g.dx.z]);
            for c in criteria {
                let values: &[T] = match c.field() {
                    Field::Component(k) => part(k),
                    Field::Pressure => pressure,
                };
                let input = TagInput::new(values, sub, region, dx)?;
                match c {
                    Refinement::Gradient(_, det) => det.tag(&input, &mut tags)?,
                    Refinement::Shock(_, det) => det.tag(&input, &mut tags)?,
                    Refinement::Custom { criterion, .. } => criterion.tag(&input, &mut tags)?,
                }
            }
            Ok((i, tags))
        })
        .collect::<Result<_, TagError>>()?;
    let mut out: Vec<Option<TagBox>> = vec![None; h.num_patches()];
    for (i, part) in parts {
        let interior = h.patches()[i].interior();
        match &mut out[i] {
            None if part.region() == interior => out[i] = Some(part),
            None => {
                let mut whole = TagBox::new(interior)?;
                whole.union_with(&part);
                out[i] = Some(whole);
            }
            Some(whole) => whole.union_with(&part),
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(i, t)| t.map_or_else(|| TagBox::new(h.patches()[i].interior()), Ok))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deck::Deck;
    use crate::problem::deck_refinement;
    use quilt_mesh::{Geometry, IndexBox, PatchId, PatchSpec, SizeLimits, iv};

    #[test]
    fn slabs_tag_exactly_as_whole_patches() {
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(24, 20, 40), &[2]).unwrap();
        let spec = |id: u32, lo: [i32; 3], hi: [i32; 3]| PatchSpec {
            id: PatchId(id),
            interior: IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2])),
            parent: None,
        };
        let h = Hierarchy::new(
            g,
            2,
            SizeLimits::default(),
            vec![vec![
                spec(0, [0, 0, 0], [23, 19, 19]),
                spec(1, [0, 0, 20], [23, 19, 39]),
            ]],
        )
        .unwrap();
        let gamma = 1.4;
        let gas = quilt_sweep::physics::Gas::ideal(gamma);
        let mut data = HierarchyData::<f64>::new(&h, 5).unwrap();
        // A dense sphere at higher pressure, cut by both patches and by
        // every slab boundary below.
        data.init_old_with(&h, |_, c, v| {
            let r2 = [(c.x, 11.5), (c.y, 9.5), (c.z, 21.0)]
                .iter()
                .map(|&(x, m)| (f64::from(x) - m).powi(2))
                .sum::<f64>();
            let (rho, p) = if r2 < 64.0 { (4.0, 10.0) } else { (1.0, 1.0) };
            v.copy_from_slice(&[rho, 0.1 * rho, 0.0, 0.0, p / (gamma - 1.0) + 0.005 * rho]);
        })
        .unwrap();
        let criteria = deck_refinement::<f64>(&Deck::default()).unwrap();
        assert!(!criteria.is_empty());
        let whole = tag_in_slabs(&h, &data, &criteria, &gas, 2, i64::MAX, None).unwrap();
        let slabs = tag_in_slabs(&h, &data, &criteria, &gas, 2, 24 * 20 * 3, None).unwrap();
        assert!(whole.iter().map(TagBox::count).sum::<u64>() > 100);
        for (a, b) in whole.iter().zip(&slabs) {
            assert_eq!(a.region(), b.region());
            assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        }
        // The default slab size, and no refinement past the last level.
        assert_eq!(
            tag_patches(&h, &data, &criteria, &gas, 2, None).unwrap(),
            whole
        );
        let last = tag_patches(&h, &data, &criteria, &gas, 1, None).unwrap();
        assert!(last.iter().all(|t| t.count() == 0));
    }
}
