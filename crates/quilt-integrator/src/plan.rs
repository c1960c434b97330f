//! What the integrator derives from a hierarchy once per regrid: ghost-fill
//! plans, the bin packing, the work descriptions the batch selector reads,
//! the flux probes and the flux registers.
//!
//! # Flux probes
//! Refluxing needs, for every coarse face on the boundary of a fine patch,
//! the flux the coarse level computed through it. Those faces mostly lie
//! *inside* a coarse patch, while a solver's flux buffer holds only the
//! faces of each patch's interior box (quilt-sweep's layout). A **probe**
//! is the coarse cells under a fine patch `f` that lie in one coarse patch
//! `P`: `Q = coarsen(interior(f)) ∩ interior(P)`. Solved as a patch of its
//! own, with its ghost cells copied from `P`'s prepared data (`Q` lies in
//! `P`'s interior, so `Q` grown by the ghost width lies in `P`'s ghost box),
//! it reproduces `P`'s update on `Q` exactly — every cell and every face
//! flux of the split and unsplit schemes depends only on data within the
//! ghost width, which is what lets one ghost fill serve a whole step — and
//! its flux buffer holds `P`'s fluxes through the coarse–fine faces, which
//! are faces of `Q`'s box. A probe costs `1 / r³` of its fine patch's cells
//! plus its ghost cells, and nothing else changes: the coarse patches are
//! solved whole, as before.

use std::mem::size_of;

use quilt_batch::{BinWork, PatchWork, Preparation};
use quilt_mesh::fill::{BoundaryConditions, GhostFill};
use quilt_mesh::flux_register::FluxRegister;
use quilt_mesh::interp::Limiter;
use quilt_mesh::{Hierarchy, IndexBox, Side};
use quilt_pack::{HierarchyPacking, PackOptions, PackWorkspace, pack, pack_patches};
use rayon::prelude::*;

use crate::Real;
use crate::error::IntegratorError;
use crate::stages::size_of_box;

/// A flux probe (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Probe {
    /// Hierarchy index of the coarse patch `P` whose data the probe copies.
    pub coarse: usize,
    /// Hierarchy index of the fine patch whose coarse–fine faces it serves.
    pub fine: usize,
    /// Interior cells, in the coarse level's index space.
    pub interior: IndexBox,
}

/// The probes of every fine patch, fine patches in index order, coarse
/// patches ascending.
pub(crate) fn find_probes(h: &Hierarchy) -> Vec<Probe> {
    // Fine patches (every level above 0, in hierarchy order) side by side,
    // their probes concatenated in that order.
    let first = if h.num_levels() > 1 {
        h.level_range(1).start
    } else {
        h.num_patches()
    };
    let per_patch: Vec<Vec<Probe>> = (first..h.num_patches())
        .into_par_iter()
        .map(|f| {
            let l = h.patches()[f].level();
            let r = h.level_geometry(l).map_or(2, |g| g.ratio);
            let under = h.patches()[f].interior().coarsen(r);
            h.patches_intersecting(l - 1, &under)
                .into_iter()
                .filter_map(|c| {
                    let q = under.intersect(&h.patches()[c].interior());
                    (!q.is_empty()).then_some(Probe {
                        coarse: c,
                        fine: f,
                        interior: q,
                    })
                })
                .collect()
        })
        .collect();
    per_patch.into_iter().flatten().collect()
}

/// One bin of the hierarchy packing: the patches it holds and their
/// offsets.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BinPlan {
    /// `(hierarchy index, offset in the bin)` in packing order.
    pub patches: Vec<(usize, [u32; 3])>,
}

/// The probes of one plan bin, packed once per regrid into a box that a
/// batch holding the bin places whole: a batch then packs a few shelves
/// instead of every probe of its bins.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Shelf {
    /// Cells of the box along each axis.
    pub extent: [u32; 3],
    /// `(probe index, offset of its ghost-grown box in the shelf)`.
    pub probes: Vec<(usize, [u32; 3])>,
}

