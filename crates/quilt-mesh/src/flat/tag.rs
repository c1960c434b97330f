//! [`FlatTag`]: tagging every patch of a hierarchy at once, from a store
//! whose ghost cells are filled, into one array of tag bits.
//!
//! Each tagged patch is one [`TagItem`]; its bits go to the output in the
//! layout of [`TagBox::from_words`] (rows of whole 64-bit words as pairs
//! of 32-bit words), at a word of its own, so an executor with one thread
//! per bit assembles a word from 32 neighbouring threads and nothing else
//! writes it. The criteria are [`GradientDetector`] and [`ShockDetector`]
//! on a component or on the pressure of an equation of state, as
//! [`TagRule`]s with their thresholds per level (`tol · h_e`,
//! [`direction_lengths`]). Tags of a previous regrid (the detectors'
//! relaxed thresholds) are not part of the flat form.
//!
//! [`FlatTag::run`] states what each item computes by handing each patch
//! to the detectors themselves, so an executor that matches it tags as
//! the host does.

use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use super::{Strided, ext, rel};
use crate::error::MeshError;
use crate::hierarchy::Hierarchy;
use crate::index::{IndexBox, iv};
use crate::real::Real;
use crate::tag::{
    GradientDetector, ShockDetector, TagBox, TagCriterion, TagError, TagInput, direction_lengths,
    pressure_with,
};

/// Cells the detectors read on each side of a cell (the shock detector's
/// two-cell jumps).
pub const TAG_REACH: i32 = 2;

/// The field a criterion looks at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TagField {
    /// One stored component.
    Component(usize),
    /// The pressure `p(ρ, E − ½|m|²/ρ)` of the components `rho`,
    /// `momentum` and `energy`, by the executor's equation of state over
    /// the parameters `eos` (what [`pressure_with`] computes; the caller of
    /// [`FlatTag::run`] gives `p`).
    Pressure {
        /// The equation of state's parameters, in `f64` (executors round
        /// them to the field precision).
        eos: [f64; 4],
        /// Density component.
        rho: usize,
        /// Momentum components along `x`, `y`, `z`.
        momentum: [usize; 3],
        /// Total energy component.
        energy: usize,
    },
}

/// A detector of the flat form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TagDetector {
    /// [`GradientDetector`].
    Gradient(GradientDetector),
    /// [`ShockDetector`].
    Shock(ShockDetector),
}

/// One criterion: a detector on a field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TagCriterionSpec {
    /// What the detector looks at.
    pub field: TagField,
    /// The detector.
    pub detector: TagDetector,
}

/// One criterion for executors.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TagRule {
    /// [`TagRule::GRADIENT`] or [`TagRule::SHOCK`].
    pub kind: u32,
    /// [`TagRule::COMPONENT`] or [`TagRule::PRESSURE`].
    pub field: u32,
    /// The component (a component field), or density, momentum `x`, `y`,
    /// `z` and energy (the pressure).
    pub comps: [u32; 5],
    /// Padding (zero).
    pub pad: u32,
    /// The shock detector's onset ratio.
    pub onset: f64,
    /// The equation of state's parameters (the pressure).
    pub eos: [f64; 4],
}

impl TagRule {
    /// [`GradientDetector`].
    pub const GRADIENT: u32 = 0;
    /// [`ShockDetector`].
    pub const SHOCK: u32 = 1;
    /// A stored component.
    pub const COMPONENT: u32 = 0;
    /// The pressure of an equation of state.
    pub const PRESSURE: u32 = 1;
}

/// One patch to tag.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TagItem {
    /// The interior grown by [`TAG_REACH`] (its low corner) in the store.
    pub bx: Strided,
    /// The interior's first cell (the level's index space).
    pub lo: [i32; 3],
    /// The patch's level (the row of [`FlatTag::thresholds`]).
    pub level: u32,
    /// Interior cells along `x`, `y`, `z`.
    pub n: [u32; 3],
    /// 64-bit words per row of its tags.
    pub wpr: u32,
    /// Its first 32-bit word in the output.
    pub word: u64,
}

impl TagItem {
    /// 32-bit words of its tags.
    pub fn words(&self) -> u64 {
        2 * u64::from(self.wpr) * u64::from(self.n[1]) * u64::from(self.n[2])
    }
}

