//! The founding paper's Table 3 (Raghavan & Vadhiyar 2015): bin-packing
//! efficiency and time for 120 to 600 patches of synthetic hierarchies
//! (section 4.1) in 64³ bins, for both readings of the paper's 32³ base
//! patches, against the Martello–Pisinger–Vigo lower bound on the bins.
//!
//! ```text
//! cargo run --release --example paper_pack -- --csv docs/figures/paper_table3.csv [--tiny]
//! ```
//!
//! The readings:
//! - `interiors`: base patches of 32³ interior cells, 38³ with their ghosts
//!   (quilt's synthetic hierarchies, a 128³ domain);
//! - `with-ghosts`: base patches of 32³ cells with their ghosts (26³
//!   interiors, a 104³ domain of the same 64 base patches).
//!
//! Refined patches are 16 to 64 cells per side with ghosts in both. Each row
//! averages 5 seeds (2 with `--tiny`, which also stops at 240 patches); the
//! time is the fastest of 5 packings (1 with `--tiny`) on one core. CSV
//! columns: `reading,heuristic,patches,seeds,bins,efficiency,bound_bins,bound_efficiency,time_ms`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use quilt::mesh::synthetic::{SyntheticSpec, generate};
use quilt::pack::{
    Extent, Heuristic, PackOptions, PackWorkspace, bins_lower_bound, pack_with, patch_extents,
};

#[derive(Debug, Parser)]
#[command(about = "The paper's Table 3: packing efficiency and time; CSV out")]
struct Args {
    /// The CSV file written (its folder is created).
    #[arg(long)]
    csv: PathBuf,
    /// Two sizes and two seeds, one packing each: seconds, for CI.
    #[arg(long)]
    tiny: bool,
}

const BIN: Extent = [64, 64, 64];

/// The two readings of the paper's base patches: name, domain cells, base
/// patch interior cells (ghost width 3).
const READINGS: [(&str, i32, i32); 2] = [("interiors", 128, 32), ("with-ghosts", 104, 26)];

fn items(domain: i32, base: i32, patches: usize, seed: u64) -> Result<Vec<Extent>> {
    let h = generate(&SyntheticSpec {
        patches,
        seed,
        domain_cells: domain,
        base_patch: base,
        ..Default::default()
    })
    .with_context(|| format!("synthetic hierarchy of {patches} patches, seed {seed}"))?;
    let all: Vec<usize> = (0..h.num_patches()).collect();
    Ok(patch_extents(&h, &all)?)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let counts: &[usize] = if args.tiny {
        &[120, 240]
    } else {
        &[120, 240, 360, 480, 600]
    };
    let (seeds, reps) = if args.tiny { (2, 1) } else { (5, 5) };
    let heuristics = [("ep-bfd", Heuristic::EpBfd), ("c-epbfd", Heuristic::CEpBfd)];
    let bin_volume = BIN.iter().map(|&e| f64::from(e)).product::<f64>();
    let mut csv = String::from(
        "reading,heuristic,patches,seeds,bins,efficiency,bound_bins,bound_efficiency,time_ms\n",
    );
    let mut ws = PackWorkspace::new();
    println!(
        "| reading | heuristic | patches | bins | efficiency | bound bins | bound efficiency | time ms |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (reading, domain, base) in READINGS {
        let sets = counts
            .iter()
            .map(|&n| {
                (1..=seeds)
                    .map(|s| items(domain, base, n, s))
                    .collect::<Result<Vec<_>>>()
                    .map(|v| (n, v))
            })
            .collect::<Result<Vec<_>>>()?;
        for (name, heuristic) in heuristics {
            let opts = PackOptions {
                heuristic,
                ..Default::default()
            };
            for (n, instances) in &sets {
                let (mut bins, mut eff, mut bound, mut bound_eff, mut time) =
                    (0.0, 0.0, 0.0, 0.0, 0.0);
                for items in instances {
                    let mut best = f64::INFINITY;
                    let mut packing = None;
                    for _ in 0..reps {
                        let t = Instant::now();
                        let p = pack_with(&mut ws, items, BIN, &opts)?;
                        best = best.min(t.elapsed().as_secs_f64());
                        packing = Some(p);
                    }
                    let p = packing.expect("at least one packing");
                    let lb = bins_lower_bound(items, BIN) as f64;
                    bins += p.bins_used as f64;
                    eff += p.efficiency();
                    bound += lb;
                    bound_eff += p.packed_volume() as f64 / (lb * bin_volume);
                    time += best;
                }
                let k = instances.len() as f64;
                let row = [bins / k, eff / k, bound / k, bound_eff / k, time / k * 1e3];
                writeln!(
                    csv,
                    "{reading},{name},{n},{},{:.1},{:.4},{:.1},{:.4},{:.3}",
                    instances.len(),
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    row[4]
                )?;
                println!(
                    "| {reading} | {name} | {n} | {:.1} | {:.4} | {:.1} | {:.4} | {:.3} |",
                    row[0], row[1], row[2], row[3], row[4]
                );
            }
        }
    }
    if let Some(dir) = args.csv.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    quilt::mesh::atomic_file::write_bytes(&args.csv, csv.as_bytes())
        .map_err(|(path, e)| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    Ok(())
}