/// Everything the step needs that depends on the hierarchy only.
pub(crate) struct StepPlan<T> {
    /// Read-only during a step.
    pub layout: PlanLayout<T>,
    /// Written by close, read by refluxing.
    pub fluxes: FluxStore<T>,
    /// Flux registers, `registers[l - 1]` for fine level `l`.
    pub registers: Vec<FluxRegister>,
}

/// The read-only part of a [`StepPlan`].
pub(crate) struct PlanLayout<T> {
    pub fill: GhostFill<T>,
    pub bin_edge: u32,
    /// Components of the state (the Euler five and the passive scalars).
    pub ncomp: usize,
    pub ghost: i32,
    pub bins: Vec<BinPlan>,
    /// Work descriptions of the bins, aligned with `bins`: each bin's
    /// patches first (in `bins[b].patches` order), then the probes of those
    /// patches, which are solved in the same batch.
    pub work: Vec<BinWork>,
    /// Work description of every hierarchy patch.
    pub patch_work: Vec<PatchWork>,
    /// Work description of every probe.
    pub probe_work: Vec<PatchWork>,
    pub probes: Vec<Probe>,
    /// Probe indices per hierarchy patch (as the coarse patch `P`).
    pub probes_of: Vec<Vec<usize>>,
    /// The probes of each hierarchy patch as the fine patch they serve
    /// (consecutive: probes come fine patch after fine patch).
    pub probes_of_fine: Vec<std::ops::Range<usize>>,
    /// The probes of each bin's patches on shelves, aligned with `bins`
    /// (built with `work`).
    pub shelves: Vec<Vec<Shelf>>,
    /// Packing efficiency (fraction of bin volume used).
    pub fill_ratio: f64,
    /// Whether `work`, `patch_work`, `probe_work` and the flux blocks are
    /// built (host-staged steps need them).
    pub batches: bool,
    /// Where the step prepares patches and probes, which the work
    /// descriptions (and so the cost model's prepare estimates) follow.
    pub preparation: Preparations,
}

/// Where a step prepares its patches and their flux probes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Preparations {
    pub patches: Preparation,
    pub probes: Preparation,
}

/// What a plan's batches are made of, besides the hierarchy.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlanShape {
    /// Bin edge in cells.
    pub bin_edge: u32,
    /// Components of the state.
    pub ncomp: usize,
    /// Each patch alone in its own bin (the paper's default scheme).
    pub per_patch: bool,
    /// Where the step prepares patches and probes, which the work
    /// descriptions (and so the cost model's prepare estimates) follow.
    pub preparation: Preparations,
}

impl PlanShape {
    /// The shape `deck`'s `[batching]` and `[hydro]` ask for.
    pub fn of(deck: &crate::deck::Deck, preparation: Preparations) -> Self {
        Self {
            bin_edge: deck.batching.bin_edge,
            ncomp: deck.ncomp(),
            per_patch: deck.batching.layout == crate::deck::BatchLayoutKind::PerPatch,
            preparation,
        }
    }
}

/// Per-step flux blocks, written by close.
pub(crate) struct FluxStore<T> {
    /// Each fine patch's flux block (empty on level 0).
    pub fine: Vec<Vec<T>>,
    /// Each probe's flux block.
    pub probes: Vec<Vec<T>>,
}

/// Values of a patch's flux block: `ncomp * 2 * (n_y n_z + n_x n_z + n_x n_y)`.
pub(crate) fn flux_block_len(interior: &IndexBox, ncomp: usize) -> usize {
    let n = interior.size();
    let (x, y, z) = (n.x as usize, n.y as usize, n.z as usize);
    ncomp * 2 * (y * z + x * z + x * y)
}

fn side_u32(v: i32) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

impl<T: Real> StepPlan<T> {
    /// Builds the plan of `h` for host-staged steps: patches packed into
    /// bins of edge `bin_edge`, or each alone in its own bin (`per_patch`).
    #[cfg(test)]
    pub fn new(
        h: &Hierarchy,
        bc: BoundaryConditions<T>,
        limiter: Limiter,
        bin_edge: u32,
        per_patch: bool,
    ) -> Result<Self, IntegratorError> {
        let shape = PlanShape {
            bin_edge,
            ncomp: quilt_sweep::physics::NCOMP,
            per_patch,
            preparation: Preparations::default(),
        };
        Self::build(h, bc, limiter, shape, true, None)
    }

