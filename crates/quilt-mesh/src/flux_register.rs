//! Flux registers: refluxing at coarse–fine interfaces (Berger & Colella
//! 1989).
//!
//! After a coarse step and the fine steps that subcycle it, the coarse
//! cells next to a fine patch were updated with the coarse flux through
//! the interface, the fine cells with the fine fluxes; the two differ, so
//! mass, momentum and energy are not conserved until the coarse cells are
//! corrected with the difference. A [`FluxRegister`] for fine level `l`
//! collects that difference for every coarse face of level `l − 1` that
//! lies on the boundary of a level-`l` patch (and is not shared with a
//! sibling or the domain boundary) and applies it.
//!
//! # Convention (signs and units)
//! Every flux handed to a register is a **time-integrated flux density
//! through a face in the `+axis` direction**: `Σ_s w_s · dt_s · F_axis`
//! over the sub-steps of one step, per unit area (units of `U × length`),
//! exactly what quilt-sweep's flux buffer holds. Each `add_*` call also
//! takes a `weight` that multiplies the values (1 for that buffer; `dt` for
//! instantaneous fluxes).
//!
//! For the coarse face `F` between coarse cell `c` and the fine-covered
//! region, with area `A_c`, covered by the `r²` fine faces `f` of area
//! `A_f = A_c / r²`, the register accumulates
//!
//! ```text
//! δ_F = Σ_coarse steps F_c  −  (1 / r²) Σ_fine steps Σ_f F_f
//! ```
//!
//! and [`FluxRegister::reflux`] sets
//!
//! ```text
//! U_c += s · δ_F / dx_c[axis]  =  s · (F_c·A_c − Σ F_f·A_f) / V_c
//! ```
//!
//! with `s = +1` when the fine patch lies on the `+axis` side of `c` (the
//! interface is `c`'s high face: the fine patch's low side) and `s = −1`
//! when it lies on the `−axis` side (`c`'s low face, the fine patch's high
//! side). A conservative coarse update `U_c −= (F_hi − F_lo)/dx` thereby
//! becomes one with the fine fluxes in place of the coarse one.
//!
//! # Indexing
//! Faces use face-centred indices: face `i` along `axis` lies between
//! cells `i − 1` and `i` ([`IndexBox::faces`]). A fine patch with interior
//! `I` has its low and high faces at `I.boundary_faces(axis, side)`; the
//! corresponding coarse faces are the same boxes coarsened by `r` (the
//! interior is aligned to `r`). Face arrays ([`FaceFluxes`]) hold `ncomp`
//! components over a face box, component after component, `x` fastest —
//! for a whole coarse patch along `axis`, `I.faces(axis)`; for one face of
//! a patch, `I.boundary_faces(axis, side)`, which is exactly one face block
//! of quilt-sweep's per-patch flux buffer (see
//! [`FluxRegister::add_fine_patch_block`]).
//!
//! Only the coarse patches' faces that the register lists
//! ([`FluxRegister::coarse_faces`]) are needed: most of them lie inside a
//! coarse patch, so the coarse solver must provide fluxes there (a
//! whole-patch face array does).

use rayon::prelude::*;

use crate::error::MeshError;
use crate::flat::{FlatReflux, RefluxItem, Strided, bounds, rel, split_at_bounds};
use crate::geometry::LevelGeometry;
use crate::hierarchy::{Hierarchy, HierarchyData, Patch};
use crate::index::{IndexBox, IntVect, Side, coarsen_vect, iv};
use crate::patch_data::PatchData;
use crate::real::Real;
use crate::restrict::TimeLevel;

/// A read-only array of face fluxes: `ncomp` components over the face box
/// `faces` (face-centred along the axis it is used for), component after
/// component, `x` fastest.
#[derive(Debug, Clone, Copy)]
pub struct FaceFluxes<'a, T> {
    data: &'a [T],
    faces: IndexBox,
    ncomp: usize,
}

impl<'a, T: Real> FaceFluxes<'a, T> {
    /// Wraps `data`; errors unless it holds exactly `ncomp` values per face.
    pub fn new(data: &'a [T], faces: IndexBox, ncomp: usize) -> Result<Self, MeshError> {
        let n = faces.num_cells() as usize;
        if faces.is_empty() || ncomp == 0 || data.len() != n * ncomp {
            return Err(MeshError::BadAccess {
                field: format!("face fluxes over {faces}"),
                why: format!(
                    "{} values given, {ncomp} components over {n} faces need {}",
                    data.len(),
                    n * ncomp
                ),
            });
        }
        Ok(Self { data, faces, ncomp })
    }

    /// The face box.
    pub fn faces(&self) -> IndexBox {
        self.faces
    }

    /// The values of component `c`, over the faces `x` fastest.
    #[inline]
    fn comp(&self, c: usize) -> &[T] {
        let n = self.faces.num_cells() as usize;
        &self.data[c * n..(c + 1) * n]
    }
}

/// One box of a fine patch's coarse–fine boundary on one side.
#[derive(Debug, Clone)]
struct Block {
    axis: usize,
    /// `+1` if the coarse cells lie below the interface (fine low side).
    sign: f64,
    /// Fine faces (face-centred along `axis`).
    fine_faces: IndexBox,
    /// Coarse cells corrected, one layer thick along `axis`, in the
    /// unwrapped coarse index space.
    cells: IndexBox,
    offset: usize,
}

/// The part of a block inside one coarse patch (or periodic image).
#[derive(Debug, Clone)]
struct Piece {
    block: usize,
    /// Unwrapped coarse cells; the patch holds them at `cells − shift`.
    cells: IndexBox,
    shift: IntVect,
}

/// One fine patch's blocks, each with its pieces and their coarse patches
/// (hierarchy indices), before the register numbers them.
type PatchBlocks = Vec<(Block, Vec<(usize, Piece)>)>;

