//! Validation of a hierarchy layout, patch by patch, level by level.

use rustc_hash::FxHashMap;

use rayon::prelude::*;

use super::bins::BoxBins;
use super::patch::{Patch, PatchId, PatchSpec, SizeLimits};
use crate::cluster::{extended_domain, image_shifts};
use crate::error::MeshError;
use crate::geometry::{Geometry, LevelGeometry};
use crate::index::{BoxList, IndexBox};

/// What validation hands to the hierarchy: patches with ids, boxes,
/// parents and children resolved; relations still empty.
pub(crate) struct Validated {
    pub level_starts: Vec<usize>,
    pub patches: Vec<Patch>,
    pub ids: FxHashMap<PatchId, usize>,
    pub bins: Vec<BoxBins>,
}

fn bare_patch(spec: &PatchSpec, level: usize, ghost: i32) -> Patch {
    Patch {
        id: spec.id,
        level,
        interior: spec.interior,
        ghost_box: spec.interior.grow(ghost),
        parent: None,
        children: Vec::new(),
        sibling_overlaps: Vec::new(),
        coarse_overlaps: Vec::new(),
        coarse_fine_ghosts: BoxList::new(),
        physical_ghosts: BoxList::new(),
        coarse_fine_faces: Default::default(),
        physical_faces: [[None; 2]; 3],
    }
}

pub(crate) fn validate(
    geometry: &Geometry,
    ghost: i32,
    limits: SizeLimits,
    levels: &[Vec<PatchSpec>],
) -> Result<Validated, MeshError> {
    if !(0..=64).contains(&ghost) {
        return Err(MeshError::invalid(
            "ghost width",
            format!("{ghost} is outside 0..=64"),
        ));
    }
    limits.check(ghost)?;
    if levels.is_empty() {
        return Err(MeshError::EmptyLevel { level: 0 });
    }
    if levels.len() > geometry.num_levels() {
        return Err(MeshError::NoSuchLevel {
            level: levels.len() - 1,
            num_levels: geometry.num_levels(),
        });
    }

    let mut out = Validated {
        level_starts: vec![0],
        patches: Vec::with_capacity(levels.iter().map(Vec::len).sum()),
        ids: FxHashMap::default(),
        bins: Vec::with_capacity(levels.len()),
    };
    for (l, specs) in levels.iter().enumerate() {
        let lg = geometry.level(l)?;
        if specs.is_empty() {
            return Err(MeshError::EmptyLevel { level: l });
        }
        let start = out.patches.len();
        for s in specs {
            check_patch(&lg, ghost, limits, s)?;
            if let Some(&prev) = out.ids.get(&s.id) {
                return Err(MeshError::DuplicateId {
                    id: s.id,
                    first_level: out.patches[prev].level,
                    second_level: l,
                });
            }
            out.ids.insert(s.id, out.patches.len());
            out.patches.push(bare_patch(s, l, ghost));
        }
        let boxes: Vec<IndexBox> = specs.iter().map(|s| s.interior).collect();
        let bins = check_disjoint(l, specs, &boxes)?;
        if l == 0 {
            check_covers_domain(&lg, &boxes)?;
        } else {
            let coarse_lg = geometry.level(l - 1)?;
            let coarse = &out.bins[l - 1];
            let coarse_start = out.level_starts[l - 1];
            // Each patch's parent and nesting depend on the level below
            // alone: checked for all patches at once, the first failure
            // in patch order reported.
            let (patches, ids) = (&out.patches, &out.ids);
            let parents: Vec<Result<usize, MeshError>> = specs
                .par_iter()
                .map(|s| {
                    let parent = resolve_parent(&lg, s, coarse, coarse_start, patches, ids)?;
                    check_nesting(&lg, &coarse_lg, ghost, s, coarse)?;
                    Ok(parent)
                })
                .collect();
            for (n, parent) in parents.into_iter().enumerate() {
                let parent = parent?;
                out.patches[start + n].parent = Some(parent);
                out.patches[parent].children.push(start + n);
            }
        }
        out.bins.push(bins);
        out.level_starts.push(out.patches.len());
    }
    Ok(out)
}

fn check_patch(
    lg: &LevelGeometry,
    ghost: i32,
    limits: SizeLimits,
    s: &PatchSpec,
) -> Result<(), MeshError> {
    let level = lg.level;
    if s.interior.is_empty() {
        return Err(MeshError::EmptyPatch {
            level,
            id: s.id,
            interior: s.interior,
        });
    }
    if !lg.domain.contains_box(&s.interior) {
        return Err(MeshError::OutsideDomain {
            level,
            id: s.id,
            interior: s.interior,
            domain: lg.domain,
        });
    }
    let size = s.interior.grow(ghost).size();
    if !limits.admits(&size) {
        return Err(MeshError::SizeLimit {
            level,
            id: s.id,
            size,
            ghost,
            limits,
        });
    }
    if level > 0 && !s.interior.is_coarsenable(lg.ratio) {
        return Err(MeshError::NotAligned {
            level,
            id: s.id,
            interior: s.interior,
            ratio: lg.ratio,
        });
    }
    if level == 0 && s.parent.is_some() {
        return Err(MeshError::BadParent {
            level,
            id: s.id,
            parent: s.parent.map_or(-1, |p| p.0 as i64),
            why: "level 0 patches have no parent".into(),
        });
    }
    Ok(())
}

