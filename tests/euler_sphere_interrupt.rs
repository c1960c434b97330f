//! Signals on the `euler_sphere` example. SIGINT, SIGTERM and SIGHUP stop
//! the run after the step in flight: it writes a checkpoint and exits with
//! 128 + the signal number; the outputs written so far stay readable and
//! `--restart` continues from the interrupted step bit for bit as if the
//! run had not stopped. SIGKILL at any moment of output and checkpoint
//! writing loses no file written before, and the next start removes the
//! temporaries the killed run left.
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

/// A fresh scratch directory for this process and `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "quilt-euler-sphere-int-{}-{name}",
        std::process::id()
    ));
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

/// Starts the example on `deck` writing to `out`, with extra arguments.
fn start(bin: &Path, deck: &Path, out: &Path, extra: &[&str]) -> Child {
    Command::new(bin)
        .arg("--config")
        .arg(deck)
        .arg("--out")
        .arg(out)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()))
}

/// Waits until `marker` exists (files appear atomically, by rename).
fn wait_for_file(child: &mut Child, marker: &Path, begin: Instant) {
    while !marker.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).ok();
            panic!("the example exited early ({status}):\n{err}");
        }
        assert!(
            begin.elapsed() < Duration::from_secs(60),
            "{} did not appear within 60 s",
            marker.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends `signal` (a `kill` name: INT, TERM, HUP, KILL) to `child`.
fn send(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("running kill");
    assert!(status.success(), "kill -{signal} failed: {status}");
}

/// Every interior value of a checkpoint's state, as bits, with its step
/// and its time's bits (ghost values after a step are unspecified).
fn checkpoint_bits(path: &Path) -> (u64, u64, Vec<u64>) {
    let ck = read_checkpoint::<f64>(path).unwrap_or_else(|e| panic!("{e}"));
    let mut bits = Vec::new();
    for (i, p) in ck.hierarchy.patches().iter().enumerate() {
        let d = ck.data.old(i);
        for c in 0..d.ncomp() {
            bits.extend(p.interior().iter().map(|q| d.get(c, &q).to_bits()));
        }
    }
    (ck.run.step, ck.run.time.to_bits(), bits)
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Checks that the series in `out` lists exactly steps `0..=last` and that
/// every listed output is complete.
fn check_series(out: &Path, last: u64) -> FileSeries {
    let series = FileSeries::load(out.join("sphere.hdf.series")).unwrap();
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
    assert_eq!(listed, (0..=last).collect::<Vec<_>>());
    for (e, &s) in series.entries().iter().zip(&listed) {
        check_output(&out.join(&e.name), s, e.time);
    }
    series
}

/// The uninterrupted run to step `end`: its final checkpoint's bits.
fn reference(bin: &Path, deck: &Path, dir: &Path, end: u64) -> (u64, u64, Vec<u64>) {
    let out = dir.join(format!("reference-{end}"));
    let end_s = end.to_string();
    let child = start(
        bin,
        deck,
        &out,
        &[
            "--max-steps",
            &end_s,
            "--checkpoint-interval",
            &end_s,
            "--output-interval",
            "0",
        ],
    );
    let done = wait_for(child, Duration::from_secs(60), "reference run");
    assert!(
        done.status.success(),
        "{}\n{}",
        done.status,
        String::from_utf8_lossy(&done.stderr)
    );
    checkpoint_bits(&out.join("sphere.checkpoint.h5"))
}

/// Stops a run with `signal`, checks exit code, message, checkpoint and
/// outputs, restarts it and compares the restarted run's final state with
/// that of a run that was not interrupted.
fn interrupt_and_restart(bin: &Path, dir: &Path, signal: &str, number: i32) {
    let deck = dir.join("deck.toml");
    let out = dir.join(format!("out-{signal}"));
    let begin = Instant::now();
    let mut child = start(bin, &deck, &out, &[]);
    let marker = out.join(format!("sphere_{STEPS_BEFORE:06}.hdf"));
    wait_for_file(&mut child, &marker, begin);
    send(&child, signal);
    let first = wait_for(child, Duration::from_secs(60), "interrupted run");
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(
        first.status.code(),
        Some(128 + number),
        "SIG{signal}: {}\n{stderr}",
        first.status
    );

    // "interrupted by SIGX at step N (t = T): checkpoint PATH; continue with --restart"
    let prefix = format!("interrupted by SIG{signal} at step ");
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no interruption message in:\n{stderr}"));
    let step: u64 = line[prefix.len()..]
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
    assert_eq!(state.hierarchy.num_levels(), 2);

    // Every output up to the interrupted step is intact and listed (the
    // step's output is written before the flag is looked at).
    check_series(&out, step);
    let left = names(&out);
    assert!(!left.iter().any(|n| n.contains(".tmp")), "{left:?}");

    // The restart continues from the interrupted step and time, to the
    // reference's step when the stop came in time for that.
    let end = (STEPS_BEFORE + STEPS_AFTER).max(step + 1);
    let child = Command::new(bin)
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
    let series = check_series(&out, end);
    let after = &series.entries()[step as usize + 1];
    assert!(after.time > time, "{after:?} after t = {time}");
    let expected = reference(bin, &deck, dir, end);
    let got = checkpoint_bits(&ck);
    assert_eq!(
        (got.0, got.1),
        (expected.0, expected.1),
        "SIG{signal}: step, time"
    );
    assert!(
        got.2 == expected.2,
        "SIG{signal}: the restarted run differs from the uninterrupted one in {} values",
        got.2
            .iter()
            .zip(&expected.2)
            .filter(|(a, b)| a != b)
            .count()
    );
    eprintln!(
        "SIG{signal} at step {step} (t = {time:.5}), restarted to step {end} in {:.1} s",
        begin.elapsed().as_secs_f64()
    );
}

#[test]
fn stop_signals_checkpoint_and_the_restart_is_bitwise_equal() {
    let bin = example_binary();
    let dir = scratch("signals");
    std::fs::write(dir.join("deck.toml"), DECK).unwrap();
    for (signal, number) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
        interrupt_and_restart(&bin, &dir, signal, number);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// SIGKILL at several moments of a run that writes an output and a
/// checkpoint after every step: whatever was complete before stays
/// complete, and the next start (a restart from the last checkpoint)
/// removes the killed run's temporaries and runs on.
#[test]
fn sigkill_while_writing_loses_nothing_written_before() {
    let bin = example_binary();
    let dir = scratch("kill");
    let deck = dir.join("deck.toml");
    std::fs::write(&deck, DECK).unwrap();
    let out = dir.join("out");
    let ck = out.join("sphere.checkpoint.h5");
    let mut restarts = 0;
    // Delays after a step's output appears: within the next output's or
    // checkpoint's write, or between them.
    for (round, delay_ms) in [0u64, 2, 5, 9, 14].into_iter().enumerate() {
        let begin = Instant::now();
        let from = if round == 0 {
            0
        } else {
            read_checkpoint_info(&ck).unwrap().run.step
        };
        let mut child = if round == 0 {
            start(&bin, &deck, &out, &["--checkpoint-interval", "1"])
        } else {
            restarts += 1;
            Command::new(&bin)
                .arg("--restart")
                .arg(&ck)
                .arg("--out")
                .arg(&out)
                .arg("--checkpoint-interval")
                .arg("1")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        // Step from+2's output follows step from+1's checkpoint.
        let marker = out.join(format!("sphere_{:06}.hdf", from + 2));
        wait_for_file(&mut child, &marker, begin);
        std::thread::sleep(Duration::from_millis(delay_ms));
        send(&child, "KILL");
        let killed = wait_for(child, Duration::from_secs(30), "killed run");
        assert_eq!(killed.status.code(), None, "not killed: {}", killed.status);

        // The checkpoint is complete (the last one renamed into place) and
        // every listed output opens.
        let info = read_checkpoint_info(&ck).unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(
            info.run.step > from,
            "round {round}: checkpoint at {}",
            info.run.step
        );
        let series = FileSeries::load(out.join("sphere.hdf.series")).unwrap();
        for e in series.entries() {
            let step: u64 = e.name["sphere_".len()..e.name.len() - 4].parse().unwrap();
            check_output(&out.join(&e.name), step, e.time);
        }
        read_checkpoint::<f64>(&ck).unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
    assert_eq!(restarts, 4);
    // A last restart cleans up what the last kill left and finishes.
    let last = read_checkpoint_info(&ck).unwrap().run.step;
    let child = Command::new(&bin)
        .arg("--restart")
        .arg(&ck)
        .arg("--out")
        .arg(&out)
        .arg("--max-steps")
        .arg((last + 1).to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let done = wait_for(child, Duration::from_secs(60), "final run");
    assert!(
        done.status.success(),
        "{}\n{}",
        done.status,
        String::from_utf8_lossy(&done.stderr)
    );
    let left = names(&out);
    assert!(!left.iter().any(|n| n.contains(".tmp")), "{left:?}");
    check_series(&out, last + 1);
    std::fs::remove_dir_all(&dir).ok();
}
