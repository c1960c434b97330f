//! The crate's error type.

use std::path::PathBuf;

/// Result alias used throughout quilt-batch.
pub type Result<T, E = BatchError> = std::result::Result<T, E>;

/// Error raised by a timing callback during calibration.
pub type CallbackError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong in quilt-batch; every variant says what and where.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A patch extent is unusable: no interior left inside the ghost layers
    /// (each axis needs `extent > 2 * ghost`) or an axis beyond [`crate::MAX_EXTENT`].
    #[error("patch {patch}: ghost-inclusive extent {extent:?} with ghost width {ghost}: {reason}")]
    PatchExtent {
        /// Index of the patch within its bin.
        patch: usize,
        /// The offending ghost-inclusive extent.
        extent: [u32; 3],
        /// The ghost width.
        ghost: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// A patch claims more filled ghost cells than its ghost region holds.
    #[error(
        "patch {patch}: {interpolated} interpolated + {copied} copied ghost cells exceed the {available} ghost cells of the patch"
    )]
    GhostCounts {
        /// Index of the patch within its bin.
        patch: usize,
        /// Ghost cells said to be interpolated.
        interpolated: u64,
        /// Ghost cells said to be copied.
        copied: u64,
        /// Ghost cells the patch actually has.
        available: u64,
    },
    /// A patch claims more flux-register faces than its interior boundary has.
    #[error(
        "patch {patch}: {flux_faces} flux-register faces exceed the {available} boundary faces of the patch interior"
    )]
    FluxFaces {
        /// Index of the patch within its bin.
        patch: usize,
        /// Faces said to feed flux registers.
        flux_faces: u64,
        /// Boundary faces of the patch interior.
        available: u64,
    },
    /// A bin holds no patch.
    #[error("bin holds no patch")]
    EmptyBin,
    /// Bytes per cell must be positive.
    #[error("bytes per cell must be positive, got 0")]
    ZeroBytesPerCell,
    /// A selection was asked for with no bins left.
    #[error("no bins to select from")]
    NoBins,
    /// A selection was asked for with zero CPU queues.
    #[error("the number of queues (CPU threads) must be at least 1, got 0")]
    NoQueues,
    /// A cost coefficient is negative, NaN or infinite.
    #[error("cost coefficient `{name}` must be finite and non-negative, got {value}")]
    InvalidCoefficient {
        /// Name of the coefficient (as in the JSON file).
        name: &'static str,
        /// Offending value.
        value: f64,
    },
    /// A time (capacity, timing sample, observation) is negative, NaN or infinite.
    #[error("{what} must be finite and non-negative, got {value}")]
    InvalidTime {
        /// What the time is (e.g. "capacity", "solve sample 3").
        what: String,
        /// Offending value.
        value: f64,
    },
    /// An option value is out of range.
    #[error("option `{name}` = {value}: {reason}")]
    InvalidOption {
        /// Option name.
        name: &'static str,
        /// Offending value, formatted.
        value: String,
        /// Accepted range.
        reason: &'static str,
    },
    /// A bin index handed to the model does not exist.
    #[error("bin index {index} out of range for {len} bins")]
    BinIndex {
        /// Offending index.
        index: usize,
        /// Number of bins.
        len: usize,
    },
    /// Not enough samples to fit (or to hold some out).
    #[error("{what}: {got} samples, at least {needed} needed")]
    TooFewSamples {
        /// Which fit.
        what: &'static str,
        /// Samples required.
        needed: usize,
        /// Samples supplied.
        got: usize,
    },
    /// The least-squares problem could not be solved.
    #[error("{what}: least-squares fit failed: {reason}")]
    Fit {
        /// Which fit.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A timing callback failed during calibration.
    #[error("calibration: timing {what} sample {index} failed: {source}")]
    Callback {
        /// Which kind of sample ("solve", "prepare", "close").
        what: &'static str,
        /// Index of the sample in the calibration plan.
        index: usize,
        /// The callback's error.
        #[source]
        source: CallbackError,
    },
    /// Reading or writing a coefficient file failed.
    #[error("coefficient file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A coefficient file is not valid JSON for a coefficient set.
    #[error("coefficient file {} line {line} column {column}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A coefficient file was written by an incompatible format version.
    #[error("coefficient file {}: format version {found}, this build reads version {expected}", path.display())]
    FormatVersion {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Version this build understands.
        expected: u32,
    },
    /// A coefficient file holds invalid coefficients.
    #[error("coefficient file {}: {source}", path.display())]
    InvalidFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with its content.
        #[source]
        source: Box<BatchError>,
    },
}
