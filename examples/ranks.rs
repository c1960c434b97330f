//! Runs a deck over ranks and prints what the run did and a digest of its
//! final state: two runs with equal digests ended bitwise equal, whatever
//! their rank counts.
//!
//! With the `mpi` feature the ranks are those of `mpirun`:
//!
//! ```text
//! cargo build --release --features mpi --example ranks
//! mpirun -np 3 target/release/examples/ranks --config examples/decks/ranks_small.toml
//! ```
//!
//! Without it, `--ranks N` runs N in-process ranks (threads), and
//! `--ranks 1` the plain serial run. `--threads` sets each rank's worker
//! threads (default: the deck's `run.threads`). Rank 0 prints the summary;
//! `RUST_LOG=info` shows each rank's regrids and distributions.
//!
//! Output and checkpoints gather the state onto rank 0, which writes one
//! file whatever the rank count: `--output DIR` writes the final state as a
//! VTKHDF file (with its `.hdf.series`), `--checkpoint FILE` a checkpoint
//! when the run stops (at its end or after `--stop-after N` steps), and
//! `--restart FILE` continues such a checkpoint on any number of ranks.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use quilt::dist::Transport;
use quilt::integrator::cli::DeckArgs;
use quilt::integrator::deck::{Deck, Precision};
use quilt::integrator::{Integrator, Real, SolveBackend, backend_for};
use quilt_io::{CheckpointReal, VtkHdfSeries};

#[derive(Parser)]
#[command(about = "Runs a deck over ranks and prints a digest of the final state")]
struct Cli {
    #[command(flatten)]
    deck: DeckArgs,
    /// In-process ranks, when built without the `mpi` feature (1: the
    /// serial run).
    #[arg(long, default_value_t = 1)]
    ranks: usize,
    /// Worker threads per process (default: the deck's `run.threads`).
    #[arg(long)]
    threads: Option<usize>,
    /// Continues the run stored in this checkpoint.
    #[arg(long, value_name = "FILE")]
    restart: Option<PathBuf>,
    /// Stops after this many steps (of this invocation).
    #[arg(long, value_name = "N")]
    stop_after: Option<u64>,
    /// Writes a checkpoint here when the run stops.
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    /// Writes the final state as VTKHDF into this directory.
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Exchanges everything after each step's batch loop instead of
    /// boundary-first (for measuring what the overlap hides).
    #[arg(long)]
    no_overlap: bool,
}

/// What to read and write besides the run.
#[derive(Clone, Copy)]
struct Files<'a> {
    restart: Option<&'a std::path::Path>,
    stop_after: Option<u64>,
    checkpoint: Option<&'a std::path::Path>,
    output: Option<&'a std::path::Path>,
    overlap: bool,
}

impl<'a> Files<'a> {
    fn of(cli: &'a Cli) -> Self {
        Self {
            restart: cli.restart.as_deref(),
            stop_after: cli.stop_after,
            checkpoint: cli.checkpoint.as_deref(),
            output: cli.output.as_deref(),
            overlap: !cli.no_overlap,
        }
    }
}

/// What one rank measured.
struct Summary {
    ranks: usize,
    threads: usize,
    steps: u64,
    cells: u64,
    wall: f64,
    halo: f64,
    halo_by_kind: [f64; 3],
    halo_counts: [quilt::dist::ExchangeCounts; 3],
    phases: quilt::integrator::PhaseTimes,
    rank: usize,
    overlap: bool,
    digest: u64,
    totals: Vec<f64>,
    fresh: u64,
}

fn run<T: Real + CheckpointReal>(
    deck: &Deck,
    files: Files<'_>,
    transport: Option<Box<dyn Transport>>,
) -> Result<Summary> {
    let backend: Box<dyn SolveBackend<T>> = backend_for(deck)?;
    let mut it = match files.restart {
        Some(path) => Integrator::restart(path, Some(deck), backend)?,
        None => Integrator::new(deck, backend)?,
    };
    let ranks = transport.as_ref().map_or(1, |t| t.size());
    it.set_halo_overlap(files.overlap);
    if let Some(t) = transport {
        it.distribute(t)?;
    }
    let t0 = Instant::now();
    let mut cells = 0;
    let mut taken = 0;
    while !it.finished() && files.stop_after.is_none_or(|n| taken < n) {
        cells += it.step()?.solved_cells;
        taken += 1;
    }
    let wall = t0.elapsed().as_secs_f64();
    if let Some(path) = files.checkpoint {
        it.write_checkpoint(path)?;
    }
    if let Some(dir) = files.output {
        let out = it.output()?;
        if let Some(out) = out {
            let mut series = VtkHdfSeries::create(dir, &deck.output.name)?;
            series.write(&out)?;
        }
    }
    Ok(Summary {
        ranks,
        threads: rayon::current_num_threads(),
        steps: it.steps(),
        cells,
        wall,
        halo: it.halo_seconds(),
        halo_by_kind: it.halo_seconds_by_kind(),
        halo_counts: it.halo_counts(),
        phases: it.totals().phases,
        rank: it.rank().map_or(0, |r| r.0),
        overlap: files.overlap,
        digest: it.state_digest()?,
        totals: it.global_totals()?,
        fresh: it.fresh_distributions(),
    })
}