    /// The plan `deck` asks for: bins as its `[batching]` says, work
    /// descriptions that follow `preparation`, and the work descriptions
    /// and flux blocks of host-staged batches only when the steps are
    /// host-staged (`batches`; a device-resident run never solves such
    /// batches).
    pub fn for_deck(
        h: &Hierarchy,
        bc: BoundaryConditions<T>,
        limiter: Limiter,
        (deck, preparation): (&crate::deck::Deck, Preparations),
        batches: bool,
    ) -> Result<Self, IntegratorError> {
        Self::for_deck_owned(h, bc, limiter, (deck, preparation), batches, None)
    }

    /// [`StepPlan::for_deck`] for one rank of several: only the patches
    /// `owned` marks (by hierarchy index) go into its bins, so its steps
    /// solve those patches and the probes of those among them that are
    /// coarse patches. Fill plans, probes and registers still cover the
    /// whole hierarchy, which every rank holds.
    pub fn for_deck_owned(
        h: &Hierarchy,
        bc: BoundaryConditions<T>,
        limiter: Limiter,
        (deck, preparation): (&crate::deck::Deck, Preparations),
        batches: bool,
        owned: Option<&[bool]>,
    ) -> Result<Self, IntegratorError> {
        let shape = PlanShape::of(deck, preparation);
        Self::build(h, bc, limiter, shape, batches, owned)
    }

    /// Adds the work descriptions and flux blocks of host-staged batches
    /// to a plan of `h` built without them (a run that leaves device
    /// residency).
    pub fn ensure_batches(&mut self, h: &Hierarchy) -> Result<(), IntegratorError> {
        if self.layout.batches {
            return Ok(());
        }
        let l = &mut self.layout;
        let ((w, shelved), fluxes) = rayon::join(
            || {
                rayon::join(
                    || Self::work(h, l),
                    || shelves(&l.bins, &l.probes, &l.probes_of, l.ghost, l.bin_edge),
                )
            },
            || FluxStore::new(h, &l.probes, l.ncomp),
        );
        let (w, pw, qw) = w?;
        l.shelves = shelved?;
        (l.work, l.patch_work, l.probe_work) = (w, pw, qw);
        self.fluxes = fluxes;
        l.batches = true;
        Ok(())
    }

    /// Drops the work descriptions and flux blocks of host-staged batches
    /// (a run that enters device residency).
    pub fn drop_batches(&mut self) {
        let l = &mut self.layout;
        (l.work, l.patch_work, l.probe_work) = (Vec::new(), Vec::new(), Vec::new());
        l.shelves = Vec::new();
        self.fluxes = FluxStore::empty();
        l.batches = false;
    }