/// Every patch of a hierarchy that may be refined, tagged at once (see
/// the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatTag {
    /// Components per cell.
    pub ncomp: u32,
    /// The patches to tag.
    pub items: Vec<TagItem>,
    /// The hierarchy patch of each item.
    pub patches: Vec<usize>,
    /// The criteria (a cell is tagged if any tags it).
    pub rules: Vec<TagRule>,
    /// The criteria as given (what [`FlatTag::run`] hands the detectors).
    pub criteria: Vec<TagCriterionSpec>,
    /// `tol · h_e` per rule, level and direction
    /// (`thresholds[(rule · levels + level) · 13 + e]`).
    pub thresholds: Vec<f64>,
    /// Cell sizes per level.
    pub dx: Vec<[f64; 3]>,
    /// 32-bit words of the output.
    pub words: u64,
}

impl FlatTag {
    /// The items of `h`'s patches on levels below `max_levels − 1` (finer
    /// ones may not be refined), patch `i`'s ghost-grown box at
    /// `places[i]`. Errors if the ghost width is below [`TAG_REACH`], a
    /// component is out of range or `places` does not match `h`.
    pub fn new(
        h: &Hierarchy,
        places: &[Strided],
        ncomp: usize,
        criteria: &[TagCriterionSpec],
        max_levels: usize,
    ) -> Result<Self, MeshError> {
        crate::flat::check_places(places.len(), h.num_patches())?;
        if h.ghost() < TAG_REACH {
            return Err(MeshError::invalid(
                "flat tagging",
                format!(
                    "ghost width {} (the detectors read {TAG_REACH} cells around a cell)",
                    h.ghost()
                ),
            ));
        }
        let levels = h.num_levels();
        let comp = |c: usize| {
            if c < ncomp {
                Ok(c as u32)
            } else {
                Err(MeshError::invalid(
                    "flat tagging",
                    format!("component {c} of {ncomp}"),
                ))
            }
        };
        let dx: Vec<[f64; 3]> = (0..levels)
            .map(|l| {
                h.level_geometry(l)
                    .map_or([1.0; 3], |g| [g.dx.x, g.dx.y, g.dx.z])
            })
            .collect();
        let mut rules = Vec::with_capacity(criteria.len());
        let mut thresholds = Vec::with_capacity(criteria.len() * levels * 13);
        for c in criteria {
            let (field, comps, eos) = match c.field {
                TagField::Component(k) => (TagRule::COMPONENT, [comp(k)?, 0, 0, 0, 0], [0.0; 4]),
                TagField::Pressure {
                    eos,
                    rho,
                    momentum,
                    energy,
                } => (
                    TagRule::PRESSURE,
                    [
                        comp(rho)?,
                        comp(momentum[0])?,
                        comp(momentum[1])?,
                        comp(momentum[2])?,
                        comp(energy)?,
                    ],
                    eos,
                ),
            };
            let (kind, tol, onset) = match c.detector {
                TagDetector::Gradient(d) => (TagRule::GRADIENT, d.tol(), 0.0),
                TagDetector::Shock(d) => (TagRule::SHOCK, d.tol(), d.onset()),
            };
            rules.push(TagRule {
                kind,
                field,
                comps,
                pad: 0,
                onset,
                eos,
            });
            for d in &dx {
                thresholds.extend(direction_lengths(*d).map(|len| tol * len));
            }
        }
        let mut out = FlatTag {
            ncomp: ncomp as u32,
            rules,
            criteria: criteria.to_vec(),
            thresholds,
            dx,
            ..Default::default()
        };
        if criteria.is_empty() {
            return Ok(out);
        }
        for (i, p) in h.patches().iter().enumerate() {
            let b = p.interior();
            if p.level() + 1 >= max_levels || b.is_empty() {
                continue;
            }
            let n = ext(&b);
            let wpr = n[0].div_ceil(64);
            let item = TagItem {
                bx: places[i].at(rel(&b.grow(TAG_REACH).lo, &p.ghost_box().lo)),
                lo: [b.lo.x, b.lo.y, b.lo.z],
                level: p.level() as u32,
                n,
                wpr,
                word: out.words,
            };
            out.words += item.words();
            out.items.push(item);
            out.patches.push(i);
        }
        Ok(out)
    }

    /// Tags every item on the CPU from `store` (its ghost cells filled)
    /// into `out` (at least [`FlatTag::words`] words): each patch's
    /// interior grown by [`TAG_REACH`] is handed to the detectors, as the
    /// host's tagging does, with `pressure(k, ρ, ρe)` the equation of
    /// state of a [`TagField::Pressure`] (`k` its parameters rounded to
    /// `T`). The statement of what executors compute.
    pub fn run<T: Real, P>(
        &self,
        store: &[T],
        out: &mut [u32],
        pressure: P,
    ) -> Result<(), MeshError>
    where
        P: Fn(&[T; 4], T, T) -> T + Sync,
    {
        if (out.len() as u64) < self.words {
            return Err(MeshError::invalid(
                "flat tagging",
                format!("{} output words, the items need {}", out.len(), self.words),
            ));
        }
        let mut parts = Vec::with_capacity(self.items.len());
        let mut rest = &mut out[..self.words as usize];
        for it in &self.items {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(it.words() as usize);
            parts.push(part);
            rest = tail;
        }
        self.items
            .par_iter()
            .zip(parts)
            .try_for_each(|(it, part)| self.run_item(it, store, part, &pressure))
    }