/// The blocks of fine patch `p` (on `level`, ratio `r` to the coarser
/// level of geometry `clg`) with their pieces and the coarse patches that
/// hold them, in the register's order; `hits` is scratch.
fn patch_blocks(
    h: &Hierarchy,
    p: &Patch,
    level: usize,
    r: i32,
    clg: &LevelGeometry,
    hits: &mut Vec<usize>,
) -> Result<PatchBlocks, MeshError> {
    let interior = p.interior();
    let mut blocks = Vec::new();
    for axis in 0..3 {
        for side in Side::BOTH {
            for b in p.coarse_fine_faces(axis, side).boxes() {
                let mut fine_faces = *b;
                let face = match side {
                    Side::Lo => interior.lo[axis],
                    Side::Hi => interior.hi[axis] + 1,
                };
                fine_faces.lo[axis] = face;
                fine_faces.hi[axis] = face;
                let cells = b.coarsen(r);
                let aligned = (0..3)
                    .filter(|&e| e != axis)
                    .all(|e| b.lo[e].rem_euclid(r) == 0 && (b.hi[e] + 1).rem_euclid(r) == 0);
                if !aligned {
                    return Err(MeshError::NotAligned {
                        level,
                        id: p.id(),
                        interior: *b,
                        ratio: r,
                    });
                }
                let mut pieces = Vec::new();
                let mut covered = 0;
                for shift in clg.periodic_shifts() {
                    hits.clear();
                    hits.extend(h.patches_intersecting(level - 1, &cells.shift(&-shift)));
                    for &ci in hits.iter() {
                        let part = h.patches()[ci].interior().shift(&shift).intersect(&cells);
                        if part.is_empty() {
                            continue;
                        }
                        covered += part.num_cells();
                        pieces.push((
                            ci,
                            Piece {
                                block: 0,
                                cells: part,
                                shift,
                            },
                        ));
                    }
                }
                if covered != cells.num_cells() {
                    return Err(MeshError::NotNested {
                        level,
                        id: p.id(),
                        uncovered: cells,
                    });
                }
                let block = Block {
                    axis,
                    sign: match side {
                        Side::Lo => 1.0,
                        Side::Hi => -1.0,
                    },
                    fine_faces,
                    cells,
                    offset: 0,
                };
                blocks.push((block, pieces));
            }
        }
    }
    Ok(blocks)
}

/// The flux register of one fine level (see the module docs).
#[derive(Debug, Clone)]
pub struct FluxRegister {
    level: usize,
    ratio: i32,
    ncomp: usize,
    dx: [f64; 3],
    fine_start: usize,
    coarse_start: usize,
    fine_interiors: Vec<IndexBox>,
    coarse_interiors: Vec<IndexBox>,
    blocks: Vec<Block>,
    /// Blocks of fine patch `n` (of the level): `fine_blocks[n]..fine_blocks[n + 1]`.
    fine_blocks: Vec<usize>,
    /// Pieces per coarse patch of the level below.
    coarse_pieces: Vec<Vec<Piece>>,
    acc: Vec<f64>,
}

impl FluxRegister {
    /// A zeroed register for the coarse–fine interfaces of level `level`
    /// (at least 1) of `h`, for `ncomp` components.
    pub fn new(h: &Hierarchy, level: usize, ncomp: usize) -> Result<Self, MeshError> {
        if level == 0 || level >= h.num_levels() {
            return Err(MeshError::invalid(
                "flux register level",
                format!(
                    "level {level} has no coarser level below it (levels 1..{} do)",
                    h.num_levels()
                ),
            ));
        }
        if ncomp == 0 {
            return Err(MeshError::invalid(
                "flux register components",
                "need at least one",
            ));
        }
        let lg = *h.level_geometry(level).ok_or(MeshError::NoSuchLevel {
            level,
            num_levels: h.num_levels(),
        })?;
        let clg = *h.level_geometry(level - 1).ok_or(MeshError::NoSuchLevel {
            level: level - 1,
            num_levels: h.num_levels(),
        })?;
        let r = lg.ratio;
        let frange = h.level_range(level);
        let crange = h.level_range(level - 1);
        let mut reg = FluxRegister {
            level,
            ratio: r,
            ncomp,
            dx: [clg.dx.x, clg.dx.y, clg.dx.z],
            fine_start: frange.start,
            coarse_start: crange.start,
            fine_interiors: h.patches()[frange.clone()]
                .iter()
                .map(|p| p.interior())
                .collect(),
            coarse_interiors: h.patches()[crange.clone()]
                .iter()
                .map(|p| p.interior())
                .collect(),
            blocks: Vec::new(),
            fine_blocks: vec![0],
            coarse_pieces: vec![Vec::new(); crange.len()],
            acc: Vec::new(),
        };
        // Each fine patch's blocks and their pieces are found on their own
        // (thousands of patches on a fine level), then numbered in patch
        // order: the register is the one a single pass would build.
        let found: Vec<Result<PatchBlocks, MeshError>> = h.patches()[frange.clone()]
            .par_iter()
            .map_init(Vec::new, |hits, p| patch_blocks(h, p, level, r, &clg, hits))
            .collect();
        let mut faces = 0;
        for blocks in found {
            for (mut block, pieces) in blocks? {
                let index = reg.blocks.len();
                for (ci, mut piece) in pieces {
                    piece.block = index;
                    reg.coarse_pieces[ci - crange.start].push(piece);
                }
                block.offset = faces;
                faces += ncomp * block.cells.num_cells() as usize;
                reg.blocks.push(block);
            }
            reg.fine_blocks.push(reg.blocks.len());
        }
        // Blocks are numbered in the order their pieces were listed, so each
        // coarse patch's pieces are in block order (`coarse_matches` relies
        // on it).
        debug_assert!(
            reg.coarse_pieces
                .iter()
                .all(|p| p.windows(2).all(|w| w[0].block <= w[1].block))
        );
        reg.acc = vec![0.0; faces];
        log::debug!(
            "flux register level {level}: {} blocks, {} coarse faces",
            reg.blocks.len(),
            reg.num_faces()
        );
        Ok(reg)
    }

