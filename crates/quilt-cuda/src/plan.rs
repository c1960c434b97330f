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

use rayon::prelude::*;

use quilt_sweep::layout::LARGE_LAYOUT;
use quilt_sweep::{BatchLayout, PatchDesc, Scheme, SweepOrder};

use crate::error::CudaError;
use crate::params::{ColItem, PassInfo, ScanItem};

/// Largest bin edge (column length) the kernels support (`QUILT_MAX_EDGE`).
pub const MAX_EDGE: u32 = 64;

/// Columns of a marching item (a warp).
pub(crate) const SEGMENT: u32 = 32;

/// Cells one block of the input scan takes (`QUILT_SCAN_CELLS`): small
/// enough that a large patch spreads over many blocks, large enough that
/// each thread keeps several loads in flight.
pub(crate) const SCAN_CELLS: u32 = 2048;

/// Cells a rows-kernel warp holds (two per lane, `QUILT_ROW_SLOTS`).
pub(crate) const ROW_SLOTS: u32 = 64;

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
    /// A group of consecutive rows of one patch in the flat order of its
    /// `(tb, ta)` grid, as many as fit end to end (each from an even slot)
    /// in [`ROW_SLOTS`]: `ta` is the first row, `tb` the number of rows.
    Rows,
    /// [`SEGMENT`] consecutive columns of one patch in the flat order of its
    /// `(tb, ta)` grid (the last item of a patch may have fewer).
    Flat,
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

/// The passes of one step of `scheme` in `order`, the passes along `axis`
/// with tables of `kinds[axis]`.
pub(crate) fn step_passes(
    scheme: &Scheme,
    order: SweepOrder,
    kinds: [TableKind; 3],
) -> Vec<PassSpec> {
    let axes = order.axes();
    let kind = |axis: usize| kinds[axis];
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
    /// Runs `(start, len)` of the data array holding the chunk's patches
    /// ([`BatchLayout::occupied_runs`]): what crosses the bus.
    pub data_runs: Vec<(usize, usize)>,
}

/// Empty values between two occupied runs of the data array below which
/// they are copied as one: one `(bin, component)` plane. Each run is a copy
/// of its own, whose set-up (a few microseconds) costs as much as tens of
/// kilobytes on the bus, so the rows of consecutive planes of a patch stack
/// merge into one copy instead of one per plane.
pub(crate) fn run_gap(bin_edge: u32) -> usize {
    (bin_edge as usize).pow(2)
}

/// A work table on the host (a pass's columns, or the input scan's cell
/// ranges): items in patch-position order and the first item of every
/// position (`n + 1` entries).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostTable<I = ColItem> {
    pub items: Vec<I>,
    pub pstart: Vec<u32>,
}

impl<I> HostTable<I> {
    /// Items of the table (those `items` holds, or will hold once made).
    pub fn total(&self) -> usize {
        self.pstart.last().map_or(0, |&n| n as usize)
    }
}

