//! Trace replay: steps a recorded hierarchy again, on any backend.
//!
//! A trace is a hierarchy file (`hierarchy_<step>.json`, which
//! `euler_sphere` writes at every regrid). The replay puts its patches on
//! the deck's geometry and fills them with a state: the run's own, from a
//! checkpoint of the run at that step (`--checkpoint`), or the deck's
//! problem's initial state. It then advances `--steps` whole steps with
//! the hierarchy kept fixed (`--regrid` lets the deck's regrids change
//! it) and prints the time per step, the phases and the state digest.
//!
//! ```text
//! cargo run --release --example replay -- --trace out/hierarchy_000004.json \
//!     [--checkpoint out/sphere.checkpoint.h5] [--steps 8] [--regrid] \
//!     [--config DECK] [--backend cpu|cuda] [--residency host|device] \
//!     [--summary-json FILE]
//! ```
//!
//! The deck must be the run's (its base grid, levels and patch limits):
//! a trace of another geometry is refused, saying what does not fit.

// The summary's `serde_json::json!` object nests deeper than the default
// limit of 128 macro expansions.
#![recursion_limit = "256"]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use quilt::integrator::cli::DeckArgs;
use quilt::integrator::deck::{Deck, Precision};
use quilt::integrator::{Integrator, IntegratorBuilder, Real, SolveBackend, backend_for};
use quilt::mesh::read_hierarchy_with;
use quilt_io::{CheckpointReal, read_checkpoint};

#[path = "common/summary.rs"]
mod summary;

#[derive(Parser, Debug)]
#[command(about = "Steps a recorded hierarchy (a trace) again on any backend")]
struct Args {
    /// The trace: a hierarchy file written by euler_sphere.
    #[arg(long, value_name = "FILE")]
    trace: PathBuf,
    /// A checkpoint of the run at the trace's step: its state, time and
    /// step (its hierarchy must be the trace's).
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    /// Steps to take.
    #[arg(long, default_value_t = 8)]
    steps: u64,
    /// Let the deck's regrids change the hierarchy (kept fixed without).
    #[arg(long)]
    regrid: bool,
    /// Also writes the run's summary as JSON here (as `euler_sphere`
    /// does, with the trace's path and the state digest).
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,
    #[command(flatten)]
    deck: DeckArgs,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    match run_args(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replay: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_args(args: &Args) -> Result<()> {
    if args.steps == 0 {
        bail!("--steps must be at least 1");
    }
    let mut deck = args.deck.load()?;
    if !args.regrid {
        deck.amr.regrid_interval = 0;
    }
    deck.run.max_steps = 0;
    deck.run.end_time = f64::MAX;
    match deck.run.precision {
        Precision::F32 => replay::<f32>(args, &deck),
        Precision::F64 => replay::<f64>(args, &deck),
    }
}

fn replay<T: Real + CheckpointReal>(args: &Args, deck: &Deck) -> Result<()> {
    let t0 = Instant::now();
    let trace = read_hierarchy_with(&args.trace, deck.size_limits())
        .with_context(|| format!("reading the trace {}", args.trace.display()))?;
    let builder = IntegratorBuilder::<T>::new(deck);
    let backend: Box<dyn SolveBackend<T>> = backend_for(deck)?;
    let mut it: Integrator<T, Box<dyn SolveBackend<T>>> = match &args.checkpoint {
        None => builder.on_hierarchy(&trace, backend)?,
        Some(path) => {
            let ck = read_checkpoint::<T>(path)
                .with_context(|| format!("reading the checkpoint {}", path.display()))?;
            let h = builder.trace_hierarchy(&trace)?;
            if h.specs() != ck.hierarchy.specs() {
                bail!(
                    "the checkpoint {} holds another hierarchy than the trace {} ({} against {} patches): give the checkpoint written at the trace's step",
                    path.display(),
                    args.trace.display(),
                    ck.hierarchy.num_patches(),
                    h.num_patches()
                );
            }
            builder.from_state(h, ck.data, ck.run.time, ck.run.step, backend)?
        }
    };
    let setup = t0.elapsed().as_secs_f64();
    let h = it.hierarchy();
    println!(
        "trace {}: {} levels, {} patches, {} cells; state from {}; set-up {:.3} s; backend {}",
        args.trace.display(),
        h.num_levels(),
        h.num_patches(),
        h.total_cells(),
        args.checkpoint.as_ref().map_or_else(
            || "the initial condition".to_string(),
            |p| p.display().to_string()
        ),
        setup,
        it.backend().name()
    );
    let t = Instant::now();
    for _ in 0..args.steps {
        it.step()?;
    }
    let wall = t.elapsed().as_secs_f64();
    let (steps, cells, p) = {
        let tot = it.totals();
        (tot.steps, tot.cells, tot.phases)
    };
    println!(
        "{steps} steps in {wall:.3} s ({:.2} ms per step): {:.3e} cell updates/s; solve {:.3} s, batch loop {:.3} s, reflux + restrict {:.3} s, regrid {:.3} s",
        1e3 * wall / steps.max(1) as f64,
        cells as f64 / wall,
        p.solve,
        p.batch_loop,
        p.reflux_restrict,
        p.regrid
    );
    let digest = it.state_digest()?;
    println!(
        "time {:.9e} after step {}; state digest {digest:016x}",
        it.time(),
        it.steps(),
    );
    if let Some(path) = &args.summary_json {
        let extra = serde_json::json!({
            "trace": args.trace.display().to_string(),
            "digest": format!("{digest:016x}"),
        });
        summary::write(&it, setup, extra, path)?;
    }
    Ok(())
}