fn check_disjoint(
    level: usize,
    specs: &[PatchSpec],
    boxes: &[IndexBox],
) -> Result<BoxBins, MeshError> {
    let bins = BoxBins::from_boxes(boxes);
    // The first box (in order) that meets another, and that other.
    let clash = boxes
        .par_iter()
        .enumerate()
        .map_init(Vec::new, |hits, (n, b)| {
            bins.query_into(b, hits);
            hits.iter().find(|&&m| m != n).map(|&m| (n, m))
        })
        .find_first(Option::is_some)
        .flatten();
    if let Some((n, m)) = clash {
        return Err(MeshError::Overlap {
            level,
            a: specs[n.min(m)].id,
            b: specs[n.max(m)].id,
            region: boxes[n].intersect(&boxes[m]),
        });
    }
    Ok(bins)
}

fn check_covers_domain(lg: &LevelGeometry, boxes: &[IndexBox]) -> Result<(), MeshError> {
    // Boxes are disjoint and inside the domain, so equal cell counts mean
    // full cover; only on failure is the uncovered part located. Counted
    // in i128: a domain of 2^30 cells per axis has 2^90.
    let cells = |b: &IndexBox| {
        let s = b.size();
        i128::from(s.x) * i128::from(s.y) * i128::from(s.z)
    };
    let covered: i128 = boxes.iter().map(cells).sum();
    if covered == cells(&lg.domain) {
        return Ok(());
    }
    let mut rest = BoxList::from_box(lg.domain);
    rest.subtract_all(boxes.iter());
    Err(MeshError::DomainNotCovered {
        domain: lg.domain,
        uncovered: rest.boxes().first().copied().unwrap_or(lg.domain),
    })
}

fn resolve_parent(
    lg: &LevelGeometry,
    s: &PatchSpec,
    coarse: &BoxBins,
    coarse_start: usize,
    patches: &[Patch],
    ids: &FxHashMap<PatchId, usize>,
) -> Result<usize, MeshError> {
    let level = lg.level;
    let under = s.interior.coarsen(lg.ratio);
    match s.parent {
        Some(pid) => {
            let bad = |why: String| MeshError::BadParent {
                level,
                id: s.id,
                parent: pid.0 as i64,
                why,
            };
            let &p = ids
                .get(&pid)
                .ok_or_else(|| bad("no patch has that id on the level below".into()))?;
            let pp = &patches[p];
            if pp.level + 1 != level {
                return Err(bad(format!(
                    "it is on level {}, not on level {}",
                    pp.level,
                    level - 1
                )));
            }
            if !pp.interior.intersects(&under) {
                return Err(bad(format!(
                    "its interior {} does not overlap the coarse cells {} under the patch",
                    pp.interior, under
                )));
            }
            Ok(p)
        }
        None => {
            // The coarse patch under most of the fine one; ties go to the
            // first, so the choice is reproducible.
            let mut best: Option<(i64, usize)> = None;
            for n in coarse.query(&under) {
                let c = coarse.boxes()[n].intersect(&under).num_cells();
                if best.is_none_or(|(bc, _)| c > bc) {
                    best = Some((c, n));
                }
            }
            best.map(|(_, n)| coarse_start + n)
                .ok_or(MeshError::NotNested {
                    level,
                    id: s.id,
                    uncovered: under,
                })
        }
    }
}

/// Proper nesting of a fine patch (Berger & Colella 1989): the coarse cells
/// under its ghost-grown box must belong to coarse patches. Cells outside
/// the domain along a non-periodic axis are exempt (physical boundary
/// conditions fill them); cells across a periodic face must be covered
/// through their periodic image. This is the definition
/// [`crate::cluster::Nesting::from_patches_periodic`] builds its region
/// from, with the same image shifts.
fn check_nesting(
    lg: &LevelGeometry,
    coarse_lg: &LevelGeometry,
    ghost: i32,
    s: &PatchSpec,
    coarse: &BoxBins,
) -> Result<(), MeshError> {
    let need = s
        .interior
        .grow(ghost)
        .coarsen(lg.ratio)
        .intersect(&extended_domain(&coarse_lg.domain, coarse_lg.periodic));
    let mut rest = BoxList::from_box(need);
    let mut hits = Vec::new();
    for shift in image_shifts(&coarse_lg.domain, coarse_lg.periodic, &need) {
        coarse.query_into(&need.shift(&-shift), &mut hits);
        for &n in &hits {
            rest.subtract(&coarse.boxes()[n].shift(&shift));
        }
        if rest.is_empty() {
            return Ok(());
        }
    }
    match rest.boxes().first() {
        None => Ok(()),
        Some(b) => Err(MeshError::NotNested {
            level: lg.level,
            id: s.id,
            uncovered: *b,
        }),
    }
}
