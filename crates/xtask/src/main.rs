//! quilt's developer tasks, run as `cargo xtask <task>`.
//!
//! | task | what it does |
//! |---|---|
//! | `setup` | checks (and, as root on Debian/Ubuntu, installs) the system packages the workspace needs |
//! | `test` | `setup`, then the whole test suite in the optimised `ci` profile, then the paper suite at its tiny size (into `target/paper-check`), then the MPI checks (distributed fill and a small run over 1–3 `mpirun` ranks: bitwise states, byte-equal output, a 3-rank checkpoint continued on 2) when Open MPI's development packages are installed |
//! | `run` | `setup`, then the main job (the Euler sphere example) |
//! | `plot` | a line chart (SVG) of measured figures from a CSV table, for `docs/figures/` |
//! | `paper` | the founding paper's evaluation: packing tables, the GPU machine's harness summaries, charts and `docs/paper-results.md` |
//!
//! The tasks shell out to `cargo`, `pkg-config` and `apt-get`; they hold no
//! build logic of their own so that plain `cargo` commands stay equivalent.

mod paper;
mod plot;
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
    /// Draw a line chart (SVG) of measured figures from a CSV table.
    Plot(plot::PlotArgs),
    /// The founding paper's evaluation: tables, charts and
    /// docs/paper-results.md.
    Paper(paper::PaperArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
        Task::Setup { check_only, mpi } => setup::run(!check_only, mpi),
        Task::Test { rest } => setup::run(true, false)
            .and_then(|()| test(&rest))
            .and_then(|()| paper::check())
            .and_then(|()| mpi_checks()),
        Task::Run { rest } => setup::run(true, false).and_then(|()| run_main(&rest)),
        Task::Plot(args) => plot::run(&args),
        Task::Paper(args) => paper::run(&args),
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

/// The `mpi` feature: quilt-dist's tests, the distributed fill check under
/// `mpirun` on 2 and 3 ranks (bitwise against the serial fill), the small
/// deck over 1, 2 and 3 MPI ranks, whose state digests and VTKHDF outputs
/// must agree, and a checkpoint of 3 ranks continued on 2.
/// Skipped, with the reason, when Open MPI's development packages are
/// missing.
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
    for (package, example) in [("quilt-dist", "fill_check"), ("quilt", "ranks")] {
        let mut cmd = cargo();
        cmd.args([
            "build",
            "--profile",
            "ci",
            "--features",
            "mpi",
            "-p",
            package,
        ]);
        cmd.args(["--example", example]);
        status(cmd)?;
    }
    let examples = workspace_root().join("target/ci/examples");
    for ranks in ["2", "3"] {
        status(mpirun(ranks, &examples.join("fill_check"), &[]))?;
    }
    let deck = workspace_root().join("examples/decks/ranks_small.toml");
    let scratch = workspace_root().join("target/ci/mpi-checks");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let ranks_run = |ranks: &str, extra: &[&std::ffi::OsStr]| -> Result<String> {
        let mut cmd = mpirun(
            ranks,
            &examples.join("ranks"),
            &["--threads", "1", "--config"],
        );
        cmd.arg(&deck).args(extra);
        let shown = format!("{cmd:?}");
        let out = cmd
            .output()
            .with_context(|| format!("could not start {shown}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        print!("{text}");
        if !out.status.success() {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            bail!("{shown} failed ({})", out.status);
        }
        Ok(text
            .lines()
            .find_map(|l| l.strip_prefix("ranks: state digest "))
            .with_context(|| format!("{shown} printed no state digest"))?
            .to_string())
    };
    // The whole run on 1, 2 and 3 ranks, each writing its final state
    // through rank 0: equal digests and byte-equal VTKHDF files.
    let mut digests = Vec::new();
    let mut outputs = Vec::new();
    for ranks in ["1", "2", "3"] {
        let dir = scratch.join(format!("out{ranks}"));
        let digest = ranks_run(ranks, &["--output".as_ref(), dir.as_os_str()])?;
        digests.push((ranks, digest));
        outputs.push((ranks, only_hdf_file(&dir)?));
    }
    if digests.iter().any(|(_, d)| *d != digests[0].1) {
        bail!("runs over MPI ranks ended in different states: {digests:?}");
    }
    for (ranks, bytes) in &outputs[1..] {
        if *bytes != outputs[0].1 {
            bail!("the VTKHDF output of {ranks} MPI ranks differs from that of 1 rank");
        }
    }
    // A checkpoint written by 3 ranks after 3 steps, continued on 2.
    let checkpoint = scratch.join("three.h5");
    ranks_run(
        "3",
        &[
            "--stop-after".as_ref(),
            "3".as_ref(),
            "--checkpoint".as_ref(),
            checkpoint.as_os_str(),
        ],
    )?;
    let restarted = ranks_run("2", &["--restart".as_ref(), checkpoint.as_os_str()])?;
    if restarted != digests[0].1 {
        bail!(
            "a checkpoint of 3 MPI ranks continued on 2 ended in state {restarted}, the whole run in {}",
            digests[0].1
        );
    }
    eprintln!(
        "xtask test: 1, 2 and 3 MPI ranks end bitwise equal ({}), write byte-equal VTKHDF files, and a checkpoint of 3 ranks continues on 2 to the same state",
        digests[0].1
    );
    Ok(())
}

/// The bytes of the one `.hdf` file in `dir`.
fn only_hdf_file(dir: &std::path::Path) -> Result<Vec<u8>> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = e?.path();
        if path.extension().is_some_and(|x| x == "hdf") {
            found.push(path);
        }
    }
    match found.as_slice() {
        [one] => std::fs::read(one).with_context(|| format!("reading {}", one.display())),
        _ => bail!(
            "{} holds {} .hdf files, not one",
            dir.display(),
            found.len()
        ),
    }
}

/// `mpirun -np ranks exe args…` on this machine alone: as root where
/// needed, without Open MPI's cross-memory attach (containers often forbid
/// it), and with `false` as the remote-shell agent, since Open MPI 4 looks
/// for ssh even when it launches nothing remote and a bare machine has
/// none.
fn mpirun(ranks: &str, exe: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("mpirun");
    if setup::is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["--oversubscribe", "-np", ranks])
        .arg(exe)
        .args(args)
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("OMPI_MCA_plm_rsh_agent", "false");
    cmd
}

fn run_main(rest: &[String]) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["run", "--release", "--example", "euler_sphere"]);
    if !rest.is_empty() {
        cmd.arg("--").args(rest);
    }
    status(cmd)
}
