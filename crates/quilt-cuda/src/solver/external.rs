//! Patches kept in page-locked boxes of their own, read and written in
//! place by the load and store kernels: [`CudaSolver::advance_external`].
//!
//! A host-staged step copies every patch's ghost box into the batch and
//! every interior back out on the host; a patch whose state already lives
//! in registered host memory needs neither copy, since the kernels that
//! move a page-locked batch over the bus can as well read and write the
//! patch's own box.

use crate::CudaEos;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaContext;
use quilt_sweep::{Batch, BatchLayout, BoxPart, LayoutError, Restricted, StepReport, SweepOrder};

use super::run::DtSpec;
use super::{CudaSolver, StagedLayout};
use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::error::CudaError;
use crate::real::GpuReal;

/// A patch of a batch whose values live outside the batch: descriptor
/// `desc` of the batch's layout, `src`, the dense ghost box its step reads
/// (ghosts included, component-major, x fastest:
/// `((c * ez + k) * ey + j) * ex + i`, the order of
/// [`Batch::load_patch`]), and `dst`, a box of the same shape whose
/// interior the step writes. A patch's old and new states, in a step that
/// fills the old state's ghosts. `dst`'s ghost cells are unspecified
/// afterwards: in place (see [`CudaSolver::advance_external`]) the new
/// state goes down whole, in one DMA copy, with the source's ghost cells;
/// otherwise they are left alone.
#[derive(Debug)]
pub struct ExternalBox<'a, T> {
    /// Index of the patch's descriptor in the batch's layout.
    pub desc: usize,
    /// The values read, `ncomp` times its extent's cells.
    pub src: &'a [T],
    /// Where the new interior goes, as long as `src`.
    pub dst: &'a mut [T],
    /// Outputs derived from the new interior, if wanted: filled bit for
    /// bit as [`Restricted::fill_from_box`] on `dst` after the step would
    /// (on the device where the means are page-locked by this solver's
    /// registry, else on the host). Unspecified after an error.
    pub restricted: Option<Restricted<'a, T>>,
}

/// Parts of the external table, of one entry per descriptor each.
pub(super) const EXT_PARTS: usize = 5;

/// The store half's entry of a descriptor whose interior goes nowhere (a
/// probe: `QUILT_NO_STORE` in the kernels).
pub(super) const NO_STORE: u64 = u64::MAX;

/// A source box's extent as the load kernel takes it (`geom`):
/// `sx | sy << 16 | sz << 32`.
pub(super) fn pack_extent(e: [u32; 3]) -> u64 {
    u64::from(e[0]) | u64::from(e[1]) << 16 | u64::from(e[2]) << 32
}

/// The table the load and store kernels read external boxes from, in
/// [`EXT_PARTS`] parts of one entry per descriptor: the address the load reads
/// the source from (its copy in device memory, or the host box itself
/// with `QUILT_CUDA_TRANSFER=mapped`; for a probe, its first cell in its
/// parent's; 0 for a patch in the bins), the host address the store
/// writes the interior to ([`NO_STORE`] for a probe), the extent of
/// the box read ([`pack_extent`]), and the host address and ratio of the
/// box's restriction outputs (0: none on the device). The same type holds
/// the restriction kernel's outputs, two values per descriptor. Filled on the host in pinned memory
/// and uploaded with the step's constants, so that the kernels read it
/// from device memory (one read per block).
pub(super) struct ExtTable {
    pub d: DeviceBuffer<u64>,
    pub h: PinnedBuffer<u64>,
}

impl ExtTable {
    /// `old` holding `n` entries where it is large enough, else new
    /// buffers with a quarter more room (the next layouts may have a few
    /// more patches).
    pub fn fit(old: Option<Self>, ctx: &Arc<CudaContext>, n: usize) -> Result<Self, CudaError> {
        let (d, h) = match old {
            Some(t) => (t.d.reuse(n).ok(), t.h.reuse(n)),
            None => (None, None),
        };
        let cap = (n * 5).div_ceil(4).max(1);
        let d = match d {
            Some(d) => d,
            None => DeviceBuffer::with_room(ctx, n, cap)?,
        };
        let h = match h {
            Some(h) => h,
            None => PinnedBuffer::new(ctx, cap)?
                .reuse(n)
                .ok_or_else(|| CudaError::Internal("a new external table is too small".into()))?,
        };
        Ok(Self { d, h })
    }
}

