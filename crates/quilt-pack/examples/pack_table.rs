//! Prints efficiency, bins against the lower bounds and packing time per
//! heuristic, merit and ordering, in 64³ bins, over 25 instances: 120, 240,
//! 360, 480 and 600 items, 5 seeds each, drawn from one of two sources:
//!
//! - `hierarchy` (default): the ghost-inclusive patches of the synthetic
//!   hierarchies of Raghavan & Vadhiyar 2015, section 4.1
//!   (`quilt_mesh::generate`, seeds 1..=5);
//! - `uniform`: items with every side uniform in 16..=64.
//!
//! Columns: mean efficiency; bins summed over the 25 instances against the
//! summed Martello–Pisinger–Vigo bound and continuous bound; the time of
//! one packing of the 600-item instances (mean over seeds of the fastest of
//! several repetitions, one core).
//!
//! `cargo run --release -p quilt-pack --example pack_table [-- uniform]`

use std::time::Instant;

use quilt_mesh::{SyntheticSpec, generate};
use quilt_pack::{
    Extent, Heuristic, Merit, PackOptions, PackWorkspace, SortOrder, bins_lower_bound, pack_with,
    patch_extents,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BIN: Extent = [64, 64, 64];
const COUNTS: [usize; 5] = [120, 240, 360, 480, 600];
const SEEDS: u64 = 5;

fn uniform_items(n: usize, seed: u64) -> Vec<Extent> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            [
                rng.random_range(16..=64),
                rng.random_range(16..=64),
                rng.random_range(16..=64),
            ]
        })
        .collect()
}

fn hierarchy_items(n: usize, seed: u64) -> Vec<Extent> {
    let h = generate(&SyntheticSpec {
        patches: n,
        seed,
        ..Default::default()
    })
    .expect("synthetic hierarchy");
    let all: Vec<usize> = (0..h.num_patches()).collect();
    patch_extents(&h, &all).expect("patch extents")
}

fn configurations() -> Vec<(String, PackOptions)> {
    let mut v = Vec::new();
    let mut sorts = vec![
        SortOrder::VolumeHeight,
        SortOrder::HeightVolume,
        SortOrder::AreaHeight,
        SortOrder::HeightArea,
        SortOrder::ClusteredAreaHeight { delta_percent: 10 },
        SortOrder::ClusteredHeightArea { delta_percent: 10 },
    ];
    sorts.extend(SortOrder::long_side_first());
    for sort in sorts {
        for (heuristic, merit) in [
            (Heuristic::EpFfd, Merit::ResidualSpace),
            (Heuristic::EpBfd, Merit::ResidualSpace),
            (Heuristic::EpBfd, Merit::FreeVolume),
        ] {
            let name = match heuristic {
                Heuristic::EpFfd => format!("{heuristic} {sort}"),
                _ => format!("{heuristic}/{merit} {sort}"),
            };
            v.push((
                name,
                PackOptions {
                    heuristic,
                    merit,
                    sort,
                    ..Default::default()
                },
            ));
        }
    }
    v.push((
        "ep-bfd/rs volume-height, rotation".to_owned(),
        PackOptions {
            allow_rotation: true,
            ..Default::default()
        },
    ));
    for merit in [Merit::ResidualSpace, Merit::FreeVolume] {
        v.push((
            format!("c-epbfd/{merit} default (vh + long side first, 4 orderings)"),
            PackOptions {
                heuristic: Heuristic::CEpBfd,
                merit,
                ..Default::default()
            },
        ));
    }
    let deltas_10: Vec<u32> = (1..=10).map(|k| 5 * k).collect();
    v.push((
        "c-epbfd/rs paper orderings, δ = 5..50 step 5 (24)".to_owned(),
        PackOptions {
            heuristic: Heuristic::CEpBfd,
            orders: SortOrder::paper_orders(&deltas_10),
            ..Default::default()
        },
    ));
    let deltas_100: Vec<u32> = (1..=100).collect();
    v.push((
        "c-epbfd/rs paper orderings, δ = 1..100 (204)".to_owned(),
        PackOptions {
            heuristic: Heuristic::CEpBfd,
            orders: SortOrder::paper_orders(&deltas_100),
            ..Default::default()
        },
    ));
    v
}

fn main() {
    let uniform = std::env::args().nth(1).is_some_and(|a| a == "uniform");
    let sets: Vec<(usize, Vec<Extent>)> = COUNTS
        .iter()
        .flat_map(|&n| {
            (0..SEEDS).map(move |s| {
                let items = if uniform {
                    uniform_items(n, 1000 * n as u64 + s)
                } else {
                    hierarchy_items(n, s + 1)
                };
                (n, items)
            })
        })
        .collect();
    let mpv: usize = sets
        .iter()
        .map(|(_, items)| bins_lower_bound(items, BIN))
        .sum();
    let l0: usize = sets
        .iter()
        .map(|(_, items)| {
            let v: u64 = items
                .iter()
                .map(|e| u64::from(e[0]) * u64::from(e[1]) * u64::from(e[2]))
                .sum();
            v.div_ceil(64 * 64 * 64) as usize
        })
        .sum();
    println!(
        "{} items; lower bounds summed over 25 instances: Martello-Pisinger-Vigo {mpv}, continuous {l0}",
        if uniform {
            "uniform 16..=64"
        } else {
            "synthetic hierarchy"
        }
    );
    println!(
        "| configuration | mean efficiency | bins (25 instances) | bins / MPV bound | bins / L0 | time, 600 items (µs) |"
    );
    println!("|---|---|---|---|---|---|");
    let mut ws = PackWorkspace::new();
    for (name, opts) in configurations() {
        let mut eff_sum = 0.0;
        let mut bins = 0;
        let mut time600 = 0.0;
        for (n, items) in &sets {
            let packing = pack_with(&mut ws, items, BIN, &opts).expect("valid items");
            eff_sum += packing.efficiency();
            bins += packing.bins_used;
            if *n == 600 {
                let orders = if opts.heuristic == Heuristic::CEpBfd {
                    opts.c_epbfd_orders().len()
                } else {
                    1
                };
                let reps = (40 / orders).max(2);
                let mut best = f64::INFINITY;
                for _ in 0..reps {
                    let t = Instant::now();
                    let p = pack_with(&mut ws, items, BIN, &opts).expect("valid items");
                    std::hint::black_box(&p);
                    best = best.min(t.elapsed().as_secs_f64());
                }
                time600 += best;
            }
        }
        println!(
            "| {name} | {:.4} | {bins} | {:.3} | {:.3} | {:.0} |",
            eff_sum / sets.len() as f64,
            bins as f64 / mpv as f64,
            bins as f64 / l0 as f64,
            time600 / SEEDS as f64 * 1e6
        );
    }
}