    /// The fine level.
    pub fn level(&self) -> usize {
        self.level
    }

    /// Number of components.
    pub fn ncomp(&self) -> usize {
        self.ncomp
    }

    /// Number of coarse faces the register corrects.
    pub fn num_faces(&self) -> usize {
        self.acc.len() / self.ncomp
    }

    /// Zeroes every accumulated value (start of a coarse step).
    pub fn reset(&mut self) {
        self.acc.fill(0.0);
    }

    /// The coarse faces whose fluxes the register needs from coarse patch
    /// `coarse_patch` (a hierarchy index on level `level − 1`): pairs of
    /// axis and face box in that patch's index space (face-centred along
    /// the axis). Empty for patches not touching the fine level.
    pub fn coarse_faces(&self, coarse_patch: usize) -> Vec<(usize, IndexBox)> {
        self.pieces_of(coarse_patch)
            .iter()
            .map(|pc| {
                let b = &self.blocks[pc.block];
                (b.axis, self.piece_faces(pc))
            })
            .collect()
    }

    fn pieces_of(&self, coarse_patch: usize) -> &[Piece] {
        coarse_patch
            .checked_sub(self.coarse_start)
            .and_then(|n| self.coarse_pieces.get(n))
            .map_or(&[], |v| v.as_slice())
    }

    /// The faces of a piece in its coarse patch's index space.
    fn piece_faces(&self, pc: &Piece) -> IndexBox {
        let b = &self.blocks[pc.block];
        let mut f = pc.cells.shift(&-pc.shift);
        if b.sign > 0.0 {
            f.lo[b.axis] += 1;
            f.hi[b.axis] += 1;
        }
        f
    }

    fn check_ncomp<T>(&self, what: &str, f: &FaceFluxes<'_, T>) -> Result<(), MeshError> {
        if f.ncomp != self.ncomp {
            return Err(MeshError::BadAccess {
                field: format!("{what} fluxes over {}", f.faces),
                why: format!(
                    "{} components given, the register has {}",
                    f.ncomp, self.ncomp
                ),
            });
        }
        Ok(())
    }

    /// Adds `weight ×` the coarse fluxes `fluxes` through faces normal to
    /// `axis` of coarse patch `coarse_patch` (hierarchy index). Faces of
    /// the array that the register does not list are ignored; returns how
    /// many register faces were accumulated.
    pub fn add_coarse<T: Real>(
        &mut self,
        coarse_patch: usize,
        axis: usize,
        fluxes: &FaceFluxes<'_, T>,
        weight: f64,
    ) -> Result<usize, MeshError> {
        self.on_all_blocks(|reg, acc, all| {
            reg.add_coarse_into(acc, all, coarse_patch, axis, fluxes, weight)
        })
    }

    /// Runs `f` with the register's values as one share of every block.
    fn on_all_blocks<R>(&mut self, f: impl FnOnce(&Self, &mut [f64], &Share) -> R) -> R {
        let mut acc = std::mem::take(&mut self.acc);
        let all = Share {
            base: 0,
            blocks: 0..self.blocks.len(),
        };
        let r = f(self, &mut acc, &all);
        self.acc = acc;
        r
    }

    /// [`FluxRegister::add_coarse`] into the blocks of `share`, whose
    /// values are `acc` (register offsets less `share.base`).
    fn add_coarse_into<T: Real>(
        &self,
        acc: &mut [f64],
        share: &Share,
        coarse_patch: usize,
        axis: usize,
        fluxes: &FaceFluxes<'_, T>,
        weight: f64,
    ) -> Result<usize, MeshError> {
        self.check_ncomp("coarse", fluxes)?;
        let mut count = 0;
        for (b, region, to_cell) in
            self.coarse_matches(coarse_patch, axis, &share.blocks, &fluxes.faces)?
        {
            let ncell = b.cells.num_cells() as usize;
            let nx = region.size().x as usize;
            for c in 0..self.ncomp {
                let src = fluxes.comp(c);
                let dst = &mut acc[b.offset - share.base + c * ncell..][..ncell];
                // Row by row, `x` fastest as `region.iter()` goes: each
                // value gets its additions in the same order.
                for z in region.lo.z..=region.hi.z {
                    for y in region.lo.y..=region.hi.y {
                        let f = iv(region.lo.x, y, z);
                        let from = &src[fluxes.faces.offset(&f)..][..nx];
                        let to = &mut dst[b.cells.offset(&(f + to_cell))..][..nx];
                        for (a, v) in to.iter_mut().zip(from) {
                            *a += weight * v.as_f64();
                        }
                    }
                }
            }
            count += region.num_cells() as usize;
        }
        Ok(count)
    }

    /// The blocks among `blocks` whose pieces in coarse patch
    /// `coarse_patch` have faces normal to `axis` within `faces`: each
    /// block, those faces, and the shift from a face to its block cell.
    fn coarse_matches(
        &self,
        coarse_patch: usize,
        axis: usize,
        blocks: &std::ops::Range<usize>,
        faces: &IndexBox,
    ) -> Result<Vec<(&Block, IndexBox, IntVect)>, MeshError> {
        let n = coarse_patch
            .checked_sub(self.coarse_start)
            .filter(|&n| n < self.coarse_pieces.len())
            .ok_or_else(|| self.not_on_level(coarse_patch, self.level - 1))?;
        // A coarse patch's pieces are in block order (see `new`), so the
        // pieces of the blocks asked for are one run of them: a probe face
        // of one fine patch needs not scan the pieces of every other.
        let pieces = &self.coarse_pieces[n];
        let from = pieces.partition_point(|pc| pc.block < blocks.start);
        let to = from + pieces[from..].partition_point(|pc| pc.block < blocks.end);
        let mut out = Vec::new();
        for pc in &pieces[from..to] {
            let b = &self.blocks[pc.block];
            if b.axis != axis {
                continue;
            }
            let region = self.piece_faces(pc).intersect(faces);
            if region.is_empty() {
                continue;
            }
            let to_cell = pc.shift
                - if b.sign > 0.0 {
                    unit(axis)
                } else {
                    iv(0, 0, 0)
                };
            out.push((b, region, to_cell));
        }
        Ok(out)
    }

