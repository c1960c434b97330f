//! Bad command lines and inputs of the example programs: every case must
//! end with an error exit (no panic, no abort) whose message names the
//! option, file or line at fault. The table is also the seed of a CLI fuzz
//! corpus: one row per (program, arguments, expected text).
//!
//! Runs the example binaries that `cargo test` builds next to the test
//! binaries (`target/<profile>/examples/<name>`).
#![cfg(unix)]

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Longest a case may run: every one is an error found before any real
/// work, or a problem of a few dozen cells.
const LIMIT: Duration = Duration::from_secs(30);

/// Memory budget every case runs under (`QUILT_MEMORY_LIMIT`), so that the
/// size checks do not depend on the machine.
const MEMORY: &str = "8G";

/// The example binary `name`: `target/<profile>/examples/<name>`, two
/// levels above this test's binary in `target/<profile>/deps`.
fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lies in target/<profile>/deps");
    let bin = profile_dir.join("examples").join(name);
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo test` (which builds the examples), or build it with \
         `cargo build --example {name}` in this test's profile",
        bin.display()
    );
    bin
}

/// A fresh scratch directory for this process and `tag`.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quilt-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// What a run of an example left.
struct Run {
    status: ExitStatus,
    /// It did not exit within [`LIMIT`] and was killed.
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// Runs example `bin` with `args` (and `env` on top of a fixed memory
/// budget) to completion within [`LIMIT`], killing it if it does not exit.
/// Output is drained while it runs, so a chatty program cannot block on a
/// full pipe.
fn run(bin: &str, args: &[String], env: &[(&str, &str)]) -> Run {
    let path = example_binary(bin);
    let mut cmd = Command::new(&path);
    cmd.args(args)
        .env("QUILT_MEMORY_LIMIT", MEMORY)
        // The examples print errors without a backtrace even when asked
        // for one (`cli::exit_status`): a test below holds that.
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", path.display()));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("polling the example") {
            break status;
        }
        if !timed_out && start.elapsed() > LIMIT {
            let _ = child.kill();
            timed_out = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        status,
        timed_out,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// One row of the table: `bin args...` must fail with every string of
/// `expect` in its error output.
struct Case {
    bin: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
    expect: Vec<String>,
}

/// Why `case` did not fail as it should, if it did not.
fn judge(case: &Case) -> Option<String> {
    let r = run(case.bin, &case.args, &case.env);
    let mut wrong = Vec::new();
    if r.timed_out {
        wrong.push(format!("no exit within {LIMIT:?}"));
    } else if let Some(sig) = r.status.signal() {
        wrong.push(format!("killed by signal {sig}"));
    }
    if r.status.success() {
        wrong.push("exited successfully".to_string());
    }
    // 101 is the exit code of a Rust panic.
    if r.status.code() == Some(101) || r.stderr.contains("panicked") {
        wrong.push("panicked".to_string());
    }
    for text in &case.expect {
        if !r.stderr.contains(text.as_str()) {
            wrong.push(format!("no `{text}` in the error"));
        }
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "{} {}: {} ({})\nstderr:\n{}\nstdout (end):\n{}",
            case.bin,
            case.args.join(" "),
            wrong.join("; "),
            r.status,
            r.stderr.trim_end(),
            tail(&r.stdout)
        )
    })
}

fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(400);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    &text[start..]
}

/// Runs every case (in parallel: each is a process start and a few
/// milliseconds of work) and fails listing all that went wrong.
fn check_all(cases: Vec<Case>) {
    let n = cases.len();
    let failures: Vec<String> = std::thread::scope(|s| {
        let jobs: Vec<_> = cases
            .chunks(n.div_ceil(4).max(1))
            .map(|chunk| s.spawn(move || chunk.iter().filter_map(judge).collect::<Vec<_>>()))
            .collect();
        jobs.into_iter()
            .flat_map(|j| j.join().expect("a case runner panicked"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {n} cases did not fail cleanly:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Argument lists built from a program's valid base arguments.
struct Base(Vec<(&'static str, String)>);

impl Base {
    /// The base arguments with `set` replacing (or adding) options; an
    /// empty value drops the option; `extra` is appended as written.
    fn with(&self, set: &[(&'static str, &str)], extra: &[&str]) -> Vec<String> {
        let mut pairs = self.0.clone();
        for &(opt, value) in set {
            pairs.retain(|(o, _)| *o != opt);
            if !value.is_empty() {
                pairs.push((opt, value.to_string()));
            }
        }
        let mut args: Vec<String> = pairs
            .into_iter()
            .flat_map(|(o, v)| [o.to_string(), v])
            .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }
}

fn case(bin: &'static str, args: Vec<String>, expect: &[&str]) -> Case {
    Case {
        bin,
        args,
        env: Vec::new(),
        expect: expect.iter().map(|s| s.to_string()).collect(),
    }
}

fn riemann_base(dir: &Path) -> Base {
    Base(vec![
        ("--left", "1,0,1".into()),
        ("--right", "0.125,0,0.1".into()),
        ("--t-end", "0.01".into()),
        ("--cells", "20".into()),
        ("--out", dir.join("riemann.csv").display().to_string()),
    ])
}

fn riemann_cases(dir: &Path) -> Vec<Case> {
    let b = riemann_base(dir);
    let set = |opt: &'static str, value: &str, expect: &[&str]| {
        case("riemann", b.with(&[(opt, value)], &[]), expect)
    };
    let mut cases = vec![
        // Counts: negative, zero, one, not a number, too large for u32.
        set(
            "--cells",
            "-5",
            &["invalid value '-5' for '--cells <CELLS>'"],
        ),
        set("--cells", "0", &["'--cells <CELLS>'", "0 is not in 2.."]),
        set("--cells", "1", &["'--cells <CELLS>'", "1 is not in 2.."]),
        set(
            "--cells",
            "abc",
            &["invalid value 'abc' for '--cells <CELLS>'"],
        ),
        set(
            "--cells",
            "4.5",
            &["invalid value '4.5' for '--cells <CELLS>'"],
        ),
        set("--cells", "4294967296", &["'--cells <CELLS>'"]),
        // Sizes the memory cannot hold are refused before allocating.
        set(
            "--cells",
            "4000000000",
            &[
                "--cells 4000000000 (rtvd f64) needs",
                "TB",
                "8.6 GB is available",
            ],
        ),
        // Floats: out of range, NaN, infinities, not numbers.
        set(
            "--gamma",
            "-1.4",
            &[
                "invalid value '-1.4' for '--gamma <GAMMA>'",
                "must be > 1, got -1.4",
            ],
        ),
        set("--gamma", "1", &["'--gamma <GAMMA>'", "must be > 1, got 1"]),
        set(
            "--gamma",
            "nan",
            &["'--gamma <GAMMA>'", "must be finite, got NaN"],
        ),
        set(
            "--gamma",
            "inf",
            &["'--gamma <GAMMA>'", "must be finite, got inf"],
        ),
        set(
            "--gamma",
            "-inf",
            &["'--gamma <GAMMA>'", "must be finite, got -inf"],
        ),
        set(
            "--gamma",
            "one",
            &["invalid value 'one' for '--gamma <GAMMA>'"],
        ),
        set("--t-end", "0", &["'--t-end <T_END>'", "must be > 0, got 0"]),
        set(
            "--t-end",
            "-1e-3",
            &["'--t-end <T_END>'", "must be > 0, got -0.001"],
        ),
        set("--t-end", "inf", &["'--t-end <T_END>'", "must be finite"]),
        set("--t-end", "nan", &["'--t-end <T_END>'", "must be finite"]),
        set("--cfl", "0", &["'--cfl <CFL>'", "must be > 0"]),
        set("--cfl", "-inf", &["'--cfl <CFL>'", "must be finite"]),
        set("--cfl", "5", &["--cfl 5 must lie in (0, "]),
        // The interface must lie strictly inside the domain (0, 1).
        set(
            "--x0",
            "1.5",
            &["invalid value '1.5' for '--x0 <X0>'", "domain (0, 1)"],
        ),
        set(
            "--x0",
            "-0.5",
            &["invalid value '-0.5' for '--x0 <X0>'", "domain (0, 1)"],
        ),
        set("--x0", "0", &["'--x0 <X0>'", "domain (0, 1)"]),
        set("--x0", "1", &["'--x0 <X0>'", "domain (0, 1)"]),
        set("--x0", "nan", &["'--x0 <X0>'", "must be finite"]),
        set("--x0", "-inf", &["'--x0 <X0>'", "must be finite"]),
        // States.
        set("--left", "1,0", &["'--left <LEFT>'", "three numbers"]),
        set("--left", "-1,0,1", &["'--left <LEFT>'", "density -1"]),
        set("--left", "0,0,1", &["'--left <LEFT>'", "density 0"]),
        set("--right", "1,nan,1", &["'--right <RIGHT>'", "velocity NaN"]),
        set("--right", "1,0,inf", &["'--right <RIGHT>'", "pressure inf"]),
        set("--right", "1,0,-2", &["'--right <RIGHT>'", "pressure -2"]),
        set("--right", "a,b,c", &["'--right <RIGHT>'", "`a`"]),
        // Names.
        set("--scheme", "bogus", &["--scheme", "`bogus`"]),
        set("--limiter", "bogus", &["--limiter", "`bogus`"]),
        set("--axis", "w", &["invalid value 'w' for '--axis <AXIS>'"]),
        set(
            "--precision",
            "f16",
            &["invalid value 'f16' for '--precision <PRECISION>'"],
        ),
        // Unknown, missing and unwritable.
        case(
            "riemann",
            b.with(&[], &["--bogus"]),
            &["unexpected argument '--bogus'"],
        ),
        case(
            "riemann",
            b.with(&[("--out", "")], &[]),
            &["required", "--out <OUT>"],
        ),
        case(
            "riemann",
            b.with(&[("--cells", "")], &["--cells"]),
            &["a value is required for '--cells <CELLS>'"],
        ),
        set(
            "--out",
            "/nonexistent-quilt-dir/r.csv",
            &["creating /nonexistent-quilt-dir/r.csv"],
        ),
    ];
    // A budget too small for a modest run: the check uses the real budget,
    // not only absurd sizes.
    let mut small = set(
        "--cells",
        "200000",
        &["--cells 200000 (rtvd f64) needs", "105 MB is available"],
    );
    small.env.push(("QUILT_MEMORY_LIMIT", "100M"));
    cases.push(small);
    let mut f32_tvd = case(
        "riemann",
        b.with(
            &[
                ("--cells", "200000"),
                ("--scheme", "tvd"),
                ("--precision", "f32"),
            ],
            &[],
        ),
        &["--cells 200000 (tvd f32) needs"],
    );
    f32_tvd.env.push(("QUILT_MEMORY_LIMIT", "100M"));
    cases.push(f32_tvd);
    cases
}

fn synthetic_cases(dir: &Path) -> Vec<Case> {
    let b = Base(Vec::new());
    let set = |opt: &'static str, value: &str, expect: &[&str]| {
        case("synthetic", b.with(&[(opt, value)], &[]), expect)
    };
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let under_file = blocker.join("h.json").display().to_string();
    let mut cases = vec![
        set(
            "--patches",
            "-1",
            &["invalid value '-1' for '--patches <PATCHES>'"],
        ),
        set(
            "--patches",
            "0",
            &["--patches 0 is fewer than the 64 patches of the base level"],
        ),
        set("--patches", "63", &["--patches 63 is fewer than the 64"]),
        set(
            "--patches",
            "abc",
            &["invalid value 'abc' for '--patches <PATCHES>'"],
        ),
        set(
            "--patches",
            "1e6",
            &["invalid value '1e6' for '--patches <PATCHES>'"],
        ),
        set(
            "--patches",
            "5000000000",
            &["--patches 5000000000 exceeds 4294967296"],
        ),
        set(
            "--patches",
            "99999999999999999999999",
            &["invalid value '99999999999999999999999' for '--patches <PATCHES>'"],
        ),
        // Minutes of generation and more memory than the budget: refused.
        set(
            "--patches",
            "10000000",
            &["--patches 10000000 needs", "8.6 GB is available"],
        ),
        set("--seed", "-1", &["invalid value '-1' for '--seed <SEED>'"]),
        set("--seed", "x", &["invalid value 'x' for '--seed <SEED>'"]),
        set("--ghost", "-1", &["--ghost -1 must lie in 0..=16"]),
        set("--ghost", "17", &["--ghost 17 must lie in 0..=16"]),
        set(
            "--ghost",
            "2.5",
            &["invalid value '2.5' for '--ghost <GHOST>'"],
        ),
        set(
            "--ratio",
            "3",
            &["invalid value '3' for '--ratio <RATIO>'", "must be 2 or 4"],
        ),
        set(
            "--ratio",
            "-2",
            &["invalid value '-2' for '--ratio <RATIO>'", "must be 2 or 4"],
        ),
        set("--ratio", "0", &["'--ratio <RATIO>'"]),
        set(
            "--ratio",
            "two",
            &["invalid value 'two' for '--ratio <RATIO>'"],
        ),
        case(
            "synthetic",
            b.with(&[], &["--bogus"]),
            &["unexpected argument '--bogus'"],
        ),
        case(
            "synthetic",
            b.with(&[], &["--patches"]),
            &["a value is required for '--patches <PATCHES>'"],
        ),
        case(
            "synthetic",
            b.with(&[("--patches", "64"), ("--out", &under_file)], &[]),
            &[&blocker.display().to_string()],
        ),
    ];
    let mut with_out = case(
        "synthetic",
        b.with(
            &[
                ("--patches", "100000"),
                ("--out", &dir.join("big.json").display().to_string()),
            ],
            &[],
        ),
        &["--patches 100000 with --out (two hierarchies) needs"],
    );
    with_out.env.push(("QUILT_MEMORY_LIMIT", "300M"));
    cases.push(with_out);
    cases
}

/// Item files of the pack cases, written into `dir`.
const ITEM_FILES: [(&str, &str); 5] = [
    ("good.csv", "w,h,d\n16,16,16\n32,16,8\n"),
    // A damaged first line used to be skipped as a header.
    ("junk.csv", "garbage line\n16,16,16\n"),
    ("junk3.csv", "sizes,of,items\n16,16,16\n"),
    ("field.csv", "w,h,d\n16,16,16\n 8, eight ,8\n"),
    ("huge.csv", "w,h,d\n100,1,1\n"),
];

fn pack_cases(dir: &Path) -> Vec<Case> {
    for (name, text) in ITEM_FILES {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let file = |name: &str| dir.join(name).display().to_string();
    let b = Base(vec![
        ("--bin", "64,64,64".into()),
        ("--items", file("good.csv")),
    ]);
    let set = |opt: &'static str, value: &str, expect: &[&str]| {
        case("pack", b.with(&[(opt, value)], &[]), expect)
    };
    let at = |name: &str, pos: &str| format!("{}:{pos}: line", file(name));
    vec![
        set(
            "--items",
            &file("junk.csv"),
            &[&at("junk.csv", "1:1"), "`garbage line`"],
        ),
        set(
            "--items",
            &file("junk3.csv"),
            &[&at("junk3.csv", "1:1"), "`sizes`"],
        ),
        set(
            "--items",
            &file("field.csv"),
            &[&at("field.csv", "3:5"), "`eight`"],
        ),
        set("--items", &file("huge.csv"), &[&file("huge.csv")]),
        set(
            "--items",
            "/nonexistent-quilt-dir/items.csv",
            &["/nonexistent-quilt-dir/items.csv"],
        ),
        set(
            "--bin",
            "-1,64,64",
            &["invalid value '-1,64,64' for '--bin <BIN>'"],
        ),
        set(
            "--bin",
            "0,64,64",
            &["invalid value '0,64,64' for '--bin <BIN>'"],
        ),
        set(
            "--bin",
            "64,64",
            &["invalid value '64,64' for '--bin <BIN>'"],
        ),
        set(
            "--bin",
            "64,64,nan",
            &["invalid value '64,64,nan' for '--bin <BIN>'"],
        ),
        set("--bin", "64,64,4294967296", &["'--bin <BIN>'"]),
        set(
            "--deltas",
            "0",
            &["invalid value '0' for '--deltas <DELTAS>'"],
        ),
        set(
            "--deltas",
            "-5",
            &["invalid value '-5' for '--deltas <DELTAS>'"],
        ),
        set(
            "--deltas",
            "10,101",
            &["invalid value '101' for '--deltas <DELTAS>'"],
        ),
        set(
            "--deltas",
            "x",
            &["invalid value 'x' for '--deltas <DELTAS>'"],
        ),
        set(
            "--sort",
            "cah:0",
            &[
                "invalid value 'cah:0' for '--sort <SORT>'",
                "cluster width 0",
            ],
        ),
        set("--sort", "cah:-3", &["'--sort <SORT>'"]),
        set(
            "--orders",
            "cha:200",
            &["invalid value 'cha:200' for '--orders <ORDERS>'"],
        ),
        set(
            "--heuristic",
            "best",
            &["invalid value 'best' for '--heuristic <HEURISTIC>'"],
        ),
        set("--merit", "x", &["invalid value 'x' for '--merit <MERIT>'"]),
        case(
            "pack",
            b.with(&[], &["--bogus"]),
            &["unexpected argument '--bogus'"],
        ),
        case(
            "pack",
            b.with(&[("--bin", "")], &["--bin"]),
            &["a value is required for '--bin <BIN>'"],
        ),
        case(
            "pack",
            b.with(&[("--items", "")], &[]),
            &["required", "--items <ITEMS>"],
        ),
    ]
}

fn euler_sphere_cases(dir: &Path) -> Vec<Case> {
    let bad_deck = dir.join("bad.toml");
    std::fs::write(&bad_deck, "[run]\nend_time = 0.1\nmax_steps = \"many\"\n").unwrap();
    let b = Base(vec![("--backend", "cpu".into())]);
    let set = |opt: &'static str, value: &str, expect: &[&str]| {
        case(
            "euler_sphere",
            b.with(&[(opt, value)], &["--no-output"]),
            expect,
        )
    };
    vec![
        set(
            "--max-steps",
            "-1",
            &["invalid value '-1' for '--max-steps <N>'"],
        ),
        set(
            "--max-steps",
            "x",
            &["invalid value 'x' for '--max-steps <N>'"],
        ),
        set(
            "--max-steps",
            "1e3",
            &["invalid value '1e3' for '--max-steps <N>'"],
        ),
        set(
            "--max-steps",
            "99999999999999999999999",
            &["'--max-steps <N>'"],
        ),
        // Overrides are blamed on their option, not on the deck.
        set("--levels", "0", &["--levels", "amr.max_levels"]),
        set("--levels", "9", &["--levels", "amr.max_levels"]),
        set("--levels", "-1", &["invalid value '-1' for '--levels <N>'"]),
        set(
            "--output-interval",
            "-1",
            &["invalid value '-1' for '--output-interval <N>'"],
        ),
        set(
            "--checkpoint-interval",
            "x",
            &["invalid value 'x' for '--checkpoint-interval <N>'"],
        ),
        set("--end-time", "nan", &["--end-time", "run.end_time"]),
        set("--end-time", "inf", &["--end-time", "run.end_time"]),
        set("--end-time", "-inf", &["--end-time", "run.end_time"]),
        set("--end-time", "-1", &["--end-time", "run.end_time"]),
        set(
            "--backend",
            "gpu",
            &["invalid value 'gpu' for '--backend <NAME>'"],
        ),
        set(
            "--residency",
            "gpu",
            &[
                "invalid value 'gpu' for '--residency <WHERE>'",
                "expected auto, host or device",
            ],
        ),
        set(
            "--config",
            "/nonexistent-quilt-dir/deck.toml",
            &["/nonexistent-quilt-dir/deck.toml"],
        ),
        set(
            "--config",
            &bad_deck.display().to_string(),
            &[&format!("{}:3:", bad_deck.display())],
        ),
        set(
            "--restart",
            "/nonexistent-quilt-dir/sphere.checkpoint.h5",
            &["/nonexistent-quilt-dir/sphere.checkpoint.h5"],
        ),
        case(
            "euler_sphere",
            b.with(&[], &["--bogus"]),
            &["unexpected argument '--bogus'"],
        ),
        case(
            "euler_sphere",
            b.with(&[], &["--levels"]),
            &["a value is required for '--levels <N>'"],
        ),
    ]
}

#[test]
fn riemann_rejects_bad_arguments() {
    let dir = scratch("riemann");
    check_all(riemann_cases(&dir));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn synthetic_rejects_bad_arguments() {
    let dir = scratch("synthetic");
    check_all(synthetic_cases(&dir));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn pack_rejects_bad_arguments_and_item_files() {
    let dir = scratch("pack");
    check_all(pack_cases(&dir));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn euler_sphere_rejects_bad_arguments() {
    let dir = scratch("euler-sphere");
    check_all(euler_sphere_cases(&dir));
    std::fs::remove_dir_all(&dir).ok();
}

/// The checks refuse what they should and no more: small valid runs of
/// each program still succeed.
#[test]
fn small_valid_runs_succeed() {
    let dir = scratch("valid");
    for (name, text) in ITEM_FILES {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let csv = dir.join("sod.csv").display().to_string();
    let json = dir.join("h.json").display().to_string();
    let items = dir.join("good.csv").display().to_string();
    let runs: Vec<(&str, Vec<String>)> = vec![
        ("riemann", riemann_base(&dir).with(&[], &[])),
        (
            "riemann",
            riemann_base(&dir).with(
                &[
                    ("--x0", "0.3"),
                    ("--gamma", "1.67"),
                    ("--cfl", "0.4"),
                    ("--left", "1,-0.5,1"),
                    ("--scheme", "waf"),
                    ("--out", &csv),
                ],
                &[],
            ),
        ),
        ("synthetic", s(&["--patches", "64"])),
        (
            "synthetic",
            s(&[
                "--patches",
                "100",
                "--ratio",
                "4",
                "--ghost",
                "0",
                "--out",
                &json,
            ]),
        ),
        (
            "pack",
            s(&["--bin", "64,64,64", "--items", &items, "--deltas", "1,100"]),
        ),
    ];
    for (bin, args) in runs {
        let r = run(bin, &args, &[]);
        assert!(
            r.status.success() && !r.timed_out,
            "{bin} {}: {}\n{}",
            args.join(" "),
            r.status,
            r.stderr
        );
    }
    let sod = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(sod.lines().count(), 21, "{sod}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Errors are one `error: ...` line per failure, with no `Debug` form and
/// no backtrace, even with `RUST_BACKTRACE=1` (which every run here sets).
#[test]
fn errors_print_as_one_line_without_backtrace() {
    for (bin, args) in [
        ("euler_sphere", vec!["--levels", "0", "--no-output"]),
        ("riemann", vec!["--cells", "-5"]),
        ("synthetic", vec!["--patches", "1"]),
        ("pack", vec!["--items", "/nonexistent/items.csv"]),
    ] {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        let r = run(bin, &args, &[]);
        assert!(!r.status.success(), "{bin} {args:?} succeeded");
        let text = &r.stderr;
        assert!(
            !text.contains("backtrace") && !text.contains(" { ") && !text.contains("panicked"),
            "{bin} {args:?}:\n{text}"
        );
        assert!(
            text.lines().any(|l| l.starts_with("error")),
            "{bin} {args:?}:\n{text}"
        );
    }
}
