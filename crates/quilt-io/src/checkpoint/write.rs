//! Writing a checkpoint.

use std::path::Path;

use hdf5::types::FixedAscii;
use quilt_mesh::{Hierarchy, HierarchyData};

use crate::atomic::replace_atomically;
use crate::error::{Hdf5Context, IoError};

use super::chunked::ChunkedWriter;
use super::format::{CHECKPOINT_FORMAT, CHECKPOINT_VERSION, CheckpointReal, STATE_CHUNK};
use super::meta::{RunState, check_ncomp, check_num_levels};

/// Writes a checkpoint of `run`, the layout `h` and its data `data` (both
/// time levels of every patch, ghost cells included) to `path`, atomically:
/// an earlier checkpoint at `path` survives any failure.
///
/// A run state that breaks the format's rules ([`RunState::validate`]) is
/// refused with [`IoError::InvalidCheckpoint`] naming `path` and the field,
/// before anything is written.
pub fn write_checkpoint<T: CheckpointReal>(
    path: &Path,
    run: &RunState,
    h: &Hierarchy,
    data: &HierarchyData<T>,
) -> Result<(), IoError> {
    data.check_layout(h)
        .map_err(|e| IoError::invalid("checkpoint data", e.to_string()))?;
    // The reader's rules, checked before the file is touched: a checkpoint
    // the reader would call damaged is never written, and the one already
    // at `path` survives.
    let check = || {
        run.validate()?;
        check_num_levels(h.num_levels() as u64)?;
        check_ncomp(data.ncomp() as u64).map(drop)
    };
    check().map_err(|field| IoError::InvalidCheckpoint {
        path: path.to_path_buf(),
        field,
    })?;
    replace_atomically(path, |tmp| {
        // The 1.10 file format: superblock, object headers (attributes
        // included), B-trees and heaps carry checksums that HDF5 verifies
        // on every read, so damaged metadata is an error, not other values.
        // Readers open it with their defaults (HDF5 1.10 or later).
        let file = hdf5::File::with_options()
            .with_fapl(|p| p.libver_v110())
            .create(tmp)
            .at(path, "create HDF5 file")?;
        write_contents(&file, path, run, h, data)?;
        file.close().at(path, "close HDF5 file")
    })?;
    log::info!(
        "checkpoint {} (step {}, t = {}, {} patches, {})",
        path.display(),
        run.step,
        run.time,
        h.num_patches(),
        T::NAME
    );
    Ok(())
}

fn fixed_ascii<const N: usize>(s: &str) -> Result<FixedAscii<N>, IoError> {
    FixedAscii::<N>::from_ascii(s.as_bytes()).map_err(|e| IoError::invalid("string", e.to_string()))
}

fn write_contents<T: CheckpointReal>(
    file: &hdf5::File,
    path: &Path,
    run: &RunState,
    h: &Hierarchy,
    data: &HierarchyData<T>,
) -> Result<(), IoError> {
    // The format tag goes first: a reader checks it before anything else.
    let tag = fixed_ascii::<16>(CHECKPOINT_FORMAT)?;
    let real = fixed_ascii::<3>(T::NAME)?;
    file.new_attr::<FixedAscii<16>>()
        .create("format")
        .and_then(|a| a.write_scalar(&tag))
        .at(path, "write @format")?;
    file.new_attr::<u32>()
        .create("format_version")
        .and_then(|a| a.write_scalar(&CHECKPOINT_VERSION))
        .at(path, "write @format_version")?;
    file.new_attr::<FixedAscii<3>>()
        .create("real_type")
        .and_then(|a| a.write_scalar(&real))
        .at(path, "write @real_type")?;

    write_run(file, path, run)?;
    write_geometry(file, path, h)?;
    write_hierarchy(file, path, h)?;
    write_state(file, path, h, data)
}

fn write_run(file: &hdf5::File, path: &Path, run: &RunState) -> Result<(), IoError> {
    let g = file.create_group("run").at(path, "create group /run")?;
    g.new_attr::<f64>()
        .create("time")
        .and_then(|a| a.write_scalar(&run.time))
        .at(path, "write /run@time")?;
    g.new_attr::<u64>()
        .create("step")
        .and_then(|a| a.write_scalar(&run.step))
        .at(path, "write /run@step")?;
    write_checked(&g, path, "deck", &[run.deck.len()], run.deck.as_bytes())?;
    let c = g
        .create_group("counters")
        .at(path, "create group /run/counters")?;
    for (name, v) in &run.counters {
        c.new_attr::<u64>()
            .create(name.as_str())
            .and_then(|a| a.write_scalar(v))
            .at(path, &format!("write counter {name}"))?;
    }
    let vg = g
        .create_group("values")
        .at(path, "create group /run/values")?;
    for (name, v) in &run.values {
        vg.new_attr::<f64>()
            .create(name.as_str())
            .and_then(|a| a.write_scalar(v))
            .at(path, &format!("write value {name}"))?;
    }
    Ok(())
}