    /// Adds `weight ×` the fine fluxes `fluxes` through faces normal to
    /// `axis` of fine patch `fine_patch` (hierarchy index on the register's
    /// level), averaged over the `r²` fine faces of each coarse face.
    /// Returns how many fine faces were accumulated.
    pub fn add_fine<T: Real>(
        &mut self,
        fine_patch: usize,
        axis: usize,
        fluxes: &FaceFluxes<'_, T>,
        weight: f64,
    ) -> Result<usize, MeshError> {
        let n = self.fine_index(fine_patch)?;
        self.on_all_blocks(|reg, acc, all| reg.add_fine_into(acc, all, n, axis, fluxes, weight))
    }

    /// [`FluxRegister::add_fine`] of fine patch `n` (of the level) into
    /// `acc`, the values of `share`, which holds that patch's blocks.
    fn add_fine_into<T: Real>(
        &self,
        acc: &mut [f64],
        share: &Share,
        n: usize,
        axis: usize,
        fluxes: &FaceFluxes<'_, T>,
        weight: f64,
    ) -> Result<usize, MeshError> {
        self.check_ncomp("fine", fluxes)?;
        let scale = weight / (self.ratio * self.ratio) as f64;
        let mut count = 0;
        for b in &self.blocks[self.fine_blocks[n]..self.fine_blocks[n + 1]] {
            if b.axis != axis {
                continue;
            }
            let region = b.fine_faces.intersect(&fluxes.faces);
            if region.is_empty() {
                continue;
            }
            let ncell = b.cells.num_cells() as usize;
            let layer = b.cells.lo[axis];
            let nx = region.size().x as usize;
            // Along a row the block cell advances every `r` fine faces,
            // from the phase of the row's first face; across the
            // interface (`axis` 0) a row is one face.
            let phase0 = region.lo.x.rem_euclid(self.ratio);
            for c in 0..self.ncomp {
                let src = fluxes.comp(c);
                let dst = &mut acc[b.offset - share.base + c * ncell..][..ncell];
                // Row by row, `x` fastest as `region.iter()` goes: each
                // value gets its `r²` subtractions in the same order.
                for z in region.lo.z..=region.hi.z {
                    for y in region.lo.y..=region.hi.y {
                        let f = iv(region.lo.x, y, z);
                        let mut q = coarsen_vect(&f, self.ratio);
                        q[axis] = layer;
                        let mut at = b.cells.offset(&q);
                        let mut phase = phase0;
                        for v in &src[fluxes.faces.offset(&f)..][..nx] {
                            dst[at] -= scale * v.as_f64();
                            phase += 1;
                            if phase == self.ratio {
                                phase = 0;
                                at += 1;
                            }
                        }
                    }
                }
            }
            count += region.num_cells() as usize;
        }
        Ok(count)
    }

    /// Where each fine patch's part of an array over the register's
    /// faces begins, for arrays of `len` entries with `per_face` entries
    /// per face (`ncomp` for values, 1 for one entry per face): the fine
    /// patches' blocks are laid out patch after patch, so each patch's
    /// part is contiguous. One bound per fine patch and `len` last.
    fn fine_bounds(&self, len: usize, per_face: usize) -> Vec<usize> {
        let nfine = self.fine_blocks.len() - 1;
        (0..=nfine)
            .map(|n| {
                self.blocks
                    .get(self.fine_blocks[n])
                    .filter(|_| n < nfine)
                    .map_or(len, |b| b.offset / self.ncomp * per_face)
            })
            .collect()
    }