/// The host plan of one layout.
#[derive(Clone, Debug)]
pub(crate) struct HostPlan {
    pub descs: Vec<PatchDesc>,
    pub bin_edge: u32,
    pub nbins: u32,
    /// Components per cell.
    pub ncomp: u32,
    /// `order[q]`: patch index at position `q`: chunks hold consecutive
    /// bins; within a chunk, larger patches (more cells) first.
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
    /// Orders the patches by bin, cuts the bins into chunks and puts the
    /// larger patches of each chunk first.
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
        let chunk = |c: usize| {
            let (q0, q1) = (cuts[c], cuts[c + 1]);
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
            Chunk {
                q0: q0 as u32,
                q1: q1 as u32,
                bin0,
                bin1,
                flux_runs,
                data_runs: layout.occupied_runs(bin0..bin1, run_gap(layout.bin_edge())),
            }
        };
        // A resident hierarchy's chunks each span thousands of patches and
        // hundreds of bins: side by side. A batch's stay on its thread.
        let mut chunks: Vec<Chunk> = if n >= LARGE_LAYOUT {
            (0..cuts.len() - 1).into_par_iter().map(chunk).collect()
        } else {
            (0..cuts.len() - 1).map(chunk).collect()
        };
        // The kernels hand out work in position order; with the largest
        // patches first, a launch ends on short columns and small scan
        // items (longest processing time first) instead of on whatever
        // patch the last bin holds.
        for c in &chunks {
            order[c.q0 as usize..c.q1 as usize].sort_by_key(|&p| {
                let d = &descs[p as usize];
                (std::cmp::Reverse(d.total_cells()), d.bin, p)
            });
        }
        if chunks.is_empty() {
            chunks.push(Chunk {
                q0: 0,
                q1: 0,
                bin0: 0,
                bin1: nbins,
                flux_runs: Vec::new(),
                data_runs: Vec::new(),
            });
        }
        Ok(Self {
            descs,
            bin_edge: layout.bin_edge(),
            nbins,
            ncomp: layout.ncomp(),
            order,
            chunks,
        })
    }

    /// Whether `layout` is the one this plan was built for.
    pub fn matches(&self, layout: &BatchLayout) -> bool {
        self.bin_edge == layout.bin_edge()
            && self.nbins == layout.nbins()
            && self.ncomp == layout.ncomp()
            && self.descs == layout.patches()
    }

    /// The input scan's work: every patch cut into items of at most
    /// [`SCAN_CELLS`] cells.
    pub fn scan_table(&self) -> HostTable<ScanItem> {
        let mut items = Vec::new();
        let mut pstart = Vec::with_capacity(self.order.len() + 1);
        for (q, &p) in self.order.iter().enumerate() {
            pstart.push(items.len() as u32);
            let cells = self.descs[p as usize].total_cells();
            items.extend(
                (0..cells)
                    .step_by(SCAN_CELLS as usize)
                    .map(|first| ScanItem {
                        q: q as u32,
                        first: first as u32,
                    }),
            );
        }
        pstart.push(items.len() as u32);
        HostTable { items, pstart }
    }

    /// The table of one pass geometry: the host's statement of the items,
    /// which [`HostPlan::table_starts`] and the `layout_table` kernel
    /// reproduce on the device for large layouts.
    pub fn table(&self, geom: &PassGeom, kind: TableKind) -> Result<HostTable, CudaError> {
        let mut items = Vec::new();
        let mut pstart = Vec::with_capacity(self.order.len() + 1);
        pstart.push(0u32);
        for &p in &self.order {
            let s = TableSpan::of(&self.descs[p as usize], geom, kind);
            match kind {
                TableKind::Columns => {
                    for tb in s.blo..s.bhi {
                        items.extend((s.alo..s.ahi).map(|ta| ColItem {
                            patch: p,
                            ta: ta as u16,
                            tb: tb as u16,
                        }));
                    }
                }
                TableKind::Flat => {
                    items.extend((0..s.cols()).step_by(s.per as usize).map(|l| ColItem {
                        patch: p,
                        ta: l as u16,
                        tb: 0,
                    }));
                }
                TableKind::Rows => {
                    let rows = s.cols();
                    items.extend((0..rows).step_by(s.per as usize).map(|l| ColItem {
                        patch: p,
                        ta: l as u16,
                        tb: s.per.min(rows - l) as u16,
                    }));
                }
            }
            pstart.push(item_count(items.len())?);
        }
        Ok(HostTable { items, pstart })
    }

    /// The `pstart` of [`HostPlan::table`] alone (the first item of every
    /// position, then the item count), from each position's count.
    pub fn table_starts(&self, geom: &PassGeom, kind: TableKind) -> Result<Vec<u32>, CudaError> {
        let mut pstart = Vec::with_capacity(self.order.len() + 1);
        let mut total = 0usize;
        pstart.push(0u32);
        for &p in &self.order {
            total += TableSpan::of(&self.descs[p as usize], geom, kind).items() as usize;
            pstart.push(item_count(total)?);
        }
        Ok(pstart)
    }
}

/// A table's item count as the kernels' 32-bit index.
pub(crate) fn item_count(n: usize) -> Result<u32, CudaError> {
    u32::try_from(n)
        .map_err(|_| CudaError::Unsupported("more than 2^32 columns in one pass".into()))
}

/// The transverse columns `[alo, ahi) x [blo, bhi)` one pass covers in a
/// patch (patch-local, ghosts included), and how many of them one item of
/// the table holds (one, a row group, a segment): what `layout_table` in
/// `kernels/common.cuh` computes for each item.
struct TableSpan {
    alo: u32,
    ahi: u32,
    blo: u32,
    bhi: u32,
    per: u32,
}

