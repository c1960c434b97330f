//! Host-side work lists of a layout: patch order, chunks of bins for the
//! streams, and the column tables of each pass, built once per layout and
//! uploaded with it.
//!
//! The passes and their column ranges are those of the CPU driver
//! (quilt-sweep's `driver::plan`): a split scheme's sweep `s` covers the
//! interior plus `r` ghost rows of every axis not yet swept in the step; a
//! TVD stage-1 pass reads `2r` cells beyond the interior and covers `r`
//! ghost rows, a stage-2 pass reads `r` and covers the interior.

use std::collections::HashMap;

use quilt_sweep::{BatchLayout, PatchDesc, Scheme, SweepOrder};

use crate::error::CudaError;
use crate::params::{ColItem, PassInfo};

/// Largest bin edge (column length) the kernels support (`QUILT_MAX_EDGE`).
pub const MAX_EDGE: u32 = 64;

/// Lanes of a marching segment.
pub(crate) const SEGMENT: u32 = 32;

/// Geometry of one pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PassGeom {
    pub axis: usize,
    pub read_halo: u32,
    pub t_halo: [u32; 3],
}

/// What one table item stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum TableKind {
    /// One column per item.
    Columns,
    /// Up to [`SEGMENT`] neighbouring columns per item.
    Segments,
}

/// A pass of a step with its bookkeeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PassSpec {
    pub geom: PassGeom,
    pub kind: TableKind,
    /// Error slot: sweep index (split) or stage (TVD).
    pub slot: u32,
    pub stage: u32,
    /// TVD: 0 acc = du, 1 acc += du, 2 stage update; split: 0.
    pub sub: u32,
}

/// The passes of one step of `scheme` in `order`; `segments_yz` selects
/// marching segments for the y and z passes.
pub(crate) fn step_passes(scheme: &Scheme, order: SweepOrder, segments_yz: bool) -> Vec<PassSpec> {
    let axes = order.axes();
    let kind = |axis: usize| {
        if segments_yz && axis != 0 {
            TableKind::Segments
        } else {
            TableKind::Columns
        }
    };
    match scheme {
        Scheme::Tvd { .. } => {
            let r = quilt_sweep::scheme::tvd::REACH as u32;
            let mut out = Vec::with_capacity(6);
            for stage in 0..2u32 {
                let (read_halo, th) = if stage == 0 { (2 * r, r) } else { (r, 0) };
                for (s, &axis) in axes.iter().enumerate() {
                    out.push(PassSpec {
                        geom: PassGeom {
                            axis,
                            read_halo,
                            t_halo: [th; 3],
                        },
                        kind: kind(axis),
                        slot: stage,
                        stage,
                        sub: s as u32,
                    });
                }
            }
            out
        }
        _ => {
            let r = scheme.ghost_width();
            (0..3)
                .map(|s| {
                    let axis = axes[s];
                    let mut t_halo = [r; 3];
                    for &done in &axes[..s] {
                        t_halo[done] = 0;
                    }
                    PassSpec {
                        geom: PassGeom {
                            axis,
                            read_halo: r,
                            t_halo,
                        },
                        kind: kind(axis),
                        slot: s as u32,
                        stage: 0,
                        sub: 0,
                    }
                })
                .collect()
        }
    }
}

/// A group of consecutive bins with the patches in them, handled by one
/// stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Patch positions `[q0, q1)` (positions in bin order).
    pub q0: u32,
    pub q1: u32,
    /// Bins `[bin0, bin1)`.
    pub bin0: u32,
    pub bin1: u32,
    /// Contiguous runs `(start, len)` of the flux buffer owned by the chunk's patches.
    pub flux_runs: Vec<(usize, usize)>,
}

/// A pass table on the host: items in patch-position order and the first
/// item of every position (`n + 1` entries).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostTable {
    pub items: Vec<ColItem>,
    pub pstart: Vec<u32>,
}

/// The host plan of one layout.
#[derive(Clone, Debug)]
pub(crate) struct HostPlan {
    pub descs: Vec<PatchDesc>,
    pub bin_edge: u32,
    pub nbins: u32,
    /// `order[q]`: patch index at position `q` (sorted by bin, then index).
    pub order: Vec<u32>,
    pub chunks: Vec<Chunk>,
}

/// How the batch is cut into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chunking {
    /// About this many patches per chunk, cut at bin boundaries (the default
    /// scheme's `n_fixed`).
    Patches(usize),
    /// This many chunks of (nearly) equal numbers of bins.
    Bins(usize),
}

/// Checks what the kernels need beyond a valid layout.
pub(crate) fn check_supported(layout: &BatchLayout) -> Result<(), CudaError> {
    if layout.bin_edge() > MAX_EDGE {
        return Err(CudaError::Unsupported(format!(
            "bin edge {} exceeds the {MAX_EDGE} cells a kernel column holds",
            layout.bin_edge()
        )));
    }
    if layout.patches().len() >= (1usize << 40) {
        return Err(CudaError::Unsupported(format!(
            "{} patches do not fit the kernels' error keys",
            layout.patches().len()
        )));
    }
    Ok(())
}