    /// Accumulates the register fine patch by fine patch, in parallel:
    /// `f` is called once for every fine patch of the level with a
    /// [`FineShare`] that adds coarse and fine fluxes into that patch's
    /// blocks only. Every register face belongs to one fine patch's blocks,
    /// so the sums are, bit for bit, those of the same calls made one patch
    /// after another. Returns the sum of what the calls return.
    pub fn accumulate_par<F>(&mut self, f: F) -> Result<usize, MeshError>
    where
        F: Fn(&mut FineShare<'_>) -> Result<usize, MeshError> + Sync,
    {
        let mut acc = std::mem::take(&mut self.acc);
        let bounds = self.fine_bounds(acc.len(), self.ncomp);
        let parts = split_at_bounds(&mut acc, &bounds);
        let this = &*self;
        let r = parts
            .into_par_iter()
            .enumerate()
            .map(|(n, acc)| {
                let mut share = FineShare {
                    reg: this,
                    n,
                    acc,
                    share: Share {
                        base: bounds[n],
                        blocks: this.fine_blocks[n]..this.fine_blocks[n + 1],
                    },
                };
                f(&mut share)
            })
            .try_reduce(|| 0, |a, b| Ok(a + b));
        self.acc = acc;
        r
    }

    /// Adds one patch's block of quilt-sweep's flux buffer: the six faces
    /// of the interior in the order x-low, x-high, y-low, y-high, z-low,
    /// z-high, each `ncomp` components over
    /// `interior.boundary_faces(axis, side)` (`x` fastest). Its length must
    /// be `ncomp · 2 · (n_y n_z + n_x n_z + n_x n_y)`.
    pub fn add_fine_patch_block<T: Real>(
        &mut self,
        fine_patch: usize,
        block: &[T],
        weight: f64,
    ) -> Result<usize, MeshError> {
        let interior = self.fine_interiors[self.fine_index(fine_patch)?];
        let mut count = 0;
        for (axis, faces) in self.split_block(interior, block)? {
            count += self.add_fine(fine_patch, axis, &faces, weight)?;
        }
        Ok(count)
    }

    /// [`FluxRegister::add_fine_patch_block`] for a coarse patch: only the
    /// register faces on the coarse patch's own boundary can be taken from
    /// such a block (the others need [`FluxRegister::add_coarse`]).
    pub fn add_coarse_patch_block<T: Real>(
        &mut self,
        coarse_patch: usize,
        block: &[T],
        weight: f64,
    ) -> Result<usize, MeshError> {
        let interior = coarse_patch
            .checked_sub(self.coarse_start)
            .and_then(|n| self.coarse_interiors.get(n).copied())
            .ok_or_else(|| self.not_on_level(coarse_patch, self.level - 1))?;
        let mut count = 0;
        for (axis, faces) in self.split_block(interior, block)? {
            count += self.add_coarse(coarse_patch, axis, &faces, weight)?;
        }
        Ok(count)
    }

    fn split_block<'a, T: Real>(
        &self,
        interior: IndexBox,
        block: &'a [T],
    ) -> Result<Vec<(usize, FaceFluxes<'a, T>)>, MeshError> {
        let n = interior.size();
        let area = [n.y * n.z, n.x * n.z, n.x * n.y].map(|a| a as usize);
        let expect = self.ncomp * 2 * area.iter().sum::<usize>();
        if block.len() != expect {
            return Err(MeshError::BadAccess {
                field: format!("patch flux block for interior {interior}"),
                why: format!(
                    "{} values given, {} components over the six faces need {expect}",
                    block.len(),
                    self.ncomp
                ),
            });
        }
        let mut out = Vec::with_capacity(6);
        let mut at = 0;
        for (axis, &a) in area.iter().enumerate() {
            for side in Side::BOTH {
                let len = self.ncomp * a;
                let faces = interior.boundary_faces(axis, side);
                out.push((
                    axis,
                    FaceFluxes::new(&block[at..at + len], faces, self.ncomp)?,
                ));
                at += len;
            }
        }
        Ok(out)
    }

    fn fine_index(&self, fine_patch: usize) -> Result<usize, MeshError> {
        fine_patch
            .checked_sub(self.fine_start)
            .filter(|&n| n < self.fine_interiors.len())
            .ok_or_else(|| self.not_on_level(fine_patch, self.level))
    }

    fn not_on_level(&self, patch: usize, level: usize) -> MeshError {
        MeshError::invalid(
            format!("flux register of level {}", self.level),
            format!("patch index {patch} is not a patch of level {level}"),
        )
    }

