//! The sphere problem of SAMRAI's Euler application (the source of the
//! traces of Raghavan & Vadhiyar 2015): a sphere of radius 0.125 at the
//! centre of the unit cube with ρ = 8, p = 40 inside and ρ = 1, p = 1
//! outside, γ = 1.4, outflow boundaries, refined by pressure-gradient and
//! pressure-shock tagging on up to 4 levels. The run stops when the blast
//! wave has travelled 0.25 from the centre (t = 0.045 by default; the
//! summary prints the radius reached).
//!
//! ```text
//! cargo run --release --example euler_sphere -- [--config DECK.toml] [--levels N]
//!     [--max-steps N] [--end-time T] [--out DIR] [--backend auto|cpu|cuda] [--residency auto|host|device]
//!     [--output-interval N] [--checkpoint-interval N] [--restart FILE] [--no-output]
//! ```
//!
//! Writes `DIR/sphere_<step>.hdf` (VTKHDF OverlappingAMR) with
//! `DIR/sphere.hdf.series` for ParaView, and `DIR/hierarchy_<step>.json`
//! (quilt-mesh's hierarchy files, for benchmark replay) at the start and
//! after every regrid; then prints a summary table. A `--config` deck
//! starts from quilt's defaults (`quilt::integrator::deck::DEFAULT_DECK`,
//! which is this sphere problem to t = 0.2), not from this example's. Checkpoints go to
//! `DIR/sphere.checkpoint.h5` (replaced atomically) every
//! `output.checkpoint_interval` steps and when SIGINT (Ctrl-C), SIGTERM or
//! SIGHUP arrives, after which the run exits with 128 + the signal number
//! (130, 143, 129); `--restart` continues from one with the stored deck (the
//! command-line overrides still apply).

// The summary's `serde_json::json!` object nests deeper than the default
// limit of 128 macro expansions.
#![recursion_limit = "256"]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use quilt::integrator::cli::DeckArgs;
use quilt::integrator::deck::{Deck, InitialKind, Precision, Residency};
use quilt::integrator::stop::StopRequest;
use quilt::integrator::{Integrator, Real, SolveBackend, backend_for};
use quilt::mesh::write_hierarchy;
use quilt_io::{CheckpointReal, VtkHdfSeries, read_checkpoint_info};

#[path = "common/summary.rs"]
mod summary;

/// The example's defaults on top of quilt's: the sphere problem itself is
/// the deck default; this fixes where it is written and when it ends.
const SPHERE_DECK: &str = r#"
[amr]
max_levels = 4
[run]
end_time = 0.045
[output]
dir = "out/euler_sphere"
name = "sphere"
interval = 20
"#;

#[derive(Parser, Debug)]
#[command(about = "Euler sphere blast wave on an adaptive hierarchy")]
struct Cli {
    /// Also `--levels`, `--output-interval` and `--checkpoint-interval`:
    /// overrides that validation blames on their option, not on the deck.
    #[command(flatten)]
    deck: DeckArgs,
    /// Continues the run stored in this checkpoint.
    #[arg(long, value_name = "FILE")]
    restart: Option<PathBuf>,
    /// Writes no files at all (but `--summary-json`).
    #[arg(long)]
    no_output: bool,
    /// Also writes the summary (phases, rates, memory) as JSON to this file,
    /// for the benchmark harness (`scripts/sphere-bench.sh`).
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,
}

/// Patch states (megabytes each) are allocated and freed at every regrid.
/// After the first such free, glibc raises its mmap threshold and serves
/// them from the heap, where freed pages stay with the process. A fixed
/// threshold keeps large buffers in their own mappings, which return to the
/// system when freed and keep the peak of a regrid down.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn fix_mmap_threshold() {
    unsafe extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    const M_MMAP_THRESHOLD: i32 = -3;
    // SAFETY: mallopt only sets an allocator parameter; it is called before
    // any other thread exists.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn fix_mmap_threshold() {}

fn main() -> std::process::ExitCode {
    quilt::integrator::cli::exit_status(run_main())
}

