//! Generates a synthetic AMR hierarchy (Raghavan & Vadhiyar 2015, section
//! 4.1), prints a summary and optionally writes it as a hierarchy file.
//!
//! ```text
//! cargo run --release --example synthetic -- --patches 420 --seed 1 --out out/synthetic-420.json
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use quilt::mesh::hierarchy_file::{read_hierarchy_with, write_hierarchy};
use quilt::mesh::synthetic::{SyntheticSpec, generate};

/// Random patch hierarchies over a 128³ domain: 64 base patches of 32³,
/// then refined patches of 16..=64 cells per side (ghosts included).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Total number of patches, the 64 base patches included.
    #[arg(long, default_value_t = 420)]
    patches: usize,
    /// Seed of the random generator (same seed, same hierarchy).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Ghost cells per side of every patch.
    #[arg(long, default_value_t = 3)]
    ghost: i32,
    /// Refinement ratio between levels (2 or 4).
    #[arg(long, default_value_t = 2)]
    ratio: i32,
    /// Write the hierarchy to this JSON file (atomically).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    let spec = SyntheticSpec {
        patches: args.patches,
        seed: args.seed,
        ghost: args.ghost,
        ratio: args.ratio,
        ..Default::default()
    };
    let t = Instant::now();
    let h = generate(&spec).context("generating the synthetic hierarchy")?;
    let elapsed = t.elapsed();
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "synthetic hierarchy: seed {}, ratio {}, generated and validated in {:.1} ms ({:.0} patches/s)",
        args.seed,
        args.ratio,
        elapsed.as_secs_f64() * 1e3,
        h.num_patches() as f64 / elapsed.as_secs_f64()
    )?;
    writeln!(stdout, "{}", h.summary())?;
    if let Some(out) = &args.out {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let t = Instant::now();
        write_hierarchy(&h, out)?;
        let written = t.elapsed();
        // Read it back: the file must describe the same hierarchy.
        let t = Instant::now();
        let back = read_hierarchy_with(out, h.limits())?;
        let read = t.elapsed();
        anyhow::ensure!(
            back.specs() == h.specs(),
            "{} does not read back as the generated hierarchy",
            out.display()
        );
        writeln!(
            stdout,
            "wrote {} ({} patches) in {:.1} ms, read back and validated in {:.1} ms",
            out.display(),
            back.num_patches(),
            written.as_secs_f64() * 1e3,
            read.as_secs_f64() * 1e3
        )?;
    }
    Ok(())
}
