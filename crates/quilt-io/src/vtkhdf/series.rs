//! ParaView's JSON time-series file (`NAME.hdf.series`):
//!
//! ```json
//! {"file-series-version": "1.0",
//!  "files": [{"name": "sphere_000000.hdf", "time": 0.0}, ...]}
//! ```
//!
//! Names are relative to the directory of the series file. ParaView opens
//! the `.series` file with the reader of the inner extension and shows the
//! files as time steps.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic::write_bytes_atomically;
use crate::error::IoError;

/// The `file-series-version` written and accepted.
pub const SERIES_VERSION: &str = "1.0";

/// One file of a time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesEntry {
    /// File name relative to the series file's directory.
    pub name: String,
    /// Simulation time of the file.
    pub time: f64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeriesJson {
    #[serde(rename = "file-series-version")]
    version: String,
    files: Vec<SeriesEntry>,
}

/// A time-series file and its entries, in increasing time.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSeries {
    path: PathBuf,
    entries: Vec<SeriesEntry>,
}

impl FileSeries {
    /// An empty series to be saved at `path` (nothing is written yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileSeries {
            path: path.into(),
            entries: Vec::new(),
        }
    }

    /// Reads the series at `path`.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, IoError> {
        let path = path.into();
        let text = fs::read_to_string(&path).map_err(|e| IoError::fs(&path, "read", e))?;
        let bad = |detail: String| IoError::Series {
            path: path.clone(),
            detail,
        };
        let json: SeriesJson = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if json.version != SERIES_VERSION {
            return Err(bad(format!(
                "file-series-version {:?}, expected {SERIES_VERSION:?}",
                json.version
            )));
        }
        for (i, w) in json.files.windows(2).enumerate() {
            if w[1].time < w[0].time {
                return Err(bad(format!(
                    "entry {} ({}, t = {}) comes before entry {i} ({}, t = {}) in time",
                    i + 1,
                    w[1].name,
                    w[1].time,
                    w[0].name,
                    w[0].time
                )));
            }
        }
        Ok(FileSeries {
            path,
            entries: json.files,
        })
    }

    /// Reads the series at `path`, or starts an empty one if there is no
    /// file there.
    pub fn load_or_new(path: impl Into<PathBuf>) -> Result<Self, IoError> {
        let path = path.into();
        if path.exists() {
            Self::load(path)
        } else {
            Ok(Self::new(path))
        }
    }

    /// Where the series is saved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries, in increasing time.
    pub fn entries(&self) -> &[SeriesEntry] {
        &self.entries
    }

    /// Adds a file. A file already listed under the same name is replaced
    /// (a step written again after a restart); otherwise `time` must not be
    /// earlier than the last entry's.
    pub fn push(&mut self, name: impl Into<String>, time: f64) -> Result<(), IoError> {
        let name = name.into();
        if !time.is_finite() {
            return Err(IoError::invalid(
                format!("time of series entry {name}"),
                format!("{time} is not finite"),
            ));
        }
        if let Some(pos) = self.entries.iter().position(|e| e.name == name) {
            let before_ok = pos == 0 || self.entries[pos - 1].time <= time;
            let after_ok = pos + 1 == self.entries.len() || time <= self.entries[pos + 1].time;
            if before_ok && after_ok {
                self.entries[pos].time = time;
                return Ok(());
            }
            self.entries.remove(pos);
        }
        if let Some(last) = self.entries.last() {
            if time < last.time {
                return Err(IoError::invalid(
                    format!("series entry {name}"),
                    format!(
                        "time {time} is before the last entry ({}, t = {}); drop later entries with truncate_after when restarting",
                        last.name, last.time
                    ),
                ));
            }
        }
        self.entries.push(SeriesEntry { name, time });
        Ok(())
    }

    /// Drops the entries later than `time`: a run restarted at `time` will
    /// write them again, and until then they belong to another history.
    pub fn truncate_after(&mut self, time: f64) {
        self.entries.retain(|e| e.time <= time);
    }

    /// The JSON text of the series.
    pub fn to_json(&self) -> String {
        let json = SeriesJson {
            version: SERIES_VERSION.to_string(),
            files: self.entries.clone(),
        };
        // Serialising plain strings and finite floats cannot fail.
        serde_json::to_string_pretty(&json).unwrap_or_default()
    }

    /// Writes the series file atomically.
    pub fn save(&self) -> Result<(), IoError> {
        let mut text = self.to_json();
        text.push('\n');
        write_bytes_atomically(&self.path, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("quilt-io-series-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn round_trip_and_format() {
        let dir = scratch("rt");
        let p = dir.join("s.hdf.series");
        let mut s = FileSeries::new(&p);
        s.push("s_000000.hdf", 0.0).unwrap();
        s.push("s_000010.hdf", 0.125).unwrap();
        s.save().unwrap();
        let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v["file-series-version"], "1.0");
        assert_eq!(v["files"][1]["name"], "s_000010.hdf");
        assert_eq!(v["files"][1]["time"], 0.125);
        assert_eq!(FileSeries::load(&p).unwrap(), s);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn push_rules() {
        let mut s = FileSeries::new("x.hdf.series");
        s.push("a", 0.0).unwrap();
        s.push("b", 1.0).unwrap();
        assert!(s.push("c", 0.5).is_err());
        assert!(s.push("c", f64::NAN).is_err());
        s.push("b", 1.5).unwrap();
        assert_eq!(s.entries().len(), 2);
        assert_eq!(s.entries()[1].time, 1.5);
        s.push("c", 2.0).unwrap();
        s.truncate_after(1.0);
        assert_eq!(s.entries().len(), 1);
        s.push("b", 1.0).unwrap();
        assert_eq!(s.entries()[1].name, "b");
    }

    #[test]
    fn bad_files_name_the_file() {
        let dir = scratch("bad");
        let p = dir.join("s.hdf.series");
        fs::write(&p, "{\"files\": 3}").unwrap();
        let e = FileSeries::load(&p).unwrap_err().to_string();
        assert!(e.contains("s.hdf.series"), "{e}");
        fs::write(&p, r#"{"file-series-version":"2.0","files":[]}"#).unwrap();
        let e = FileSeries::load(&p).unwrap_err().to_string();
        assert!(e.contains("2.0"), "{e}");
        fs::write(
            &p,
            r#"{"file-series-version":"1.0","files":[{"name":"a","time":1},{"name":"b","time":0}]}"#,
        )
        .unwrap();
        assert!(FileSeries::load(&p).is_err());
        assert!(FileSeries::load(dir.join("missing")).is_err());
        assert!(
            FileSeries::load_or_new(dir.join("missing"))
                .unwrap()
                .entries()
                .is_empty()
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