    /// Applies the correction to coarse patch `coarse_patch` (hierarchy
    /// index on level `level − 1`), whose data is `data`.
    pub fn reflux_patch<T: Real>(
        &self,
        coarse_patch: usize,
        data: &mut PatchData<T>,
    ) -> Result<(), MeshError> {
        let n = coarse_patch
            .checked_sub(self.coarse_start)
            .filter(|&n| n < self.coarse_pieces.len())
            .ok_or_else(|| self.not_on_level(coarse_patch, self.level - 1))?;
        if data.interior() != self.coarse_interiors[n] || data.ncomp() != self.ncomp {
            return Err(MeshError::LayoutMismatch {
                why: format!(
                    "reflux into patch index {coarse_patch}: data interior {} with {} components, register expects {} with {}",
                    data.interior(),
                    data.ncomp(),
                    self.coarse_interiors[n],
                    self.ncomp
                ),
            });
        }
        for pc in &self.coarse_pieces[n] {
            let b = &self.blocks[pc.block];
            let f = b.sign / self.dx[b.axis];
            let ncell = b.cells.num_cells() as usize;
            let (cells, nx) = (&pc.cells, pc.cells.size().x as usize);
            for c in 0..self.ncomp {
                let acc = &self.acc[b.offset + c * ncell..][..ncell];
                for z in cells.lo.z..=cells.hi.z {
                    for y in cells.lo.y..=cells.hi.y {
                        let q = iv(cells.lo.x, y, z);
                        let o = data.index(&(q - pc.shift));
                        let from = &acc[b.cells.offset(&q)..][..nx];
                        let to = &mut data.comp_mut(c)[o..o + nx];
                        for (u, d) in to.iter_mut().zip(from) {
                            *u = T::from_f64(u.as_f64() + f * d);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Applies the correction to every coarse patch of `data` (the chosen
    /// time level), in parallel.
    pub fn reflux<T: Real>(
        &self,
        h: &Hierarchy,
        data: &mut HierarchyData<T>,
        time: TimeLevel,
    ) -> Result<(), MeshError> {
        data.check_layout(h)?;
        let start = self.coarse_start;
        let states = &mut data.states_mut()[start..start + self.coarse_pieces.len()];
        states
            .par_iter_mut()
            .enumerate()
            .try_for_each(|(n, s)| self.reflux_patch(start + n, time.of_mut(s)))
    }
}

/// Blocks `blocks` of a register, whose values start at register offset
/// `base` in the accumulator slice at hand.
struct Share {
    base: usize,
    blocks: std::ops::Range<usize>,
}

/// One fine patch's part of a [`FluxRegister`], handed out by
/// [`FluxRegister::accumulate_par`].
pub struct FineShare<'a> {
    reg: &'a FluxRegister,
    n: usize,
    acc: &'a mut [f64],
    share: Share,
}

impl FineShare<'_> {
    /// The fine patch (hierarchy index).
    pub fn fine_patch(&self) -> usize {
        self.reg.fine_start + self.n
    }

    /// Number of components of the register.
    pub fn ncomp(&self) -> usize {
        self.reg.ncomp
    }

    /// [`FluxRegister::add_coarse`], counting only this fine patch's faces.
    pub fn add_coarse<T: Real>(
        &mut self,
        coarse_patch: usize,
        axis: usize,
        fluxes: &FaceFluxes<'_, T>,
        weight: f64,
    ) -> Result<usize, MeshError> {
        self.reg
            .add_coarse_into(self.acc, &self.share, coarse_patch, axis, fluxes, weight)
    }

    /// [`FluxRegister::add_fine_patch_block`] of this fine patch.
    pub fn add_fine_patch_block<T: Real>(
        &mut self,
        block: &[T],
        weight: f64,
    ) -> Result<usize, MeshError> {
        let interior = self.reg.fine_interiors[self.n];
        let mut count = 0;
        for (axis, faces) in self.reg.split_block(interior, block)? {
            count += self
                .reg
                .add_fine_into(self.acc, &self.share, self.n, axis, &faces, weight)?;
        }
        Ok(count)
    }
}

/// One fine patch's faces of a [`FlatRegister`], handed out by
/// [`FlatRegister::record_par`].
pub struct FlatShare<'a> {
    reg: &'a FluxRegister,
    n: usize,
    /// The register face of `coarse[0]`.
    base: usize,
    coarse: &'a mut [[u64; 2]],
    hits: &'a mut [u32],
}

impl FlatShare<'_> {
    /// The fine patch (hierarchy index).
    pub fn fine_patch(&self) -> usize {
        self.reg.fine_start + self.n
    }

    /// [`FlatRegister::add_coarse`] for this fine patch.
    pub fn add_coarse(
        &mut self,
        coarse_patch: usize,
        axis: usize,
        faces: IndexBox,
        src: Strided,
    ) -> Result<usize, MeshError> {
        let reg = self.reg;
        let blocks = reg.fine_blocks[self.n]..reg.fine_blocks[self.n + 1];
        let mut count = 0;
        for (b, region, to_cell) in reg.coarse_matches(coarse_patch, axis, &blocks, &faces)? {
            for f in region.iter() {
                let face = b.offset / reg.ncomp + b.cells.offset(&(f + to_cell)) - self.base;
                self.coarse[face] = [src.index(rel(&f, &faces.lo), 0), src.sc];
                self.hits[face] += 1;
            }
            count += region.num_cells() as usize;
        }
        Ok(count)
    }
}

/// Builds a [`FlatReflux`] from a register: where each face's coarse flux
/// lives is recorded by [`FlatRegister::add_coarse`] (the calls
/// [`FineShare::add_coarse`] receives with values), the rest comes from
/// the register.
#[derive(Debug)]
pub struct FlatRegister<'a> {
    reg: &'a FluxRegister,
    coarse: Vec<[u64; 2]>,
    hits: Vec<u32>,
}

impl FluxRegister {
    /// A builder of the register's flat form.
    pub fn flat(&self) -> FlatRegister<'_> {
        let n = self.num_faces();
        // Megabytes on the finest levels: set on every core.
        let mut coarse = Vec::with_capacity(n);
        coarse.par_extend(rayon::iter::repeat_n([u64::MAX; 2], n));
        FlatRegister {
            reg: self,
            coarse,
            hits: vec![0; n],
        }
    }
}

impl FlatRegister<'_> {
    /// Records that the coarse fluxes through `faces` (normal to `axis`)
    /// of coarse patch `coarse_patch`, for the blocks of fine patch
    /// `fine_patch` (both hierarchy indices), lie at `src` (component 0 of
    /// `faces.lo`, `x` stride 1). Returns the register faces named, as
    /// [`FineShare::add_coarse`] counts them.
    pub fn add_coarse(
        &mut self,
        fine_patch: usize,
        coarse_patch: usize,
        axis: usize,
        faces: IndexBox,
        src: Strided,
    ) -> Result<usize, MeshError> {
        let n = self.reg.fine_index(fine_patch)?;
        let mut share = FlatShare {
            reg: self.reg,
            n,
            base: 0,
            coarse: &mut self.coarse,
            hits: &mut self.hits,
        };
        share.add_coarse(coarse_patch, axis, faces, src)
    }