fn write_geometry(file: &hdf5::File, path: &Path, h: &Hierarchy) -> Result<(), IoError> {
    let geo = h.geometry();
    let g = file
        .create_group("geometry")
        .at(path, "create group /geometry")?;
    let lo: Vec<f64> = geo.prob_lo().iter().copied().collect();
    let hi: Vec<f64> = geo.prob_hi().iter().copied().collect();
    let base: Vec<i32> = geo.base_cells().iter().copied().collect();
    let periodic: Vec<u8> = geo.periodic().iter().map(|&p| u8::from(p)).collect();
    write_attr_vec(&g, path, "prob_lo", &lo)?;
    write_attr_vec(&g, path, "prob_hi", &hi)?;
    write_attr_vec(&g, path, "base_cells", &base)?;
    write_attr_vec(&g, path, "ratios", geo.ratios())?;
    write_attr_vec(&g, path, "periodic", &periodic)
}

fn write_hierarchy(file: &hdf5::File, path: &Path, h: &Hierarchy) -> Result<(), IoError> {
    let g = file
        .create_group("hierarchy")
        .at(path, "create group /hierarchy")?;
    g.new_attr::<i32>()
        .create("ghost")
        .and_then(|a| a.write_scalar(&h.ghost()))
        .at(path, "write /hierarchy@ghost")?;
    let limits = h.limits();
    write_attr_vec(&g, path, "size_limits", &[limits.min, limits.max])?;
    g.new_attr::<u32>()
        .create("num_levels")
        .and_then(|a| a.write_scalar(&(h.num_levels() as u32)))
        .at(path, "write /hierarchy@num_levels")?;
    for (l, specs) in h.specs().iter().enumerate() {
        let name = format!("level{l}");
        let lg = g
            .create_group(&name)
            .at(path, &format!("create group /hierarchy/{name}"))?;
        let ids: Vec<u32> = specs.iter().map(|s| s.id.0).collect();
        let parents: Vec<i64> = specs
            .iter()
            .map(|s| s.parent.map_or(-1, |p| i64::from(p.0)))
            .collect();
        let mut boxes = Vec::with_capacity(6 * specs.len());
        for s in specs {
            boxes.extend(s.interior.lo.iter().chain(s.interior.hi.iter()).copied());
        }
        write_checked(&lg, path, "ids", &[ids.len()], &ids)?;
        write_checked(&lg, path, "parents", &[parents.len()], &parents)?;
        write_checked(&lg, path, "boxes", &[specs.len(), 6], &boxes)?;
    }
    Ok(())
}

fn write_state<T: CheckpointReal>(
    file: &hdf5::File,
    path: &Path,
    h: &Hierarchy,
    data: &HierarchyData<T>,
) -> Result<(), IoError> {
    let g = file.create_group("state").at(path, "create group /state")?;
    g.new_attr::<u32>()
        .create("ncomp")
        .and_then(|a| a.write_scalar(&(data.ncomp() as u32)))
        .at(path, "write /state@ncomp")?;
    let mut offsets = Vec::with_capacity(h.num_patches() + 1);
    let mut total = 0u64;
    offsets.push(0u64);
    for s in data.states() {
        total += s.old.as_slice().len() as u64;
        offsets.push(total);
    }
    write_checked(&g, path, "offsets", &[offsets.len()], &offsets)?;
    let total = total as usize;
    let chunk = STATE_CHUNK.min(total.max(1));
    for slot in ["old", "new"] {
        let what = format!("/state/{slot}");
        let ds = g
            .new_dataset::<T>()
            .chunk(chunk)
            .fletcher32()
            .shape(total)
            .create(slot)
            .at(path, &format!("create {what}"))?;
        let mut w = ChunkedWriter::new(&ds, path, &what, chunk);
        for s in data.states() {
            let pd = if slot == "old" { &s.old } else { &s.new };
            w.push(pd.as_slice())?;
        }
        let n = w.finish()?;
        debug_assert_eq!(n, total);
    }
    Ok(())
}

/// A small dataset of `shape`, written whole as one chunk with the
/// Fletcher-32 filter: HDF5 checks the chunk's checksum on every read, as
/// it does for the state's chunks. Raw data is outside the metadata
/// checksums, so a contiguous dataset would read damage back as values.
fn write_checked<T: hdf5::H5Type>(
    g: &hdf5::Group,
    path: &Path,
    name: &str,
    shape: &[usize],
    v: &[T],
) -> Result<(), IoError> {
    debug_assert_eq!(shape.iter().product::<usize>(), v.len());
    // Chunk dimensions must be at least 1, also for an empty dataset.
    let chunk: Vec<usize> = shape.iter().map(|&n| n.max(1)).collect();
    g.new_dataset::<T>()
        .chunk(chunk)
        .fletcher32()
        .shape(shape)
        .create(name)
        .and_then(|d| if v.is_empty() { Ok(()) } else { d.write_raw(v) })
        .at(path, &format!("write {}/{name}", g.name()))
}

fn write_attr_vec<T: hdf5::H5Type>(
    g: &hdf5::Group,
    path: &Path,
    name: &str,
    v: &[T],
) -> Result<(), IoError> {
    g.new_attr::<T>()
        .shape(v.len())
        .create(name)
        .and_then(|a| a.write_raw(v))
        .at(path, &format!("write {}@{name}", g.name()))
}
