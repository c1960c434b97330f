//! Packing the synthetic hierarchies of Raghavan & Vadhiyar (2015, section
//! 4.1) into 64³ bins: validity, the patch mapping, and efficiency against
//! the Martello–Pisinger–Vigo lower bound.

use quilt_mesh::{Hierarchy, SyntheticSpec, generate};
use quilt_pack::{
    Extent, Heuristic, PackError, PackOptions, PackWorkspace, bins_lower_bound, pack_hierarchy,
    pack_patches, patch_extents,
};

const BIN: Extent = [64, 64, 64];

fn hierarchy(patches: usize, seed: u64) -> Hierarchy {
    generate(&SyntheticSpec {
        patches,
        seed,
        ..Default::default()
    })
    .unwrap()
}

/// 120..600 patches × 5 seeds, as in the paper's Table 3.
///
/// The paper reports efficiencies of 0.84–0.87; these hierarchies cannot
/// reach that. Their 64 base patches are 32³ plus 3 ghost cells a side,
/// 38³ cells: longer than half a bin on every axis, so no two share a bin,
/// and each such bin is a fifth full until children fill it. The
/// Martello–Pisinger–Vigo bound makes this exact: a packing meeting the
/// bound would still average far below 0.88, which the test checks too.
/// What the heuristics control is the gap to that bound: at most 15 % for
/// EP-BFD and 10 % for C-EPBFD over its default orderings (measured: 14.9 %
/// and 9.8 % at worst, 7.6 % and 5.3 % in total).
#[test]
fn synthetic_hierarchies_pack_close_to_the_lower_bound() {
    let single = PackOptions::default();
    let multi = PackOptions {
        heuristic: Heuristic::CEpBfd,
        ..Default::default()
    };
    let mut efficiency = [Vec::new(), Vec::new()];
    let mut bins_total = [0usize; 2];
    let mut bound_total = 0usize;
    let mut best_possible = Vec::new();
    for patches in [120, 240, 360, 480, 600] {
        for seed in 1..=5 {
            let h = hierarchy(patches, seed);
            let all: Vec<usize> = (0..h.num_patches()).collect();
            let items = patch_extents(&h, &all).unwrap();
            let bound = bins_lower_bound(&items, BIN);
            bound_total += bound;
            for (k, (opts, max_gap)) in [(&single, 1.15), (&multi, 1.10)].into_iter().enumerate() {
                let packed = pack_hierarchy(&h, BIN, opts).unwrap();
                packed.packing.verify(&items, false).unwrap();
                let bins = packed.packing.bins_used;
                assert!(bins >= bound);
                assert!(
                    bins as f64 <= max_gap * bound as f64,
                    "{}: {patches} patches, seed {seed}: {bins} bins against a bound of {bound}",
                    opts.heuristic
                );
                let e = packed.packing.efficiency();
                efficiency[k].push(e);
                bins_total[k] += bins;
                if k == 1 {
                    best_possible.push(e * bins as f64 / bound as f64);
                }
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(
        mean(&efficiency[0]) >= 0.51,
        "EP-BFD mean efficiency {}",
        mean(&efficiency[0])
    );
    assert!(
        mean(&efficiency[1]) >= 0.52,
        "C-EPBFD mean efficiency {}",
        mean(&efficiency[1])
    );
    assert!(bins_total[1] < bins_total[0]);
    assert!(
        bins_total[1] as f64 <= 1.06 * bound_total as f64,
        "{bins_total:?} against {bound_total}"
    );
    assert!(
        mean(&best_possible) < 0.88,
        "the bound no longer rules out 0.88: {}",
        mean(&best_possible)
    );
}

#[test]
fn items_are_the_ghost_inclusive_patch_boxes() {
    let h = hierarchy(240, 9);
    let packed = pack_hierarchy(&h, BIN, &PackOptions::default()).unwrap();
    assert_eq!(packed.patches.len(), h.num_patches());
    for (i, (patch, place)) in packed
        .patches
        .iter()
        .zip(&packed.packing.placements)
        .enumerate()
    {
        let p = &h.patches()[i];
        assert_eq!(patch.index, i);
        assert_eq!(patch.id, p.id());
        assert_eq!(patch.level, p.level());
        let size = p.ghost_box().size();
        assert_eq!(
            place.extent,
            [size[0] as u32, size[1] as u32, size[2] as u32]
        );
    }
    // Every patch appears in exactly one bin.
    let bins = packed.bins();
    assert_eq!(bins.len(), packed.packing.bins_used);
    let mut seen = vec![0; h.num_patches()];
    for bin in &bins {
        assert!(!bin.is_empty());
        for (patch, _) in bin {
            seen[patch.index] += 1;
        }
    }
    assert!(seen.iter().all(|&n| n == 1));
    let last = h.num_patches() - 1;
    assert_eq!(
        packed.placement_of(last),
        Some(&packed.packing.placements[last])
    );
}

/// Subcycling packs level by level; C-EPBFD never needs more bins than EP-BFD.
#[test]
fn levels_pack_separately() {
    let h = hierarchy(360, 4);
    let mut ws = PackWorkspace::new();
    let mut total_bins = 0;
    for level in 0..h.num_levels() {
        let range: Vec<usize> = h.level_range(level).collect();
        let packed = pack_patches(&h, &range, BIN, &PackOptions::default(), &mut ws).unwrap();
        assert!(packed.patches.iter().all(|p| p.level == level));
        let items = patch_extents(&h, &range).unwrap();
        packed.packing.verify(&items, false).unwrap();
        let c = PackOptions {
            heuristic: Heuristic::CEpBfd,
            ..Default::default()
        };
        let best = pack_patches(&h, &range, BIN, &c, &mut ws).unwrap();
        assert!(best.packing.bins_used <= packed.packing.bins_used);
        total_bins += packed.packing.bins_used;
    }
    let shared = pack_hierarchy(&h, BIN, &PackOptions::default()).unwrap();
    assert!(shared.packing.bins_used <= total_bins);
}

#[test]
fn bad_patch_indices_and_small_bins() {
    let h = hierarchy(80, 2);
    let err = pack_patches(
        &h,
        &[0, 5, 80],
        BIN,
        &PackOptions::default(),
        &mut PackWorkspace::new(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PackError::UnknownPatch {
            item: 2,
            index: 80,
            patches: 80
        }
    );
    assert!(err.to_string().contains("patch index 80"));
    // Base patches are 38³ with ghosts: a 32³ bin is too small for patch 0.
    let err = pack_hierarchy(&h, [32, 32, 32], &PackOptions::default()).unwrap_err();
    assert_eq!(err.item(), Some(0));
}

/// On a full-size instance, where most orderings are abandoned part way,
/// C-EPBFD still returns the first best of its orderings run on their own.
#[test]
fn c_epbfd_equals_the_best_single_ordering() {
    let h = hierarchy(600, 3);
    let all: Vec<usize> = (0..h.num_patches()).collect();
    let items = patch_extents(&h, &all).unwrap();
    let opts = PackOptions {
        heuristic: Heuristic::CEpBfd,
        orders: quilt_pack::SortOrder::paper_orders(&[10, 30, 51]),
        ..Default::default()
    };
    let multi = quilt_pack::pack(&items, BIN, &opts).unwrap();
    let best = opts
        .c_epbfd_orders()
        .into_iter()
        .map(|sort| {
            let single = PackOptions {
                heuristic: Heuristic::EpBfd,
                sort,
                ..opts.clone()
            };
            quilt_pack::pack(&items, BIN, &single).unwrap()
        })
        .reduce(|a, b| if b.bins_used < a.bins_used { b } else { a })
        .unwrap();
    assert_eq!(multi, best);
}
