//! Device residency: the whole hierarchy in one batch that stays in the
//! backend between regrids.
//!
//! The resident batch holds every patch of every level (the hierarchy's
//! bin packing, descriptor `i` for hierarchy patch `i`) and after them the
//! step's flux probes, packed into bins of their own (descriptor
//! `patches + n` for probe `n`). A step is then, all in the backend:
//!
//! 1. the ghost fill of every patch from the old interiors
//!    ([`quilt_mesh::flat::FlatFill`]) and the probes copied from their
//!    coarse patches;
//! 2. the sweeps of the whole batch in place (new interiors, fluxes);
//! 3. level by level, finest first: refluxing of the coarse cells next to
//!    the level's patches and restriction onto them.
//!
//! These are the host-staged step's operations on the same cells in the
//! same order, so both residencies give the same state bit for bit. The
//! host copy of the state is written back ([`store_state`]) only when the
//! host needs it: regrids, outputs, checkpoints.

use std::sync::Arc;

use quilt_mesh::flat::{CopyItem, LevelItems, StepItems, Strided, restrict_items};
use quilt_mesh::{Hierarchy, HierarchyData, IndexBox, Side, iv};
use quilt_pack::{PackOptions, pack};
use quilt_sweep::layout::data_index;
use quilt_sweep::physics::NCOMP;
use quilt_sweep::{Batch, BatchLayout, PatchShape};
use rayon::prelude::*;

use crate::Real;
use crate::error::IntegratorError;
use crate::plan::StepPlan;
use crate::stages::{PROBE_ID_BASE, SharedRows, copy_interior};

/// The resident batch's layout and the items of its step.
#[derive(Clone, Debug)]
pub struct ResidentPlan {
    /// Every patch (descriptors `0 .. patches`, hierarchy order), then
    /// every probe.
    pub layout: BatchLayout,
    /// The step's fill, probe copies, refluxing and restriction.
    pub items: Arc<StepItems>,
    /// Hierarchy patches (the descriptors before the probes).
    pub patches: usize,
}

impl ResidentPlan {
    /// Values of device memory the resident state needs: the batch, its
    /// flux buffer and the fill's scratch (items aside).
    pub fn values(&self) -> u64 {
        let l = &self.layout;
        let b = u64::from(l.bin_edge());
        u64::from(l.nbins()) * b * b * b * u64::from(l.ncomp())
            + l.flux_len() as u64
            + self.items.fill.scratch_len
    }
}

fn size_of_box(b: &IndexBox) -> [u32; 3] {
    let s = b.size();
    [s.x, s.y, s.z].map(|v| u32::try_from(v).unwrap_or(0))
}

