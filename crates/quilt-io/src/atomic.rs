//! Atomic replacement of a file: write a temporary file in the same
//! directory, flush it to disk, then rename it over the target.
//!
//! `rename(2)` within one file system replaces the target atomically, so a
//! reader (ParaView polling a series, a restart after a crash) sees either
//! the complete old file or the complete new one, never a partial file. A
//! write that fails removes its temporary file and leaves the target as it
//! was.
//!
//! A process killed mid-write cannot remove its temporary file. The name
//! carries the writer's process id, so a later process can tell such a
//! leftover from a write in progress and remove it
//! ([`remove_stale_temporaries`]; every write also sweeps the leftovers of
//! its own target).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::IoError;

/// Distinguishes temporary files of concurrent writers within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Removes the temporary file unless the write succeeded, also when the
/// writer panics.
struct TempGuard {
    path: PathBuf,
    armed: bool,
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if self.armed {
            if let Err(e) = fs::remove_file(&self.path) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    log::warn!(
                        "could not remove temporary file {}: {e}",
                        self.path.display()
                    );
                }
            }
        }
    }
}

/// The temporary name used while `target` is written: hidden, in the same
/// directory (so the rename stays within one file system), unique per
/// process and call. [`parse_temp_name`] reads it back.
pub(crate) fn temp_path_for(target: &Path) -> Result<PathBuf, IoError> {
    let name = target.file_name().ok_or_else(|| {
        IoError::invalid(
            "output path",
            format!("{} has no file name", target.display()),
        )
    })?;
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp_name = format!(".{}.tmp-{}-{n}", name.to_string_lossy(), std::process::id());
    Ok(target.with_file_name(tmp_name))
}

/// Splits the name of a temporary file left by an atomic write into the
/// name of the file being written and the id of the process writing it.
///
/// Temporary names are `.NAME.tmp-PID-N` (quilt-io's atomic writes, and
/// quilt-mesh's hierarchy files, which cannot use this crate and so repeat
/// the form) or `.NAME.tmp-PID` (hierarchy files of earlier versions); PID
/// and N are decimal digits. Any other name gives `None`.
///
/// ```
/// assert_eq!(quilt_io::parse_temp_name(".chk.h5.tmp-4242-7"), Some(("chk.h5", 4242)));
/// assert_eq!(quilt_io::parse_temp_name(".h.json.tmp-99"), Some(("h.json", 99)));
/// assert_eq!(quilt_io::parse_temp_name("chk.h5"), None);
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

/// Removes, from `dir` only (not its subdirectories), the temporary files
/// of atomic writes ([`parse_temp_name`]) whose writing process is gone:
/// what a run killed mid-write (SIGKILL, out of memory, a node failure)
/// leaves behind, up to a whole checkpoint each. Logs and returns every
/// file removed. A missing `dir` removes nothing.
///
/// A process counts as gone only when that is certain: on Linux when
/// `/proc/PID` does not exist (while `/proc/self` does); this process is
/// never gone. Elsewhere nothing is removed. Process ids mean something
/// only on this host and in this process's PID namespace: do not point this
/// at a directory that processes on other hosts (a shared file system) or
/// in other containers write into at the same time, or their files in
/// progress would count as stale.
pub fn remove_stale_temporaries(dir: &Path) -> Result<Vec<PathBuf>, IoError> {
    remove_stale_where(dir, |_| true)
}

