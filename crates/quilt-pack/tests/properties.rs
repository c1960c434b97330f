//! Property tests: every packing is valid (each item placed once, inside
//! its bin, no overlap, checked cell by cell independently of
//! `Packing::verify`), deterministic, and no worse than the lower bounds
//! allow.

use proptest::prelude::*;
use quilt_pack::{
    Extent, Heuristic, Merit, PackOptions, PackWorkspace, Packing, SortOrder, bins_lower_bound,
    pack, pack_with,
};

fn sort_order() -> impl Strategy<Value = SortOrder> {
    prop_oneof![
        Just(SortOrder::VolumeHeight),
        Just(SortOrder::HeightVolume),
        Just(SortOrder::AreaHeight),
        Just(SortOrder::HeightArea),
        (1u32..=100).prop_map(|delta_percent| SortOrder::ClusteredAreaHeight { delta_percent }),
        (1u32..=100).prop_map(|delta_percent| SortOrder::ClusteredHeightArea { delta_percent }),
        (1u32..=100).prop_map(|delta_percent| SortOrder::ClusteredWidthArea { delta_percent }),
        (1u32..=100).prop_map(|delta_percent| SortOrder::ClusteredDepthArea { delta_percent }),
    ]
}

fn options() -> impl Strategy<Value = PackOptions> {
    (
        prop_oneof![
            Just(Heuristic::EpFfd),
            Just(Heuristic::EpBfd),
            Just(Heuristic::CEpBfd)
        ],
        prop_oneof![Just(Merit::ResidualSpace), Just(Merit::FreeVolume)],
        sort_order(),
        any::<bool>(),
        prop::collection::vec(sort_order(), 0..5),
    )
        .prop_map(
            |(heuristic, merit, sort, allow_rotation, orders)| PackOptions {
                heuristic,
                merit,
                sort,
                allow_rotation,
                orders,
            },
        )
}

/// A bin of at most 20³ cells and items fitting it (in their own
/// orientation, so every option set accepts them).
fn instance() -> impl Strategy<Value = (Extent, Vec<Extent>)> {
    [1u32..=20, 1u32..=20, 1u32..=20].prop_flat_map(|bin| {
        let item = [1..=bin[0], 1..=bin[1], 1..=bin[2]];
        (Just(bin), prop::collection::vec(item, 0..40))
    })
}

