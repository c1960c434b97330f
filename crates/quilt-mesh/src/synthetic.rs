//! Random hierarchies of Raghavan & Vadhiyar (2015), section 4.1.
//!
//! The base level tiles a `128³` domain with `4×4×4` uniform patches of
//! `32³` cells. Each further patch refines a patch chosen uniformly at
//! random among all existing ones (any level): its sides, ghost cells
//! included, are drawn uniformly in `16..=64` among those that fit inside
//! the chosen patch in the refined index space, its position uniformly
//! among the places where it fits, and it is rejected if it overlaps a
//! patch already on its level. The procedure repeats until `N` patches
//! exist.
//!
//! Two constraints beyond the paper's description make the result a valid
//! AMR hierarchy that ghost fill, restriction and flux registers accept:
//!
//! - *The ghost-grown box fits inside the refined parent*, so every ghost
//!   cell not copied from a sibling has coarse data under it (proper
//!   nesting through the single parent).
//! - *Interiors are aligned to the refinement ratio* (lower corner and
//!   size multiples of `ratio`), so every coarse cell is either fully
//!   covered or not covered by the finer level, which conservative
//!   restriction and refluxing need. With ghost width 3 and ratio 2 the
//!   drawn sides (ghosts included) are the even numbers of `16..=64`.
//!
//! Randomness comes from ChaCha8 seeded with [`SyntheticSpec::seed`];
//! integers are drawn by rejection from the raw 64-bit stream, so a seed
//! gives the same hierarchy on every platform and with every `rand`
//! release that keeps ChaCha8's stream.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use crate::error::MeshError;
use crate::geometry::{Geometry, MAX_CELLS_PER_AXIS, check_ratio};
use crate::hierarchy::{BoxBins, Hierarchy, PatchId, PatchSpec, SizeLimits};
use crate::index::{IndexBox, iv};

/// Parameters of [`generate`]; `Default` is the paper's setup (ghost
/// width 3, ratio 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Total number of patches `N`, base level included (at least the
    /// number of base patches).
    pub patches: usize,
    /// Seed of the ChaCha8 generator.
    pub seed: u64,
    /// Ghost width of every patch.
    pub ghost: i32,
    /// Refinement ratio between consecutive levels (2 or 4).
    pub ratio: i32,
    /// Cells per side of the cubic base domain.
    pub domain_cells: i32,
    /// Cells per side of the cubic base patches (must divide `domain_cells`).
    pub base_patch: i32,
    /// Bounds on refined patch sides, ghosts included.
    pub limits: SizeLimits,
    /// Deepest level a patch may be placed on (clamped so that the index
    /// space of that level stays within `2^30` cells per axis). The paper
    /// sets no bound; with the default of 20 the clamp decides for ratio 4
    /// (level 11) and nothing does for ratio 2 at the paper's sizes.
    pub max_level: usize,
    /// Consecutive failed placements after which [`generate`] gives up.
    pub max_attempts: usize,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        Self {
            patches: 420,
            seed: 1,
            ghost: 3,
            ratio: 2,
            domain_cells: 128,
            base_patch: 32,
            limits: SizeLimits::default(),
            max_level: 20,
            max_attempts: 100_000,
        }
    }
}

/// Uniform integer in `0..n` (`n > 0`) by rejection, so that no value is
/// favoured and the result depends only on the generator's stream.
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    debug_assert!(n > 0);
    let zone = u64::MAX - (u64::MAX - n + 1) % n;
    loop {
        let x = rng.next_u64();
        if x <= zone {
            return x % n;
        }
    }
}

fn round_up(x: i32, r: i32) -> i32 {
    (x + r - 1).div_euclid(r) * r
}

