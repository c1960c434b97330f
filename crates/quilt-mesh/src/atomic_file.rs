//! Files replaced atomically, and the names of their temporaries.
//!
//! Every file quilt writes (outputs, series, checkpoints, hierarchy files,
//! cost-model coefficients) is written to a hidden temporary in the same
//! directory, synced, and renamed over its target, so a reader sees either
//! the complete old file or the complete new one. The temporary is named
//! `.NAME.tmp-PID-N`: unique per process and call, and readable back
//! ([`parse_temp_name`]) so that what a killed process left can be told
//! from a write in progress. This module is the one owner of that form;
//! quilt-io's writers and its sweep of stale temporaries use it.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes temporaries of concurrent writers within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The temporary under which `target` is written: `.NAME.tmp-PID-N` in the
/// same directory (so the rename stays within one file system); `None`
/// when `target` names no file.
pub fn temp_path_for(target: &Path) -> Option<PathBuf> {
    let name = target.file_name()?;
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp_name = format!(".{}.tmp-{}-{n}", name.to_string_lossy(), std::process::id());
    Some(target.with_file_name(tmp_name))
}

/// Splits the name of a temporary file left by an atomic write into the
/// name of the file being written and the id of the process writing it.
///
/// Temporary names are `.NAME.tmp-PID-N` ([`temp_path_for`]) or
/// `.NAME.tmp-PID` (hierarchy files of earlier versions); PID and N are
/// decimal digits. Any other name gives `None`.
///
/// ```
/// use quilt_mesh::atomic_file::parse_temp_name;
/// assert_eq!(parse_temp_name(".chk.h5.tmp-4242-7"), Some(("chk.h5", 4242)));
/// assert_eq!(parse_temp_name(".h.json.tmp-99"), Some(("h.json", 99)));
/// assert_eq!(parse_temp_name("chk.h5"), None);
/// ```
pub fn parse_temp_name(file_name: &str) -> Option<(&str, u32)> {
    let (target, tail) = file_name.strip_prefix('.')?.rsplit_once(".tmp-")?;
    let (pid, n) = match tail.split_once('-') {
        Some((pid, n)) => (pid, Some(n)),
        None => (tail, None),
    };
    let decimal = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if target.is_empty() || !decimal(pid) || !n.is_none_or(decimal) {
        return None;
    }
    Some((target, pid.parse().ok()?))
}

/// The directory `target` is in (`.` for a bare file name).
pub fn parent_dir(target: &Path) -> &Path {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to `target` atomically: a temporary, synced, renamed
/// over `target`, the directory synced. On error the temporary is removed,
/// `target` is as it was, and the error comes with the path it concerns
/// (the temporary, or `target` for the rename).
pub fn write_bytes(target: &Path, bytes: &[u8]) -> Result<(), (PathBuf, std::io::Error)> {
    let tmp = temp_path_for(target).ok_or_else(|| {
        (
            target.to_path_buf(),
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"),
        )
    })?;
    let result = fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            // The data must be on disk before the rename is, or a crash
            // could leave the new name pointing at an empty file.
            f.sync_all()
        })
        .map_err(|e| (tmp.clone(), e))
        .and_then(|()| fs::rename(&tmp, target).map_err(|e| (target.to_path_buf(), e)));
    if result.is_err() {
        // Best effort: the temporary is garbage whatever went wrong.
        let _ = fs::remove_file(&tmp);
        return result;
    }
    sync_dir(parent_dir(target));
    Ok(())
}

/// Makes a rename in `dir` durable. Failure only weakens durability after
/// a power loss (the file is already complete), so it is logged, not
/// returned.
pub fn sync_dir(dir: &Path) {
    if let Err(e) = fs::File::open(dir).and_then(|d| d.sync_all()) {
        log::debug!("could not sync directory {}: {e}", dir.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("quilt-mesh-atomic-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn temp_names_are_unique_and_parse_back() {
        let dir = scratch("names");
        let (a, b) = (
            temp_path_for(&dir.join("chk.h5")).unwrap(),
            temp_path_for(&dir.join("chk.h5")).unwrap(),
        );
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(dir.as_path()));
        let name = a.file_name().unwrap().to_str().unwrap();
        assert_eq!(parse_temp_name(name), Some(("chk.h5", std::process::id())));
        assert_eq!(temp_path_for(Path::new("/")), None);
        // The legacy form of hierarchy files, and targets containing the
        // marker themselves.
        assert_eq!(parse_temp_name(".h.json.tmp-12"), Some(("h.json", 12)));
        assert_eq!(parse_temp_name(".a.tmp-1.tmp-2-3"), Some(("a.tmp-1", 2)));
        for other in [
            "chk.h5",
            "chk.h5.tmp-12-0",
            ".chk.h5",
            ".tmp-12-0",
            "..tmp-12",
            ".x.tmp-",
            ".x.tmp-12a",
            ".x.tmp-+12",
            ".x.tmp-12-",
            ".x.tmp--3",
            ".x.tmp-1-2-3",
            ".x.tmp-1-2a",
            ".x.tmp-99999999999-0",
        ] {
            assert_eq!(parse_temp_name(other), None, "{other}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_target_and_leaves_no_temporary() {
        let dir = scratch("fail");
        let f = dir.join("a.txt");
        write_bytes(&f, b"one").unwrap();
        write_bytes(&f, b"two").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"two");
        // A directory where the target is: the rename fails.
        let d = dir.join("sub");
        fs::create_dir_all(d.join("x")).unwrap();
        let (path, _) = write_bytes(&d, b"three").unwrap_err();
        assert_eq!(path, d);
        let names: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 2, "{names:?}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