fn run_main() -> Result<ExitCode> {
    fix_mmap_threshold();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let base = match &cli.restart {
        Some(path) => {
            let info = read_checkpoint_info(path)?;
            (info.run.deck, format!("deck stored in {}", path.display()))
        }
        None => (
            SPHERE_DECK.to_string(),
            "<euler_sphere defaults>".to_string(),
        ),
    };
    let deck = cli.deck.load_over(base)?;
    let stop = StopRequest::install().context("installing the signal handlers")?;
    if !cli.no_output {
        // A run killed earlier (SIGKILL, power loss) may have left
        // temporaries of its atomic writes behind.
        let removed = quilt_io::remove_stale_temporaries(&deck.output.dir)?;
        if !removed.is_empty() {
            log::info!(
                "removed {} temporary files of earlier runs from {}",
                removed.len(),
                deck.output.dir.display()
            );
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(deck.run.threads)
        .build()
        .context("building the thread pool")?;
    let json = cli.summary_json.as_deref();
    pool.install(|| match deck.run.precision {
        Precision::F64 => run::<f64>(&deck, !cli.no_output, cli.restart.as_deref(), json, &stop),
        Precision::F32 => run::<f32>(&deck, !cli.no_output, cli.restart.as_deref(), json, &stop),
    })
}

fn run<T: Real + CheckpointReal>(
    deck: &Deck,
    write: bool,
    restart: Option<&Path>,
    json: Option<&Path>,
    stop: &StopRequest,
) -> Result<ExitCode> {
    let backend: Box<dyn SolveBackend<T>> = backend_for(deck)?;
    log::info!("solve backend: {}", backend.device());
    let t0 = Instant::now();
    let mut it = match restart {
        Some(path) => Integrator::restart(path, Some(deck), backend)?,
        None => Integrator::new(deck, backend)?,
    };
    let setup = t0.elapsed().as_secs_f64();
    let dir = deck.output.dir.clone();
    let name = &deck.output.name;
    let mut series = match (write, restart) {
        (false, _) => None,
        (true, None) => Some(VtkHdfSeries::create(&dir, name)?),
        (true, Some(_)) => Some(VtkHdfSeries::resume(&dir, name, it.time())?),
    };
    let checkpoint_path = dir.join(format!("{name}.checkpoint.h5"));
    let checkpoint = |it: &mut Integrator<T, Box<dyn SolveBackend<T>>>| -> Result<()> {
        let t = Instant::now();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        it.write_checkpoint(&checkpoint_path)?;
        it.record_output(t.elapsed().as_secs_f64());
        Ok(())
    };
    let output = |it: &mut Integrator<T, Box<dyn SolveBackend<T>>>,
                  series: &mut Option<VtkHdfSeries>|
     -> Result<()> {
        let Some(s) = series.as_mut() else {
            return Ok(());
        };
        let t = Instant::now();
        if let Some(out) = it.output()? {
            s.write(&out)?;
        }
        it.record_output(t.elapsed().as_secs_f64());
        Ok(())
    };
    let hierarchy_file = |it: &mut Integrator<T, Box<dyn SolveBackend<T>>>| -> Result<()> {
        if !(write && deck.output.hierarchy_files) {
            return Ok(());
        }
        let t = Instant::now();
        let path = dir.join(format!("hierarchy_{:06}.json", it.steps()));
        write_hierarchy(it.hierarchy(), &path)
            .with_context(|| format!("writing {}", path.display()))?;
        it.record_output(t.elapsed().as_secs_f64());
        Ok(())
    };
    if restart.is_none() {
        hierarchy_file(&mut it)?;
        output(&mut it, &mut series)?;
    }

    let end = deck.run.end_time;
    let bar = ProgressBar::new(1000);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] t = {msg}")
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .progress_chars("=> "),
    );
    while !it.finished() {
        let info = it.step()?;
        if info.regridded {
            hierarchy_file(&mut it)?;
        }
        let interval = deck.output.interval;
        if interval > 0 && info.step % interval == 0 && !it.finished() {
            output(&mut it, &mut series)?;
        }
        let every = deck.output.checkpoint_interval;
        if write && every > 0 && info.step % every == 0 {
            checkpoint(&mut it)?;
        }
        if let Some(sig) = stop.signal() {
            bar.abandon();
            if write {
                checkpoint(&mut it)?;
                eprintln!(
                    "interrupted by {} at step {} (t = {}): checkpoint {}; continue with --restart",
                    sig.name(),
                    it.steps(),
                    it.time(),
                    checkpoint_path.display()
                );
            } else {
                eprintln!(
                    "interrupted by {} at step {} (t = {})",
                    sig.name(),
                    it.steps(),
                    it.time()
                );
            }
            it.sync_host()?;
            summary(
                &it,
                setup,
                shock_radius(&it, deck),
                write.then_some(dir.as_path()),
            );
            return Ok(ExitCode::from(sig.exit_code() as u8));
        }
        let frac = if end > 0.0 {
            it.time() / end
        } else {
            info.step as f64 / deck.run.max_steps.max(1) as f64
        };
        bar.set_position((frac.clamp(0.0, 1.0) * 1000.0) as u64);
        bar.set_message(format!(
            "{:.5} step {} dt {:.2e} | {} levels, {} patches, {:.2} M cells",
            it.time(),
            info.step,
            info.dt,
            info.levels,
            info.patches,
            info.cells as f64 / 1e6
        ));
    }
    output(&mut it, &mut series)?;
    bar.finish();
    it.sync_host()?;
    let radius = shock_radius(&it, deck);
    summary(&it, setup, radius, write.then_some(dir.as_path()));
    // Equal digests: bitwise equal states, whatever the backend or batching.
    let digest = it.state_digest()?;
    println!("state digest {digest:016x}");
    if let Some(path) = json {
        summary::write(
            &it,
            setup,
            serde_json::json!({ "shock_radius": radius, "digest": format!("{digest:016x}") }),
            path,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Distance from the sphere's centre of the farthest cell whose pressure
/// exceeds the ambient one by 10 %: the blast wave's radius.
fn shock_radius<T: Real, B: SolveBackend<T>>(it: &Integrator<T, B>, deck: &Deck) -> f64 {
    // The blast's centre and the ambient pressure the front runs into.
    let (center, ambient) = match deck.initial.kind {
        InitialKind::Sedov => (deck.initial.sedov.center, deck.initial.sedov.p_ambient),
        _ => (deck.initial.sphere.center, deck.initial.sphere.p_out),
    };
    let h = it.hierarchy();
    let gas = deck.gas();
    let mut r: f64 = 0.0;
    for (i, p) in h.patches().iter().enumerate() {
        let Some(lg) = h.level_geometry(p.level()) else {
            continue;
        };
        let d = it.data().old(i);
        for q in p.interior().iter() {
            let u: [f64; 5] = std::array::from_fn(|c| quilt::mesh::Real::as_f64(d.get(c, &q)));
            let pr = gas.primitive(u).2;
            if pr > 1.1 * ambient {
                let x = lg.cell_center(&q);
                let dist = ((x.x - center[0]).powi(2)
                    + (x.y - center[1]).powi(2)
                    + (x.z - center[2]).powi(2))
                .sqrt();
                r = r.max(dist);
            }
        }
    }
    r
}

fn summary<T: Real, B: SolveBackend<T>>(
    it: &Integrator<T, B>,
    setup: f64,
    radius: f64,
    dir: Option<&Path>,
) {
    let t = it.totals();
    let p = &t.phases;
    let h = it.hierarchy();
    println!();
    println!(
        "quilt euler_sphere: {} {} on {} ({})",
        it.deck().hydro.scheme,
        <T as quilt::mesh::Real>::NAME,
        it.backend().name(),
        it.backend().device()
    );
    println!(
        "steps {}, t = {:.5}, shock radius {:.4} (travelled from the centre), {} regrids",
        t.steps,
        it.time(),
        radius,
        t.regrids
    );
    let wall = p.wall + setup;
    println!(
        "cells updated {:.4e} in {:.2} s of steps: {:.3e} cell updates/s (solver advanced {:.4e} cells incl. flux probes)",
        t.cells as f64,
        p.wall,
        t.cells as f64 / p.wall.max(1e-12),
        t.solved_cells as f64
    );
    println!();
    println!(
        "{:>5} {:>8} {:>12} {:>10}",
        "level", "patches", "cells", "dx"
    );
    for l in 0..h.num_levels() {
        let dx = h.level_geometry(l).map_or(0.0, |g| g.dx.x);
        println!(
            "{l:>5} {:>8} {:>12} {:>10.3e}",
            h.level_patches(l).len(),
            h.level_cells(l),
            dx
        );
    }
    println!(
        "{:>5} {:>8} {:>12}   bins {} (fill {:.3})",
        "all",
        h.num_patches(),
        h.total_cells(),
        it.num_bins(),
        it.fill_ratio()
    );
    let with_ghosts: i64 = h.patches().iter().map(|p| p.ghost_box().num_cells()).sum();
    let mb = |cells: i64| cells as f64 * 5.0 * std::mem::size_of::<T>() as f64 / 1e6;
    println!(
        "state: {:.0} MB per time level ({:.0} MB interiors only); peak resident memory {}",
        mb(with_ghosts),
        mb(h.total_cells()),
        summary::peak_memory().map_or("unknown".to_string(), |m| format!("{m:.0} MB"))
    );
    if let Some(b) = it.resident_bytes() {
        println!(
            "resident state in the backend: {:.0} MB, {:.2}× both time levels with ghosts",
            b as f64 / 1e6,
            b as f64 / 1e6 / (2.0 * mb(with_ghosts))
        );
    }
    println!();
    println!("{:<34} {:>10} {:>8}", "phase", "seconds", "share");
    let row =
        |name: &str, s: f64| println!("{name:<34} {s:>10.3} {:>7.1}%", 100.0 * s / wall.max(1e-12));
    row("setup (initial hierarchy)", setup);
    row("prepare", p.prepare);
    row("solve", p.solve);
    row("close", p.close);
    row("reflux + restrict", p.reflux_restrict);
    row("regrid (fill, tag, cluster, move)", p.regrid);
    row("output", p.output);
    row("idle (solver waiting)", p.idle);
    row("prepare + close hidden by pipeline", p.hidden());
    row("CFL scan and other", p.other);
    row("wall", wall);
    println!(
        "prepare tasks {:.3} core-s, close tasks {:.3} core-s (summed over threads)",
        p.prepare_tasks, p.close_tasks
    );
    if it.residency() == Residency::Device {
        println!(
            "device residency: \"solve\" is whole steps in the backend (fill, sweeps, refluxing, restriction); \"regrid\" is the fill and tagging in the backend, clustering and the new plans on the host, and the move into the new batch in the backend"
        );
    } else {
        println!(
            "batches {}, {:.1} per step; cost model error per batch: solve {:.1} %, prepare {:.1} %",
            t.batches,
            t.batches as f64 / t.steps.max(1) as f64,
            100.0 * t.estimates.solve_mean(),
            100.0 * t.estimates.prepare_mean()
        );
    }
    if let Some(g) = it.backend().solve_totals().filter(|g| g.batches > 0) {
        println!(
            "device solves: {} batches, {:.3} s in solve calls (device state of new layouts {:.3} s, {} built ahead); GPU {:.3} s (uploads {:.3}, kernels {:.3}) + downloads {:.3} s; {:.2} GB up, {:.2} GB down: {:.1} GB/s over the bus, uploads {:.1} GB/s",
            g.batches,
            g.host_secs,
            g.state_secs,
            g.staged_layouts,
            g.gpu_secs,
            g.upload_secs,
            g.kernel_secs,
            g.download_secs,
            g.bytes_up as f64 / 1e9,
            g.bytes_down as f64 / 1e9,
            g.bus_rate() / 1e9,
            g.upload_rate() / 1e9
        );
    }
    if let Some(g) = it.backend().solve_totals().filter(|g| g.resident_steps > 0) {
        let r = g.resident_secs;
        println!(
            "resident steps on the device: {} steps, {:.3} s of device time: CFL rate {:.3}, ghost fill and probes {:.3}, scan and sweeps {:.3}, refluxing and restriction {:.3}; fill, refluxing and restriction {:.1} % of it",
            g.resident_steps,
            r.total(),
            r.rate,
            r.fill,
            r.sweeps,
            r.levels,
            100.0 * r.amr_share()
        );
    }
    if t.floors.total() > 0 {
        println!("floors applied {} times", t.floors.total());
    }
    if let Some(d) = dir {
        println!("output in {}", d.display());
    }
}
