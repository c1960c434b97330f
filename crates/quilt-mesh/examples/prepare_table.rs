//! Prepare throughput table: interior copy plus ghost fill of every patch
//! of the synthetic hierarchies of Raghavan & Vadhiyar (2015, §4.1) with
//! 120, 240 and 420 patches, straight into 64³ bins of a batch buffer in
//! quilt-sweep's layout (5 components, reflecting walls, MC limiter), on
//! one thread, in `f32` and `f64`.
//!
//! Every pass prepares all patches once. The table gives the median and
//! the best pass in wall time, and the mean on-CPU time of the filling
//! thread per pass (over all timed passes: the kernel's CPU clock may tick
//! in steps of several milliseconds), so that a run on a loaded machine
//! can be judged: where on-CPU time is well below wall time, other
//! processes took the core. Throughput counts every cell written (interior
//! plus ghost cells), per second of on-CPU time (the rate per core) and
//! per second of the best pass's wall time (on an idle machine the most
//! precise figure).
//!
//! ```text
//! cargo run --release -p quilt-mesh --example prepare_table -- [--reps N]
//! taskset -c 2 ./prepare_table --reps 20     # pinned, on an idle node
//! ```

use std::error::Error;
use std::hint::black_box;
use std::time::{Duration, Instant};

use clap::Parser;
#[path = "../benches/common/prepare_field.rs"]
mod prepare_field;
use prepare_field::{NCOMP, old_data};
use quilt_mesh::fill::{BoundaryConditions, FillCounts, FillScratch, FillTarget, GhostFill};
use quilt_mesh::{Hierarchy, Limiter, PatchData, PhysicalBc, Real, SyntheticSpec, generate};

