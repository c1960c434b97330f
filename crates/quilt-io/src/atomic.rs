//! Atomic replacement of a file: write a temporary file in the same
//! directory, flush it to disk, then rename it over the target.
//!
//! `rename(2)` within one file system replaces the target atomically, so a
//! reader (ParaView polling a series, a restart after a crash) sees either
//! the complete old file or the complete new one, never a partial file. A
//! write that fails removes its temporary file and leaves the target as it
//! was.

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
/// process and call.
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

/// Writes `target` atomically: `write` receives the temporary path and must
/// create and fully close the file there; on success it is synced and
/// renamed over `target`.
pub(crate) fn replace_atomically<F>(target: &Path, write: F) -> Result<(), IoError>
where
    F: FnOnce(&Path) -> Result<(), IoError>,
{
    let tmp = temp_path_for(target)?;
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

/// Makes the rename itself durable. Failure only weakens durability after a
/// power loss (the file is already complete), so it is logged, not returned.
fn sync_parent_dir(target: &Path) {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
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
    fn missing_directory_is_an_error_naming_the_file() {
        let dir = scratch("missing");
        let f = dir.join("no/such/dir/a.txt");
        let err = write_bytes_atomically(&f, b"x").unwrap_err();
        assert!(err.to_string().contains("no/such/dir"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
