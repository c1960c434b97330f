//! Generates a synthetic AMR hierarchy (Raghavan & Vadhiyar 2015, section
//! 4.1), prints a summary and optionally writes it as a hierarchy file.
//!
//! ```text
//! cargo run --release --example synthetic -- --patches 420 --seed 1 --out out/synthetic-420.json
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use clap::Parser;
use quilt::mesh::hierarchy_file::{read_hierarchy_with, write_hierarchy};
use quilt::mesh::memory::check_fits;
use quilt::mesh::synthetic::{SyntheticSpec, generate};

/// Random patch hierarchies over a 128³ domain: 64 base patches of 32³,
/// then refined patches of 16..=64 cells per side (ghosts included).
///
/// The numeric options take values starting with `-`, so that `--patches -1`
/// is an invalid value of `--patches`, not an unknown argument `-1`.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Total number of patches, the 64 base patches included.
    #[arg(long, default_value_t = 420, allow_negative_numbers = true)]
    patches: usize,
    /// Seed of the random generator (same seed, same hierarchy).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    /// Ghost cells per side of every patch.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    ghost: i32,
    /// Refinement ratio between levels (2 or 4).
    #[arg(long, default_value_t = 2, value_parser = parse_ratio, allow_negative_numbers = true)]
    ratio: i32,
    /// Write the hierarchy to this JSON file (atomically).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn parse_ratio(s: &str) -> Result<i32, String> {
    match s.trim().parse::<i32>() {
        Ok(r @ (2 | 4)) => Ok(r),
        Ok(r) => Err(format!("must be 2 or 4, got {r}")),
        Err(e) => Err(format!("`{s}` is not an integer: {e}")),
    }
}

/// Peak resident memory per patch of a generated hierarchy with its
/// validation and summary, measured between 10⁵ and 10⁶ patches (2.2 kB),
/// rounded up.
const BYTES_PER_PATCH: u64 = 2_400;

/// What `--out` adds per patch: the hierarchy read back for comparison
/// lives next to the generated one (measured 1.8 kB), rounded up.
const READ_BACK_BYTES_PER_PATCH: u64 = 2_000;

/// How often a long generation or summary says it is still at work:
/// neither reports progress, and requests of millions of patches take
/// minutes.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// Refuses requests the generator cannot satisfy or this machine cannot
/// hold, naming the option and the limit, before minutes of work.
fn check_request(spec: &SyntheticSpec, out: bool) -> anyhow::Result<()> {
    let (base_side, limit) = (spec.base_patch, spec.limits.max);
    let max_ghost = (limit - base_side) / 2;
    ensure!(
        (0..=max_ghost).contains(&spec.ghost),
        "--ghost {} must lie in 0..={max_ghost}: a base patch of {base_side} cells per side \
         with its ghost cells must fit the patch size limit of {limit}",
        spec.ghost
    );
    let base = ((spec.domain_cells / base_side) as usize).pow(3);
    ensure!(
        spec.patches >= base,
        "--patches {} is fewer than the {base} patches of the base level",
        spec.patches
    );
    // Patch ids are 32-bit.
    let most = 1usize << 32;
    ensure!(
        spec.patches <= most,
        "--patches {} exceeds {most}, the most patches a hierarchy can number",
        spec.patches
    );
    let per_patch = BYTES_PER_PATCH + if out { READ_BACK_BYTES_PER_PATCH } else { 0 };
    let need = (spec.patches as u64).saturating_mul(per_patch);
    let what = if out {
        format!("--patches {} with --out (two hierarchies)", spec.patches)
    } else {
        format!("--patches {}", spec.patches)
    };
    check_fits(need, &what)?;
    Ok(())
}

/// Runs `work`, logging every [`HEARTBEAT`] that `what` is still under way.
fn with_heartbeat<R>(what: &str, work: impl FnOnce() -> R) -> R {
    let (done, wait) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            let start = Instant::now();
            // Ends when `done` is dropped: after `work`, or while a panic
            // in it unwinds.
            while let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(HEARTBEAT) {
                log::info!("{what}: {:.0} s so far", start.elapsed().as_secs_f64());
            }
        });
        let result = work();
        drop(done);
        result
    })
}

fn main() -> std::process::ExitCode {
    quilt::integrator::cli::exit_status(run_main().map(|()| std::process::ExitCode::SUCCESS))
}

fn run_main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    let spec = SyntheticSpec {
        patches: args.patches,
        seed: args.seed,
        ghost: args.ghost,
        ratio: args.ratio,
        ..Default::default()
    };
    check_request(&spec, args.out.is_some())?;
    let t = Instant::now();
    let h = with_heartbeat(&format!("generating {} patches", spec.patches), || {
        generate(&spec)
    })
    .context("generating the synthetic hierarchy")?;
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
    let summary = with_heartbeat("summarising the hierarchy", || h.summary());
    writeln!(stdout, "{summary}")?;
    if let Some(out) = &args.out {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let t = Instant::now();
        write_hierarchy(&h, out)?;
        let written = t.elapsed();
        // Read it back: the file must describe the same hierarchy.
        let t = Instant::now();
        let back = with_heartbeat(&format!("reading {} back", out.display()), || {
            read_hierarchy_with(out, h.limits())
        })?;
        let read = t.elapsed();
        ensure!(
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
