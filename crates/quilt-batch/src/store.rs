//! Coefficient sets on disk: JSON with provenance, one file per backend and device.
//!
//! A missing file is normal (first run on a machine): callers get `None` or
//! the defaults. A file that exists but cannot be read, parsed or validated is
//! an error naming the file (and for parse errors the line and column), since
//! silently falling back would hide a stale or hand-edited calibration.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::coeffs::Coefficients;
use crate::error::{BatchError, Result};
use crate::model::CostModel;

/// Version of the file layout written by [`CoefficientFile::save`].
/// Version 2 added the solve coefficient `t_bin`.
pub const FORMAT_VERSION: u32 = 2;

/// Where a coefficient set came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Backend name, e.g. `"cpu"` or `"cuda"`.
    pub backend: String,
    /// Device name as the backend reports it, e.g. `"NVIDIA H100 80GB HBM3"`.
    pub device: String,
    /// Calibration date, free-form (ISO 8601 recommended).
    pub date: String,
    /// Number of timing samples the fit used.
    pub samples: u64,
}

/// The content of a coefficient file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoefficientFile {
    /// Layout version; must equal [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Where the coefficients came from.
    pub provenance: Provenance,
    /// The coefficients.
    pub coefficients: Coefficients,
}

impl CoefficientFile {
    /// A file body for the current format version.
    pub fn new(provenance: Provenance, coefficients: Coefficients) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            provenance,
            coefficients,
        }
    }

    /// Reads and validates a coefficient file; `Ok(None)` if it does not exist.
    ///
    /// # Errors
    /// [`BatchError::Io`] if it exists but cannot be read, [`BatchError::Parse`]
    /// with line and column for malformed JSON or a missing/unknown field,
    /// [`BatchError::FormatVersion`] for another layout version, and
    /// [`BatchError::InvalidFile`] for negative or non-finite coefficients.
    pub fn load(path: impl AsRef<Path>) -> Result<Option<Self>> {
        let path = path.as_ref();
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(BatchError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        Self::parse(&text, path).map(Some)
    }

    /// Parses and validates file content; `path` only labels errors.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let parse_error = |source: serde_json::Error| BatchError::Parse {
            path: path.to_path_buf(),
            line: source.line(),
            column: source.column(),
            source,
        };
        // The version first: a file of another layout names its version,
        // not the first field the layouts disagree on.
        #[derive(Deserialize)]
        struct Version {
            format_version: u32,
        }
        let version: Version = serde_json::from_str(text).map_err(parse_error)?;
        if version.format_version != FORMAT_VERSION {
            return Err(BatchError::FormatVersion {
                path: path.to_path_buf(),
                found: version.format_version,
                expected: FORMAT_VERSION,
            });
        }
        let file: Self = serde_json::from_str(text).map_err(parse_error)?;
        file.coefficients
            .validate()
            .map_err(|e| BatchError::InvalidFile {
                path: path.to_path_buf(),
                source: Box::new(e),
            })?;
        Ok(file)
    }

    /// Writes the file (pretty JSON), creating parent folders; the content goes
    /// to a temporary file first and is renamed into place, so a crash never
    /// leaves a half-written calibration behind.
    ///
    /// # Errors
    /// [`BatchError::InvalidCoefficient`] if the coefficients are invalid (nothing
    /// is written), [`BatchError::Io`] if writing fails.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.coefficients.validate()?;
        let io = |source| BatchError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(self).expect("coefficient files always serialise");
        // Runs sharing a coefficients directory may save at once: each
        // writes its own temporary and renames it into place.
        quilt_mesh::atomic_file::write_bytes(path, (text + "\n").as_bytes())
            .map_err(|(path, source)| BatchError::Io { path, source })
    }

    /// The cost model of these coefficients.
    pub fn model(&self) -> Result<CostModel> {
        CostModel::new(self.coefficients)
    }
}

/// Conventional file name for a backend and device: `<backend>-<device>.json`
/// with every character outside `[A-Za-z0-9._-]` replaced by `_`, so device
/// names with spaces or slashes give portable file names.
pub fn coefficient_file_name(backend: &str, device: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}-{}.json", clean(backend), clean(device))
}

/// Loads the model stored at `path`, or builds one from `defaults` when no file
/// exists. Returns the provenance when the coefficients came from the file.
///
/// # Errors
/// As [`CoefficientFile::load`]; invalid `defaults` give
/// [`BatchError::InvalidCoefficient`].
pub fn load_or_default(
    path: impl AsRef<Path>,
    defaults: Coefficients,
) -> Result<(CostModel, Option<Provenance>)> {
    let path = path.as_ref();
    match CoefficientFile::load(path)? {
        Some(file) => {
            log::info!(
                "cost model from {} ({} on {}, {}, {} samples)",
                path.display(),
                file.provenance.backend,
                file.provenance.device,
                file.provenance.date,
                file.provenance.samples
            );
            Ok((file.model()?, Some(file.provenance)))
        }
        None => {
            log::info!(
                "no coefficient file at {}; using default coefficients",
                path.display()
            );
            Ok((CostModel::new(defaults)?, None))
        }
    }
}
