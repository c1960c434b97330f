//! Cost-based distribution: coverage, balance, locality, inheritance
//! across a regrid and the adoption threshold.

use quilt_dist::{Balancer, Distribution, efficiency, inherited_costs};
use quilt_mesh::{Hierarchy, SyntheticSpec, generate};

fn hierarchy(patches: usize, seed: u64) -> Hierarchy {
    generate(&SyntheticSpec {
        patches,
        seed,
        domain_cells: 64,
        base_patch: 16,
        ..SyntheticSpec::default()
    })
    .unwrap()
}

fn cells(h: &Hierarchy) -> Vec<f64> {
    h.patches()
        .iter()
        .map(|p| p.interior().num_cells() as f64)
        .collect()
}

#[test]
fn every_patch_gets_one_rank_and_every_rank_work() {
    let h = hierarchy(200, 3);
    let costs = cells(&h);
    for ranks in [1, 2, 3, 4, 7] {
        let d = Distribution::balanced(&h, &costs, ranks).unwrap();
        assert_eq!(d.len(), h.num_patches());
        let owned: usize = (0..ranks).map(|r| d.owned(r).len()).sum();
        assert_eq!(owned, h.num_patches());
        assert!((0..ranks).all(|r| !d.owned(r).is_empty()), "{ranks} ranks");
        let e = d.efficiency(&costs);
        assert!(e > 0.9, "{ranks} ranks: efficiency {e}");
    }
}

#[test]
fn the_knapsack_step_never_makes_the_curve_cut_worse() {
    // Skewed costs: a few patches are far dearer than the rest.
    let h = hierarchy(150, 11);
    let costs: Vec<f64> = cells(&h)
        .iter()
        .enumerate()
        .map(|(i, c)| if i % 17 == 0 { c * 20.0 } else { *c })
        .collect();
    for ranks in [2, 3, 5] {
        let d = Distribution::balanced(&h, &costs, ranks).unwrap();
        // The cut alone: no refinement.
        let keys = quilt_dist::morton::patch_keys(&h);
        let mut order: Vec<usize> = (0..h.num_patches()).collect();
        order.sort_by_key(|&i| (keys[i], h.patches()[i].level(), i));
        let total: f64 = costs.iter().sum();
        let mut run = 0.0;
        let mut owners = vec![0; h.num_patches()];
        for &i in &order {
            let mid = run + 0.5 * costs[i];
            run += costs[i];
            owners[i] = ((mid / total * ranks as f64) as usize).min(ranks - 1);
        }
        let mut cut = Distribution::new(owners, ranks).unwrap();
        let before = cut.efficiency(&costs);
        quilt_dist::distribution::refine_knapsack(&mut cut, &costs);
        assert_eq!(cut, d, "balanced() is the cut plus the knapsack step");
        assert!(d.efficiency(&costs) >= before, "{ranks} ranks");
    }
}

#[test]
fn the_curve_keeps_neighbours_together() {
    // Uniform base level of 4×4×4 patches on 8 ranks: a Morton cut gives
    // each rank one 2×2×2 octant.
    let h = generate(&SyntheticSpec {
        patches: 64,
        domain_cells: 64,
        base_patch: 16,
        ..SyntheticSpec::default()
    })
    .unwrap();
    let d = Distribution::balanced(&h, &cells(&h), 8).unwrap();
    for r in 0..8 {
        let mine = d.owned(r);
        assert_eq!(mine.len(), 8);
        let lo = mine
            .iter()
            .map(|&i| h.patches()[i].interior().lo)
            .fold(quilt_mesh::iv(i32::MAX, i32::MAX, i32::MAX), |a, b| {
                quilt_mesh::iv(a.x.min(b.x), a.y.min(b.y), a.z.min(b.z))
            });
        for &i in &mine {
            let p = h.patches()[i].interior().lo;
            assert!(
                p.x - lo.x < 32 && p.y - lo.y < 32 && p.z - lo.z < 32,
                "rank {r}"
            );
        }
    }
}