/// The resident plan of `h` with its step plan `plan` (bins, probes,
/// registers).
pub(crate) fn resident_plan<T: Real>(
    h: &Hierarchy,
    plan: &StepPlan<T>,
) -> Result<ResidentPlan, IntegratorError> {
    let lay = &plan.layout;
    let g = lay.ghost;
    let edge = lay.bin_edge;
    let n = h.num_patches();
    let mut at = vec![None; n];
    for (b, bin) in lay.bins.iter().enumerate() {
        for &(i, offset) in &bin.patches {
            at[i] = Some((b as u32, offset));
        }
    }
    let mut shapes = Vec::with_capacity(n + lay.probes.len());
    let mut places = Vec::with_capacity(n + lay.probes.len());
    for (i, p) in h.patches().iter().enumerate() {
        let lg = h.level_geometry(p.level()).ok_or_else(|| {
            IntegratorError::Internal(format!("patch index {i} has no level geometry"))
        })?;
        let place = at[i].ok_or_else(|| {
            IntegratorError::Internal(format!("patch index {i} is in no bin of the packing"))
        })?;
        shapes.push(PatchShape {
            id: u64::from(p.id().0),
            extent: size_of_box(&p.ghost_box()),
            ghost: g as u32,
            level: p.level() as u32,
            dx: [lg.dx.x, lg.dx.y, lg.dx.z],
            user: i as u32,
        });
        places.push(place);
    }
    if !lay.probes.is_empty() {
        let extents: Vec<[u32; 3]> = lay
            .probes
            .iter()
            .map(|q| size_of_box(&q.interior.grow(g)))
            .collect();
        let packing = pack(&extents, [edge; 3], &PackOptions::default())?;
        let first = lay.bins.len() as u32;
        for (k, q) in lay.probes.iter().enumerate() {
            let level = h.patches()[q.coarse].level();
            let lg = h.level_geometry(level).ok_or_else(|| {
                IntegratorError::Internal(format!("probe {k} has no level geometry"))
            })?;
            let pl = &packing.placements[k];
            if pl.extent != extents[k] {
                return Err(IntegratorError::Internal(format!(
                    "probe {k} was placed rotated ({:?} for {:?})",
                    pl.extent, extents[k]
                )));
            }
            shapes.push(PatchShape {
                id: PROBE_ID_BASE + k as u64,
                extent: extents[k],
                ghost: g as u32,
                level: level as u32,
                dx: [lg.dx.x, lg.dx.y, lg.dx.z],
                user: k as u32,
            });
            places.push((first + pl.bin as u32, pl.offset));
        }
    }
    let layout = BatchLayout::packed(edge, NCOMP as u32, &shapes, &places)?;
    let b = u64::from(edge);
    let strided = |d: usize| {
        let desc = &layout.patches()[d];
        Strided {
            base: data_index(
                edge as usize,
                NCOMP,
                desc.bin as usize,
                0,
                desc.offset.map(|v| v as usize),
            ) as u64,
            sy: b,
            sz: b * b,
            sc: b * b * b,
        }
    };
    let patch_places: Vec<Strided> = (0..n).map(strided).collect();
    let mesh = |what: &str| IntegratorError::mesh(format!("resident {what}"));
    let fill = quilt_mesh::flat::FlatFill::new(&lay.fill, &patch_places, NCOMP)
        .map_err(mesh("ghost fill"))?;
    let rel = |p: &quilt_mesh::IntVect, lo: &quilt_mesh::IntVect| {
        [0, 1, 2].map(|a| (p[a] - lo[a]) as u64)
    };
    let after = lay
        .probes
        .iter()
        .enumerate()
        .map(|(k, q)| {
            let bx = q.interior.grow(g);
            CopyItem {
                src: patch_places[q.coarse].at(rel(&bx.lo, &h.patches()[q.coarse].ghost_box().lo)),
                dst: strided(n + k),
                n: size_of_box(&bx),
                to_scratch: 0,
            }
        })
        .collect();
    let mut levels = Vec::new();
    for l in (1..h.num_levels()).rev() {
        let reg = &plan.registers[l - 1];
        let mut flat = reg.flat();
        let shifts = h
            .level_geometry(l - 1)
            .map_or_else(|| vec![iv(0, 0, 0)], |lg| lg.periodic_shifts());
        // The probes' faces, as the host's refluxing hands them over.
        for (k, q) in lay.probes.iter().enumerate() {
            if h.patches()[q.fine].level() != l {
                continue;
            }
            let mut at = layout.patches()[n + k].flux_offset;
            let sz = q.interior.size();
            let area = [sz.y * sz.z, sz.x * sz.z, sz.x * sz.y].map(|a| a as u64);
            for (axis, &a) in area.iter().enumerate() {
                for side in Side::BOTH {
                    let faces = q.interior.boundary_faces(axis, side);
                    let fs = faces.size();
                    let src = Strided {
                        base: at,
                        sy: fs.x as u64,
                        sz: fs.x as u64 * fs.y as u64,
                        sc: a,
                    };
                    at += a * NCOMP as u64;
                    let outside = q.interior.adjacent(axis, side, 1);
                    for s in &shifts {
                        for c in h.patches_intersecting(l - 1, &outside.shift(s)) {
                            flat.add_coarse(q.fine, c, axis, faces.shift(s), src)
                                .map_err(mesh("probe fluxes"))?;
                        }
                    }
                }
            }
        }
        let reflux = flat
            .finish(h, &patch_places, &|f| {
                layout.patches().get(f).map(|d| d.flux_offset)
            })
            .map_err(mesh("refluxing"))?;
        let restrict = restrict_items(h, l, &patch_places).map_err(mesh("restriction"))?;
        levels.push(LevelItems {
            level: l,
            reflux,
            restrict,
        });
    }
    Ok(ResidentPlan {
        layout,
        items: Arc::new(StepItems {
            ncomp: NCOMP as u32,
            fill,
            after,
            levels,
        }),
        patches: n,
    })
}

/// A batch of the plan's layout with every patch's old interior (ghost
/// cells and probes unset).
pub(crate) fn load_state<T: Real>(
    plan: &ResidentPlan,
    data: &HierarchyData<T>,
) -> Result<Batch<T>, IntegratorError> {
    let mut batch = Batch::new(plan.layout.clone());
    let (layout, buf, _) = batch.buffers_mut();
    let (b, nc) = (layout.bin_edge() as usize, layout.ncomp() as usize);
    let rows = SharedRows::new(buf);
    (0..plan.patches).into_par_iter().for_each(|i| {
        let d = &layout.patches()[i];
        let src = data.old(i);
        let g = d.ghost as usize;
        let n = d.interior().map(|v| v as usize);
        let lo = src.interior().lo;
        for c in 0..nc {
            for k in 0..n[2] {
                for j in 0..n[1] {
                    let from = src.index(&(lo + iv(0, j as i32, k as i32))) + c * src.comp_len();
                    let to = data_index(
                        b,
                        nc,
                        d.bin as usize,
                        c,
                        [
                            d.offset[0] as usize + g,
                            d.offset[1] as usize + g + j,
                            d.offset[2] as usize + g + k,
                        ],
                    );
                    // SAFETY: descriptors' boxes are disjoint (validated
                    // layout), so each task writes its own rows.
                    unsafe { rows.write_row(&src.as_slice()[from..from + n[0]], to) };
                }
            }
        }
    });
    Ok(batch)
}

/// The patches' interiors from a resident batch into `data`'s old state.
pub(crate) fn store_state<T: Real>(batch: &Batch<T>, data: &mut HierarchyData<T>, patches: usize) {
    data.states_mut()[..patches]
        .par_iter_mut()
        .enumerate()
        .for_each(|(i, s)| copy_interior(batch, i, &mut s.old));
}
