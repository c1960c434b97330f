//! Reliability of quilt's files: damaged run state and sizes are caught
//! when a checkpoint is read (naming file and field) and refused when one
//! is written; temporaries left by killed processes are swept; HDF5 errors
//! are one short line naming the file.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard};

use quilt_io::{
    IoError, RunState, read_checkpoint, read_checkpoint_info, remove_stale_temporaries,
    write_checkpoint,
};
use quilt_mesh::HierarchyData;

/// `hdf5_prints_nothing_to_stderr` runs this binary as a child process. A
/// child forked while another test holds an HDF5 file open inherits the
/// descriptor (HDF5 opens files without close-on-exec) and with it the
/// file's lock, so that test's next open of its file fails ("unable to
/// lock file"). Tests that open files hold this lock shared; the test that
/// forks holds it alone while its child runs.
static FILES: RwLock<()> = RwLock::new(());

fn files_open() -> RwLockReadGuard<'static, ()> {
    FILES.read().unwrap_or_else(|e| e.into_inner())
}

fn run_state() -> RunState {
    RunState {
        time: 1.5,
        step: 12,
        counters: BTreeMap::from([("regrids".to_string(), 3)]),
        values: BTreeMap::from([("dt".to_string(), 1.0e-3)]),
        deck: "[run]\nend_time = 2.0\n".to_string(),
    }
}

fn write_sample(path: &Path) {
    let h = common::hierarchy();
    let d = HierarchyData::<f64>::new(&h, 5).unwrap();
    write_checkpoint(path, &run_state(), &h, &d).unwrap();
}

/// Both readers refuse `path` as damaged, naming the file and every piece
/// of `expect` (the field, its value).
fn assert_damaged(path: &Path, expect: &[&str]) {
    let name = path.file_name().unwrap().to_str().unwrap();
    let errors = [
        read_checkpoint::<f64>(path).map(drop).unwrap_err(),
        read_checkpoint_info(path).map(drop).unwrap_err(),
    ];
    for err in errors {
        let msg = err.to_string();
        assert!(matches!(err, IoError::CorruptCheckpoint { .. }), "{msg}");
        assert!(msg.contains(name), "{msg}");
        for e in expect {
            assert!(msg.contains(e), "{e:?} not in {msg}");
        }
    }
}

/// Writes a valid checkpoint, lets `damage` edit it through HDF5, and
/// checks that both readers name the damage.
fn forge(name: &str, damage: impl FnOnce(&hdf5::File), expect: &[&str]) {
    let dir = common::scratch(&format!("rel-{name}"));
    let path = dir.join(format!("{name}.h5"));
    write_sample(&path);
    read_checkpoint::<f64>(&path).unwrap();
    {
        let f = hdf5::File::open_rw(&path).unwrap();
        damage(&f);
    }
    assert_damaged(&path, expect);
    fs::remove_dir_all(&dir).unwrap();
}

fn set_scalar<A: hdf5::H5Type>(f: &hdf5::File, group: &str, attr: &str, v: A) {
    f.group(group)
        .unwrap()
        .attr(attr)
        .unwrap()
        .write_scalar(&v)
        .unwrap();
}

#[test]
fn stored_run_state_is_validated_on_read() {
    let _files = files_open();
    forge(
        "nan-time",
        |f| set_scalar(f, "run", "time", f64::NAN),
        &["/run@time", "NaN"],
    );
    forge(
        "negative-time",
        |f| set_scalar(f, "run", "time", -5.0f64),
        &["/run@time", "-5", "not negative"],
    );
    forge(
        "inf-value",
        |f| set_scalar(f, "run/values", "dt", f64::INFINITY),
        &["/run/values@dt", "inf"],
    );
    forge(
        "nan-value",
        |f| set_scalar(f, "run/values", "dt", f64::NAN),
        &["/run/values@dt", "NaN"],
    );
}

#[test]
fn stored_sizes_are_validated_on_read() {
    let _files = files_open();
    forge(
        "no-levels",
        |f| set_scalar(f, "hierarchy", "num_levels", 0u32),
        &["/hierarchy@num_levels", "= 0"],
    );
    forge(
        "many-levels",
        |f| set_scalar(f, "hierarchy", "num_levels", 4_000_000_000u32),
        &["/hierarchy@num_levels", "4000000000", "1 to 32"],
    );
    forge(
        "no-components",
        |f| set_scalar(f, "state", "ncomp", 0u32),
        &["/state@ncomp", "= 0"],
    );
    forge(
        "short-offsets",
        |f| {
            let g = f.group("state").unwrap();
            g.unlink("offsets").unwrap();
            g.new_dataset::<u64>()
                .shape(3)
                .create("offsets")
                .unwrap()
                .write_raw(&[0u64, 10, 20][..])
                .unwrap();
        },
        &["/state/offsets", "3 entries", "5 patches"],
    );
}