fn check_spec(spec: &SyntheticSpec) -> Result<(i32, usize), MeshError> {
    check_ratio(1, spec.ratio)?;
    spec.limits.check(spec.ghost)?;
    if spec.ghost < 0 {
        return Err(MeshError::invalid(
            "synthetic ghost width",
            format!("{} is negative", spec.ghost),
        ));
    }
    if spec.domain_cells < 1 || spec.base_patch < 1 || spec.domain_cells % spec.base_patch != 0 {
        return Err(MeshError::invalid(
            "synthetic base grid",
            format!(
                "base patch side {} must divide the domain side {}",
                spec.base_patch, spec.domain_cells
            ),
        ));
    }
    let per_axis = spec.domain_cells / spec.base_patch;
    let base = (per_axis as usize).pow(3);
    if spec.patches < base {
        return Err(MeshError::invalid(
            "synthetic patch count",
            format!(
                "{} patches requested, but the base level alone has {base}",
                spec.patches
            ),
        ));
    }
    // Patch ids are 32-bit.
    if spec.patches > u32::MAX as usize {
        return Err(MeshError::invalid(
            "synthetic patch count",
            format!(
                "{} patches requested, but patch ids allow at most {}",
                spec.patches,
                u32::MAX
            ),
        ));
    }
    if spec.max_attempts == 0 {
        return Err(MeshError::invalid(
            "synthetic max_attempts",
            "must be positive",
        ));
    }
    // Deepest level whose index space stays in range.
    let mut deepest = 0usize;
    let mut cells = spec.domain_cells as i64;
    while deepest < spec.max_level && cells * spec.ratio as i64 <= MAX_CELLS_PER_AXIS {
        cells *= spec.ratio as i64;
        deepest += 1;
    }
    Ok((per_axis, deepest))
}

/// Interior sizes a child may take along one axis of a refined parent of
/// `parent_cells` cells: multiples of `r`, ghost-grown size within the
/// limits, ghost-grown box inside the parent with an aligned low corner.
/// Returns the smallest size and how many there are (`0` if none).
fn size_choices(parent_cells: i32, g: i32, r: i32, limits: SizeLimits) -> (i32, i32) {
    let margin = round_up(g, r);
    let smin = round_up((limits.min - 2 * g).max(1), r);
    let room = parent_cells - margin - g;
    let smax = ((limits.max - 2 * g).min(room)).div_euclid(r) * r;
    if smax < smin {
        (smin, 0)
    } else {
        (smin, (smax - smin) / r + 1)
    }
}

