//! THE batch layout: construction, validation, index functions.

use proptest::prelude::*;
use quilt_sweep::layout::{data_index, face_offset, flux_index, flux_len};
use quilt_sweep::{Batch, BatchLayout, LayoutError, PatchDesc, PatchShape};

fn shape(id: u64, interior: [u32; 3], g: u32) -> PatchShape {
    PatchShape::new(id, interior, g, [0.5, 0.25, 0.125])
}

#[test]
fn data_index_follows_the_documented_formula() {
    // Bin 2, component 3, cell (5, 6, 7) in bins of edge 8 with 5 components.
    assert_eq!(
        data_index(8, 5, 2, 3, [5, 6, 7]),
        ((2 * 5 + 3) * 8 + 7) * 64 + 6 * 8 + 5
    );
    let layout = BatchLayout::packed(8, 5, &[shape(9, [2, 2, 2], 1)], &[(2, [1, 2, 3])]).unwrap();
    assert_eq!(layout.nbins(), 3);
    assert_eq!(
        layout.cell_index(0, 3, [4 - 1, 4 - 2, 4 - 3]),
        Some(data_index(8, 5, 2, 3, [4, 4, 4]))
    );
    assert_eq!(layout.cell_index(0, 5, [0, 0, 0]), None);
    assert_eq!(layout.cell_index(0, 0, [4, 0, 0]), None);
    assert_eq!(layout.data_len(), 3 * 5 * 512);
}

#[test]
fn descriptors_are_plain_80_byte_records() {
    let layout =
        BatchLayout::one_per_slot(64, 5, &[shape(1, [8, 8, 8], 3), shape(2, [4, 5, 6], 3)])
            .unwrap();
    let bytes: &[u8] = bytemuck::cast_slice(layout.patches());
    assert_eq!(bytes.len(), 160);
    let back: &[PatchDesc] = bytemuck::cast_slice(bytes);
    assert_eq!(back, layout.patches());
    assert_eq!(back[1].offset, [0; 3]);
    assert_eq!(back[1].bin, 1);
    assert_eq!(back[1].extent, [10, 11, 12]);
    assert_eq!(back[1].flux_offset, flux_len(&back[0], 5));
}

#[test]
fn packed_layout_from_quilt_pack_is_valid() {
    let shapes: Vec<PatchShape> = (0..30)
        .map(|i| {
            shape(
                100 + i,
                [
                    10 + (i as u32 * 7) % 40,
                    10 + (i as u32 * 13) % 40,
                    10 + (i as u32 * 5) % 40,
                ],
                3,
            )
        })
        .collect();
    let items: Vec<[u32; 3]> = shapes.iter().map(|s| s.extent).collect();
    let packing = quilt_pack::pack(&items, [64; 3], &quilt_pack::PackOptions::default()).unwrap();
    let placements: Vec<(u32, [u32; 3])> = packing
        .placements
        .iter()
        .map(|p| (p.bin as u32, p.offset))
        .collect();
    let layout = BatchLayout::packed(64, 5, &shapes, &placements).unwrap();
    assert_eq!(layout.nbins() as usize, packing.bins_used);
    assert!(layout.fill_ratio() > 0.3 && layout.fill_ratio() <= 1.0);
    let slots = BatchLayout::one_per_slot(64, 5, &shapes).unwrap();
    assert!(slots.fill_ratio() < layout.fill_ratio());
    assert_eq!(slots.flux_len(), layout.flux_len());
    assert_eq!(slots.interior_cells(), layout.interior_cells());
}

/// A layout of thousands of descriptors (checked bin by bin in parallel)
/// reports the first overlap in bin order, as a small one does.
#[test]
fn large_layouts_report_the_first_overlap_in_bin_order() {
    // 8 patches of 2³ cells (4³ with ghosts) per bin of edge 8.
    let n = 4200;
    let shapes: Vec<PatchShape> = (0..n).map(|i| shape(i as u64, [2, 2, 2], 1)).collect();
    let corner = |k: u32| [4 * (k & 1), 4 * (k >> 1 & 1), 4 * (k >> 2)];
    let mut places: Vec<(u32, [u32; 3])> = (0..n as u32).map(|i| (i / 8, corner(i % 8))).collect();
    BatchLayout::packed(8, 5, &shapes, &places).unwrap();
    // Overlaps in bins 400 and 30, the later one made first.
    places[400 * 8 + 3].1 = [1, 1, 1];
    places[30 * 8 + 5].1 = [2, 1, 0];
    let e = BatchLayout::packed(8, 5, &shapes, &places).unwrap_err();
    assert_eq!(
        e,
        LayoutError::Overlap {
            a: 30 * 8,
            b: 30 * 8 + 5,
            bin: 30,
            cell: [2, 1, 0]
        }
    );
}

