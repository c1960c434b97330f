//! quilt's developer tasks, run as `cargo xtask <task>`.
//!
//! | task | what it does |
//! |---|---|
//! | `setup` | checks (and, as root on Debian/Ubuntu, installs) the system packages the workspace needs |
//! | `test` | `setup`, then the whole test suite in the optimised `ci` profile, then the MPI checks when Open MPI's development packages are installed |
//! | `run` | `setup`, then the main job (the Euler sphere example) |
//!
//! The tasks shell out to `cargo`, `pkg-config` and `apt-get`; they hold no
//! build logic of their own so that plain `cargo` commands stay equivalent.

mod setup;

use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "quilt developer tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Check the system packages the workspace needs; install them with
    /// apt-get when running as root on Debian/Ubuntu.
    Setup {
        /// Only report what is missing; never install.
        #[arg(long)]
        check_only: bool,
        /// Also what quilt-dist's `mpi` feature needs (Open MPI, libclang).
        #[arg(long)]
        mpi: bool,
    },
    /// Run setup, then the whole test suite (optimised `ci` profile).
    Test {
        /// Extra arguments passed to `cargo test` after `--`.
        #[arg(last = true)]
        rest: Vec<String>,
    },
    /// Run setup, then the main job: the Euler sphere example.
    Run {
        /// Extra arguments passed to `euler_sphere` (see its `--help`).
        #[arg(last = true)]
        rest: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
        Task::Setup { check_only, mpi } => setup::run(!check_only, mpi),
        Task::Test { rest } => setup::run(true, false)
            .and_then(|()| test(&rest))
            .and_then(|()| mpi_checks()),
        Task::Run { rest } => setup::run(true, false).and_then(|()| run_main(&rest)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The root of the workspace (xtask lives two levels below it).
fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("xtask lives in crates/xtask")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(workspace_root());
    c
}

fn status(mut cmd: Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let st = cmd
        .status()
        .with_context(|| format!("could not start {shown}"))?;
    if !st.success() {
        bail!("{shown} failed ({st})");
    }
    Ok(())
}

fn test(rest: &[String]) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["test", "--workspace", "--profile", "ci"]);
    if !rest.is_empty() {
        cmd.arg("--").args(rest);
    }
    status(cmd)
}

/// quilt-dist's `mpi` feature: its tests, then the distributed fill
/// check under `mpirun` on 2 and 3 ranks (bitwise against the serial
/// fill). Skipped, with the reason, when Open MPI's development packages
/// are missing.
fn mpi_checks() -> Result<()> {
    if !setup::mpi_present() {
        eprintln!(
            "xtask test: MPI checks skipped: the `mpi` feature needs libopenmpi-dev, openmpi-bin and libclang-dev (cargo xtask setup --mpi installs them)"
        );
        return Ok(());
    }
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--profile",
        "ci",
        "-p",
        "quilt-dist",
        "--features",
        "mpi",
    ]);
    status(cmd)?;
    let mut cmd = cargo();
    cmd.args([
        "build",
        "--profile",
        "ci",
        "-p",
        "quilt-dist",
        "--features",
        "mpi",
        "--example",
        "fill_check",
    ]);
    status(cmd)?;
    let exe = workspace_root().join("target/ci/examples/fill_check");
    for ranks in ["2", "3"] {
        let mut cmd = Command::new("mpirun");
        if setup::is_root() {
            cmd.arg("--allow-run-as-root");
        }
        cmd.args(["--oversubscribe", "-np", ranks])
            .arg(&exe)
            // Containers often forbid the cross-memory attach of Open MPI's
            // shared-memory transport.
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
        status(cmd)?;
    }
    Ok(())
}

fn run_main(rest: &[String]) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["run", "--release", "--example", "euler_sphere"]);
    if !rest.is_empty() {
        cmd.arg("--").args(rest);
    }
    status(cmd)
}
