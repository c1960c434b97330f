//! Ctrl-C on the `euler_sphere` example: the run stops after the step in
//! flight, writes a checkpoint and exits successfully; the outputs written
//! so far stay readable and `--restart` continues from the interrupted step.
//!
//! Runs the example binary that `cargo test` builds next to the test
//! binaries (`target/<profile>/examples/euler_sphere`).
#![cfg(unix)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use quilt_io::{FileSeries, read_checkpoint, read_checkpoint_info};

/// A small sphere problem that would run for a long time: the test stops it.
const DECK: &str = r#"
[domain]
base_cells = [16, 16, 16]
[amr]
max_levels = 2
base_patch = 16
max_patch = 32
regrid_interval = 2
[run]
end_time = 100.0
backend = "cpu"
threads = 2
[output]
name = "sphere"
interval = 1
checkpoint_interval = 0
"#;

/// Steps the run must have written before it is interrupted.
const STEPS_BEFORE: u64 = 3;

/// Steps the restarted run takes.
const STEPS_AFTER: u64 = 2;

/// The example binary: `target/<profile>/examples/euler_sphere`, two
/// levels above this test's binary in `target/<profile>/deps`.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lies in target/<profile>/deps");
    let bin = profile_dir.join("examples").join("euler_sphere");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo test` (which builds the examples), or build it with \
         `cargo build --example euler_sphere` in this test's profile",
        bin.display()
    );
    bin
}

/// A fresh scratch directory for this process.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quilt-euler-sphere-int-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Waits for `child` to exit within `limit`, killing it (and failing) if
/// it does not; returns its output.
fn wait_for(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("polling the example").is_some() {
            return child.wait_with_output().expect("the example's output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("the example's output");
            panic!(
                "{what}: no exit within {limit:?}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Opens a ParaView output and checks it is a complete VTKHDF AMR file of
/// step `step` at time `time`.
fn check_output(path: &Path, step: u64, time: f64) {
    let f = hdf5::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let quilt = f.group("Quilt").expect("/Quilt");
    let s: u64 = quilt.attr("Step").and_then(|a| a.read_scalar()).unwrap();
    let t: f64 = quilt.attr("Time").and_then(|a| a.read_scalar()).unwrap();
    assert_eq!(
        (s, t.to_bits()),
        (step, time.to_bits()),
        "{}",
        path.display()
    );
    let density = f.dataset("VTKHDF/Level0/CellData/density").unwrap();
    assert_eq!(density.size(), 16 * 16 * 16, "{}", path.display());
    let rho: Vec<f64> = density.read_raw().unwrap();
    assert!(rho.iter().all(|r| r.is_finite() && *r > 0.0));
    assert!(f.group("VTKHDF/Level1").is_ok(), "{}", path.display());
}

#[test]
fn ctrl_c_checkpoints_and_the_run_restarts() {
    let bin = example_binary();
    let dir = scratch();
    let deck = dir.join("deck.toml");
    std::fs::write(&deck, DECK).unwrap();
    let out = dir.join("out");
    let start = Instant::now();

    let child = Command::new(&bin)
        .arg("--config")
        .arg(&deck)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));

    // Output after every step: the run has completed STEPS_BEFORE steps
    // once their file is there (files appear atomically, by rename).
    let marker = out.join(format!("sphere_{STEPS_BEFORE:06}.hdf"));
    let mut child = child;
    while !marker.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).ok();
            panic!("the example exited early ({status}):\n{err}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} did not appear within 60 s",
            marker.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .expect("running kill");
    assert!(status.success(), "kill -INT failed: {status}");
    let first = wait_for(child, Duration::from_secs(60), "interrupted run");
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{}\n{stderr}", first.status);

    // "interrupted at step N (t = T): checkpoint PATH; continue with --restart"
    let line = stderr
        .lines()
        .find(|l| l.starts_with("interrupted at step "))
        .unwrap_or_else(|| panic!("no interruption message in:\n{stderr}"));
    let step: u64 = line["interrupted at step ".len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no step in {line:?}"));
    assert!(step >= STEPS_BEFORE, "{line}");

    // The checkpoint is the interrupted step's, complete and readable.
    let ck = out.join("sphere.checkpoint.h5");
    assert!(line.contains(&ck.display().to_string()), "{line}");
    let info = read_checkpoint_info(&ck).unwrap();
    assert_eq!(info.run.step, step);
    let time = info.run.time;
    assert!(time > 0.0 && time < 100.0);
    let state = read_checkpoint::<f64>(&ck).unwrap();
    assert_eq!(state.run.step, step);
    assert_eq!(state.hierarchy.num_levels(), 2);

    // Every output up to the interrupted step is intact and listed (the
    // step's output is written before the flag is looked at).
    let series_path = out.join("sphere.hdf.series");
    let series = FileSeries::load(&series_path).unwrap();
    let listed: Vec<u64> = series
        .entries()
        .iter()
        .map(|e| {
            let n = e
                .name
                .trim_start_matches("sphere_")
                .trim_end_matches(".hdf");
            n.parse().unwrap_or_else(|_| panic!("entry {e:?}"))
        })
        .collect();
    assert_eq!(listed, (0..=step).collect::<Vec<_>>());
    for (e, &s) in series.entries().iter().zip(&listed) {
        check_output(&out.join(&e.name), s, e.time);
    }
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".tmp")), "{names:?}");

    // The restart continues from the interrupted step and time.
    let end = step + STEPS_AFTER;
    let child = Command::new(&bin)
        .arg("--restart")
        .arg(&ck)
        .arg("--out")
        .arg(&out)
        .arg("--max-steps")
        .arg(end.to_string())
        .arg("--checkpoint-interval")
        .arg("1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let second = wait_for(child, Duration::from_secs(60), "restarted run");
    assert!(
        second.status.success(),
        "{}\n{}",
        second.status,
        String::from_utf8_lossy(&second.stderr)
    );
    let info = read_checkpoint_info(&ck).unwrap();
    assert_eq!(info.run.step, end);
    assert!(info.run.time > time);
    let series = FileSeries::load(&series_path).unwrap();
    let resumed: Vec<&str> = series.entries().iter().map(|e| e.name.as_str()).collect();
    let expected: Vec<String> = (0..=end).map(|s| format!("sphere_{s:06}.hdf")).collect();
    assert_eq!(resumed, expected, "the series after the restart");
    let after = &series.entries()[step as usize + 1];
    assert!(after.time > time, "{after:?} after t = {time}");
    check_output(&out.join(&series.entries()[end as usize].name), end, {
        series.entries()[end as usize].time
    });
    eprintln!(
        "interrupted at step {step} (t = {time:.5}), restarted to step {end} (t = {:.5}) in {:.1} s",
        info.run.time,
        start.elapsed().as_secs_f64()
    );
    std::fs::remove_dir_all(&dir).ok();
}