    fn build(
        h: &Hierarchy,
        bc: BoundaryConditions<T>,
        limiter: Limiter,
        shape: PlanShape,
        batches: bool,
        owned: Option<&[bool]>,
    ) -> Result<Self, IntegratorError> {
        let PlanShape {
            bin_edge,
            ncomp,
            per_patch,
            preparation,
        } = shape;
        let t0 = std::time::Instant::now();
        // The fill plans, the packing and the registers depend on the
        // hierarchy alone: built side by side.
        let since = |t: std::time::Instant| t.elapsed().as_secs_f64();
        let (((fill, t_fill), (packed, t_pack)), (probes, registers, t_reg)) = rayon::join(
            || {
                rayon::join(
                    || {
                        let t = std::time::Instant::now();
                        (GhostFill::new(h, bc, limiter), since(t))
                    },
                    || {
                        let t = std::time::Instant::now();
                        (Self::bins(h, bin_edge, per_patch, owned), since(t))
                    },
                )
            },
            || {
                let t = std::time::Instant::now();
                let (probes, registers) = rayon::join(
                    || find_probes(h),
                    || {
                        (1..h.num_levels())
                            .into_par_iter()
                            .map(|l| FluxRegister::new(h, l, ncomp))
                            .collect::<Result<Vec<_>, _>>()
                    },
                );
                (probes, registers, since(t))
            },
        );
        log::debug!(
            "step plan parts: fill plans {t_fill:.3} s, packing {t_pack:.3} s, probes and registers {t_reg:.3} s"
        );
        let fill = fill.map_err(IntegratorError::mesh("ghost-fill plans"))?;
        let (bins, fill_ratio) = packed?;
        let registers = registers.map_err(IntegratorError::mesh("flux registers"))?;
        let t_parts = t0.elapsed().as_secs_f64();
        let mut probes_of = vec![Vec::new(); h.num_patches()];
        let mut probes_of_fine = vec![0..0; h.num_patches()];
        for (n, p) in probes.iter().enumerate() {
            probes_of[p.coarse].push(n);
            let r = &mut probes_of_fine[p.fine];
            *r = if r.start == r.end {
                n..n + 1
            } else {
                r.start..n + 1
            };
        }
        let ghost = h.ghost();
        let mut plan = Self {
            layout: PlanLayout {
                fill,
                bin_edge,
                ncomp,
                ghost,
                bins,
                work: Vec::new(),
                patch_work: Vec::new(),
                probe_work: Vec::new(),
                probes,
                probes_of,
                probes_of_fine,
                shelves: Vec::new(),
                fill_ratio,
                batches: false,
                preparation,
            },
            fluxes: FluxStore::empty(),
            registers,
        };
        if batches {
            plan.ensure_batches(h)?;
        }
        let l = &plan.layout;
        log::debug!(
            "step plan: {} patches in {} bins (fill {:.3}), {} flux probes, {} registers",
            h.num_patches(),
            l.bins.len(),
            l.fill_ratio,
            l.probes.len(),
            plan.registers.len()
        );
        log::debug!(
            "step plan of {} patches: fill plans, packing, probes and registers {t_parts:.3} s, batch work and flux blocks {:.3} s",
            h.num_patches(),
            t0.elapsed().as_secs_f64() - t_parts
        );
        Ok(plan)
    }

    /// The bins of `h`'s patches (those `owned` marks, when given): packed,
    /// or one per patch (`per_patch`), with the fraction of bin volume
    /// used.
    fn bins(
        h: &Hierarchy,
        bin_edge: u32,
        per_patch: bool,
        owned: Option<&[bool]>,
    ) -> Result<(Vec<BinPlan>, f64), IntegratorError> {
        let mine: Vec<usize> = (0..h.num_patches())
            .filter(|&i| owned.is_none_or(|o| o.get(i).copied().unwrap_or(false)))
            .collect();
        Ok(if per_patch {
            // The paper's default scheme: every patch alone at the origin
            // of its own bin.
            let bins: Vec<BinPlan> = mine
                .iter()
                .map(|&i| BinPlan {
                    patches: vec![(i, [0; 3])],
                })
                .collect();
            let used: i64 = mine
                .iter()
                .map(|&i| h.patches()[i].ghost_box().num_cells())
                .sum();
            let fill = used as f64 / (bins.len().max(1) as f64 * f64::from(bin_edge).powi(3));
            (bins, fill)
        } else {
            let packing: HierarchyPacking = pack_patches(
                h,
                &mine,
                [bin_edge; 3],
                &PackOptions::default(),
                &mut PackWorkspace::new(),
            )?;
            let mut bins: Vec<BinPlan> = (0..packing.packing.bins_used)
                .map(|_| BinPlan {
                    patches: Vec::new(),
                })
                .collect();
            for (patch, place) in packing.patches.iter().zip(&packing.packing.placements) {
                bins[place.bin].patches.push((patch.index, place.offset));
            }
            (bins, packing.packing.efficiency())
        })
    }