/// [`remove_stale_temporaries`] limited to temporaries whose target name
/// passes `wanted`.
fn remove_stale_where(dir: &Path, wanted: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>, IoError> {
    let mut removed = Vec::new();
    if !can_tell_dead_processes() {
        return Ok(removed);
    }
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(removed),
        Err(e) => return Err(IoError::fs(dir, "list directory", e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| IoError::fs(dir, "list directory", e))?;
        let name = entry.file_name();
        let Some((target, pid)) = name.to_str().and_then(parse_temp_name) else {
            continue;
        };
        // Only plain files: a directory or link of that name is not ours.
        if !wanted(target) || !process_is_gone(pid) || !entry.file_type().is_ok_and(|t| t.is_file())
        {
            continue;
        }
        let path = entry.path();
        match fs::remove_file(&path) {
            Ok(()) => {
                log::info!(
                    "removed {}, left by process {pid} (no longer running) while writing {target}",
                    path.display()
                );
                removed.push(path);
            }
            // Another sweep got there first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(IoError::fs(&path, "remove stale temporary file", e)),
        }
    }
    Ok(removed)
}

/// Whether [`process_is_gone`] can answer at all: without a mounted
/// `/proc` every process would look gone, and live writers would lose
/// their files.
fn can_tell_dead_processes() -> bool {
    cfg!(target_os = "linux") && Path::new("/proc/self").exists()
}

/// Whether process `pid` has certainly exited (see
/// [`can_tell_dead_processes`]).
fn process_is_gone(pid: u32) -> bool {
    pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists()
}

/// Sweeps the stale temporaries of `target` itself before it is written
/// again: a restarted run rewrites the checkpoint, the series and the
/// outputs after its restart point, so what its killed predecessor left of
/// them goes without any caller having to ask. Only temporaries of the
/// same target are touched, so a run never removes another run's files. A
/// failed sweep costs disk space, not the write, so it is only logged.
fn sweep_stale_of(target: &Path) {
    let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    if let Err(e) = remove_stale_where(parent_dir(target), |t| t == name) {
        log::warn!(
            "could not remove stale temporaries of {}: {e}",
            target.display()
        );
    }
}

/// Writes `target` atomically: `write` receives the temporary path and must
/// create and fully close the file there; on success it is synced and
/// renamed over `target`.
pub(crate) fn replace_atomically<F>(target: &Path, write: F) -> Result<(), IoError>
where
    F: FnOnce(&Path) -> Result<(), IoError>,
{
    let tmp = temp_path_for(target)?;
    sweep_stale_of(target);
    let mut guard = TempGuard {
        path: tmp.clone(),
        armed: true,
    };
    write(&tmp)?;
    // The data must be on disk before the rename is, or a crash could leave
    // the new name pointing at an empty file.
    File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| IoError::fs(&tmp, "sync temporary file", e))?;
    fs::rename(&tmp, target).map_err(|e| IoError::fs(target, "rename temporary file", e))?;
    guard.armed = false;
    sync_parent_dir(target);
    Ok(())
}

/// Writes `bytes` to `target` atomically.
pub(crate) fn write_bytes_atomically(target: &Path, bytes: &[u8]) -> Result<(), IoError> {
    replace_atomically(target, |tmp| {
        fs::write(tmp, bytes).map_err(|e| IoError::fs(tmp, "write temporary file", e))
    })
}

/// The directory `target` is in (`.` for a bare file name).
fn parent_dir(target: &Path) -> &Path {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Makes the rename itself durable. Failure only weakens durability after a
/// power loss (the file is already complete), so it is logged, not returned.
fn sync_parent_dir(target: &Path) {
    let dir = parent_dir(target);
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        log::debug!("could not sync directory {}: {e}", dir.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("quilt-io-atomic-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_and_leaves_no_temporary() {
        let dir = scratch("replace");
        let f = dir.join("a.txt");
        write_bytes_atomically(&f, b"one").unwrap();
        write_bytes_atomically(&f, b"two").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"two");
        assert_eq!(entries(&dir), vec!["a.txt".to_string()]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn failed_write_keeps_old_file_and_cleans_up() {
        let dir = scratch("fail");
        let f = dir.join("a.txt");
        write_bytes_atomically(&f, b"old").unwrap();
        let err = replace_atomically(&f, |tmp| {
            fs::write(tmp, b"partial").unwrap();
            Err(IoError::invalid("test", "simulated failure"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("simulated failure"));
        assert_eq!(fs::read(&f).unwrap(), b"old");
        assert_eq!(entries(&dir), vec!["a.txt".to_string()]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temp_names_parse_back() {
        let dir = scratch("names");
        let tmp = temp_path_for(&dir.join("chk.h5")).unwrap();
        assert_eq!(tmp.parent(), Some(dir.as_path()));
        let name = tmp.file_name().unwrap().to_str().unwrap();
        assert_eq!(parse_temp_name(name), Some(("chk.h5", std::process::id())));
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
    fn missing_directory_is_an_error_naming_the_file() {
        let dir = scratch("missing");
        let f = dir.join("no/such/dir/a.txt");
        let err = write_bytes_atomically(&f, b"x").unwrap_err();
        assert!(err.to_string().contains("no/such/dir"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