/// Paints every item's cells into one occupancy grid per bin and fails on
/// a cell painted twice or outside the bin: an independent check of
/// validity.
fn check_cells(packing: &Packing, items: &[Extent], rotation: bool) -> Result<(), TestCaseError> {
    let [bw, bh, bd] = packing.bin.map(|s| s as usize);
    let mut grid = vec![u32::MAX; packing.bins_used * bw * bh * bd];
    prop_assert_eq!(packing.placements.len(), items.len());
    for (i, p) in packing.placements.iter().enumerate() {
        prop_assert_eq!(p.item, i);
        prop_assert!(p.bin < packing.bins_used);
        let mut placed = p.extent;
        let mut given = items[i];
        if rotation {
            placed.sort_unstable();
            given.sort_unstable();
        }
        prop_assert_eq!(placed, given, "item {} placed with another extent", i);
        for a in 0..3 {
            prop_assert!(
                p.offset[a] + p.extent[a] <= packing.bin[a],
                "item {} leaves its bin",
                i
            );
        }
        let [x0, y0, z0] = p.offset.map(|c| c as usize);
        let [w, h, d] = p.extent.map(|c| c as usize);
        for z in z0..z0 + d {
            for y in y0..y0 + h {
                for x in x0..x0 + w {
                    let cell = ((p.bin * bd + z) * bh + y) * bw + x;
                    prop_assert_eq!(
                        grid[cell],
                        u32::MAX,
                        "item {} overlaps item {}",
                        i,
                        grid[cell]
                    );
                    grid[cell] = i as u32;
                }
            }
        }
    }
    for b in 0..packing.bins_used {
        prop_assert!(
            packing.placements.iter().any(|p| p.bin == b),
            "bin {} is empty",
            b
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn packings_are_valid((bin, items) in instance(), opts in options()) {
        let packing = pack(&items, bin, &opts).unwrap();
        check_cells(&packing, &items, opts.allow_rotation)?;
        prop_assert_eq!(packing.verify(&items, opts.allow_rotation), Ok(()));
        prop_assert!(packing.bins_used >= packing.lower_bound());
        if !opts.allow_rotation {
            prop_assert!(packing.bins_used >= bins_lower_bound(&items, bin));
        }
        prop_assert!(packing.bins_used <= items.len());
        let e = packing.efficiency();
        prop_assert!((0.0..=1.0).contains(&e));
        let fills = packing.fill_per_bin();
        prop_assert_eq!(fills.len(), packing.bins_used);
        prop_assert!(fills.iter().all(|&f| f > 0.0 && f <= 1.0));
    }

    #[test]
    fn packing_is_deterministic(
        (bin, items) in instance(),
        (other_bin, other_items) in instance(),
        opts in options(),
    ) {
        let first = pack(&items, bin, &opts).unwrap();
        // A workspace dirtied by another instance must not change the result.
        let mut ws = PackWorkspace::new();
        pack_with(&mut ws, &other_items, other_bin, &opts).unwrap();
        let second = pack_with(&mut ws, &items, bin, &opts).unwrap();
        prop_assert_eq!(&first, &second);
        prop_assert_eq!(first, pack(&items, bin, &opts).unwrap());
    }

    /// C-EPBFD returns exactly the first packing of fewest bins among
    /// EP-BFD runs over its orderings: abandoning hopeless orderings and
    /// stopping at the lower bound change its time, never its result.
    #[test]
    fn c_epbfd_is_the_best_of_its_orderings((bin, items) in instance(), opts in options()) {
        let multi = pack(&items, bin, &PackOptions { heuristic: Heuristic::CEpBfd, ..opts.clone() }).unwrap();
        let mut best: Option<Packing> = None;
        for sort in opts.c_epbfd_orders() {
            let single = pack(&items, bin, &PackOptions { heuristic: Heuristic::EpBfd, sort, ..opts.clone() }).unwrap();
            if best.as_ref().is_none_or(|b| single.bins_used < b.bins_used) {
                best = Some(single);
            }
        }
        prop_assert_eq!(multi, best.unwrap());
    }

    /// Patch-like items (sides 16..=64) in 64³ bins, checked by `verify`.
    #[test]
    fn patch_sized_items_are_valid(
        items in prop::collection::vec([16u32..=64, 16u32..=64, 16u32..=64], 1..200),
        opts in options(),
    ) {
        let packing = pack(&items, [64, 64, 64], &opts).unwrap();
        prop_assert_eq!(packing.verify(&items, opts.allow_rotation), Ok(()));
        if !opts.allow_rotation {
            prop_assert!(packing.bins_used >= bins_lower_bound(&items, [64, 64, 64]));
        }
    }
}

/// Items that tile the bin exactly are packed into the lower bound.
#[test]
fn exact_tilings_fill_one_bin() {
    let bin = [64, 64, 64];
    let cases: Vec<Vec<Extent>> = vec![
        vec![[32, 32, 32]; 8],
        vec![[16, 16, 16]; 64],
        vec![[64, 16, 64]; 4],
        vec![[64, 64, 32], [32, 64, 32], [32, 32, 32], [32, 32, 32]],
        vec![[64, 48, 64], [64, 16, 32], [32, 16, 32], [32, 16, 32]],
    ];
    for items in cases {
        for heuristic in [Heuristic::EpFfd, Heuristic::EpBfd, Heuristic::CEpBfd] {
            for merit in [Merit::ResidualSpace, Merit::FreeVolume] {
                let opts = PackOptions {
                    heuristic,
                    merit,
                    ..Default::default()
                };
                let packing = pack(&items, bin, &opts).unwrap();
                assert_eq!(packing.bins_used, 1, "{heuristic}/{merit} on {items:?}");
                assert!((packing.efficiency() - 1.0).abs() < 1e-12);
                packing.verify(&items, false).unwrap();
            }
        }
    }
}

/// Statistics of a packing small enough to work out by hand.
#[test]
fn statistics_of_a_small_packing() {
    let items = [[2, 2, 2], [1, 1, 1], [3, 3, 3], [2, 3, 3]];
    let packing = pack(&items, [3, 3, 3], &PackOptions::default()).unwrap();
    // The 3³ cube fills a bin; the rest (8 + 1 + 18 = 27 cells) cannot all
    // share the second (2×3×3 leaves a 1×3×3 slab, too thin for the 2³).
    assert_eq!(packing.placements[2].offset, [0, 0, 0]);
    assert_eq!(packing.lower_bound(), 2);
    assert_eq!(packing.bins_used, 3);
    assert_eq!(packing.bin_members().iter().map(Vec::len).sum::<usize>(), 4);
    let offsets = packing.bin_offsets();
    assert_eq!(offsets.len(), 4);
    assert_eq!(offsets[2], (0, [0, 0, 0]));
    for (p, (bin, offset)) in packing.placements.iter().zip(&offsets) {
        assert_eq!((p.bin as u32, p.offset), (*bin, *offset));
    }
    let fills = packing.fill_per_bin();
    assert_eq!(fills[0], 1.0);
    let total: f64 = fills.iter().sum();
    assert!((total - 54.0 / 27.0).abs() < 1e-12);
    assert!((packing.efficiency() - 54.0 / 81.0).abs() < 1e-12);
}

#[test]
fn empty_input_gives_empty_packing() {
    let packing = pack(&[], [64, 64, 64], &PackOptions::default()).unwrap();
    assert_eq!(packing.bins_used, 0);
    assert!(packing.placements.is_empty());
    assert_eq!(packing.efficiency(), 0.0);
    assert_eq!(packing.lower_bound(), 0);
}

/// Rotation lets a tall item lie down next to others.
#[test]
fn rotation_turns_items_when_allowed() {
    let items = [[64, 64, 32], [64, 32, 64]];
    let fixed = pack(&items, [64, 64, 64], &PackOptions::default()).unwrap();
    assert_eq!(fixed.bins_used, 2);
    let turned = pack(
        &items,
        [64, 64, 64],
        &PackOptions {
            allow_rotation: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(turned.bins_used, 1);
    turned.verify(&items, true).unwrap();
    assert!(
        turned
            .placements
            .iter()
            .any(|p| p.is_rotated(items[p.item]))
    );
    // An item that only fits turned is accepted with rotation.
    let long = [[10, 70, 10]];
    assert!(pack(&long, [80, 20, 20], &PackOptions::default()).is_err());
    let p = pack(
        &long,
        [80, 20, 20],
        &PackOptions {
            allow_rotation: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(p.placements[0].extent[0], 70);
}