const BIN: usize = 64;

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "Prepare (interior copy + ghost fill) throughput, one thread")]
struct Args {
    /// Timed passes over all patches per hierarchy and precision (after one
    /// untimed warm-up pass).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    reps: u32,
    /// Patch counts of the synthetic hierarchies, comma separated.
    #[arg(long, value_delimiter = ',', default_values_t = [120usize, 240, 420])]
    patches: Vec<usize>,
    /// Bins the patches rotate through. The default, 8 (42 MB in `f32`, 84 MB
    /// in `f64`), is more than a last-level cache holds, as a real batch
    /// buffer would be; 1 shows the cost of writing to memory by difference.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    bins: u32,
    /// Precisions to measure: `f32`, `f64` or `both`.
    #[arg(long, default_value = "both", value_parser = ["f32", "f64", "both"])]
    precision: String,
    /// Seed of the synthetic hierarchies.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Nanoseconds the calling thread has run on a CPU (Linux `schedstat`).
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// User plus system time of the whole process (Linux `/proc/self/stat`,
/// in clock ticks of 1/100 s, the fixed `USER_HZ` of Linux on x86-64 and
/// arm64).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces; fields count from after its ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// One row of the table.
struct Row {
    patches: usize,
    levels: usize,
    precision: &'static str,
    counts: FillCounts,
    /// Wall time of each pass.
    walls: Vec<Duration>,
    /// On-CPU time of all passes together.
    cpu: Duration,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Prepares every patch of `h` once into the rotating bins of `buf`.
fn pass<T: Real>(
    h: &Hierarchy,
    fill: &GhostFill<T>,
    old: &[PatchData<T>],
    buf: &mut [T],
    scratch: &mut FillScratch<T>,
) -> Result<FillCounts, Box<dyn Error>> {
    let bins = buf.len() / (NCOMP * BIN * BIN * BIN);
    let mut sum = FillCounts::default();
    for (i, p) in h.patches().iter().enumerate() {
        let mut t = FillTarget::bin(buf, BIN, NCOMP, i % bins, [0; 3], p.ghost_box())?;
        let c = black_box(fill.prepare(old, i, 0.0, &mut t, scratch)?);
        sum.interior += c.interior;
        sum.ghosts.copied += c.ghosts.copied;
        sum.ghosts.interpolated += c.ghosts.interpolated;
        sum.ghosts.physical += c.ghosts.physical;
    }
    Ok(sum)
}

fn measure<T: Real>(h: &Hierarchy, reps: u32, bins: usize) -> Result<Row, Box<dyn Error>> {
    let old = old_data::<T>(h)?;
    let bc = BoundaryConditions::uniform(PhysicalBc::Reflecting).with_vector([1, 2, 3]);
    let fill = GhostFill::new(h, bc, Limiter::MonotonizedCentral)?;
    let mut buf = vec![T::zero(); bins * NCOMP * BIN * BIN * BIN];
    let mut scratch = FillScratch::new();
    // Warm-up: grows the scratch and touches every page of the buffer.
    let counts = pass(h, &fill, &old, &mut buf, &mut scratch)?;
    let expected: i64 = h.patches().iter().map(|p| p.ghost_box().num_cells()).sum();
    if counts.total() != expected {
        return Err(format!(
            "prepare wrote {} cells, the ghost-grown boxes hold {expected}",
            counts.total()
        )
        .into());
    }
    let mut walls = Vec::with_capacity(reps as usize);
    let (c0, t0) = (thread_cpu_ns(), Instant::now());
    for _ in 0..reps {
        let w0 = Instant::now();
        pass(h, &fill, &old, &mut buf, &mut scratch)?;
        walls.push(w0.elapsed());
    }
    let cpu = match (c0, thread_cpu_ns()) {
        (Some(a), Some(b)) => Duration::from_nanos(b.saturating_sub(a)),
        _ => t0.elapsed(),
    };
    black_box(&buf);
    Ok(Row {
        patches: h.patches().len(),
        levels: h.num_levels(),
        precision: T::NAME,
        counts,
        walls,
        cpu,
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = Args::parse();
    let (w0, p0) = (Instant::now(), process_cpu());
    let mut rows = Vec::new();
    for &n in &args.patches {
        let h = generate(&SyntheticSpec {
            patches: n,
            seed: args.seed,
            ..Default::default()
        })?;
        if args.precision != "f64" {
            rows.push(measure::<f32>(&h, args.reps, args.bins as usize)?);
        }
        if args.precision != "f32" {
            rows.push(measure::<f64>(&h, args.reps, args.bins as usize)?);
        }
    }
    println!(
        "prepare into {} rotating {BIN}^3 bins, {NCOMP} components, reflecting walls, MC limiter, one thread, {} timed passes",
        args.bins, args.reps
    );
    println!(
        "{:>7} {:>6} {:>4} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9} {:>5}",
        "patches",
        "levels",
        "prec",
        "cells",
        "interior",
        "copied",
        "interp",
        "boundary",
        "wall s",
        "best s",
        "cpu s",
        "Mcell/s",
        "best",
        "cpu%"
    );
    for r in &rows {
        let wall = median(r.walls.clone());
        let best = r.walls.iter().copied().min().unwrap_or(wall);
        let total: Duration = r.walls.iter().sum();
        let cpu = r.cpu / r.walls.len().max(1) as u32;
        let cells = r.counts.total() as f64;
        let rate = |d: Duration| cells / d.as_secs_f64().max(1e-12) / 1e6;
        println!(
            "{:>7} {:>6} {:>4} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8.4} {:>8.4} {:>8.4} {:>9.1} {:>9.1} {:>5.0}",
            r.patches,
            r.levels,
            r.precision,
            r.counts.total(),
            r.counts.interior,
            r.counts.ghosts.copied,
            r.counts.ghosts.interpolated,
            r.counts.ghosts.physical,
            wall.as_secs_f64(),
            best.as_secs_f64(),
            cpu.as_secs_f64(),
            rate(cpu),
            rate(best),
            100.0 * r.cpu.as_secs_f64() / total.as_secs_f64().max(1e-12)
        );
    }
    println!(
        "wall s: median pass; best s: fastest pass; cpu s: mean on-CPU time of the filling thread per pass"
    );
    println!(
        "Mcell/s: cells written per second of on-CPU time (per core); best: per second of the fastest pass's wall time; cpu%: on-CPU / wall over all passes"
    );
    match (p0, process_cpu()) {
        (Some(a), Some(b)) => println!(
            "process: {:.2} s CPU (user + system) in {:.2} s wall, setup included",
            (b - a).as_secs_f64(),
            w0.elapsed().as_secs_f64()
        ),
        _ => println!(
            "process: {:.2} s wall (no /proc CPU times on this system)",
            w0.elapsed().as_secs_f64()
        ),
    }
    Ok(())
}
