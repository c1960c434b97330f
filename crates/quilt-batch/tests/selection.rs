//! Properties of the selectors: capacity, balance, progress, determinism,
//! the static scheme, the first batch, and bad input.

mod common;

use proptest::prelude::*;
use quilt_batch::{
    AdaptiveOptions, BatchError, BinWork, Coefficients, CostModel, FirstBatch, PatchWork,
    Selection, Selector, select_adaptive, select_first, select_static,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn model() -> CostModel {
    CostModel::new(Coefficients::gpu_default()).unwrap()
}

/// Would `bin` fit by the least-loaded rule (largest patch first) on `loads`?
fn fits_by_rule(model: &CostModel, bin: &BinWork, loads: &[f64], cap: f64) -> bool {
    let mut costs: Vec<f64> = bin
        .patches()
        .iter()
        .map(|p| model.patch_prepare(p))
        .collect();
    costs.sort_by(|a, b| b.total_cmp(a));
    let mut l = loads.to_vec();
    for c in costs {
        let q = (0..l.len()).min_by(|&a, &b| l[a].total_cmp(&l[b])).unwrap();
        if l[q] + c > cap {
            return false;
        }
        l[q] += c;
    }
    true
}

/// Checks what every selection must satisfy; returns the largest patch cost.
fn check_structure(bins: &[BinWork], model: &CostModel, queues: usize, sel: &Selection) -> f64 {
    assert!(!sel.bins().is_empty(), "no progress");
    assert_eq!(sel.queues().len(), queues);
    assert_eq!(sel.loads().len(), queues);
    let mut seen = vec![false; bins.len()];
    for &b in sel.bins() {
        assert!(!seen[b], "bin {b} selected twice");
        seen[b] = true;
    }
    // Every patch of every selected bin exactly once, nothing else.
    let mut count = vec![0usize; bins.len()];
    let mut largest: f64 = 0.0;
    for (q, queue) in sel.queues().iter().enumerate() {
        let mut sum = 0.0;
        for r in queue {
            assert!(seen[r.bin], "patch of unselected bin {}", r.bin);
            assert_eq!(r.cost, model.patch_prepare(&bins[r.bin].patches()[r.patch]));
            count[r.bin] += 1;
            sum += r.cost;
            largest = largest.max(r.cost);
        }
        let l = sel.loads()[q];
        assert!(
            (l - sum).abs() <= 1e-9 * l.max(1e-300),
            "queue {q}: load {l} vs patches {sum}"
        );
    }
    for (b, bin) in bins.iter().enumerate() {
        let want = if seen[b] { bin.patches().len() } else { 0 };
        assert_eq!(count[b], want, "bin {b}");
        let mut locals: Vec<usize> = sel
            .queues()
            .iter()
            .flatten()
            .filter(|r| r.bin == b)
            .map(|r| r.patch)
            .collect();
        locals.sort_unstable();
        assert_eq!(locals, (0..want).collect::<Vec<_>>());
    }
    let volume: u64 = sel.bins().iter().map(|&b| bins[b].volume()).sum();
    assert_eq!(sel.volume(), volume);
    // Balanced within the largest single patch cost.
    let max = sel.loads().iter().copied().fold(f64::MIN, f64::max);
    let min = sel.loads().iter().copied().fold(f64::MAX, f64::min);
    assert!(
        max - min <= largest * (1.0 + 1e-9),
        "spread {} > largest patch {largest}",
        max - min
    );
    assert!((sel.makespan() - max).abs() <= 0.0);
    largest
}

fn check_capacity(bins: &[BinWork], model: &CostModel, sel: &Selection) {
    let cap = sel.capacity() * (1.0 + 1e-12);
    if !sel.forced() {
        for (q, &l) in sel.loads().iter().enumerate() {
            assert!(l <= cap, "queue {q}: load {l} > capacity {cap}");
        }
        return;
    }
    // Forced: no bin fitted alone on empty queues under the rule, and only
    // the forced (first) bin's patches sit in queues above the capacity.
    let empty = vec![0.0; sel.loads().len()];
    for (b, bin) in bins.iter().enumerate() {
        assert!(
            !fits_by_rule(model, bin, &empty, sel.capacity()),
            "bin {b} fits, yet forced"
        );
    }
    let forced = sel.bins()[0];
    for (q, &l) in sel.loads().iter().enumerate() {
        if l > cap {
            assert!(sel.queues()[q].iter().all(|r| r.bin == forced), "queue {q}");
        }
    }
}

fn instance(seed: u64, n: usize) -> Vec<BinWork> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    common::random_bins(&mut rng, n, 8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn adaptive_selection_properties(
        seed in any::<u64>(),
        n in 1usize..80,
        queues in 1usize..=16,
        share in 0.0f64..1.2,
        tolerance in 0.0f64..0.2,
        search in prop_oneof![Just(0usize), Just(2000usize)],
        max_bins in prop_oneof![Just(usize::MAX), 1usize..10],
    ) {
        let bins = instance(seed, n);
        let model = model();
        let total: f64 = bins.iter().map(|b| model.bin_prepare(b)).sum();
        let capacity = total / queues as f64 * share;
        let opts = AdaptiveOptions {
            relative_tolerance: tolerance,
            search_nodes: search,
            exact_patches: if search == 0 { 0 } else { 64 },
            max_bins,
            ..AdaptiveOptions::default()
        };
        let sel = select_adaptive(&bins, capacity, queues, &model, &opts).unwrap();
        check_structure(&bins, &model, queues, &sel);
        prop_assert!((sel.capacity() - capacity * (1.0 + tolerance)).abs() <= 1e-12 * sel.capacity().max(1e-300));
        check_capacity(&bins, &model, &sel);
        prop_assert!(sel.bins().len() <= max_bins.max(1));

        // The paper's greedy is maximal: every bin left out no longer fits.
        if search == 0 && !sel.forced() && sel.bins().len() < max_bins {
            for (b, bin) in bins.iter().enumerate() {
                if !sel.bins().contains(&b) {
                    prop_assert!(!fits_by_rule(&model, bin, sel.loads(), sel.capacity()), "bin {} still fits", b);
                }
            }
        }

        // Deterministic, and independent of what a reused selector saw before.
        let again = select_adaptive(&bins, capacity, queues, &model, &opts).unwrap();
        prop_assert_eq!(&sel, &again);
        let mut selector = Selector::new();
        let mut out = Selection::new();
        let other = instance(seed ^ 1, n + 7);
        selector.adaptive(&other, capacity * 2.0, queues + 1, &model, &opts, &mut out).unwrap();
        selector.adaptive(&bins, capacity, queues, &model, &opts, &mut out).unwrap();
        prop_assert_eq!(&sel, &out);
    }

    #[test]
    fn static_selection_properties(
        seed in any::<u64>(),
        n in 1usize..80,
        queues in 1usize..=16,
        n_fixed in 1usize..60,
    ) {
        let bins = instance(seed, n);
        let model = model();
        let sel = select_static(&bins, n_fixed, queues, &model).unwrap();
        check_structure(&bins, &model, queues, &sel);
        // The leading bins, in index order, while the patch count allows.
        let k = sel.bins().len();
        prop_assert_eq!(sel.bins(), &(0..k).collect::<Vec<_>>()[..]);
        let patches: usize = bins[..k].iter().map(|b| b.patches().len()).sum();
        prop_assert!(k == 1 || patches <= n_fixed);
        if k < n {
            prop_assert!(patches + bins[k].patches().len() > n_fixed);
        }
        prop_assert_eq!(sel.patch_count(), patches);
        prop_assert!(!sel.forced());
    }

    #[test]
    fn first_batch_properties(seed in any::<u64>(), n in 1usize..60, queues in 1usize..=16, take in 1usize..12) {
        let bins = instance(seed, n);
        let model = model();
        let opts = AdaptiveOptions { first_batch: FirstBatch::Bins(take), ..AdaptiveOptions::default() };
        let sel = select_first(&bins, queues, &model, &opts).unwrap();
        check_structure(&bins, &model, queues, &sel);
        prop_assert_eq!(sel.bins().len(), take.min(n));
        // The first bins of the adaptive order: non-increasing volume / prepare cost.
        let ratio = |b: usize| bins[b].volume() as f64 / model.bin_prepare(&bins[b]);
        for w in sel.bins().windows(2) {
            prop_assert!(ratio(w[0]) >= ratio(w[1]));
        }
        let worst_taken = sel.bins().iter().map(|&b| ratio(b)).fold(f64::MAX, f64::min);
        for b in (0..n).filter(|b| !sel.bins().contains(b)) {
            prop_assert!(ratio(b) <= worst_taken);
        }
    }
}

#[test]
fn unpacked_default_scheme_takes_exactly_n_fixed_patches() {
    let model = model();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let bins: Vec<BinWork> = (0..300)
        .map(|_| BinWork::single(common::random_patch(&mut rng, 8, 40), 40).unwrap())
        .collect();
    // n_fixed = streams × multiprocessors: 120 on the paper's Tesla.
    let sel = select_static(&bins, 120, 8, &model).unwrap();
    assert_eq!(sel.bins().len(), 120);
    assert_eq!(sel.patch_count(), 120);
    let sel = select_static(&bins[250..], 120, 8, &model).unwrap();
    assert_eq!(sel.bins().len(), 50);
}

#[test]
fn first_batch_by_seconds_equals_an_adaptive_selection() {
    let model = model();
    let bins = instance(3, 40);
    let total: f64 = bins.iter().map(|b| model.bin_prepare(b)).sum();
    let t = total / 4.0 * 0.1;
    let opts = AdaptiveOptions {
        first_batch: FirstBatch::Seconds(t),
        ..AdaptiveOptions::default()
    };
    let a = select_first(&bins, 4, &model, &opts).unwrap();
    let b = select_adaptive(&bins, t, 4, &model, &opts).unwrap();
    assert_eq!(a, b);
}

#[test]
fn zero_capacity_forces_one_bin() {
    let model = model();
    let bins = instance(4, 30);
    let sel = select_adaptive(&bins, 0.0, 4, &model, &AdaptiveOptions::default()).unwrap();
    assert!(sel.forced());
    assert_eq!(sel.bins().len(), 1);
    check_structure(&bins, &model, 4, &sel);
}

#[test]
fn ample_capacity_takes_every_bin() {
    let model = model();
    let bins = instance(5, 50);
    let total: f64 = bins.iter().map(|b| model.bin_prepare(b)).sum();
    let sel = select_adaptive(&bins, total, 3, &model, &AdaptiveOptions::default()).unwrap();
    assert_eq!(sel.bins().len(), 50);
    assert!(!sel.forced());
    check_structure(&bins, &model, 3, &sel);
}

#[test]
fn search_finds_the_exchange_the_greedy_misses() {
    // One queue of capacity 68. Prepare cost = copied cells (ghost + interior),
    // volume = ghost-inclusive cells. A has the best volume/cost ratio
    // (64/59) but once it is in neither B nor C (36/34 each) fits; B and C
    // together hold more volume (72 > 64).
    let mut c = Coefficients::gpu_default();
    c.prepare = quilt_batch::PrepareCoeffs {
        k1: 0.0,
        k2: 1.0,
        k_patch: 0.0,
    };
    let model = CostModel::new(c).unwrap();
    let bins = vec![
        BinWork::single(PatchWork::new([4, 4, 4], 1).with_ghost_fill(0, 51), 40).unwrap(),
        BinWork::single(PatchWork::new([3, 3, 4], 1).with_ghost_fill(0, 32), 40).unwrap(),
        BinWork::single(PatchWork::new([3, 3, 4], 1).with_ghost_fill(0, 32), 40).unwrap(),
    ];
    let costs: Vec<f64> = bins.iter().map(|b| model.bin_prepare(b)).collect();
    assert_eq!(costs, vec![59.0, 34.0, 34.0]);
    let exact = AdaptiveOptions {
        relative_tolerance: 0.0,
        ..AdaptiveOptions::default()
    };
    let greedy = AdaptiveOptions {
        search_nodes: 0,
        exact_patches: 0,
        ..exact
    };
    let g = select_adaptive(&bins, 68.0, 1, &model, &greedy).unwrap();
    assert_eq!(g.bins(), &[0]);
    let s = select_adaptive(&bins, 68.0, 1, &model, &exact).unwrap();
    assert_eq!(s.bins(), &[1, 2]);
    assert_eq!(s.volume(), 72);
}

#[test]
fn distribution_search_accepts_what_the_rule_rejects() {
    // Two queues of capacity 10, patch costs 5, 5, 4, 3, 3 in three bins:
    // the least-loaded rule places 5|5, 4|3 -> 9|8 and then 3 fits nowhere;
    // {5,5} {4,3,3} fits.
    let mut c = Coefficients::gpu_default();
    c.prepare = quilt_batch::PrepareCoeffs {
        k1: 0.0,
        k2: 1.0,
        k_patch: 0.0,
    };
    let model = CostModel::new(c).unwrap();
    let p = |copied: u64| PatchWork::new([3, 3, 3], 1).with_ghost_fill(0, copied - 1);
    let bins = vec![
        BinWork::new(vec![p(5), p(5)], 40).unwrap(),
        BinWork::new(vec![p(4)], 40).unwrap(),
        BinWork::new(vec![p(3), p(3)], 40).unwrap(),
    ];
    let exact = AdaptiveOptions {
        relative_tolerance: 0.0,
        ..AdaptiveOptions::default()
    };
    let rule_only = AdaptiveOptions {
        exact_patches: 0,
        ..exact
    };
    let r = select_adaptive(&bins, 10.0, 2, &model, &rule_only).unwrap();
    assert_eq!(r.bins().len(), 2);
    let s = select_adaptive(&bins, 10.0, 2, &model, &exact).unwrap();
    assert_eq!(s.bins().len(), 3);
    check_structure(&bins, &model, 2, &s);
    assert!(s.loads().iter().all(|&l| l <= 10.0));
}

#[test]
fn bad_input_is_an_error() {
    let model = model();
    let bins = instance(6, 10);
    let opts = AdaptiveOptions::default();
    assert!(matches!(
        select_adaptive(&[], 1.0, 4, &model, &opts),
        Err(BatchError::NoBins)
    ));
    assert!(matches!(
        select_adaptive(&bins, 1.0, 0, &model, &opts),
        Err(BatchError::NoQueues)
    ));
    for cap in [f64::NAN, -1.0, f64::INFINITY] {
        assert!(matches!(
            select_adaptive(&bins, cap, 4, &model, &opts),
            Err(BatchError::InvalidTime { .. })
        ));
    }
    for bad in [
        AdaptiveOptions {
            relative_tolerance: -0.1,
            ..opts
        },
        AdaptiveOptions {
            absolute_tolerance: f64::NAN,
            ..opts
        },
        AdaptiveOptions {
            max_bins: 0,
            ..opts
        },
        AdaptiveOptions {
            search_gap: 1.0,
            ..opts
        },
        AdaptiveOptions {
            first_batch: FirstBatch::Bins(0),
            ..opts
        },
        AdaptiveOptions {
            first_batch: FirstBatch::Seconds(-1.0),
            ..opts
        },
    ] {
        let e = select_adaptive(&bins, 1.0, 4, &model, &bad)
            .and_then(|_| select_first(&bins, 4, &model, &bad))
            .unwrap_err();
        assert!(matches!(e, BatchError::InvalidOption { .. }), "{e}");
    }
    assert!(matches!(
        select_first(&[], 4, &model, &opts),
        Err(BatchError::NoBins)
    ));
    assert!(matches!(
        select_static(&bins, 0, 4, &model),
        Err(BatchError::InvalidOption {
            name: "n_fixed",
            ..
        })
    ));
    assert!(matches!(
        select_static(&bins, 10, 0, &model),
        Err(BatchError::NoQueues)
    ));
    assert!(matches!(
        select_static(&[], 10, 2, &model),
        Err(BatchError::NoBins)
    ));
}
