//! Writing one VTKHDF 1.0 OverlappingAMR file.
//!
//! Layout (what VTK's `vtkHDFReader` reads; see `docs/quilt-io.md`):
//!
//! ```text
//! /VTKHDF                      group
//!   @Version  int32[2]         [1, 0]
//!   @Type     fixed ASCII[14]  "OverlappingAMR"
//!   @Origin   float64[3]
//!   /Level<l>                  group, l = 0, 1, ...
//!     @Spacing  float64[3]
//!     AMRBox    int32[npatches, 6]   imin imax jmin jmax kmin kmax (inclusive cells)
//!     /PointData, /FieldData   empty groups
//!     /CellData                group
//!       <name>  [ncells] or [ncells, ncomp], patch by patch, x fastest
//! /Quilt                       group (ignored by VTK)
//!   @Time float64, @Step uint64
//! ```

use std::path::Path;

use hdf5::types::FixedAscii;

use crate::atomic::replace_atomically;
use crate::error::{Hdf5Context, IoError};

use super::model::{AmrOutput, CellArray, CellValues};

/// The VTKHDF format version written (major, minor).
pub const VTKHDF_VERSION: [i32; 2] = [1, 0];

/// The `Type` attribute of an overlapping-AMR VTKHDF file.
pub const VTKHDF_TYPE_AMR: &str = "OverlappingAMR";

/// Writes `output` to `path` as a VTKHDF OverlappingAMR file, atomically:
/// the file appears complete or not at all, and an earlier file at `path`
/// survives any failure. `path` should end in `.hdf`, the extension
/// ParaView 5.11 associates with its VTKHDF reader.
pub fn write_vtkhdf(path: &Path, output: &AmrOutput) -> Result<(), IoError> {
    output.validate()?;
    if path.extension().and_then(|e| e.to_str()) != Some("hdf") {
        log::warn!(
            "{}: ParaView picks its VTKHDF reader by the extension .hdf",
            path.display()
        );
    }
    replace_atomically(path, |tmp| {
        let file = hdf5::File::create(tmp).at(path, "create HDF5 file")?;
        write_contents(&file, path, output)?;
        file.close().at(path, "close HDF5 file")
    })?;
    log::debug!(
        "wrote {} ({} levels, {} cells, t = {})",
        path.display(),
        output.levels.len(),
        output.levels.iter().map(|l| l.num_cells()).sum::<usize>(),
        output.time
    );
    Ok(())
}

fn write_contents(file: &hdf5::File, path: &Path, output: &AmrOutput) -> Result<(), IoError> {
    let root = file
        .create_group("VTKHDF")
        .at(path, "create group /VTKHDF")?;
    root.new_attr::<i32>()
        .shape(2)
        .create("Version")
        .and_then(|a| a.write_raw(&VTKHDF_VERSION[..]))
        .at(path, "write /VTKHDF@Version")?;
    // VTK compares the type name as a fixed-length string; a variable-length
    // string attribute is not what the 1.0 readers expect.
    let ty = FixedAscii::<14>::from_ascii(VTKHDF_TYPE_AMR.as_bytes())
        .map_err(|e| IoError::invalid("VTKHDF type name", e.to_string()))?;
    root.new_attr::<FixedAscii<14>>()
        .create("Type")
        .and_then(|a| a.write_scalar(&ty))
        .at(path, "write /VTKHDF@Type")?;
    write_f64_attr(&root, path, "Origin", &output.origin)?;

    for (l, level) in output.levels.iter().enumerate() {
        let name = format!("Level{l}");
        let g = root
            .create_group(&name)
            .at(path, &format!("create group /VTKHDF/{name}"))?;
        write_f64_attr(&g, path, "Spacing", &level.spacing)?;

        let mut rows = Vec::with_capacity(level.boxes.len() * 6);
        for b in &level.boxes {
            for d in 0..3 {
                rows.push(b.lo[d]);
                rows.push(b.hi[d]);
            }
        }
        g.new_dataset::<i32>()
            .shape([level.boxes.len(), 6])
            .create("AMRBox")
            .and_then(|ds| ds.write_raw(&rows[..]))
            .at(path, &format!("write /VTKHDF/{name}/AMRBox"))?;

        // Empty, but ParaView 5.11's reader opens both and prints an HDF5
        // error trace for each level where they are missing.
        for empty in ["PointData", "FieldData"] {
            g.create_group(empty)
                .at(path, &format!("create group /VTKHDF/{name}/{empty}"))?;
        }
        let cd = g
            .create_group("CellData")
            .at(path, &format!("create group /VTKHDF/{name}/CellData"))?;
        let cells = level.num_cells();
        for a in &level.cell_arrays {
            write_cell_array(&cd, path, &name, cells, a)?;
        }
    }

    let meta = file.create_group("Quilt").at(path, "create group /Quilt")?;
    meta.new_attr::<f64>()
        .create("Time")
        .and_then(|a| a.write_scalar(&output.time))
        .at(path, "write /Quilt@Time")?;
    meta.new_attr::<u64>()
        .create("Step")
        .and_then(|a| a.write_scalar(&output.step))
        .at(path, "write /Quilt@Step")?;
    Ok(())
}

fn write_f64_attr(
    loc: &hdf5::Group,
    path: &Path,
    name: &str,
    values: &[f64; 3],
) -> Result<(), IoError> {
    loc.new_attr::<f64>()
        .shape(3)
        .create(name)
        .and_then(|a| a.write_raw(&values[..]))
        .at(path, &format!("write {}@{name}", loc.name()))
}

fn write_cell_array(
    cd: &hdf5::Group,
    path: &Path,
    level: &str,
    cells: usize,
    a: &CellArray,
) -> Result<(), IoError> {
    // VTK reads a 1-d dataset as a one-component array and an [n, c]
    // dataset as a c-component array.
    let shape: Vec<usize> = if a.components == 1 {
        vec![cells]
    } else {
        vec![cells, a.components]
    };
    let what = format!("write /VTKHDF/{level}/CellData/{}", a.name);
    match &a.values {
        CellValues::F32(v) => cd
            .new_dataset::<f32>()
            .shape(shape)
            .create(a.name.as_str())
            .and_then(|ds| ds.write_raw(&v[..])),
        CellValues::F64(v) => cd
            .new_dataset::<f64>()
            .shape(shape)
            .create(a.name.as_str())
            .and_then(|ds| ds.write_raw(&v[..])),
        CellValues::I32(v) => cd
            .new_dataset::<i32>()
            .shape(shape)
            .create(a.name.as_str())
            .and_then(|ds| ds.write_raw(&v[..])),
    }
    .at(path, &what)
}