#[test]
fn inconsistent_descriptors_are_rejected_with_the_patch_named() {
    let a = shape(11, [4, 4, 4], 2);
    let b = shape(12, [4, 4, 4], 2);
    let e = BatchLayout::packed(16, 5, &[a, b], &[(0, [0, 0, 0]), (0, [7, 7, 7])]).unwrap_err();
    assert_eq!(
        e,
        LayoutError::Overlap {
            a: 11,
            b: 12,
            bin: 0,
            cell: [7, 7, 7]
        }
    );
    assert!(e.to_string().contains("11") && e.to_string().contains("12"));
    // Touching boxes are fine.
    BatchLayout::packed(16, 5, &[a, b], &[(0, [0, 0, 0]), (0, [8, 0, 0])]).unwrap();
    let e = BatchLayout::packed(16, 5, &[a], &[(0, [9, 0, 0])]).unwrap_err();
    assert!(
        matches!(e, LayoutError::OutsideBin { patch: 11, .. }),
        "{e}"
    );
    let e = BatchLayout::packed(16, 5, &[a, a], &[(0, [0, 0, 0]), (1, [0, 0, 0])]).unwrap_err();
    assert_eq!(e, LayoutError::DuplicateId(11));
    let thin = PatchShape {
        extent: [4, 9, 9],
        ..a
    };
    let e = BatchLayout::packed(16, 5, &[thin], &[(0, [0, 0, 0])]).unwrap_err();
    assert!(
        matches!(e, LayoutError::NoInterior { patch: 11, .. }),
        "{e}"
    );
    let bad_dx = PatchShape {
        dx: [0.1, f64::NAN, 0.1],
        ..a
    };
    let e = BatchLayout::packed(16, 5, &[bad_dx], &[(0, [0, 0, 0])]).unwrap_err();
    assert!(matches!(e, LayoutError::Spacing { patch: 11, .. }), "{e}");
    let e = BatchLayout::packed(16, 5, &[a, b], &[(0, [0, 0, 0])]).unwrap_err();
    assert!(matches!(e, LayoutError::PlacementCount { .. }), "{e}");
    assert_eq!(
        BatchLayout::packed(0, 5, &[a], &[(0, [0; 3])]).unwrap_err(),
        LayoutError::BinEdge(0)
    );
    assert_eq!(
        BatchLayout::packed(16, 0, &[a], &[(0, [0; 3])]).unwrap_err(),
        LayoutError::NoComponents
    );
    // from_descs checks bins and flux offsets too.
    let good = BatchLayout::one_per_slot(16, 5, &[a, b]).unwrap();
    let mut descs = good.patches().to_vec();
    descs[1].flux_offset += 1;
    let e = BatchLayout::from_descs(16, 5, 2, descs).unwrap_err();
    assert!(
        matches!(e, LayoutError::FluxOffset { patch: 12, .. }),
        "{e}"
    );
    let e = BatchLayout::from_descs(16, 5, 1, good.patches().to_vec()).unwrap_err();
    assert!(
        matches!(
            e,
            LayoutError::BinIndex {
                patch: 12,
                bin: 1,
                nbins: 1
            }
        ),
        "{e}"
    );
    assert_eq!(
        BatchLayout::from_descs(16, 5, 2, good.patches().to_vec()).unwrap(),
        good
    );
}

