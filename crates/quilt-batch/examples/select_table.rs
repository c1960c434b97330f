//! Prints a table of adaptive selections from 500 random bins with P = 16:
//! bins and patches taken, balance, and time per selection (median of many
//! runs) for the greedy pass alone and with the branch-and-bound search.
//!
//! `cargo run --release -p quilt-batch --example select_table [reps]`

use std::time::Instant;

use quilt_batch::{
    AdaptiveOptions, BinWork, Coefficients, CostModel, PatchWork, Selection, Selector,
};

/// Deterministic bins: 1–12 patches each, interiors 8–40 per axis, 3 ghosts.
fn bins(n: usize) -> Vec<BinWork> {
    let mut s = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |lo: u64, hi: u64| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        lo + s % (hi - lo + 1)
    };
    (0..n)
        .map(|_| {
            let k = next(1, 12);
            let mut patches = Vec::new();
            let mut volume = 0;
            for _ in 0..k {
                let extent = [0; 3].map(|_: u32| next(8, 40) as u32 + 6);
                let p = PatchWork::new(extent, 3);
                let g = p.ghost_cells();
                let i = next(0, g);
                let p = p.with_ghost_fill(i, next(0, g - i));
                if !patches.is_empty() && volume + p.cells() > 64 * 64 * 64 {
                    break;
                }
                volume += p.cells();
                patches.push(p);
            }
            BinWork::new(patches, 40).expect("valid bins")
        })
        .collect()
}

fn main() -> Result<(), quilt_batch::BatchError> {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let bins = bins(500);
    let model = CostModel::new(Coefficients::gpu_default())?;
    let queues = 16;
    let total: f64 = bins.iter().map(|b| model.bin_prepare(b)).sum();
    println!(
        "| capacity share | selector | bins | patches | max-min load / largest patch | makespan / capacity | µs per selection (median) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for share in [0.02, 0.05, 0.2, 0.5] {
        let capacity = total / queues as f64 * share;
        for (name, opts) in [
            (
                "greedy (paper)",
                AdaptiveOptions {
                    search_nodes: 0,
                    exact_patches: 0,
                    ..AdaptiveOptions::default()
                },
            ),
            ("adaptive (default)", AdaptiveOptions::default()),
        ] {
            let mut selector = Selector::new();
            let mut out = Selection::new();
            let mut times = Vec::with_capacity(reps);
            for _ in 0..reps {
                let t = Instant::now();
                selector.adaptive(&bins, capacity, queues, &model, &opts, &mut out)?;
                times.push(t.elapsed().as_secs_f64());
            }
            times.sort_by(f64::total_cmp);
            let loads = out.loads();
            let spread = loads.iter().copied().fold(f64::MIN, f64::max)
                - loads.iter().copied().fold(f64::MAX, f64::min);
            let largest = out
                .queues()
                .iter()
                .flatten()
                .map(|p| p.cost)
                .fold(0.0, f64::max);
            println!(
                "| {share} | {name} | {} | {} | {:.2} | {:.3} | {:.1} |",
                out.bins().len(),
                out.patch_count(),
                spread / largest,
                out.makespan() / capacity,
                1e6 * times[reps / 2]
            );
        }
    }
    Ok(())
}
