//! The one error type of quilt-io.

use std::path::{Path, PathBuf};

use thiserror::Error;

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

    /// The HDF5 library refused an operation on a file.
    #[error("{}: {what}: {source}", path.display())]
    Hdf5 {
        /// The file (for atomic writes: the final name, not the temporary one).
        path: PathBuf,
        /// The operation that failed.
        what: String,
        /// The HDF5 error stack, condensed.
        #[source]
        source: hdf5::Error,
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
        /// What is missing or inconsistent.
        detail: String,
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

/// Attaches a file name and an operation to HDF5 results.
pub(crate) trait Hdf5Context<T> {
    fn at(self, path: &Path, what: &str) -> Result<T, IoError>;
}

impl<T> Hdf5Context<T> for hdf5::Result<T> {
    fn at(self, path: &Path, what: &str) -> Result<T, IoError> {
        self.map_err(|source| IoError::Hdf5 {
            path: path.to_path_buf(),
            what: what.to_string(),
            source,
        })
    }
}