#[test]
fn a_huge_component_count_is_refused_before_allocating() {
    let _files = files_open();
    let dir = common::scratch("rel-ncomp");
    let path = dir.join("chk.h5");
    write_sample(&path);
    {
        let f = hdf5::File::open_rw(&path).unwrap();
        set_scalar(&f, "state", "ncomp", u32::MAX);
    }
    let msg = read_checkpoint::<f64>(&path).unwrap_err().to_string();
    assert!(
        msg.contains("/state/offsets") && msg.contains("4294967295"),
        "{msg}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// How many entries `dir` holds.
fn count(dir: &Path) -> usize {
    fs::read_dir(dir).unwrap().count()
}

#[test]
fn invalid_run_state_is_not_written() {
    let _files = files_open();
    let dir = common::scratch("rel-write");
    let path = dir.join("chk.h5");
    write_sample(&path);
    let before = fs::read(&path).unwrap();
    let h = common::hierarchy();
    let d = HierarchyData::<f64>::new(&h, 5).unwrap();
    // What is wrong, how to make a valid state so, what the error says.
    type Case = (&'static str, fn(&mut RunState), &'static [&'static str]);
    let cases: [Case; 5] = [
        ("nan time", |r| r.time = f64::NAN, &["/run@time", "NaN"]),
        ("negative time", |r| r.time = -5.0, &["/run@time", "-5"]),
        (
            "infinite value",
            |r| {
                r.values.insert("dt".into(), f64::NEG_INFINITY);
            },
            &["/run/values@dt", "-inf"],
        ),
        (
            "empty counter name",
            |r| {
                r.counters.insert(String::new(), 1);
            },
            &["/run/counters name", "\"\""],
        ),
        (
            "NUL in a value name",
            |r| {
                r.values.insert("a\0b".into(), 1.0);
            },
            &["/run/values name"],
        ),
    ];
    for (what, spoil, expect) in cases {
        let mut run = run_state();
        spoil(&mut run);
        let err = write_checkpoint(&path, &run, &h, &d).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(&err, IoError::InvalidCheckpoint { path: p, .. } if *p == path),
            "{what}: {msg}"
        );
        assert!(msg.contains("chk.h5"), "{what}: {msg}");
        for e in expect {
            assert!(msg.contains(e), "{what}: {e:?} not in {msg}");
        }
        assert_eq!(fs::read(&path).unwrap(), before, "{what}");
        assert_eq!(count(&dir), 1, "{what}: a file besides chk.h5 was left");
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// A process id no process can have: above the kernel's maximum.
#[cfg(target_os = "linux")]
fn dead_pid() -> u32 {
    let max: u32 = fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    max + 1
}

#[cfg(target_os = "linux")]
#[test]
fn stale_temporaries_of_dead_processes_are_removed() {
    let _files = files_open();
    let dir = common::scratch("rel-stale");
    let (dead, ours) = (dead_pid(), std::process::id());
    let stale = [
        // A killed checkpoint write, and a hierarchy file's of the
        // earlier `.NAME.tmp-PID` form.
        format!(".chk.h5.tmp-{dead}-0"),
        format!(".h.json.tmp-{dead}"),
    ];
    let kept = [
        format!(".chk.h5.tmp-{ours}-1"),
        format!(".h.json.tmp-{ours}"),
        "chk.h5".to_string(),
        format!("chk.h5.tmp-{dead}-0"),
        format!(".chk.h5.tmp-{dead}x"),
        format!(".notes.tmp-{dead}-1-2"),
    ];
    for n in stale.iter().chain(&kept) {
        fs::write(dir.join(n), b"x").unwrap();
    }
    // Not recursive, and only plain files.
    let sub = dir.join(format!(".sub.tmp-{dead}-0"));
    fs::create_dir(&sub).unwrap();
    fs::write(sub.join(format!(".chk.h5.tmp-{dead}-0")), b"x").unwrap();

    let mut removed = remove_stale_temporaries(&dir).unwrap();
    removed.sort();
    let mut want: Vec<PathBuf> = stale.iter().map(|n| dir.join(n)).collect();
    want.sort();
    assert_eq!(removed, want);
    assert!(removed.iter().all(|p| !p.exists()));
    assert!(kept.iter().all(|n| dir.join(n).exists()));
    assert_eq!(count(&dir), kept.len() + 1);
    assert_eq!(count(&sub), 1);
    // Nothing stale is left, and a missing directory is not an error.
    assert!(remove_stale_temporaries(&dir).unwrap().is_empty());
    assert!(
        remove_stale_temporaries(&dir.join("missing"))
            .unwrap()
            .is_empty()
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn rewriting_a_checkpoint_removes_what_a_killed_writer_left() {
    let _files = files_open();
    let dir = common::scratch("rel-rewrite");
    let path = dir.join("chk.h5");
    let dead = dead_pid();
    let stale = dir.join(format!(".chk.h5.tmp-{dead}-3"));
    // Live writers' files, and another target's, are not this write's to
    // remove.
    let live = dir.join(format!(".chk.h5.tmp-{}-999999", std::process::id()));
    let other = dir.join(format!(".other.h5.tmp-{dead}-3"));
    for f in [&stale, &live, &other] {
        fs::write(f, vec![0u8; 4096]).unwrap();
    }
    write_sample(&path);
    assert!(!stale.exists());
    assert!(path.exists() && live.exists() && other.exists());
    assert_eq!(count(&dir), 3);
    fs::remove_dir_all(&dir).unwrap();
}

/// The message of `err` and of every error below it, as an error chain
/// printer (anyhow's `{:#}`, `Caused by:`) shows them.
fn chain(err: &IoError) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        parts.push(s.to_string());
        source = s.source();
    }
    parts.join(": ")
}

/// `err`, with its whole chain, is one line that names `file` once (its
/// directory included), says `cause`, and besides the path stays short.
fn assert_concise(err: &IoError, file: &Path, cause: &str) {
    let text = chain(err);
    let dir = file.parent().unwrap().display().to_string();
    assert_eq!(text.matches(&dir).count(), 1, "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains(cause) && !text.contains('\n'), "{text}");
    let own = text.len() - file.display().to_string().len();
    assert!(own < 250, "{own} characters besides the path: {text}");
}

#[test]
fn hdf5_errors_are_one_short_line_naming_the_file() {
    let _files = files_open();
    // A run directory with a long name: HDF5 repeats the (temporary)
    // file's whole path in its description, and the error chain would
    // repeat the description.
    let dir = common::scratch("rel-h5err").join("a-long-run-directory-name-".repeat(6));
    fs::create_dir_all(&dir).unwrap();

    let target = dir.join("missing").join("chk.h5");
    let h = common::hierarchy();
    let d = HierarchyData::<f64>::new(&h, 5).unwrap();
    let err = write_checkpoint(&target, &run_state(), &h, &d).unwrap_err();
    assert!(matches!(err, IoError::Hdf5 { .. }), "{err}");
    assert_concise(&err, &target, "H5Fcreate");

    // A truncated checkpoint.
    let path = dir.join("chk.h5");
    write_sample(&path);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    for err in [
        read_checkpoint::<f64>(&path).map(drop).unwrap_err(),
        read_checkpoint_info(&path).map(drop).unwrap_err(),
    ] {
        assert_concise(&err, &path, "truncated");
    }
    fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

/// The HDF5 library prints its whole error stack to stderr unless told
/// not to, per thread; failed calls from the main thread and a fresh one
/// must print nothing. Runs itself as a child process to see its stderr.
#[test]
fn hdf5_prints_nothing_to_stderr() {
    const CHILD: &str = "QUILT_IO_STDERR_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let dir = common::scratch("rel-stderr-child");
        let bad = dir.join("bad.h5");
        let mut bytes = b"\x89HDF\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(&[0xab; 600]);
        fs::write(&bad, bytes).unwrap();
        assert!(read_checkpoint::<f64>(&bad).is_err());
        let b = bad.clone();
        std::thread::spawn(move || assert!(read_checkpoint_info(&b).is_err()))
            .join()
            .unwrap();
        fs::remove_dir_all(&dir).unwrap();
        return;
    }
    let _alone = FILES.write().unwrap_or_else(|e| e.into_inner());
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "hdf5_prints_nothing_to_stderr", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the child ran no test"
    );
    assert!(!stderr.contains("HDF5"), "{stderr}");
}