#[test]
fn inheritance_keeps_owners_and_the_threshold_decides() {
    let h = hierarchy(120, 5);
    let costs = cells(&h);
    let d = Distribution::balanced(&h, &costs, 3).unwrap();
    // The same hierarchy again: every patch keeps its owner.
    assert_eq!(Distribution::inherited(&h, &d, &h).unwrap(), d);
    // A different hierarchy: every new patch goes to a rank owning old
    // cells under or at it.
    let h2 = hierarchy(140, 6);
    let inh = Distribution::inherited(&h, &d, &h2).unwrap();
    assert_eq!(inh.len(), h2.num_patches());
    let c2 = cells(&h2);
    let b = Balancer::default();
    let r = b.rebalance(&h2, inh.clone(), &c2).unwrap();
    assert_eq!(r.adopted, r.fresh > r.kept * 1.1);
    assert_eq!(r.kept, inh.efficiency(&c2));
    // Everything on one rank is always replaced; a balanced one is kept.
    let r = b
        .rebalance(&h2, Distribution::single(h2.num_patches(), 3), &c2)
        .unwrap();
    assert!(r.adopted && r.cells_moved > 0 && r.fresh > 0.9, "{r:?}");
    let fresh = Distribution::balanced(&h2, &c2, 3).unwrap();
    let r = b.rebalance(&h2, fresh.clone(), &c2).unwrap();
    assert!(!r.adopted && r.distribution == fresh && r.cells_moved == 0);
}

#[test]
fn bad_input_is_an_error() {
    let h = hierarchy(70, 1);
    let e = Distribution::balanced(&h, &[1.0], 2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("1 costs for 70 patches"), "{e}");
    let mut c = cells(&h);
    c[4] = f64::NAN;
    let e = Distribution::balanced(&h, &c, 2).unwrap_err().to_string();
    assert!(e.contains("patch index 4"), "{e}");
    let e = Distribution::new(vec![0, 2], 2).unwrap_err().to_string();
    assert!(e.contains("patch index 1 is given to rank 2"), "{e}");
    assert_eq!(efficiency(&[0.0, 0.0]), 1.0);
    assert_eq!(efficiency(&[1.0, 3.0]), 2.0 / 3.0);
}

/// Measured costs carry over a regrid cell by cell: an unchanged
/// hierarchy keeps its costs, other ground costs its level's mean per
/// cell, unmeasured patches count as that mean, and nothing measured means
/// cells.
#[test]
fn costs_carry_over_a_regrid_cell_by_cell() {
    let old = hierarchy(120, 11);
    let n = old.num_patches();
    // Costs per cell that differ from patch to patch.
    let measured: Vec<f64> = (0..n)
        .map(|i| old.patches()[i].interior().num_cells() as f64 * (1.0 + (i % 5) as f64))
        .collect();
    let same = inherited_costs(&old, &measured, &old);
    for i in 0..n {
        assert!(
            (same[i] - measured[i]).abs() <= 1e-9 * measured[i],
            "patch {i}: {} for {}",
            same[i],
            measured[i]
        );
    }
    // An unmeasured patch takes its level's mean cost per cell (patch 0
    // lies on the base level, with many others).
    let mut partly = measured.clone();
    partly[0] = f64::NAN;
    let (c, k) = old.level_range(0).skip(1).fold((0.0, 0.0), |(c, k), i| {
        (
            c + measured[i],
            k + old.patches()[i].interior().num_cells() as f64,
        )
    });
    let got = inherited_costs(&old, &partly, &old)[0];
    let want = c / k * old.patches()[0].interior().num_cells() as f64;
    assert!((got - want).abs() <= 1e-9 * want, "{got} for {want}");
    // Another hierarchy: every cell is paid for at some measured rate.
    let new = hierarchy(150, 12);
    let moved = inherited_costs(&old, &measured, &new);
    assert_eq!(moved.len(), new.num_patches());
    for (q, c) in moved.iter().enumerate() {
        let cells = new.patches()[q].interior().num_cells() as f64;
        assert!(
            *c >= cells * 0.999 && *c <= 5.0 * cells * 1.001,
            "patch {q}: {c}"
        );
    }
    // Nothing measured: cells.
    let none = inherited_costs(&old, &vec![f64::NAN; n], &new);
    assert_eq!(none, cells(&new));
}