/// Generates a synthetic hierarchy (see the module docs). The result has
/// passed [`Hierarchy::new`]'s validation.
pub fn generate(spec: &SyntheticSpec) -> Result<Hierarchy, MeshError> {
    let (per_axis, deepest) = check_spec(spec)?;
    let (g, r) = (spec.ghost, spec.ratio);
    let base_ghosted = iv(spec.base_patch, spec.base_patch, spec.base_patch).add_scalar(2 * g);
    if !spec.limits.admits(&base_ghosted) {
        return Err(MeshError::invalid(
            "synthetic base patch",
            format!(
                "side {} with {g} ghost cells is outside the size limits {}..={}",
                spec.base_patch, spec.limits.min, spec.limits.max
            ),
        ));
    }

    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    // Flat list of (level, interior, parent index), in creation order:
    // creation order is also the id.
    let mut made: Vec<(usize, IndexBox, Option<usize>)> = Vec::new();
    made.try_reserve_exact(spec.patches)
        .map_err(|_| MeshError::OutOfMemory {
            what: format!("the records of {} synthetic patches", spec.patches),
            need: (spec.patches as u64).saturating_mul(std::mem::size_of::<(
                usize,
                IndexBox,
                Option<usize>,
            )>() as u64),
            available: crate::memory::available_bytes(),
        })?;
    let mut bins: Vec<BoxBins> = vec![BoxBins::new(spec.base_patch)];
    for k in 0..per_axis {
        for j in 0..per_axis {
            for i in 0..per_axis {
                let b = IndexBox::from_lo_size(
                    iv(i, j, k) * spec.base_patch,
                    iv(spec.base_patch, spec.base_patch, spec.base_patch),
                );
                bins[0].push(b);
                made.push((0, b, None));
            }
        }
    }
    // Patches that may still receive a child: not on the deepest level and
    // wide enough along every axis. A patch that is too small can never
    // become wide enough, so it leaves the list for good.
    let mut eligible: Vec<usize> = if deepest > 0 {
        (0..made.len()).collect()
    } else {
        Vec::new()
    };

    let mut failures = 0usize;
    while made.len() < spec.patches {
        if eligible.is_empty() || failures >= spec.max_attempts {
            return Err(MeshError::SyntheticExhausted {
                placed: made.len(),
                requested: spec.patches,
                attempts: failures,
            });
        }
        let slot = below(&mut rng, eligible.len() as u64) as usize;
        let parent = eligible[slot];
        let (plevel, pbox, _) = made[parent];
        let region = pbox.refine(r);
        let rs = region.size();
        let choices = [0, 1, 2].map(|d| size_choices(rs[d], g, r, spec.limits));
        if choices.iter().any(|c| c.1 == 0) {
            eligible.swap_remove(slot);
            continue;
        }
        let mut lo = iv(0, 0, 0);
        let mut size = iv(0, 0, 0);
        for d in 0..3 {
            let (smin, n) = choices[d];
            size[d] = smin + r * below(&mut rng, n as u64) as i32;
            let margin = round_up(g, r);
            let places = (rs[d] - margin - g - size[d]) / r + 1;
            lo[d] = region.lo[d] + margin + r * below(&mut rng, places as u64) as i32;
        }
        let child = IndexBox::from_lo_size(lo, size);
        debug_assert!(region.contains_box(&child.grow(g)));
        let level = plevel + 1;
        if bins.len() <= level {
            bins.push(BoxBins::new(spec.limits.max));
        }
        if bins[level].any_intersects(&child) {
            failures += 1;
            continue;
        }
        failures = 0;
        bins[level].push(child);
        made.push((level, child, Some(parent)));
        if level < deepest {
            eligible.push(made.len() - 1);
        }
    }

    let num_levels = bins.len();
    let mut levels: Vec<Vec<PatchSpec>> = vec![Vec::new(); num_levels];
    for (n, &(level, interior, parent)) in made.iter().enumerate() {
        levels[level].push(PatchSpec {
            id: PatchId(n as u32),
            interior,
            parent: parent.map(|p| PatchId(p as u32)),
        });
    }
    let domain = iv(spec.domain_cells, spec.domain_cells, spec.domain_cells);
    let geometry = Geometry::with_cubic_cells(domain, &vec![r; num_levels - 1])?;
    let h = Hierarchy::new(geometry, g, spec.limits, levels)?;
    log::info!(
        "synthetic hierarchy: {} patches on {} levels (seed {})",
        h.num_patches(),
        h.num_levels(),
        spec.seed
    );
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::hierarchy::Patch;
    use proptest::prelude::*;

    /// Checks the generator's invariants directly from the boxes, without
    /// relying on the hierarchy's own validation.
    fn check_invariants(spec: &SyntheticSpec, h: &Hierarchy) -> Result<(), TestCaseError> {
        let g = spec.ghost;
        prop_assert_eq!(h.num_patches(), spec.patches);
        prop_assert_eq!(h.level_patches(0).len(), 64);
        for p in h.level_patches(0) {
            prop_assert_eq!(p.interior().size(), iv(32, 32, 32));
            prop_assert_eq!(p.interior().lo.map(|c| c % 32), iv(0, 0, 0));
        }
        for l in 0..h.num_levels() {
            let ps: Vec<&Patch> = h.level_patches(l).iter().collect();
            for (a, pa) in ps.iter().enumerate() {
                for pb in &ps[a + 1..] {
                    prop_assert!(
                        !pa.interior().intersects(&pb.interior()),
                        "level {} overlap",
                        l
                    );
                }
            }
        }
        for p in &h.patches()[64..] {
            let s = p.size_with_ghosts();
            prop_assert!(s.iter().all(|&v| (16..=64).contains(&v)), "size {:?}", s);
            prop_assert_eq!(s, p.interior().size().add_scalar(2 * g));
            let parent = &h.patches()[p.parent().unwrap()];
            prop_assert_eq!(parent.level() + 1, p.level());
            prop_assert!(
                parent
                    .interior()
                    .refine(spec.ratio)
                    .contains_box(&p.ghost_box())
            );
            prop_assert!(p.interior().is_coarsenable(spec.ratio));
            prop_assert!(parent.children().contains(&h.index_of(p.id()).unwrap()));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        #[test]
        fn invariants_and_reproducibility(
            seed in any::<u64>(),
            patches in 64usize..700,
            ratio in prop::sample::select(vec![2, 4]),
            ghost in 1i32..5,
        ) {
            let spec = SyntheticSpec { patches, seed, ratio, ghost, ..Default::default() };
            let h = generate(&spec).unwrap();
            check_invariants(&spec, &h)?;
            let again = generate(&spec).unwrap();
            prop_assert_eq!(h.specs(), again.specs());
        }
    }

    #[test]
    fn patch_counts_beyond_the_ids_are_errors() {
        let e = generate(&SyntheticSpec {
            patches: u32::MAX as usize + 1,
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("patch ids"), "{e}");
    }

    #[test]
    fn two_thousand_patches_and_seeds_differ() {
        let spec = SyntheticSpec {
            patches: 2000,
            seed: 11,
            ..Default::default()
        };
        let h = generate(&spec).unwrap();
        check_invariants(&spec, &h).unwrap();
        let other = generate(&SyntheticSpec {
            seed: 12,
            ..spec.clone()
        })
        .unwrap();
        assert_ne!(h.specs(), other.specs());
        // The drawn sides span the whole admissible range.
        let sides: Vec<i32> = h.patches()[64..]
            .iter()
            .flat_map(|p| p.size_with_ghosts().iter().copied().collect::<Vec<_>>())
            .collect();
        assert_eq!(sides.iter().min(), Some(&16));
        assert_eq!(sides.iter().max(), Some(&64));
    }

    #[test]
    fn bad_specs_are_errors() {
        let d = SyntheticSpec::default();
        let e = generate(&SyntheticSpec {
            ratio: 3,
            ..d.clone()
        })
        .unwrap_err();
        assert!(matches!(e, MeshError::BadRatio { ratio: 3, .. }), "{e}");
        assert!(
            generate(&SyntheticSpec {
                patches: 10,
                ..d.clone()
            })
            .unwrap_err()
            .to_string()
            .contains("base level")
        );
        assert!(
            generate(&SyntheticSpec {
                base_patch: 30,
                ..d.clone()
            })
            .is_err()
        );
        assert!(
            generate(&SyntheticSpec {
                ghost: -1,
                ..d.clone()
            })
            .is_err()
        );
        assert!(
            generate(&SyntheticSpec {
                limits: SizeLimits { min: 40, max: 30 },
                ..d.clone()
            })
            .is_err()
        );
        // Base patches of 64 + 6 exceed the default limit of 64.
        let e = generate(&SyntheticSpec {
            base_patch: 64,
            ..d.clone()
        })
        .unwrap_err();
        assert!(e.to_string().contains("size limits"), "{e}");
        // No level above 0 allowed: nothing can be placed.
        let e = generate(&SyntheticSpec {
            max_level: 0,
            patches: 65,
            ..d.clone()
        })
        .unwrap_err();
        assert!(
            matches!(
                e,
                MeshError::SyntheticExhausted {
                    placed: 64,
                    requested: 65,
                    ..
                }
            ),
            "{e}"
        );
        // A single level-1 level, which fills up: the bounded retries end
        // with an error instead of looping.
        let e = generate(&SyntheticSpec {
            max_level: 1,
            patches: 100_000,
            max_attempts: 2000,
            ..d
        })
        .unwrap_err();
        assert!(
            matches!(
                e,
                MeshError::SyntheticExhausted {
                    requested: 100_000,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn below_is_in_range_and_covers() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut seen = [0usize; 5];
        for _ in 0..1000 {
            seen[below(&mut rng, 5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 150), "{seen:?}");
        assert_eq!(below(&mut rng, 1), 0);
    }

    #[test]
    fn size_choices_respect_limits_and_fit() {
        // A refined 32³ parent (64 cells), ghost 3, ratio 2: interiors
        // 10..=56 (even), so ghost-grown sides 16..=62.
        assert_eq!(size_choices(64, 3, 2, SizeLimits::default()), (10, 24));
        // A 10-cell parent refined to 20: interiors 10 and 12 fit
        // (aligned margin 4, then the interior, then 3 ghost cells).
        assert_eq!(size_choices(20, 3, 2, SizeLimits::default()), (10, 2));
        assert_eq!(size_choices(16, 3, 2, SizeLimits::default()).1, 0);
        // Ratio 4: interiors are multiples of 4 from 12.
        assert_eq!(size_choices(128, 3, 4, SizeLimits::default()), (12, 12));
    }
}