    /// [`FlatRegister::add_coarse`] fine patch by fine patch, in parallel:
    /// `f` is called once for every fine patch of the level with a
    /// [`FlatShare`] that records into that patch's faces only, which
    /// gives what the same calls made one patch after another give.
    /// Returns the sum of what the calls return.
    pub fn record_par<F>(&mut self, f: F) -> Result<usize, MeshError>
    where
        F: Fn(&mut FlatShare<'_>) -> Result<usize, MeshError> + Sync,
    {
        let reg = self.reg;
        let bounds = reg.fine_bounds(self.coarse.len(), 1);
        let coarse = split_at_bounds(&mut self.coarse, &bounds);
        let hits = split_at_bounds(&mut self.hits, &bounds);
        coarse
            .into_par_iter()
            .zip(hits)
            .enumerate()
            .map(|(n, (coarse, hits))| {
                f(&mut FlatShare {
                    reg,
                    n,
                    base: bounds[n],
                    coarse,
                    hits,
                })
            })
            .try_reduce(|| 0, |a, b| Ok(a + b))
    }

    /// The items, with patch `i`'s ghost-grown box at `places[i]` and the
    /// flux block of fine patch `f` (its six face arrays in quilt-sweep's
    /// order: `x` low, `x` high, `y` low ..., each component after
    /// component over the interior's boundary faces) from index
    /// `fine_flux(f)` of the flux array. Errors unless every register face
    /// was given exactly one coarse flux.
    pub fn finish(
        self,
        h: &Hierarchy,
        places: &[Strided],
        fine_flux: &(dyn Fn(usize) -> Option<u64> + Sync),
    ) -> Result<FlatReflux, MeshError> {
        let reg = self.reg;
        if let Some(face) = self.hits.iter().position(|&k| k != 1) {
            return Err(MeshError::invalid(
                format!("flat register of level {}", reg.level),
                format!(
                    "register face {face} was given {} coarse fluxes (one is needed)",
                    self.hits[face]
                ),
            ));
        }
        crate::flat::check_places(places.len(), h.num_patches())?;
        let mut owner = vec![0usize; reg.blocks.len()];
        for n in 0..reg.fine_interiors.len() {
            owner[reg.fine_blocks[n]..reg.fine_blocks[n + 1]].fill(n);
        }
        let nc = reg.ncomp as u64;
        // Each coarse patch's items depend on its pieces alone: built for
        // all coarse patches at once, then joined in their order.
        let per_patch: Vec<Result<FlatReflux, MeshError>> = reg
            .coarse_pieces
            .par_iter()
            .enumerate()
            .map(|(cn, pieces)| {
                let mut out = FlatReflux::default();
                let ci = reg.coarse_start + cn;
                let cgb = h.patches()[ci].ghost_box();
                let mut passes: Vec<u32> = Vec::with_capacity(pieces.len());
                for (k, pc) in pieces.iter().enumerate() {
                    let b = &reg.blocks[pc.block];
                    let pass = pieces[..k]
                        .iter()
                        .zip(&passes)
                        .filter(|(q, _)| {
                            q.cells
                                .shift(&-q.shift)
                                .intersects(&pc.cells.shift(&-pc.shift))
                        })
                        .map(|(_, &p)| p + 1)
                        .max()
                        .unwrap_or(0);
                    passes.push(pass);
                    out.passes = out.passes.max(pass + 1);
                    let n = owner[pc.block];
                    let fi = reg.fine_start + n;
                    let interior = reg.fine_interiors[n];
                    let side = if b.sign > 0.0 { Side::Lo } else { Side::Hi };
                    let sz = interior.size();
                    let area = [sz.y * sz.z, sz.x * sz.z, sz.x * sz.y].map(|v| v as u64);
                    let before: u64 = (0..2 * b.axis + side.index())
                        .map(|k| area[k / 2])
                        .sum::<u64>()
                        * nc;
                    let fb = interior.boundary_faces(b.axis, side);
                    let fs = fb.size();
                    let base = fine_flux(fi).ok_or_else(|| {
                        MeshError::invalid(
                            format!("flat register of level {}", reg.level),
                            format!("fine patch index {fi} has no flux block"),
                        )
                    })?;
                    let arr = Strided {
                        base: base + before,
                        sy: fs.x as u64,
                        sz: fs.x as u64 * fs.y as u64,
                        sc: area[b.axis],
                    };
                    let mut first = pc.cells.lo;
                    for e in 0..3 {
                        first[e] = if e == b.axis {
                            b.fine_faces.lo[e]
                        } else {
                            first[e] * reg.ratio
                        };
                    }
                    let s = pc.cells.size();
                    out.items.push(RefluxItem {
                        dst: places[ci].at(rel(&(pc.cells.lo - pc.shift), &cgb.lo)),
                        fine: arr.at(rel(&first, &fb.lo)),
                        factor: b.sign / reg.dx[b.axis],
                        coarse: out.coarse.len() as u64,
                        n: [s.x as u32, s.y as u32, s.z as u32],
                        axis: b.axis as u32,
                        ratio: reg.ratio as u32,
                        pass,
                    });
                    let ncell = b.offset / reg.ncomp;
                    out.coarse.extend(
                        pc.cells
                            .iter()
                            .map(|q| self.coarse[ncell + b.cells.offset(&q)]),
                    );
                }
                Ok(out)
            })
            .collect();
        let parts = per_patch.into_iter().collect::<Result<Vec<_>, _>>()?;
        // Joined in coarse patch order, each part copied to its place side
        // by side.
        let starts = [
            bounds(parts.iter().map(|p| p.items.len())),
            bounds(parts.iter().map(|p| p.coarse.len())),
        ];
        let mut out = FlatReflux {
            ncomp: reg.ncomp as u32,
            items: bytemuck::zeroed_vec(starts[0][parts.len()]),
            coarse: bytemuck::zeroed_vec(starts[1][parts.len()]),
            passes: parts.iter().map(|p| p.passes).max().unwrap_or(0),
        };
        split_at_bounds(&mut out.items, &starts[0])
            .into_par_iter()
            .zip(split_at_bounds(&mut out.coarse, &starts[1]))
            .zip(&parts)
            .enumerate()
            .for_each(|(k, ((items, coarse), part))| {
                let at = starts[1][k] as u64;
                for (to, it) in items.iter_mut().zip(&part.items) {
                    *to = RefluxItem {
                        coarse: it.coarse + at,
                        ..*it
                    };
                }
                coarse.copy_from_slice(&part.coarse);
            });
        Ok(out)
    }
}

fn unit(axis: usize) -> IntVect {
    let mut v = iv(0, 0, 0);
    v[axis] = 1;
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Geometry;
    use crate::hierarchy::{PatchId, PatchSpec, SizeLimits};

    /// One 8³ coarse patch (dx = 1/8), one fine patch over coarse cells
    /// 2..=5 along x, 2..=3 along y and z. Coarse fluxes 1, fine fluxes
    /// 0.25: every coarse face gets δ = 1 − 0.25 = 0.75.
    #[test]
    fn signs_and_units_by_hand() {
        let g = Geometry::with_cubic_cells(iv(8, 8, 8), &[2]).unwrap();
        let b = |lo: [i32; 3], hi: [i32; 3]| {
            IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2]))
        };
        let h = Hierarchy::new(
            g,
            1,
            SizeLimits { min: 2, max: 64 },
            vec![
                vec![PatchSpec {
                    id: PatchId(0),
                    interior: b([0; 3], [7; 3]),
                    parent: None,
                }],
                vec![PatchSpec {
                    id: PatchId(1),
                    interior: b([4, 4, 4], [11, 7, 7]),
                    parent: Some(PatchId(0)),
                }],
            ],
        )
        .unwrap();
        let mut reg = FluxRegister::new(&h, 1, 1).unwrap();
        // 2·(2·2) x-faces + 2·(4·2) y-faces + 2·(4·2) z-faces.
        assert_eq!(reg.num_faces(), 8 + 16 + 16);
        let ci = h.patches()[0].interior();
        for axis in 0..3 {
            let faces = ci.faces(axis);
            let ones = vec![1.0f64; faces.num_cells() as usize];
            let n = reg
                .add_coarse(0, axis, &FaceFluxes::new(&ones, faces, 1).unwrap(), 1.0)
                .unwrap();
            assert_eq!(n, [8, 16, 16][axis]);
            let fi = h.patches()[1].interior();
            let ff = fi.faces(axis);
            let q = vec![0.25f64; ff.num_cells() as usize];
            reg.add_fine(1, axis, &FaceFluxes::new(&q, ff, 1).unwrap(), 1.0)
                .unwrap();
        }
        let mut d = PatchData::<f64>::new(ci, 1, 1).unwrap();
        reg.reflux_patch(0, &mut d).unwrap();
        let dx = 1.0 / 8.0;
        // Below the fine patch's low x face: +0.75/dx; above its high x face: −0.75/dx.
        assert_eq!(d.get(0, &iv(1, 2, 2)), 0.75 / dx);
        assert_eq!(d.get(0, &iv(6, 3, 3)), -0.75 / dx);
        assert_eq!(d.get(0, &iv(3, 1, 2)), 0.75 / dx);
        assert_eq!(d.get(0, &iv(3, 2, 4)), -0.75 / dx);
        assert_eq!(d.get(0, &iv(3, 3, 3)), 0.0);
        assert_eq!(
            d.interior_sum(0),
            0.0,
            "corrections on opposite faces cancel here"
        );
        assert_eq!(reg.coarse_faces(0).len(), 6);
        assert!(
            reg.coarse_faces(0)
                .iter()
                .any(|&(a, f)| a == 0 && f == b([2, 2, 2], [2, 3, 3]))
        );
        // Wrong sizes and patches are errors.
        assert!(FaceFluxes::new(&[1.0f64; 3], ci.faces(0), 1).is_err());
        assert!(reg.add_fine_patch_block(1, &[0.0f64; 5], 1.0).is_err());
        let zeros = vec![0.0f64; 9 * 8 * 8];
        assert!(
            reg.add_fine(0, 0, &FaceFluxes::new(&zeros, ci.faces(0), 1).unwrap(), 1.0)
                .is_err()
        );
        assert!(FluxRegister::new(&h, 0, 1).is_err());
        assert!(FluxRegister::new(&h, 2, 1).is_err());
    }

    /// Two fine patches side by side over one coarse patch: accumulating
    /// fine patch by fine patch in parallel gives the serial sums bit for
    /// bit, and a share adds only its own patch's faces.
    #[test]
    fn parallel_accumulation_matches_the_serial_one() {
        let g = Geometry::with_cubic_cells(iv(8, 8, 8), &[2]).unwrap();
        let b = |lo: [i32; 3], hi: [i32; 3]| {
            IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2]))
        };
        let h = Hierarchy::new(
            g,
            1,
            SizeLimits { min: 2, max: 64 },
            vec![
                vec![PatchSpec {
                    id: PatchId(0),
                    interior: b([0; 3], [7; 3]),
                    parent: None,
                }],
                vec![
                    PatchSpec {
                        id: PatchId(1),
                        interior: b([4, 4, 4], [7, 11, 7]),
                        parent: Some(PatchId(0)),
                    },
                    PatchSpec {
                        id: PatchId(2),
                        interior: b([8, 4, 4], [11, 9, 9]),
                        parent: Some(PatchId(0)),
                    },
                ],
            ],
        )
        .unwrap();
        let ci = h.patches()[0].interior();
        // Fluxes that vary from face to face, so that any change in which
        // value lands where, or in the order of the sums, shows.
        let wave = |faces: IndexBox, k: f64| -> Vec<f64> {
            (0..faces.num_cells())
                .map(|i| (i as f64 * 0.37 + k).sin())
                .collect()
        };
        let block = |f: usize| {
            let n = h.patches()[f].interior().size();
            let len = 2 * (n.y * n.z + n.x * n.z + n.x * n.y) as usize;
            (0..len)
                .map(|i| (i as f64 * 0.11 + f as f64).cos())
                .collect::<Vec<f64>>()
        };
        let mut serial = FluxRegister::new(&h, 1, 1).unwrap();
        for axis in 0..3 {
            let f = ci.faces(axis);
            serial
                .add_coarse(
                    0,
                    axis,
                    &FaceFluxes::new(&wave(f, axis as f64), f, 1).unwrap(),
                    1.0,
                )
                .unwrap();
        }
        for f in [1, 2] {
            serial.add_fine_patch_block(f, &block(f), 1.0).unwrap();
        }
        let mut par = FluxRegister::new(&h, 1, 1).unwrap();
        let coarse = std::sync::atomic::AtomicUsize::new(0);
        let fine = par
            .accumulate_par(|share| {
                let mut n = 0;
                for axis in 0..3 {
                    let f = ci.faces(axis);
                    n += share.add_coarse(
                        0,
                        axis,
                        &FaceFluxes::new(&wave(f, axis as f64), f, 1).unwrap(),
                        1.0,
                    )?;
                }
                coarse.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                share.add_fine_patch_block(&block(share.fine_patch()), 1.0)
            })
            .unwrap();
        assert_eq!(
            coarse.into_inner(),
            par.num_faces(),
            "each face once, by its own patch"
        );
        assert!(fine > 0);
        assert_eq!(par.acc, serial.acc);
        assert!(par.acc.iter().any(|&v| v != 0.0));
    }
}
