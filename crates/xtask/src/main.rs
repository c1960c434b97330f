//! quilt's developer tasks, run as `cargo xtask <task>`.
//!
//! | task | what it does |
//! |---|---|
//! | `setup` | checks (and, as root on Debian/Ubuntu, installs) the system packages the workspace needs |
//! | `test` | `setup`, then the whole test suite in the optimised `ci` profile |
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
        Task::Setup { check_only } => setup::run(!check_only),
        Task::Test { rest } => setup::run(true).and_then(|()| test(&rest)),
        Task::Run { rest } => setup::run(true).and_then(|()| run_main(&rest)),
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

fn run_main(rest: &[String]) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["run", "--release", "--example", "euler_sphere"]);
    if !rest.is_empty() {
        cmd.arg("--").args(rest);
    }
    status(cmd)
}