    /// The work descriptions of the bins, patches and probes (what the
    /// batch selection of host-staged steps reads).
    #[allow(clippy::type_complexity)]
    fn work(
        h: &Hierarchy,
        l: &PlanLayout<T>,
    ) -> Result<(Vec<BinWork>, Vec<PatchWork>, Vec<PatchWork>), IntegratorError> {
        let (fill, bins, probes, probes_of) = (&l.fill, &l.bins, &l.probes, &l.probes_of);
        let prep = l.preparation;
        let ghost = h.ghost();
        let g = side_u32(ghost);
        let bytes = (l.ncomp * size_of::<T>()) as u32;
        let patch_work = |i: usize| -> PatchWork {
            let p = &h.patches()[i];
            let counts = fill.plan().patches()[i].counts();
            let faces: i64 = if p.level() == 0 {
                0
            } else {
                (0..3)
                    .flat_map(|a| Side::BOTH.map(|s| p.coarse_fine_faces(a, s).num_cells()))
                    .sum()
            };
            PatchWork::new(size_of_box(&p.ghost_box()), g)
                .with_ghost_fill(
                    counts.interpolated.max(0) as u64,
                    counts.copied.max(0) as u64,
                )
                .with_flux_faces(faces.max(0) as u64)
                .prepared(prep.patches)
        };
        let probe_work = |q: &Probe| -> PatchWork {
            let e = size_of_box(&q.interior.grow(ghost));
            let all: u64 = e.iter().map(|&v| u64::from(v)).product();
            let inner = q.interior.num_cells().max(0) as u64;
            // A probe is a plain copy of its coarse patch's prepared cells.
            PatchWork::new(e, g)
                .with_ghost_fill(0, all - inner)
                .prepared(prep.probes)
        };
        let patch_work: Vec<PatchWork> = (0..h.num_patches())
            .into_par_iter()
            .map(patch_work)
            .collect();
        let probe_work: Vec<PatchWork> = probes.par_iter().map(probe_work).collect();
        let work = bins
            .par_iter()
            .map(|b| {
                let mut w: Vec<PatchWork> = b.patches.iter().map(|&(i, _)| patch_work[i]).collect();
                for &(i, _) in &b.patches {
                    w.extend(probes_of[i].iter().map(|&n| probe_work[n]));
                }
                BinWork::new(w, bytes)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((work, patch_work, probe_work))
    }
}

impl<T> FluxStore<T> {
    /// No flux blocks (a plan without batch work).
    fn empty() -> Self {
        Self {
            fine: Vec::new(),
            probes: Vec::new(),
        }
    }
}

/// The shelves of every bin (see [`Shelf`]): the probes of its patches,
/// in patch order, packed into bins of edge `bin_edge` (one shelf per bin
/// that packing opens), each cut down to the box its probes occupy.
pub(crate) fn shelves(
    bins: &[BinPlan],
    probes: &[Probe],
    probes_of: &[Vec<usize>],
    ghost: i32,
    bin_edge: u32,
) -> Result<Vec<Vec<Shelf>>, IntegratorError> {
    bins.par_iter()
        .map(|b| {
            let list: Vec<usize> = b
                .patches
                .iter()
                .flat_map(|&(i, _)| probes_of[i].iter().copied())
                .collect();
            if list.is_empty() {
                return Ok(Vec::new());
            }
            let extents: Vec<[u32; 3]> = list
                .iter()
                .map(|&n| size_of_box(&probes[n].interior.grow(ghost)))
                .collect();
            let packing = pack(&extents, [bin_edge; 3], &PackOptions::default())?;
            let mut shelves: Vec<Shelf> = (0..packing.bins_used)
                .map(|_| Shelf {
                    extent: [0; 3],
                    probes: Vec::new(),
                })
                .collect();
            let mut lo = vec![[u32::MAX; 3]; packing.bins_used];
            for (k, pl) in packing.placements.iter().enumerate() {
                if pl.extent != extents[k] {
                    return Err(IntegratorError::Internal(format!(
                        "probe {} was placed rotated ({:?} for {:?})",
                        list[k], pl.extent, extents[k]
                    )));
                }
                let (s, low) = (&mut shelves[pl.bin], &mut lo[pl.bin]);
                *low = [0, 1, 2].map(|a| low[a].min(pl.offset[a]));
                s.extent = [0, 1, 2].map(|a| s.extent[a].max(pl.offset[a] + pl.extent[a]));
                s.probes.push((list[k], pl.offset));
            }
            for (s, lo) in shelves.iter_mut().zip(&lo) {
                s.extent = [0, 1, 2].map(|a| s.extent[a] - lo[a]);
                for (_, o) in &mut s.probes {
                    *o = [0, 1, 2].map(|a| o[a] - lo[a]);
                }
            }
            Ok(shelves)
        })
        .collect()
}

impl<T: Real> FluxStore<T> {
    /// Zeroed flux blocks of every fine patch and probe.
    fn new(h: &Hierarchy, probes: &[Probe], ncomp: usize) -> Self {
        let fine_flux = h
            .patches()
            .par_iter()
            .map(|p| {
                if p.level() == 0 {
                    Vec::new()
                } else {
                    vec![T::zero(); flux_block_len(&p.interior(), ncomp)]
                }
            })
            .collect();
        let probe_flux = probes
            .par_iter()
            .map(|q| vec![T::zero(); flux_block_len(&q.interior, ncomp)])
            .collect();
        Self {
            fine: fine_flux,
            probes: probe_flux,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_mesh::{Geometry, PatchId, PatchSpec, SizeLimits, iv};

    /// Two level-0 patches side by side, one fine patch straddling them.
    fn two_level() -> Hierarchy {
        let g = Geometry::new([0.0; 3], [2.0, 1.0, 1.0], iv(32, 16, 16), &[2]).unwrap();
        let spec = |id: u32, lo: [i32; 3], hi: [i32; 3]| PatchSpec {
            id: PatchId(id),
            interior: IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2])),
            parent: None,
        };
        Hierarchy::new(
            g,
            3,
            SizeLimits::default(),
            vec![
                vec![
                    spec(0, [0, 0, 0], [15, 15, 15]),
                    spec(1, [16, 0, 0], [31, 15, 15]),
                ],
                vec![spec(2, [24, 8, 8], [39, 23, 23])],
            ],
        )
        .unwrap()
    }

    #[test]
    fn probes_split_the_coarse_image_by_coarse_patch() {
        let h = two_level();
        let p = find_probes(&h);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].coarse, 0);
        assert_eq!(p[0].interior, IndexBox::new(iv(12, 4, 4), iv(15, 11, 11)));
        assert_eq!(p[1].coarse, 1);
        assert_eq!(p[1].interior, IndexBox::new(iv(16, 4, 4), iv(19, 11, 11)));
        let cells: i64 = p.iter().map(|q| q.interior.num_cells()).sum();
        assert_eq!(cells * 8, h.patches()[2].interior().num_cells());
    }

    #[test]
    fn plan_packs_every_patch_and_sizes_flux_blocks() {
        let h = two_level();
        let full = StepPlan::<f64>::new(
            &h,
            BoundaryConditions::outflow().with_vector([1, 2, 3]),
            Limiter::default(),
            64,
            false,
        )
        .unwrap();
        assert!(full.fluxes.fine[0].is_empty());
        assert_eq!(full.fluxes.fine[2].len(), 5 * 2 * 3 * 16 * 16);
        let (plan, registers) = (&full.layout, &full.registers);
        let placed: usize = plan.bins.iter().map(|b| b.patches.len()).sum();
        assert_eq!(placed, 3);
        let listed: usize = plan.work.iter().map(|w| w.patches().len()).sum();
        assert_eq!(listed, 3 + 2);
        assert_eq!(registers.len(), 1);
        assert_eq!(plan.probes_of[0], vec![0]);
        assert_eq!(plan.probes_of_fine, vec![0..0, 0..0, 0..2]);
        // The paper's default scheme: one patch per bin, at its origin.
        let per_patch = StepPlan::<f64>::new(
            &h,
            BoundaryConditions::outflow().with_vector([1, 2, 3]),
            Limiter::default(),
            64,
            true,
        )
        .unwrap();
        let bins = &per_patch.layout.bins;
        assert_eq!(bins.len(), 3);
        for (i, b) in bins.iter().enumerate() {
            assert_eq!(b.patches, vec![(i, [0; 3])]);
        }
        assert!(per_patch.layout.fill_ratio < full.layout.fill_ratio);
    }

    /// The work descriptions follow the preparation set, in every bin
    /// (patches first, then probes) and after a rebuild.
    #[test]
    fn work_descriptions_follow_the_preparation() {
        let h = two_level();
        let bc = || BoundaryConditions::outflow().with_vector([1, 2, 3]);
        let before = StepPlan::<f64>::new(&h, bc(), Limiter::default(), 64, true).unwrap();
        let prep = Preparations {
            patches: Preparation::Host,
            probes: Preparation::OnDevice,
        };
        let shape = PlanShape {
            bin_edge: 64,
            ncomp: quilt_sweep::physics::NCOMP,
            per_patch: true,
            preparation: prep,
        };
        let mut plan =
            StepPlan::<f64>::build(&h, bc(), Limiter::default(), shape, true, None).unwrap();
        let check = |plan: &StepPlan<f64>| {
            let l = &plan.layout;
            assert!(l.patch_work.iter().all(|w| w.preparation == prep.patches));
            assert!(l.probe_work.iter().all(|w| w.preparation == prep.probes));
            for (w, b) in l.work.iter().zip(&l.bins) {
                for (k, p) in w.patches().iter().enumerate() {
                    let want = if k < b.patches.len() {
                        prep.patches
                    } else {
                        prep.probes
                    };
                    assert_eq!(p.preparation, want, "bin patch {k}");
                }
            }
        };
        check(&plan);
        assert!(plan.layout.work.iter().any(|w| w.patches().len() > 1));
        for (a, b) in plan.layout.work.iter().zip(&before.layout.work) {
            assert_eq!(a.totals(), b.totals());
        }
        plan.drop_batches();
        plan.ensure_batches(&h).unwrap();
        check(&plan);
    }

    #[test]
    fn shelves_hold_each_bins_probes_once_without_overlap() {
        let h = two_level();
        let g = h.ghost();
        for (edge, per_patch) in [(64, false), (64, true), (24, true)] {
            let plan = StepPlan::<f64>::new(
                &h,
                BoundaryConditions::outflow().with_vector([1, 2, 3]),
                Limiter::default(),
                edge,
                per_patch,
            )
            .unwrap();
            let l = &plan.layout;
            assert_eq!(l.shelves.len(), l.bins.len());
            let mut seen = vec![0; l.probes.len()];
            for (b, shelves) in l.bins.iter().zip(&l.shelves) {
                let mut want: Vec<usize> = b
                    .patches
                    .iter()
                    .flat_map(|&(i, _)| l.probes_of[i].iter().copied())
                    .collect();
                let mut got = Vec::new();
                for shelf in shelves {
                    assert!(shelf.extent.iter().all(|&e| e > 0 && e <= edge));
                    let boxes: Vec<IndexBox> = shelf
                        .probes
                        .iter()
                        .map(|&(n, at)| {
                            let size = l.probes[n].interior.grow(g).size();
                            let lo = iv(at[0] as i32, at[1] as i32, at[2] as i32);
                            IndexBox::from_lo_size(lo, size)
                        })
                        .collect();
                    let room = IndexBox::from_lo_size(
                        iv(0, 0, 0),
                        iv(
                            shelf.extent[0] as i32,
                            shelf.extent[1] as i32,
                            shelf.extent[2] as i32,
                        ),
                    );
                    for (k, bx) in boxes.iter().enumerate() {
                        assert!(room.contains_box(bx), "{bx} outside {room}");
                        assert!(boxes[k + 1..].iter().all(|o| !o.intersects(bx)));
                    }
                    got.extend(shelf.probes.iter().map(|&(n, _)| n));
                }
                want.sort_unstable();
                got.sort_unstable();
                assert_eq!(got, want);
                for n in got {
                    seen[n] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
        }
    }
}
