//! ParaView output: VTKHDF 1.0 OverlappingAMR files and their time series.

mod from_hierarchy;
mod model;
mod series;
mod write;
mod writer;

pub use from_hierarchy::{CellFields, EULER_ARRAYS, euler_output, euler_output_with};
pub use model::{AmrOutput, CellArray, CellValues, LevelOutput};
pub use series::{FileSeries, SERIES_VERSION, SeriesEntry};
pub use write::{VTKHDF_TYPE_AMR, VTKHDF_VERSION, write_vtkhdf};
pub use writer::VtkHdfSeries;