/// The run on this rank, in the deck's precision. The integrator stays on
/// the calling thread (MPI is initialised for it); its parallel loops go to
/// rayon's global pool.
fn on_rank(
    deck: &Deck,
    files: Files<'_>,
    transport: Option<Box<dyn Transport>>,
) -> Result<Summary> {
    match deck.run.precision {
        Precision::F64 => run::<f64>(deck, files, transport),
        Precision::F32 => run::<f32>(deck, files, transport),
    }
}

/// One rank's phases and exchanges, one line each (every rank prints its
/// own).
fn print_rank(s: &Summary) {
    let p = &s.phases;
    println!(
        "rank {}: steps {:.3} s: batch loop {:.3}, reflux + restrict {:.3}, regrid {:.3}, other {:.3}",
        s.rank, p.wall, p.batch_loop, p.reflux_restrict, p.regrid, p.other
    );
    for (name, c) in ["old interiors", "flux blocks", "restriction"]
        .iter()
        .zip(&s.halo_counts)
    {
        println!(
            "rank {}: {name}: sent {:.1} MB in {} messages, received {:.1} MB in {}; pack {:.3} s, wait {:.3} s, unpack {:.3} s",
            s.rank,
            c.sent_bytes as f64 / 1e6,
            c.sent_messages,
            c.received_bytes as f64 / 1e6,
            c.received_messages,
            c.pack_seconds,
            c.wait_seconds,
            c.unpack_seconds
        );
    }
}

fn print(s: &Summary) {
    println!(
        "ranks: {} ranks x {} threads, {} steps, {} cell updates in {:.3} s: {:.4e} cell updates/s; rank 0 exchanges {:.3} s ({:.1} % of its steps); {} fresh distributions",
        s.ranks,
        s.threads,
        s.steps,
        s.cells,
        s.wall,
        s.cells as f64 / s.wall.max(1e-12),
        s.halo,
        100.0 * s.halo / s.wall.max(1e-12),
        s.fresh
    );
    let [old, flux, restrict] = s.halo_by_kind;
    println!(
        "ranks: rank 0 exchanges by kind ({}): old interiors {old:.3} s, flux blocks {flux:.3} s, restriction {restrict:.3} s",
        if s.overlap {
            "boundary-first"
        } else {
            "after the batch loop"
        }
    );
    println!("ranks: conserved totals {:?}", s.totals);
    println!("ranks: state digest {:016x}", s.digest);
}

#[cfg(feature = "mpi")]
fn run_main(cli: &Cli, deck: &Deck) -> Result<()> {
    if cli.ranks != 1 {
        anyhow::bail!("--ranks is for in-process ranks; under MPI the ranks are mpirun's");
    }
    let t = quilt::dist::transport::MpiRanks::init()?;
    let me = t.rank();
    let s = on_rank(deck, Files::of(cli), Some(Box::new(t)))?;
    print_rank(&s);
    if me == 0 {
        print(&s);
    }
    Ok(())
}

#[cfg(not(feature = "mpi"))]
fn run_main(cli: &Cli, deck: &Deck) -> Result<()> {
    let s = if cli.ranks <= 1 {
        on_rank(deck, Files::of(cli), None)?
    } else {
        let files = Files::of(cli);
        let mut all =
            quilt::dist::run_ranks(cli.ranks, |t| on_rank(deck, files, Some(Box::new(t))));
        all.swap_remove(0)?
    };
    print_rank(&s);
    print(&s);
    Ok(())
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    quilt::integrator::cli::exit_status((|| -> Result<ExitCode> {
        let deck = cli.deck.load()?;
        rayon::ThreadPoolBuilder::new()
            .num_threads(cli.threads.unwrap_or(deck.run.threads))
            .build_global()
            .context("building the thread pool")?;
        run_main(&cli, &deck)?;
        Ok(ExitCode::SUCCESS)
    })())
}