impl TableSpan {
    fn of(d: &PatchDesc, geom: &PassGeom, kind: TableKind) -> Self {
        let (a, b) = transverse(geom.axis);
        let lo = |x: usize| d.ghost - geom.t_halo[x];
        let hi = |x: usize| d.extent[x] - d.ghost + geom.t_halo[x];
        let per = match kind {
            TableKind::Columns => 1,
            TableKind::Rows => rows_per_group(d.interior()[geom.axis] + 2 * geom.read_halo),
            TableKind::Flat => SEGMENT,
        };
        Self {
            alo: lo(a),
            ahi: hi(a),
            blo: lo(b),
            bhi: hi(b),
            per,
        }
    }

    fn cols(&self) -> u32 {
        (self.ahi - self.alo) * (self.bhi - self.blo)
    }

    /// Items of this patch in its table.
    fn items(&self) -> u32 {
        self.cols().div_ceil(self.per)
    }
}

/// The two transverse axes of a pass along `axis`, in the tables' order.
fn transverse(axis: usize) -> (usize, usize) {
    match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    }
}

/// Rows of `len` cells a rows-kernel warp takes at once: each starts at an
/// even slot, so that both cells of a lane belong to one row.
pub(crate) fn rows_per_group(len: u32) -> u32 {
    (ROW_SLOTS / (len + (len & 1))).max(1)
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
                march: i32::from(p.kind == TableKind::Flat),
                rows: i32::from(p.kind == TableKind::Rows),
            }
        })
        .collect()
}