    fn run_item<T: Real, P>(
        &self,
        it: &TagItem,
        store: &[T],
        out: &mut [u32],
        pressure: &P,
    ) -> Result<(), MeshError>
    where
        P: Fn(&[T; 4], T, T) -> T,
    {
        let lo = iv(it.lo[0], it.lo[1], it.lo[2]);
        let n = it.n.map(|v| v as i32);
        let interior = IndexBox::new(lo, lo + iv(n[0] - 1, n[1] - 1, n[2] - 1));
        let data_box = interior.grow(TAG_REACH);
        let len = data_box.num_cells() as usize;
        let gn = ext(&data_box);
        let last = super::last_index(&it.bx, gn, self.ncomp);
        if last >= store.len() as u64 {
            return Err(MeshError::invalid(
                "flat tagging",
                format!("an item reads up to {last} of {} values", store.len()),
            ));
        }
        let gather = |c: u32| -> Vec<T> {
            let mut v = Vec::with_capacity(len);
            for z in 0..u64::from(gn[2]) {
                for y in 0..u64::from(gn[1]) {
                    let s = it.bx.index([0, y, z], u64::from(c)) as usize;
                    v.extend_from_slice(&store[s..s + gn[0] as usize]);
                }
            }
            v
        };
        let tag_err = |e: TagError| MeshError::invalid("flat tagging", e.to_string());
        let mut tags = TagBox::new(interior).map_err(tag_err)?;
        let dx = self.dx[it.level as usize];
        for (rule, spec) in self.rules.iter().zip(&self.criteria) {
            let values = match rule.field {
                TagRule::COMPONENT => gather(rule.comps[0]),
                _ => {
                    let [r, mx, my, mz, e] = rule.comps.map(&gather);
                    let k = rule.eos.map(T::from_f64);
                    let mut p = vec![T::zero(); len];
                    pressure_with(&r, [&mx, &my, &mz], &e, &mut p, |rho, rho_e| {
                        pressure(&k, rho, rho_e)
                    })
                    .map_err(tag_err)?;
                    p
                }
            };
            let input = TagInput::new(&values, data_box, interior, dx).map_err(tag_err)?;
            match spec.detector {
                TagDetector::Gradient(d) => d.tag(&input, &mut tags),
                TagDetector::Shock(d) => d.tag(&input, &mut tags),
            }
            .map_err(tag_err)?;
        }
        tags.to_words(out);
        Ok(())
    }

    /// One tag field per patch of `h` (the hierarchy the items were built
    /// for) from the output words: the items' patches get their tags,
    /// the others empty fields over their interiors.
    pub fn tag_boxes(&self, h: &Hierarchy, words: &[u32]) -> Result<Vec<TagBox>, MeshError> {
        let tag_err = |e: TagError| MeshError::invalid("flat tags", e.to_string());
        if (words.len() as u64) < self.words || h.num_patches() < self.patches.len() {
            return Err(MeshError::invalid(
                "flat tags",
                format!(
                    "{} words for {} items of {} words",
                    words.len(),
                    self.items.len(),
                    self.words
                ),
            ));
        }
        let mut out: Vec<Option<TagBox>> = vec![None; h.num_patches()];
        let filled: Vec<(usize, TagBox)> = self
            .items
            .par_iter()
            .zip(&self.patches)
            .map(|(it, &i)| {
                let w = &words[it.word as usize..(it.word + it.words()) as usize];
                Ok((
                    i,
                    TagBox::from_words(h.patches()[i].interior(), w).map_err(tag_err)?,
                ))
            })
            .collect::<Result<_, MeshError>>()?;
        for (i, t) in filled {
            out[i] = Some(t);
        }
        // The untagged patches (the finest level holds most cells) get
        // empty fields, side by side too.
        out.into_par_iter()
            .enumerate()
            .map(|(i, t)| match t {
                Some(t) => Ok(t),
                None => TagBox::new(h.patches()[i].interior()).map_err(tag_err),
            })
            .collect()
    }
}