#[test]
fn patches_round_trip_through_the_batch() {
    let shapes = [shape(1, [3, 4, 5], 2), shape(2, [6, 2, 3], 2)];
    let layout = BatchLayout::packed(32, 5, &shapes, &[(0, [0, 0, 0]), (0, [7, 1, 2])]).unwrap();
    let mut batch = Batch::<f64>::new(layout);
    for (p, shape) in shapes.iter().enumerate() {
        let e = shape.extent;
        let n = 5 * (e[0] * e[1] * e[2]) as usize;
        let src: Vec<f64> = (0..n).map(|i| (p * 1000 + i) as f64).collect();
        batch.load_patch(p, &src).unwrap();
        let mut back = vec![0.0; n];
        batch.store_patch(p, &mut back).unwrap();
        assert_eq!(src, back);
        // Component 2, cell (1, 2, 3) in dense order.
        let dense = ((2 * e[2] + 3) * e[1] + 2) * e[0] + 1;
        assert_eq!(batch.get(p, 2, [1, 2, 3]), Some(src[dense as usize]));
    }
    assert!(batch.load_patch(0, &[0.0; 3]).is_err());
    assert!(batch.load_patch(7, &[0.0; 3]).is_err());
    assert!(batch.set(0, 0, [99, 0, 0], 1.0).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// The flux index is a bijection from (face, component, transverse cell)
    /// onto the flux buffer, face blocks in the documented order.
    #[test]
    fn flux_index_is_a_bijection(sizes in prop::collection::vec((1u32..6, 1u32..6, 1u32..6), 1..4)) {
        let shapes: Vec<PatchShape> = sizes
            .iter()
            .enumerate()
            .map(|(i, &(x, y, z))| shape(i as u64, [x, y, z], 1))
            .collect();
        let layout = BatchLayout::one_per_slot(8, 5, &shapes).unwrap();
        let mut seen = vec![false; layout.flux_len()];
        for d in layout.patches() {
            let n = d.interior();
            for axis in 0..3 {
                let (a, b) = match axis { 0 => (1, 2), 1 => (0, 2), _ => (0, 1) };
                for side in 0..2 {
                    let first = flux_index(d, 5, axis, side, 0, 0, 0).unwrap();
                    prop_assert_eq!(first as u64, d.flux_offset + face_offset(d, 5, axis, side));
                    for c in 0..5 {
                        for tb in 0..n[b] {
                            for ta in 0..n[a] {
                                let i = flux_index(d, 5, axis, side, c, ta, tb).unwrap();
                                prop_assert!(!seen[i]);
                                seen[i] = true;
                            }
                        }
                    }
                    prop_assert_eq!(flux_index(d, 5, axis, side, 5, 0, 0), None);
                    prop_assert_eq!(flux_index(d, 5, axis, side, 0, n[a], 0), None);
                }
            }
        }
        prop_assert!(seen.iter().all(|&s| s));
    }
}

/// Every cell of every patch lies in exactly one occupied run; without a
/// merge gap no run holds a row that no patch touches.
#[test]
fn occupied_runs_cover_every_patch_cell_and_only_touched_rows() {
    let shapes: Vec<PatchShape> = (0..24)
        .map(|i| {
            let i = i as u32;
            shape(
                u64::from(i),
                [4 + (i * 7) % 20, 4 + (i * 13) % 20, 4 + (i * 5) % 20],
                2,
            )
        })
        .collect();
    let items: Vec<[u32; 3]> = shapes.iter().map(|s| s.extent).collect();
    let packing = quilt_pack::pack(&items, [32; 3], &quilt_pack::PackOptions::default()).unwrap();
    let places: Vec<(u32, [u32; 3])> = packing
        .placements
        .iter()
        .map(|p| (p.bin as u32, p.offset))
        .collect();
    let shapes: Vec<PatchShape> = shapes
        .iter()
        .zip(&packing.placements)
        .map(|(s, p)| PatchShape {
            extent: p.extent,
            ..*s
        })
        .collect();
    let layout = BatchLayout::packed(32, 5, &shapes, &places).unwrap();
    let nb = layout.nbins();
    assert!(nb >= 3, "{nb} bins");
    let mut covered = vec![0u8; layout.data_len()];
    let mut touched = vec![false; layout.data_len()];
    for p in 0..layout.patches().len() {
        let e = layout.patches()[p].extent;
        for c in 0..5 {
            for k in 0..e[2] {
                for j in 0..e[1] {
                    let row = layout.cell_index(p, c, [0, j, k]).unwrap();
                    let x0 = layout.patches()[p].offset[0] as usize;
                    for v in &mut touched[row - x0..row - x0 + 32] {
                        *v = true;
                    }
                }
            }
        }
    }
    // Runs of two chunks of bins, as a device copies them.
    let runs: Vec<(usize, usize)> = [0..1, 1..nb]
        .into_iter()
        .flat_map(|r| layout.occupied_runs(r, 0))
        .collect();
    for w in runs.windows(2) {
        assert!(
            w[0].0 + w[0].1 < w[1].0,
            "runs ascend and are merged: {w:?}"
        );
    }
    for &(s, n) in &runs {
        for i in s..s + n {
            covered[i] += 1;
            assert!(touched[i], "value {i} is in a run but in no touched row");
        }
    }
    for (i, &t) in touched.iter().enumerate() {
        assert_eq!(u8::from(t), covered[i], "value {i}");
    }
    let moved: usize = runs.iter().map(|r| r.1).sum();
    assert!(
        moved < layout.data_len(),
        "{moved} of {}",
        layout.data_len()
    );
    // A gap merges runs without losing any.
    let merged = layout.occupied_runs(0..nb, 32 * 32);
    assert!(merged.len() <= runs.len());
    for &(s, n) in &runs {
        assert!(merged.iter().any(|&(ms, mn)| ms <= s && s + n <= ms + mn));
    }
}