impl HostPlan {
    /// Orders the patches by bin and cuts the bins into chunks.
    pub fn new(layout: &BatchLayout, chunking: Chunking) -> Result<Self, CudaError> {
        check_supported(layout)?;
        let descs = layout.patches().to_vec();
        let mut order: Vec<u32> = (0..descs.len() as u32).collect();
        order.sort_by_key(|&p| (descs[p as usize].bin, p));
        let nbins = layout.nbins();
        let bin_of = |q: usize| descs[order[q] as usize].bin;
        // Chunk boundaries as patch positions, always at bin boundaries.
        let n = order.len();
        let mut cuts = vec![0usize];
        match chunking {
            Chunking::Patches(per) => {
                let per = per.max(1);
                let mut start = 0;
                let mut q = 0;
                while q < n {
                    q += 1;
                    if q < n && q - start >= per && bin_of(q) != bin_of(q - 1) {
                        cuts.push(q);
                        start = q;
                    }
                }
            }
            Chunking::Bins(k) => {
                let k = (k.max(1) as u32).min(nbins.max(1));
                for i in 1..k {
                    let b = (u64::from(nbins) * u64::from(i) / u64::from(k)) as u32;
                    let q = order.partition_point(|&p| descs[p as usize].bin < b);
                    if q > *cuts.last().expect("non-empty") && q < n {
                        cuts.push(q);
                    }
                }
            }
        }
        cuts.push(n);
        let mut chunks = Vec::with_capacity(cuts.len() - 1);
        for (c, w) in cuts.windows(2).enumerate() {
            let (q0, q1) = (w[0], w[1]);
            let bin0 = if c == 0 { 0 } else { bin_of(q0) };
            let bin1 = if q1 == n { nbins } else { bin_of(q1) };
            let mut runs: Vec<(usize, usize)> = order[q0..q1]
                .iter()
                .map(|&p| {
                    let d = &descs[p as usize];
                    (
                        d.flux_offset as usize,
                        quilt_sweep::layout::flux_len(d, layout.ncomp()) as usize,
                    )
                })
                .collect();
            runs.sort_unstable();
            let mut flux_runs: Vec<(usize, usize)> = Vec::new();
            for (s, l) in runs {
                match flux_runs.last_mut() {
                    Some(last) if last.0 + last.1 == s => last.1 += l,
                    _ => flux_runs.push((s, l)),
                }
            }
            chunks.push(Chunk {
                q0: q0 as u32,
                q1: q1 as u32,
                bin0,
                bin1,
                flux_runs,
            });
        }
        if chunks.is_empty() {
            chunks.push(Chunk {
                q0: 0,
                q1: 0,
                bin0: 0,
                bin1: nbins,
                flux_runs: Vec::new(),
            });
        }
        Ok(Self {
            descs,
            bin_edge: layout.bin_edge(),
            nbins,
            order,
            chunks,
        })
    }

    /// Whether `layout` is the one this plan was built for.
    pub fn matches(&self, layout: &BatchLayout) -> bool {
        self.bin_edge == layout.bin_edge()
            && self.nbins == layout.nbins()
            && self.descs == layout.patches()
    }

    /// The table of one pass geometry.
    pub fn table(&self, geom: &PassGeom, kind: TableKind) -> Result<HostTable, CudaError> {
        let axis = geom.axis;
        let (a, b) = match axis {
            0 => (1, 2),
            1 => (0, 2),
            _ => (0, 1),
        };
        let mut items = Vec::new();
        let mut pstart = Vec::with_capacity(self.order.len() + 1);
        pstart.push(0u32);
        for &p in &self.order {
            let d = &self.descs[p as usize];
            let range = |x: usize| {
                (
                    d.ghost - geom.t_halo[x],
                    d.extent[x] - d.ghost + geom.t_halo[x],
                )
            };
            let (alo, ahi) = range(a);
            let (blo, bhi) = range(b);
            for tb in blo..bhi {
                match kind {
                    TableKind::Columns => {
                        items.extend((alo..ahi).map(|ta| ColItem {
                            patch: p,
                            ta: ta as u16,
                            tb: tb as u16,
                        }));
                    }
                    TableKind::Segments => {
                        items.extend((alo..ahi).step_by(SEGMENT as usize).map(|ta| ColItem {
                            patch: p,
                            ta: ta as u16,
                            tb: tb as u16,
                        }));
                    }
                }
            }
            let n = u32::try_from(items.len())
                .map_err(|_| CudaError::Unsupported("more than 2^32 columns in one pass".into()))?;
            pstart.push(n);
        }
        Ok(HostTable { items, pstart })
    }
}

/// Device pointers of the uploaded tables, by (geometry, kind).
pub(crate) type TablePtrs = HashMap<(PassGeom, TableKind), (u64, u64)>;

/// The [`PassInfo`] array of a step from its passes and the uploaded tables.
pub(crate) fn pass_infos(passes: &[PassSpec], tables: &TablePtrs) -> Vec<PassInfo> {
    passes
        .iter()
        .map(|p| {
            let (items, pstart) = tables[&(p.geom, p.kind)];
            PassInfo {
                items,
                pstart,
                axis: p.geom.axis as i32,
                read_halo: p.geom.read_halo as i32,
                t_halo: p.geom.t_halo.map(|v| v as i32),
                slot: p.slot as i32,
                stage: p.stage as i32,
                sub: p.sub as i32,
            }
        })
        .collect()
}
