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

use quilt_mesh::atomic_file::{self, parent_dir};

pub use quilt_mesh::atomic_file::parse_temp_name;

use crate::error::IoError;

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

/// The temporary used while `target` is written
/// ([`quilt_mesh::atomic_file::temp_path_for`]), or an error when `target`
/// names no file.
pub(crate) fn temp_path_for(target: &Path) -> Result<PathBuf, IoError> {
    atomic_file::temp_path_for(target).ok_or_else(|| {
        IoError::invalid(
            "output path",
            format!("{} has no file name", target.display()),
        )
    })
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
    atomic_file::sync_dir(parent_dir(target));
    Ok(())
}

/// Writes `bytes` to `target` atomically.
pub(crate) fn write_bytes_atomically(target: &Path, bytes: &[u8]) -> Result<(), IoError> {
    replace_atomically(target, |tmp| {
        fs::write(tmp, bytes).map_err(|e| IoError::fs(tmp, "write temporary file", e))
    })
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
    fn missing_directory_is_an_error_naming_the_file() {
        let dir = scratch("missing");
        let f = dir.join("no/such/dir/a.txt");
        let err = write_bytes_atomically(&f, b"x").unwrap_err();
        assert!(err.to_string().contains("no/such/dir"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