/// Bytes one step of `scheme` must move through device memory at the
/// least: every pass reads each cell of each column once and writes each
/// updated cell once (TVD also reads and writes its stage and accumulator
/// arrays), the boundary fluxes are written (TVD stage 2 also reads them),
/// and the input scan reads every patch cell once. `value_bytes` is the
/// size of one value (4 or 8).
pub fn step_traffic(layout: &BatchLayout, scheme: &Scheme, value_bytes: u64) -> u64 {
    let passes = step_passes(scheme, SweepOrder::Xyz, [TableKind::Columns; 3]);
    let tvd = matches!(scheme, Scheme::Tvd { .. });
    let mut values = 0u64;
    for d in layout.patches() {
        values += 5 * d.total_cells();
        for p in &passes {
            let g = p.geom;
            let (a, b) = transverse(g.axis);
            let n = d.interior();
            let cols = u64::from(n[a] + 2 * g.t_halo[a]) * u64::from(n[b] + 2 * g.t_halo[b]);
            let len = u64::from(n[g.axis] + 2 * g.read_halo);
            let faces = 2 * 5 * u64::from(n[a]) * u64::from(n[b]);
            let per_col = if tvd {
                let out = len - 4;
                let extra = match p.sub {
                    0 => out,                            // write acc
                    1 => 2 * out,                        // read + write acc
                    _ => out * (3 + u64::from(p.stage)), // read data, acc (, stage), write
                };
                len + extra
            } else {
                let r = u64::from(g.read_halo);
                len + (len - 2 * r)
            };
            values += 5 * cols * per_col;
            values += if tvd && p.stage == 1 {
                2 * faces
            } else {
                faces
            };
        }
    }
    values * value_bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_sweep::PatchShape;

    fn layout(per_slot: bool) -> BatchLayout {
        // Nine patches of assorted sizes, two or three per bin when packed.
        let sizes = [
            [20, 30, 16],
            [16, 16, 16],
            [40, 20, 24],
            [18, 44, 20],
            [26, 26, 26],
            [16, 60, 16],
            [30, 16, 40],
            [22, 22, 22],
            [16, 16, 30],
        ];
        let shapes: Vec<PatchShape> = sizes
            .iter()
            .enumerate()
            .map(|(i, &e)| PatchShape::new(i as u64, e.map(|v| v - 8), 4, [0.1; 3]))
            .collect();
        if per_slot {
            return BatchLayout::one_per_slot(64, 5, &shapes).unwrap();
        }
        let pl = [
            (2, [0, 0, 0]),
            (0, [0, 0, 0]),
            (1, [0, 0, 0]),
            (2, [20, 0, 0]),
            (0, [16, 0, 0]),
            (1, [40, 0, 0]),
            (0, [0, 26, 0]),
            (3, [0, 0, 0]),
            (2, [0, 0, 16]),
        ];
        BatchLayout::packed(64, 5, &shapes, &pl).unwrap()
    }

    fn check_chunks(l: &BatchLayout, plan: &HostPlan) {
        // Chunks tile positions and bins, each chunk's positions in
        // decreasing size; every flux value belongs to exactly one chunk.
        let bins: Vec<u32> = plan
            .order
            .iter()
            .map(|&p| l.patches()[p as usize].bin)
            .collect();
        let cells = |q: usize| l.patches()[plan.order[q] as usize].total_cells();
        for c in &plan.chunks {
            assert!((c.q0 as usize + 1..c.q1 as usize).all(|q| cells(q - 1) >= cells(q)));
        }
        assert_eq!(plan.chunks[0].q0, 0);
        assert_eq!(plan.chunks[0].bin0, 0);
        assert_eq!(plan.chunks.last().unwrap().q1 as usize, l.patches().len());
        assert_eq!(plan.chunks.last().unwrap().bin1, l.nbins());
        for w in plan.chunks.windows(2) {
            assert_eq!(w[0].q1, w[1].q0);
            assert_eq!(w[0].bin1, w[1].bin0);
        }
        for c in &plan.chunks {
            for q in c.q0..c.q1 {
                let b = bins[q as usize];
                assert!(
                    b >= c.bin0 && b < c.bin1,
                    "patch of bin {b} outside chunk bins {}..{}",
                    c.bin0,
                    c.bin1
                );
            }
        }
        let mut covered = vec![0u8; l.flux_len()];
        for c in &plan.chunks {
            for &(s, n) in &c.flux_runs {
                covered[s..s + n].iter_mut().for_each(|x| *x += 1);
            }
        }
        assert!(covered.iter().all(|&x| x == 1));
    }

    #[test]
    fn chunks_tile_bins_patches_and_fluxes() {
        for per_slot in [false, true] {
            let l = layout(per_slot);
            for chunking in [
                Chunking::Bins(1),
                Chunking::Bins(3),
                Chunking::Bins(50),
                Chunking::Patches(2),
                Chunking::Patches(100),
            ] {
                let plan = HostPlan::new(&l, chunking).unwrap();
                check_chunks(&l, &plan);
                if let Chunking::Patches(n) = chunking
                    && per_slot
                {
                    assert!(
                        plan.chunks
                            .iter()
                            .all(|c| (c.q1 - c.q0) as usize <= n.max(1))
                    );
                }
            }
        }
        let l = layout(true);
        assert_eq!(
            HostPlan::new(&l, Chunking::Bins(3)).unwrap().chunks.len(),
            3
        );
        // One patch per bin: a contiguous flux run per chunk.
        assert!(
            HostPlan::new(&l, Chunking::Patches(4))
                .unwrap()
                .chunks
                .iter()
                .all(|c| c.flux_runs.len() == 1)
        );
    }

    #[test]
    fn tables_hold_the_columns_of_the_cpu_passes() {
        let l = layout(false);
        let plan = HostPlan::new(&l, Chunking::Bins(2)).unwrap();
        for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
            for order in [SweepOrder::Xyz, SweepOrder::Zyx] {
                for p in step_passes(&scheme, order, [TableKind::Columns; 3]) {
                    let g = p.geom;
                    let cols = plan.table(&g, TableKind::Columns).unwrap();
                    let flat = plan.table(&g, TableKind::Flat).unwrap();
                    let rows = plan.table(&g, TableKind::Rows).unwrap();
                    // The starts alone (what a large layout's tables are
                    // made on the device from) are the tables'.
                    for (t, kind) in [
                        (&cols, TableKind::Columns),
                        (&flat, TableKind::Flat),
                        (&rows, TableKind::Rows),
                    ] {
                        assert_eq!(plan.table_starts(&g, kind).unwrap(), t.pstart);
                        assert_eq!(t.total(), t.items.len());
                    }
                    for (q, &pi) in plan.order.iter().enumerate() {
                        let d = &l.patches()[pi as usize];
                        let (a, b) = transverse(g.axis);
                        let n = d.interior();
                        let want = (n[a] + 2 * g.t_halo[a]) * (n[b] + 2 * g.t_halo[b]);
                        let got = cols.pstart[q + 1] - cols.pstart[q];
                        assert_eq!(got, want, "{} pass {p:?} patch {pi}", scheme.name());
                        let items =
                            &cols.items[cols.pstart[q] as usize..cols.pstart[q + 1] as usize];
                        assert!(items.iter().all(|c| c.patch == pi));
                        // Every (ta, tb) of the range exactly once.
                        let mut seen = std::collections::HashSet::new();
                        for c in items {
                            assert!(
                                u32::from(c.ta) >= d.ghost - g.t_halo[a]
                                    && u32::from(c.ta) < d.extent[a] - d.ghost + g.t_halo[a]
                            );
                            assert!(
                                u32::from(c.tb) >= d.ghost - g.t_halo[b]
                                    && u32::from(c.tb) < d.extent[b] - d.ghost + g.t_halo[b]
                            );
                            assert!(seen.insert((c.ta, c.tb)));
                        }
                        let nflat = flat.pstart[q + 1] - flat.pstart[q];
                        assert_eq!(nflat, want.div_ceil(SEGMENT));
                        // Row groups: consecutive, every row once, each
                        // group within the warp's slots.
                        let len = n[g.axis] + 2 * g.read_halo;
                        let span = len + (len & 1);
                        let mut next = 0u32;
                        for it in &rows.items[rows.pstart[q] as usize..rows.pstart[q + 1] as usize]
                        {
                            assert_eq!(it.patch, pi);
                            assert_eq!(u32::from(it.ta), next);
                            let k = u32::from(it.tb);
                            assert!(k >= 1);
                            assert!(k == 1 || k * span <= ROW_SLOTS, "{k} rows of {len}");
                            next += k;
                        }
                        assert_eq!(next, want);
                    }
                }
            }
        }
    }

    #[test]
    fn passes_follow_the_cpu_rules() {
        let r = step_passes(
            &Scheme::rtvd(),
            SweepOrder::Zyx,
            [TableKind::Columns, TableKind::Flat, TableKind::Flat],
        );
        assert_eq!(r.iter().map(|p| p.geom.axis).collect::<Vec<_>>(), [2, 1, 0]);
        assert_eq!(r[0].geom.t_halo, [3, 3, 3]);
        assert_eq!(r[1].geom.t_halo, [3, 3, 0]);
        assert_eq!(r[2].geom.t_halo, [3, 0, 0]);
        assert_eq!(r[2].kind, TableKind::Columns);
        assert_eq!(r[0].kind, TableKind::Flat);
        let t = step_passes(&Scheme::tvd(), SweepOrder::Xyz, [TableKind::Columns; 3]);
        assert_eq!(t.len(), 6);
        assert!(
            t.len() <= crate::params::MAX_PASSES,
            "the kernels hold QUILT_MAX_PASSES per chunk"
        );
        assert!(
            t[..3]
                .iter()
                .all(|p| p.geom.read_halo == 4 && p.geom.t_halo == [2; 3] && p.stage == 0)
        );
        assert!(
            t[3..]
                .iter()
                .all(|p| p.geom.read_halo == 2 && p.geom.t_halo == [0; 3] && p.stage == 1)
        );
        assert_eq!(
            t.iter().map(|p| p.sub).collect::<Vec<_>>(),
            [0, 1, 2, 0, 1, 2]
        );
    }

    #[test]
    fn scan_items_cover_every_cell_once() {
        let l = layout(false);
        let plan = HostPlan::new(&l, Chunking::Bins(2)).unwrap();
        let HostTable { items, pstart } = plan.scan_table();
        assert_eq!(pstart.len(), plan.order.len() + 1);
        for (q, &p) in plan.order.iter().enumerate() {
            let cells = plan.descs[p as usize].total_cells() as u32;
            let mine = &items[pstart[q] as usize..pstart[q + 1] as usize];
            assert!(mine.iter().all(|it| it.q == q as u32));
            // Consecutive, non-overlapping, full items but the last.
            let mut next = 0;
            for it in mine {
                assert_eq!(it.first, next);
                next = (it.first + SCAN_CELLS).min(cells);
            }
            assert_eq!(next, cells, "patch position {q}");
        }
        assert_eq!(*pstart.last().unwrap() as usize, items.len());
    }

    #[test]
    fn traffic_counts_every_pass() {
        let l = layout(false);
        let rtvd = step_traffic(&l, &Scheme::rtvd(), 4);
        assert_eq!(step_traffic(&l, &Scheme::rtvd(), 8), 2 * rtvd);
        // At least a read and a write of every interior cell per sweep.
        assert!(rtvd >= 3 * 2 * 5 * 4 * l.interior_cells());
        assert!(step_traffic(&l, &Scheme::tvd(), 4) > rtvd);
    }

    #[test]
    fn unsupported_layouts_are_refused() {
        let s = [PatchShape::new(0, [60, 8, 8], 4, [0.1; 3])];
        let l = BatchLayout::one_per_slot(128, 5, &s).unwrap();
        let err = HostPlan::new(&l, Chunking::Bins(1)).unwrap_err();
        assert!(err.to_string().contains("bin edge 128"), "{err}");
    }
}
