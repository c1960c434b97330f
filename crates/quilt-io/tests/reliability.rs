//! Temporary files of atomic writes left by killed processes are swept.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use quilt_io::{RunState, remove_stale_temporaries, write_checkpoint};
use quilt_mesh::HierarchyData;

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

/// How many entries `dir` holds.
fn count(dir: &Path) -> usize {
    fs::read_dir(dir).unwrap().count()
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
