//! Tagging every patch with the deck's criteria, for regrid.

use quilt_mesh::tag::{
    GradientDetector, ShockDetector, TagBox, TagCriterion, TagError, TagInput, euler_pressure,
};
use quilt_mesh::{Hierarchy, HierarchyData};
use quilt_sweep::physics::{ENE, MX, MY, MZ, RHO};
use rayon::prelude::*;

use crate::Real;
use crate::deck::{Deck, Detector, TagField};

/// One configured criterion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Criterion {
    Gradient(TagField, GradientDetector),
    Shock(TagField, ShockDetector),
}

impl Criterion {
    fn field(&self) -> TagField {
        match self {
            Criterion::Gradient(f, _) | Criterion::Shock(f, _) => *f,
        }
    }
}

/// The deck's criteria (the deck is validated, so the detectors build).
pub(crate) fn criteria(deck: &Deck) -> Result<Vec<Criterion>, TagError> {
    deck.tagging
        .iter()
        .map(|t| {
            Ok(match t.detector {
                Detector::Gradient => Criterion::Gradient(t.field, GradientDetector::new(t.tol)?),
                Detector::Shock => Criterion::Shock(t.field, ShockDetector::new(t.tol, t.onset)?),
            })
        })
        .collect()
}

/// One tag field per patch of `h` (over its interior), from the old state
/// whose ghost cells must be filled. Patches on levels that may not be
/// refined further (`level + 1 >= max_levels`) get empty fields.
pub(crate) fn tag_patches<T: Real>(
    h: &Hierarchy,
    data: &HierarchyData<T>,
    criteria: &[Criterion],
    gamma: f64,
    max_levels: usize,
) -> Result<Vec<TagBox>, TagError> {
    let need_pressure = criteria.iter().any(|c| c.field() == TagField::Pressure);
    (0..h.num_patches())
        .into_par_iter()
        .map_init(Vec::new, |pressure: &mut Vec<T>, i| {
            let p = &h.patches()[i];
            let d = data.old(i);
            let mut tags = TagBox::new(p.interior())?;
            if p.level() + 1 >= max_levels || criteria.is_empty() {
                return Ok(tags);
            }
            if need_pressure {
                pressure.resize(d.comp_len(), T::zero());
                euler_pressure(
                    d.comp(RHO),
                    [d.comp(MX), d.comp(MY), d.comp(MZ)],
                    d.comp(ENE),
                    gamma,
                    pressure,
                )?;
            }
            let dx = h
                .level_geometry(p.level())
                .map_or([1.0; 3], |g| [g.dx.x, g.dx.y, g.dx.z]);
            for c in criteria {
                let values: &[T] = match c.field() {
                    TagField::Density => d.comp(RHO),
                    TagField::Pressure => pressure,
                };
                let input = TagInput::new(values, d.data_box(), d.interior(), dx)?;
                match c {
                    Criterion::Gradient(_, det) => det.tag(&input, &mut tags)?,
                    Criterion::Shock(_, det) => det.tag(&input, &mut tags)?,
                }
            }
            Ok(tags)
        })
        .collect()
}
