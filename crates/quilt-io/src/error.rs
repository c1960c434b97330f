//! The one error type of quilt-io.

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::checkpoint::InvalidField;

/// Everything that can go wrong writing or reading quilt's files.
///
/// Every variant that concerns a file names it, so a message read in a log
/// says which file and what is wrong with it.
#[derive(Debug, Error)]
pub enum IoError {
    /// An output or checkpoint description is inconsistent (sizes, names,
    /// non-finite geometry). Nothing was written.
    #[error("invalid {what}: {detail}")]
    Invalid {
        /// Which part of the description is wrong.
        what: String,
        /// What is wrong with it.
        detail: String,
    },

    /// Reading a file would need more memory than the budget allows
    /// (`quilt_mesh::memory`).
    #[error("{}: {source}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// What needs how much, and what is available.
        #[source]
        source: quilt_mesh::MeshError,
    },

    /// The HDF5 library refused an operation on a file.
    #[error("{}: {what}: {detail}", path.display())]
    Hdf5 {
        /// The file (for atomic writes: the final name, not the temporary one).
        path: PathBuf,
        /// The operation that failed.
        what: String,
        /// The HDF5 error stack condensed to one line: the call that failed
        /// and the innermost cause. The whole stack is logged at debug
        /// level.
        detail: String,
    },

    /// A file-system operation failed.
    #[error("{}: {what}: {source}", path.display())]
    Fs {
        /// The file or directory.
        path: PathBuf,
        /// The operation that failed.
        what: String,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },

    /// A time-series (`.hdf.series`) file exists but cannot be used.
    #[error("{}: invalid time-series file: {detail}", path.display())]
    Series {
        /// The series file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },

    /// The file is readable HDF5 (or not even that) but not a quilt
    /// checkpoint.
    #[error("{}: not a quilt checkpoint: {detail}", path.display())]
    NotACheckpoint {
        /// The file.
        path: PathBuf,
        /// Why it is not one.
        detail: String,
    },

    /// The checkpoint was written by a format version this build cannot read.
    #[error(
        "{}: checkpoint format version {found} is not supported (this build reads version {supported})",
        path.display()
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version stored in the file.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },

    /// A quilt checkpoint whose contents are damaged or incomplete.
    #[error("{}: damaged checkpoint: {detail}", path.display())]
    CorruptCheckpoint {
        /// The file.
        path: PathBuf,
        /// What is missing or inconsistent; for a stored value that breaks
        /// its rule, the field, the value and the rule (see
        /// [`InvalidField`]).
        detail: String,
    },

    /// A checkpoint was not written because what it would hold breaks a
    /// rule the reader enforces (a non-finite or negative time, a
    /// non-finite value, ...). Nothing was written: an earlier checkpoint
    /// at `path` is untouched.
    #[error("{}: checkpoint not written: {field}", path.display())]
    InvalidCheckpoint {
        /// The checkpoint that was to be written.
        path: PathBuf,
        /// The offending field.
        field: InvalidField,
    },

    /// The checkpoint stores its state in another floating-point type than
    /// the one requested; restarting across precisions is not bitwise.
    #[error("{}: checkpoint holds {found} state but {requested} was requested", path.display())]
    PrecisionMismatch {
        /// The file.
        path: PathBuf,
        /// The stored type (`"f32"` or `"f64"`).
        found: String,
        /// The requested type.
        requested: String,
    },
}

impl IoError {
    pub(crate) fn invalid(what: impl Into<String>, detail: impl Into<String>) -> Self {
        IoError::Invalid {
            what: what.into(),
            detail: detail.into(),
        }
    }

    pub(crate) fn fs(path: &Path, what: impl Into<String>, source: std::io::Error) -> Self {
        IoError::Fs {
            path: path.to_path_buf(),
            what: what.into(),
            source,
        }
    }
}

/// The longest HDF5 description an [`IoError`] carries; past it the text is
/// cut, since the whole stack is in the debug log anyway.
const HDF5_DETAIL_MAX: usize = 200;

/// One line describing an HDF5 error on `file`: the library call that
/// failed and the innermost (most specific) cause, e.g. `H5Fopen():
/// truncated file: eof = 600, sblock->base_addr = 0, stored_eof = 72688`.
///
/// The frames in between only restate the call ("unable to open file"), so
/// they go to `log::debug!` with the rest of the stack. HDF5 descriptions
/// often repeat the file name with its whole directory (the temporary name
/// of an atomic write included); the error already names the file, so that
/// directory is elided. The library's own printing of the stack to stderr
/// is off: hdf5-metno turns it off in every thread before its first call
/// into the library (`hdf5::sync`), so nothing here has to.
pub(crate) fn hdf5_detail(e: &hdf5::Error, file: &Path) -> String {
    let line = match e.stack() {
        Some(stack) if !stack.is_empty() => {
            if log::log_enabled!(log::Level::Debug) {
                let frames: Vec<String> = stack.iter().filter_map(|f| f.detail()).collect();
                log::debug!(
                    "HDF5 error stack for {}:\n  {}",
                    file.display(),
                    frames.join("\n  ")
                );
            }
            let (outer, inner) = (&stack[0], &stack[stack.len() - 1]);
            format!("{}(): {}", outer.func(), inner.desc())
        }
        _ => e.to_string(),
    };
    condense(&line, file)
}

/// `line` on one line, without `file`'s directory, at most
/// [`HDF5_DETAIL_MAX`] characters.
fn condense(line: &str, file: &Path) -> String {
    let mut s = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        let dir = format!("{}/", dir.display());
        s = s.replace(&dir, "");
    }
    if let Some((cut, _)) = s.char_indices().nth(HDF5_DETAIL_MAX) {
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// Attaches a file name and an operation to HDF5 results.
pub(crate) trait Hdf5Context<T> {
    /// An [`IoError::Hdf5`] naming `path` and the operation `what`.
    fn at(self, path: &Path, what: &str) -> Result<T, IoError>;

    /// An [`IoError::CorruptCheckpoint`] naming `path`: reading checkpoint
    /// part `what` failed, so the file is damaged.
    fn damaged(self, path: &Path, what: impl std::fmt::Display) -> Result<T, IoError>;
}

impl<T> Hdf5Context<T> for hdf5::Result<T> {
    fn at(self, path: &Path, what: &str) -> Result<T, IoError> {
        self.map_err(|e| IoError::Hdf5 {
            path: path.to_path_buf(),
            what: what.to_string(),
            detail: hdf5_detail(&e, path),
        })
    }

    fn damaged(self, path: &Path, what: impl std::fmt::Display) -> Result<T, IoError> {
        self.map_err(|e| IoError::CorruptCheckpoint {
            path: path.to_path_buf(),
            detail: format!("{what}: {}", hdf5_detail(&e, path)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn condense_makes_one_short_line_without_the_directory() {
        let file = Path::new("/very/long/run/dir/chk.h5");
        let raw = "H5Fcreate(): unable to open file: name = '/very/long/run/dir/.chk.h5.tmp-7-0',\n errno = 2";
        assert_eq!(
            condense(raw, file),
            "H5Fcreate(): unable to open file: name = '.chk.h5.tmp-7-0', errno = 2"
        );
        let long = "é".repeat(3 * HDF5_DETAIL_MAX);
        let c = condense(&long, file);
        assert_eq!(c.chars().count(), HDF5_DETAIL_MAX + 1);
        assert!(c.ends_with('…'));
        assert_eq!(condense("x", Path::new("chk.h5")), "x");
    }
}