/// Checks `boxes` and `probes` against `layout`: every descriptor exists
/// and is named once, both boxes of each have `ncomp` values per cell of
/// its extent (the source is checked first), and every probe names a box
/// and lies inside its extent. The errors of a bad descriptor, length or
/// part are the ones [`Batch::load_patch`] and [`Batch::load_patch_from`]
/// return ([`BatchLayout::dense_patch`], [`BatchLayout::dense_part`]),
/// boxes before probes, as [`load_boxes`] meets them.
pub(super) fn check_boxes<T: quilt_sweep::Real>(
    layout: &BatchLayout,
    boxes: &[ExternalBox<'_, T>],
    probes: &[BoxPart],
) -> Result<(), CudaError> {
    let mut seen = vec![false; layout.patches().len()];
    let mut named_once = |desc: usize, id: u64| {
        if std::mem::replace(&mut seen[desc], true) {
            return Err(LayoutError::Access(format!(
                "patch {id} (descriptor {desc}) is named by two external boxes"
            )));
        }
        Ok(())
    };
    for b in boxes {
        let d = layout.dense_patch(b.desc, b.src.len())?;
        layout.dense_patch(b.desc, b.dst.len())?;
        named_once(b.desc, d.id)?;
        if let Some(r) = &b.restricted {
            r.coarse_cells(&d, layout.ncomp() as usize)?;
        }
    }
    for p in probes {
        let parent = p.parent_in(boxes)?;
        let extent = layout.patches()[parent.desc].extent;
        let d = layout.dense_part(p.desc, parent.src.len(), extent, p.offset)?;
        named_once(p.desc, d.id)?;
    }
    Ok(())
}

/// Copies every source box into its descriptor's place in `batch`
/// (ghosts included), then every probe out of its parent's source.
pub(super) fn load_boxes<T: GpuReal>(
    batch: &mut Batch<T>,
    boxes: &[ExternalBox<'_, T>],
    probes: &[BoxPart],
) -> Result<(), CudaError> {
    for b in boxes {
        batch.load_patch(b.desc, b.src)?;
    }
    for p in probes {
        let parent = p.parent_in(boxes)?;
        batch.load_patch_within(p.desc, parent.desc, parent.src, p.offset)?;
    }
    Ok(())
}

impl<T: GpuReal, E: CudaEos> CudaSolver<T, E> {
    /// Advances `batch` by `dt` with the sweeps in `order`, the patches
    /// named in `boxes` living in their own dense ghost boxes instead of
    /// the batch's bins, and those named in `probes` being parts of those
    /// boxes' sources.
    ///
    /// The result is exactly that of
    ///
    /// ```text
    /// for b in boxes { batch.load_patch(b.desc, b.src)? }
    /// for p in probes {
    ///     let b = &boxes[p.parent];
    ///     batch.load_patch_from(p.desc, b.src, extent_of(b.desc), p.offset)?
    /// }
    /// let report = solver.advance_staged(batch, staged, dt, order)?;
    /// for b in boxes { batch.store_interior(b.desc, b.dst)? }
    /// ```
    ///
    /// the same report, fluxes and errors, bit for bit, except that the
    /// bins of the boxes' and the probes' descriptors in `batch` are not
    /// read and hold unspecified values afterwards (a probe's new interior
    /// is not kept anywhere: only its fluxes are), and that the
    /// destinations' ghost cells may hold the sources' (see below).
    /// Sources are only read. After an error (a bad box,
    /// a bad state, a time step above the CFL limit, a non-finite sweep
    /// result) no source has changed, but the destinations' interiors and
    /// the batch's flux buffer may have: in place, they are written as the
    /// sweeps end, before the host has checked the step. The
    /// batch's other descriptors (flux probes, for instance) live in its
    /// bins as with [`CudaSolver::advance`], and every descriptor's
    /// boundary fluxes go to the batch's flux buffer. `staged` is used as
    /// by [`CudaSolver::advance_staged`].
    ///
    /// Each descriptor may be named once, each of its boxes must hold
    /// `ncomp` values for every cell of its descriptor's extent, and each
    /// probe must lie inside its parent's extent: otherwise the step is
    /// refused ([`quilt_sweep::LayoutError::Access`], the error
    /// `load_patch` or `load_patch_from` gives for a wrong length, part or
    /// descriptor) before anything is read.
    ///
    /// **In place** ([`CudaSolver::external_in_place`]): when the batch is
    /// page-locked, its transfers are the load and store kernels (the
    /// default; not with `QUILT_CUDA_TRANSFER=staged|whole|runs` nor with
    /// [`Variant::Default`](super::Variant::Default), which moves whole
    /// bins) and every box (sources and destinations) lies inside a range
    /// of this solver's [`page_lock`](CudaSolver::page_lock) registry,
    /// each source is copied to device memory as it is (one DMA copy; with
    /// `QUILT_CUDA_TRANSFER=mapped` the load kernel reads it over the bus
    /// instead), the load kernel lays it out in the bins, and the store
    /// kernel writes each new state whole into device memory (the
    /// interior from the bins, the ghost cells from the source's copy),
    /// from where one DMA copy takes it into its destination, with no
    /// host copy (mapped: the store kernel writes the interior into the
    /// destination over the bus, which holds back the other chunks'
    /// uploads, where DMA copies in both directions overlap); a probe is
    /// read from its parent's copy (mapped: its parent's
    /// box), so that its cells cross the bus once, in its parent. Otherwise the boxes are copied
    /// into the batch and out as above. The boxes' bytes count in
    /// [`CudaSolver::totals`] like the rest of the ghost-box load and the
    /// interior store. The boxes must stay registered for the call.
    ///
    /// If a driver call fails while the interiors are stored, some boxes
    /// may hold the new interior, as a batch may after
    /// [`CudaSolver::advance`] fails the same way.
    pub fn advance_external(
        &mut self,
        batch: &mut Batch<T>,
        staged: Option<StagedLayout<T>>,
        boxes: &mut [ExternalBox<'_, T>],
        probes: &[BoxPart],
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, CudaError> {
        self.staged = staged.map(|s| s.0);
        let r = self.external_step(batch, boxes, probes, dt, order);
        if let Some(st) = self.staged.take() {
            self.discard(st);
        }
        r
    }

    /// Whether [`CudaSolver::advance_external`] would read and write
    /// `boxes` in place for `batch` (page-locked, moved by the load and
    /// store kernels, every box registered with
    /// [`CudaSolver::page_lock`]) rather than copy them through the batch.
    pub fn external_in_place(&self, batch: &Batch<T>, boxes: &[ExternalBox<'_, T>]) -> bool {
        self.loads_in_place(batch)
            && self.registry.get().is_some_and(|r| {
                boxes
                    .iter()
                    .all(|b| r.contains_slice(b.src) && r.contains_slice(b.dst))
            })
    }

    fn external_step(
        &mut self,
        batch: &mut Batch<T>,
        boxes: &mut [ExternalBox<'_, T>],
        probes: &[BoxPart],
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, CudaError> {
        check_boxes(batch.layout(), boxes, probes)?;
        let dt = DtSpec::Uniform(dt);
        if boxes.is_empty() {
            return self.timed_io(batch, dt, order, None, &[]);
        }
        if self.external_in_place(batch, boxes) {
            return self.timed_io(batch, dt, order, Some(boxes), probes);
        }
        // Through the batch: the copies are host time of the solve.
        let t = Instant::now();
        load_boxes(batch, boxes, probes)?;
        self.totals.host_secs += t.elapsed().as_secs_f64();
        let report = self.timed_io(batch, dt, order, None, &[])?;
        let t = Instant::now();
        let (gas, ncomp) = (self.cpu.gas(), batch.layout().ncomp() as usize);
        for b in boxes.iter_mut() {
            batch.store_interior(b.desc, b.dst)?;
            if let Some(r) = b.restricted.as_mut() {
                let d = batch.layout().patches()[b.desc];
                r.fill_from_box(&d, ncomp, b.dst, &gas)?;
            }
        }
        self.totals.host_secs += t.elapsed().as_secs_f64();
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_sweep::PatchShape;

    fn layout() -> BatchLayout {
        let shapes = [
            PatchShape::new(5, [6, 4, 5], 3, [0.1; 3]),
            PatchShape::new(8, [4, 4, 4], 3, [0.1; 3]),
            PatchShape::new(13, [2, 7, 3], 3, [0.1; 3]),
        ];
        BatchLayout::one_per_slot(16, 5, &shapes).unwrap()
    }

    fn dense(l: &BatchLayout, p: usize) -> Vec<f64> {
        vec![1.0; 5 * l.patches()[p].total_cells() as usize]
    }

    /// A box reading `src` and writing a copy of it (kept in `dst`).
    fn bx<'a>(desc: usize, src: &'a [f64], dst: &'a mut Vec<f64>) -> ExternalBox<'a, f64> {
        dst.clear();
        dst.extend_from_slice(src);
        ExternalBox {
            desc,
            src,
            dst,
            restricted: None,
        }
    }

    #[test]
    fn good_boxes_pass_the_checks() {
        let l = layout();
        let (a, c) = (dense(&l, 0), dense(&l, 2));
        let (mut a2, mut c2) = (Vec::new(), Vec::new());
        let boxes = [bx(2, &c, &mut c2), bx(0, &a, &mut a2)];
        check_boxes(&l, &boxes, &[]).unwrap();
        check_boxes::<f64>(&l, &[], &[]).unwrap();
    }

    /// A wrong length or descriptor is refused with the very error
    /// `load_patch` gives (the copy path's), for a source and for a
    /// destination alike.
    #[test]
    fn bad_boxes_get_load_patchs_errors() {
        let l = layout();
        let mut batch = Batch::<f64>::new(l.clone());
        let short = vec![0.0; dense(&l, 1).len() - 5];
        let want = batch.load_patch(1, &short).unwrap_err().to_string();
        let mut dst = Vec::new();
        let boxes = [bx(1, &short, &mut dst)];
        let got = check_boxes(&l, &boxes, &[]).unwrap_err();
        assert!(
            matches!(&got, CudaError::Sweep(quilt_sweep::SweepError::Layout(_))),
            "{got:?}"
        );
        assert_eq!(got.to_string(), want);

        let good = dense(&l, 1);
        let mut short_dst = short.clone();
        let boxes = [ExternalBox {
            desc: 1,
            src: &good,
            dst: &mut short_dst,
            restricted: None,
        }];
        assert_eq!(check_boxes(&l, &boxes, &[]).unwrap_err().to_string(), want);

        let any = dense(&l, 0);
        let want = batch.load_patch(3, &any).unwrap_err().to_string();
        let boxes = [bx(3, &any, &mut dst)];
        assert_eq!(check_boxes(&l, &boxes, &[]).unwrap_err().to_string(), want);
    }

    #[test]
    fn a_descriptor_named_twice_is_refused() {
        let l = layout();
        let (a, b, c) = (dense(&l, 1), dense(&l, 0), dense(&l, 1));
        let (mut a2, mut b2, mut c2) = (Vec::new(), Vec::new(), Vec::new());
        let boxes = [bx(1, &a, &mut a2), bx(0, &b, &mut b2), bx(1, &c, &mut c2)];
        let e = check_boxes(&l, &boxes, &[]).unwrap_err().to_string();
        assert!(
            e.contains("patch 8") && e.contains("two external boxes"),
            "{e}"
        );
    }

    /// A probe must name a box and lie inside its extent (the error
    /// `load_patch_from` gives), and may not share a descriptor with a box.
    #[test]
    fn probes_are_checked_as_load_patch_from_reads_them() {
        let l = layout();
        let mut batch = Batch::<f64>::new(l.clone());
        // Ghost boxes: descriptor 0 [12, 10, 11], 1 [10, 10, 10], 2
        // [8, 13, 9], which fits in 0's along x and z but not along y.
        let parent = dense(&l, 0);
        let e0 = l.patches()[0].extent;
        assert_eq!(e0, [12, 10, 11]);
        let mut p2 = Vec::new();
        let boxes = [bx(0, &parent, &mut p2)];
        let probe = |desc, parent, offset| BoxPart {
            desc,
            parent,
            offset,
        };
        let want = batch
            .load_patch_from(2, &parent, e0, [1, 0, 0])
            .unwrap_err()
            .to_string();
        let got = check_boxes(&l, &boxes, &[probe(2, 0, [1, 0, 0])]).unwrap_err();
        assert_eq!(got.to_string(), want);
        let e = check_boxes(&l, &boxes, &[probe(1, 1, [0, 0, 0])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("parent box 1 of 1"), "{e}");
        let e = check_boxes(&l, &boxes, &[probe(0, 0, [0, 0, 0])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("two external boxes"), "{e}");
        // Descriptor 1 at the far corner of descriptor 0's box, then one
        // cell past it.
        check_boxes(&l, &boxes, &[probe(1, 0, [2, 0, 1])]).unwrap();
        let want = batch
            .load_patch_from(1, &parent, e0, [3, 0, 1])
            .unwrap_err()
            .to_string();
        let got = check_boxes(&l, &boxes, &[probe(1, 0, [3, 0, 1])]).unwrap_err();
        assert_eq!(got.to_string(), want);
        let mut copy = Batch::<f64>::new(l.clone());
        load_boxes(&mut copy, &boxes, &[probe(1, 0, [2, 0, 1])]).unwrap();
        batch.load_patch_from(1, &parent, e0, [2, 0, 1]).unwrap();
        let (mut a, mut b) = (dense(&l, 1), dense(&l, 1));
        copy.store_patch(1, &mut a).unwrap();
        batch.store_patch(1, &mut b).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn packed_extents_keep_each_axis() {
        assert_eq!(pack_extent([70, 1, 65535]), 70 | 1 << 16 | 65535 << 32);
    }

    /// The first bad box in the given order decides, as the copy path's
    /// first failing `load_patch` does.
    #[test]
    fn the_first_bad_box_decides() {
        let l = layout();
        let batch = Batch::<f64>::new(l.clone());
        let (a, b) = (vec![0.0; 3], dense(&l, 0));
        let want = batch
            .store_patch(2, &mut a.clone())
            .unwrap_err()
            .to_string();
        let (mut a2, mut b2) = (Vec::new(), Vec::new());
        let boxes = [bx(2, &a, &mut a2), bx(7, &b, &mut b2)];
        assert_eq!(check_boxes(&l, &boxes, &[]).unwrap_err().to_string(), want);
    }
}
