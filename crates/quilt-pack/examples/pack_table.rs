//! Prints efficiency, bins against the lower bounds and packing time per
//! heuristic, merit and ordering, in 64³ bins, for 120, 240, 360, 480 and
//! 600 items, 5 seeds each, drawn from one of two sources:
//!
//! - `hierarchy` (default): the ghost-inclusive patches of the synthetic
//!   hierarchies of Raghavan & Vadhiyar 2015, section 4.1
//!   (`quilt_mesh::generate`);
//! - `uniform`: items with every side uniform in 16..=64.
//!
//! `cargo run --release -p quilt-pack --example pack_table [-- uniform]`

use std::time::Instant;

use quilt_mesh::{SyntheticSpec, generate};
use quilt_pack::{
    Extent, Heuristic, Merit, PackOptions, PackWorkspace, SortOrder, bins_lower_bound, pack_with, patch_extents,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BIN: Extent = [64, 64, 64];
const COUNTS: [usize; 5] = [120, 240, 360, 480, 600];
const SEEDS: u64 = 5;

fn uniform_items(n: usize, seed: u64) -> Vec<Extent> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| [rng.random_range(16..=64), rng.random_range(16..=64), rng.random_range(16..=64)])
        .collect()
}

fn hierarchy_items(n: usize, seed: u64) -> Vec<Extent> {
    let h = generate(&SyntheticSpec { patches: n, seed, ..Default::default() }).expect("synthetic hierarchy");
    let all: Vec<usize> = (0..h.num_patches()).collect();
    patch_extents(&h, &all).expect("patch extents")
}

fn main() {
    let uniform = std::env::args().nth(1).is_some_and(|a| a == "uniform");
    let configs: Vec<(String, PackOptions)> = {
        let mut v = Vec::new();
        for sort in [
            SortOrder::VolumeHeight,
            SortOrder::HeightVolume,
            SortOrder::AreaHeight,
            SortOrder::HeightArea,
            SortOrder::ClusteredAreaHeight { delta_percent: 10 },
            SortOrder::ClusteredHeightArea { delta_percent: 10 },
        ] {
            for (heuristic, merit) in [
                (Heuristic::EpFfd, Merit::ResidualSpace),
                (Heuristic::EpBfd, Merit::ResidualSpace),
                (Heuristic::EpBfd, Merit::FreeVolume),
            ] {
                let name = match heuristic {
                    Heuristic::EpFfd => format!("{heuristic} {sort}"),
                    _ => format!("{heuristic}/{merit} {sort}"),
                };
                v.push((name, PackOptions { heuristic, merit, sort, ..Default::default() }));
            }
        }
        v.push((
            "ep-bfd/rs volume-height, rotation".to_owned(),
            PackOptions { allow_rotation: true, ..Default::default() },
        ));
        for merit in [Merit::ResidualSpace, Merit::FreeVolume] {
            v.push((
                format!("c-epbfd/{merit} (default orderings)"),
                PackOptions { heuristic: Heuristic::CEpBfd, merit, ..Default::default() },
            ));
        }
        v
    };

    let sets: Vec<(usize, Vec<Extent>)> = COUNTS
        .iter()
        .flat_map(|&n| {
            (0..SEEDS).map(move |s| {
                let items = if uniform { uniform_items(n, 1000 * n as u64 + s) } else { hierarchy_items(n, s + 1) };
                (n, items)
            })
        })
        .collect();

    let strong600: usize = sets.iter().filter(|(n, _)| *n == 600).map(|(_, items)| bins_lower_bound(items, BIN)).sum();
    println!("mean Martello-Pisinger-Vigo bound for 600 items: {:.1} bins", strong600 as f64 / SEEDS as f64);
    println!("| configuration | mean efficiency | min efficiency | bins / L0 (600) | time 600 items (µs) |");
    println!("|---|---|---|---|---|");
    let mut ws = PackWorkspace::new();
    for (name, opts) in &configs {
        let mut eff_sum = 0.0;
        let mut eff_min = f64::INFINITY;
        let mut bins600 = 0;
        let mut lb600 = 0;
        let mut time600 = 0.0;
        for (n, items) in &sets {
            let packing = pack_with(&mut ws, items, BIN, opts).expect("valid items");
            let e = packing.efficiency();
            eff_sum += e;
            eff_min = eff_min.min(e);
            if *n == 600 {
                bins600 += packing.bins_used;
                lb600 += packing.lower_bound();
                // Best of several repetitions: the least disturbed run.
                let reps = if opts.heuristic == Heuristic::CEpBfd { 3 } else { 20 };
                let mut best = f64::INFINITY;
                for _ in 0..reps {
                    let t = Instant::now();
                    let p = pack_with(&mut ws, items, BIN, opts).expect("valid items");
                    std::hint::black_box(&p);
                    best = best.min(t.elapsed().as_secs_f64());
                }
                time600 += best;
            }
        }
        println!(
            "| {name} | {:.4} | {:.4} | {:.1} / {:.1} | {:.0} |",
            eff_sum / sets.len() as f64,
            eff_min,
            bins600 as f64 / SEEDS as f64,
            lb600 as f64 / SEEDS as f64,
            time600 / SEEDS as f64 * 1e6
        );
    }
}
