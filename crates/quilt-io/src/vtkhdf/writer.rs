//! A directory of numbered VTKHDF outputs plus their time series.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::IoError;

use super::model::AmrOutput;
use super::series::FileSeries;
use super::write::write_vtkhdf;

/// Writes `DIR/BASE_<step>.hdf` files and keeps `DIR/BASE.hdf.series`
/// listing them, rewritten atomically after every output so ParaView can
/// open the series while the run goes on.
#[derive(Debug)]
pub struct VtkHdfSeries {
    dir: PathBuf,
    base: String,
    series: FileSeries,
}

impl VtkHdfSeries {
    /// Starts a new series in `dir` (created if missing). An existing series
    /// file of the same name is replaced at the first output.
    pub fn create(dir: impl Into<PathBuf>, base: &str) -> Result<Self, IoError> {
        let dir = dir.into();
        check_base(base)?;
        fs::create_dir_all(&dir).map_err(|e| IoError::fs(&dir, "create output directory", e))?;
        let series = FileSeries::new(dir.join(format!("{base}.hdf.series")));
        Ok(VtkHdfSeries {
            dir,
            base: base.to_string(),
            series,
        })
    }

    /// Continues the series in `dir` after a restart at `time`: entries
    /// later than `time` are dropped (the restarted run rewrites them).
    pub fn resume(dir: impl Into<PathBuf>, base: &str, time: f64) -> Result<Self, IoError> {
        let mut s = Self::create(dir, base)?;
        s.series = FileSeries::load_or_new(s.series.path().to_path_buf())?;
        s.series.truncate_after(time);
        Ok(s)
    }

    /// The file name used for coarse step `step`.
    pub fn file_name(&self, step: u64) -> String {
        format!("{}_{step:06}.hdf", self.base)
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The series so far.
    pub fn series(&self) -> &FileSeries {
        &self.series
    }

    /// Writes `output` as the file of its step, then the updated series.
    /// Returns the path of the new file. On error the series file on disk
    /// still lists exactly the earlier, complete outputs.
    pub fn write(&mut self, output: &AmrOutput) -> Result<PathBuf, IoError> {
        let name = self.file_name(output.step);
        let path = self.dir.join(&name);
        // Validate the new entry (time order) before touching any file.
        let mut next = self.series.clone();
        next.push(name, output.time)?;
        write_vtkhdf(&path, output)?;
        next.save()?;
        self.series = next;
        log::info!(
            "output {} (t = {}, {} levels)",
            path.display(),
            output.time,
            output.num_levels()
        );
        Ok(path)
    }
}

fn check_base(base: &str) -> Result<(), IoError> {
    if base.is_empty() || base.contains(['/', '\\', '\0']) || base == "." || base == ".." {
        return Err(IoError::invalid(
            "output base name",
            format!("{base:?} must be a plain, non-empty file name"),
        ));
    }
    Ok(())
}
