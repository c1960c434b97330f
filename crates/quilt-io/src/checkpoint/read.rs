//! Reading a checkpoint, with errors that say which file and what is wrong.

use std::io::Read;
use std::path::Path;

use hdf5::types::{FixedAscii, TypeDescriptor};
use quilt_mesh::{Geometry, Hierarchy, HierarchyData, PatchId, PatchSpec, SizeLimits, iv};
use quilt_mesh::{IndexBox, IntVect};

use crate::error::{Hdf5Context, IoError, hdf5_detail};

use super::chunked::ChunkedReader;
use super::format::{CHECKPOINT_FORMAT, CHECKPOINT_VERSION, CheckpointReal, STATE_CHUNK};
use super::meta::{
    CheckpointInfo, InvalidField, RunState, check_ncomp, check_num_levels, check_offsets_len,
};

/// A checkpoint read back: the run state, the layout and its data.
#[derive(Debug, Clone)]
pub struct Checkpoint<T> {
    /// Time, step, counters, values and deck.
    pub run: RunState,
    /// The hierarchy layout, rebuilt (and validated) from the stored patches.
    pub hierarchy: Hierarchy,
    /// Both time levels of every patch, ghost cells included, bit for bit
    /// as written.
    pub data: HierarchyData<T>,
}

/// The first bytes of every HDF5 file (without a user block).
const HDF5_SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Reads the run state and the sizes of a checkpoint without its state
/// arrays (e.g. to learn the precision before choosing `T`).
pub fn read_checkpoint_info(path: &Path) -> Result<CheckpointInfo, IoError> {
    let file = open(path)?;
    let version = check_format(&file, path)?;
    let real_type = read_real_type(&file, path)?;
    let run = read_run(&file, path)?;
    let hg = group(&file, path, "hierarchy")?;
    let num_levels = read_num_levels(&hg, path)?;
    // The patch count is the sum of the levels' id lists; the offsets must
    // agree, or the sizes reported here would not be the file's.
    let mut num_patches = 0;
    for l in 0..num_levels {
        let at = format!("/hierarchy/level{l}");
        let lg = group(&hg, path, &format!("level{l}"))?;
        num_patches += dataset(&lg, path, "ids", &at)?.size();
    }
    let state = group(&file, path, "state")?;
    let ncomp = read_ncomp(&state, path)?;
    let offsets = dataset(&state, path, "offsets", "/state")?;
    check_offsets_len(offsets.size(), num_patches).map_err(|f| invalid(path, f))?;
    Ok(CheckpointInfo {
        version,
        real_type,
        run,
        num_levels,
        num_patches,
        ncomp,
    })
}

/// Reads a checkpoint written by [`super::write_checkpoint`] with the same
/// `T`. A file that is not HDF5, an HDF5 file that is not a quilt
/// checkpoint, a truncated or damaged checkpoint (every state chunk carries
/// a checksum), another format version or another precision each give
/// their own [`IoError`] naming the file.
pub fn read_checkpoint<T: CheckpointReal>(path: &Path) -> Result<Checkpoint<T>, IoError> {
    let file = open(path)?;
    check_format(&file, path)?;
    let real_type = read_real_type(&file, path)?;
    if real_type != T::NAME {
        return Err(IoError::PrecisionMismatch {
            path: path.to_path_buf(),
            found: real_type,
            requested: T::NAME.to_string(),
        });
    }
    let run = read_run(&file, path)?;
    let geometry = read_geometry(&file, path)?;
    let hierarchy = read_hierarchy(&file, path, geometry)?;
    let data = read_state::<T>(&file, path, &hierarchy)?;
    log::info!(
        "read checkpoint {} (step {}, t = {}, {} patches)",
        path.display(),
        run.step,
        run.time,
        hierarchy.num_patches()
    );
    Ok(Checkpoint {
        run,
        hierarchy,
        data,
    })
}

fn corrupt(path: &Path, detail: impl Into<String>) -> IoError {
    IoError::CorruptCheckpoint {
        path: path.to_path_buf(),
        detail: detail.into(),
    }
}

/// A stored field that breaks its rule makes the file damaged.
fn invalid(path: &Path, field: InvalidField) -> IoError {
    corrupt(path, field.to_string())
}

fn read_num_levels(hierarchy: &hdf5::Group, path: &Path) -> Result<usize, IoError> {
    let n = scalar_attr::<u32>(hierarchy, path, "num_levels", "/hierarchy")?;
    check_num_levels(n.into()).map_err(|f| invalid(path, f))
}

fn read_ncomp(state: &hdf5::Group, path: &Path) -> Result<usize, IoError> {
    let n = scalar_attr::<u32>(state, path, "ncomp", "/state")?;
    check_ncomp(n.into()).map_err(|f| invalid(path, f))
}

fn open(path: &Path) -> Result<hdf5::File, IoError> {
    let mut head = [0u8; 8];
    let mut f = std::fs::File::open(path).map_err(|e| IoError::fs(path, "open checkpoint", e))?;
    let n = f
        .read(&mut head)
        .map_err(|e| IoError::fs(path, "read checkpoint", e))?;
    let is_hdf5 = n == head.len() && head == HDF5_SIGNATURE;
    drop(f);
    match hdf5::File::open(path) {
        Ok(file) => Ok(file),
        Err(e) if is_hdf5 => Err(corrupt(
            path,
            format!(
                "the HDF5 library cannot open it (truncated or damaged file): {}",
                hdf5_detail(&e, path)
            ),
        )),
        Err(_) => Err(IoError::NotACheckpoint {
            path: path.to_path_buf(),
            detail: "not an HDF5 file".into(),
        }),
    }
}

/// Checks the format tag and version; returns the version.
fn check_format(file: &hdf5::File, path: &Path) -> Result<u32, IoError> {
    let not = |detail: String| IoError::NotACheckpoint {
        path: path.to_path_buf(),
        detail,
    };
    // Attributes that cannot be listed mean a damaged root header (its
    // checksum failed), not a foreign file.
    let names = file
        .attr_names()
        .damaged(path, "the root group's attributes cannot be read")?;
    if !names.iter().any(|n| n == "format") {
        return Err(not(
            "an HDF5 file without the root attribute `format`, so not written by quilt".into(),
        ));
    }
    let tag = read_fixed_string(file, path, "format", "/")
        .map_err(|_| not("the root attribute `format` is not a fixed-length string".into()))?;
    if tag != CHECKPOINT_FORMAT {
        return Err(not(format!(
            "its format is {tag:?}, expected {CHECKPOINT_FORMAT:?}"
        )));
    }
    let version = file
        .attr("format_version")
        .and_then(|a| a.read_scalar::<u32>())
        .damaged(path, "no readable @format_version")?;
    if version != CHECKPOINT_VERSION {
        return Err(IoError::UnsupportedVersion {
            path: path.to_path_buf(),
            found: version,
            supported: CHECKPOINT_VERSION,
        });
    }
    Ok(version)
}

/// `@real_type`: `"f32"` or `"f64"`, anything else is damage.
fn read_real_type(file: &hdf5::File, path: &Path) -> Result<String, IoError> {
    let t = read_fixed_string(file, path, "real_type", "/")?;
    if t != "f32" && t != "f64" {
        return Err(corrupt(
            path,
            format!("attribute /@real_type is {t:?}, expected \"f32\" or \"f64\""),
        ));
    }
    Ok(t)
}

fn read_fixed_string(
    loc: &hdf5::Location,
    path: &Path,
    name: &str,
    at: &str,
) -> Result<String, IoError> {
    let attr = loc
        .attr(name)
        .damaged(path, format_args!("missing attribute {at}@{name}"))?;
    let desc = attr
        .dtype()
        .and_then(|t| t.to_descriptor())
        .damaged(path, format_args!("attribute {at}@{name}"))?;
    match desc {
        TypeDescriptor::FixedAscii(n) if n <= 64 => {
            let s = attr
                .read_scalar::<FixedAscii<64>>()
                .damaged(path, format_args!("attribute {at}@{name}"))?;
            // The bytes are not checked by the reader: a damaged file may
            // hold any, and only ASCII makes a valid `str`.
            let bytes = s.as_bytes();
            if !bytes.is_ascii() {
                return Err(corrupt(
                    path,
                    format!("attribute {at}@{name} holds non-ASCII bytes {bytes:?}"),
                ));
            }
            Ok(String::from_utf8_lossy(bytes).into_owned())
        }
        other => Err(corrupt(
            path,
            format!("attribute {at}@{name} has type {other}, expected a short fixed-length string"),
        )),
    }
}

fn group(loc: &hdf5::Group, path: &Path, name: &str) -> Result<hdf5::Group, IoError> {
    let at = loc.name();
    let at = at.trim_end_matches('/');
    loc.group(name).damaged(
        path,
        format_args!("{} group {at}/{name}", missing_or_damaged(loc, name)),
    )
}

fn dataset(loc: &hdf5::Group, path: &Path, name: &str, at: &str) -> Result<hdf5::Dataset, IoError> {
    loc.dataset(name).damaged(
        path,
        format_args!("{} dataset {at}/{name}", missing_or_damaged(loc, name)),
    )
}

/// Whether an object that cannot be opened is absent or there but
/// damaged (its header's checksum failed).
fn missing_or_damaged(loc: &hdf5::Group, name: &str) -> &'static str {
    if loc.link_exists(name) {
        "damaged"
    } else {
        "missing"
    }
}

fn scalar_attr<A: hdf5::H5Type>(
    loc: &hdf5::Location,
    path: &Path,
    name: &str,
    at: &str,
) -> Result<A, IoError> {
    loc.attr(name)
        .and_then(|a| a.read_scalar::<A>())
        .damaged(path, format_args!("attribute {at}@{name}"))
}

fn vec_attr<A: hdf5::H5Type>(
    loc: &hdf5::Location,
    path: &Path,
    name: &str,
    at: &str,
    len: Option<usize>,
) -> Result<Vec<A>, IoError> {
    let attr = loc
        .attr(name)
        .damaged(path, format_args!("attribute {at}@{name}"))?;
    check_stored_size::<A>(path, &format!("attribute {at}@{name}"), attr.size())?;
    let v = attr
        .read_raw::<A>()
        .damaged(path, format_args!("attribute {at}@{name}"))?;
    if let Some(n) = len {
        if v.len() != n {
            return Err(corrupt(
                path,
                format!("attribute {at}@{name} has {} values, expected {n}", v.len()),
            ));
        }
    }
    Ok(v)
}

fn read_vec<A: hdf5::H5Type>(
    ds: &hdf5::Dataset,
    path: &Path,
    what: &str,
) -> Result<Vec<A>, IoError> {
    check_stored_size::<A>(path, what, ds.size())?;
    ds.read_raw::<A>()
        .damaged(path, format_args!("cannot read {what}"))
}

/// Refuses an array whose claimed size exceeds the file: quilt writes
/// every value it stores, so a larger dataspace is damage (or a forgery),
/// and reading it would allocate what the file never held.
fn check_stored_size<A>(path: &Path, what: &str, elements: usize) -> Result<(), IoError> {
    let file_len = std::fs::metadata(path)
        .map_err(|e| IoError::fs(path, "read checkpoint", e))?
        .len();
    let bytes = (elements as u128) * std::mem::size_of::<A>() as u128;
    if bytes > u128::from(file_len) {
        return Err(corrupt(
            path,
            format!(
                "{what} claims {elements} values ({bytes} bytes), more than the file's {file_len} bytes"
            ),
        ));
    }
    Ok(())
}

fn read_run(file: &hdf5::File, path: &Path) -> Result<RunState, IoError> {
    let g = group(file, path, "run")?;
    let time = scalar_attr::<f64>(&g, path, "time", "/run")?;
    let step = scalar_attr::<u64>(&g, path, "step", "/run")?;
    let deck_bytes = read_vec::<u8>(&dataset(&g, path, "deck", "/run")?, path, "/run/deck")?;
    let deck = String::from_utf8(deck_bytes)
        .map_err(|e| corrupt(path, format!("/run/deck is not UTF-8: {e}")))?;
    let mut run = RunState {
        time,
        step,
        deck,
        ..RunState::default()
    };
    let c = group(&g, path, "counters")?;
    for name in c.attr_names().damaged(path, "/run/counters")? {
        let v = scalar_attr::<u64>(&c, path, &name, "/run/counters")?;
        run.counters.insert(name, v);
    }
    let vg = group(&g, path, "values")?;
    for name in vg.attr_names().damaged(path, "/run/values")? {
        let v = scalar_attr::<f64>(&vg, path, &name, "/run/values")?;
        run.values.insert(name, v);
    }
    run.validate().map_err(|f| invalid(path, f))?;
    Ok(run)
}

fn to3<A: Copy>(v: &[A]) -> [A; 3] {
    [v[0], v[1], v[2]]
}

fn read_geometry(file: &hdf5::File, path: &Path) -> Result<Geometry, IoError> {
    let g = group(file, path, "geometry")?;
    let lo = vec_attr::<f64>(&g, path, "prob_lo", "/geometry", Some(3))?;
    let hi = vec_attr::<f64>(&g, path, "prob_hi", "/geometry", Some(3))?;
    let base = vec_attr::<i32>(&g, path, "base_cells", "/geometry", Some(3))?;
    let ratios = vec_attr::<i32>(&g, path, "ratios", "/geometry", None)?;
    let periodic = vec_attr::<u8>(&g, path, "periodic", "/geometry", Some(3))?;
    if ratios.first() != Some(&1) {
        return Err(corrupt(
            path,
            format!("/geometry@ratios must start with 1 (level 0), got {ratios:?}"),
        ));
    }
    let geo = Geometry::new(
        to3(&lo),
        to3(&hi),
        iv(base[0], base[1], base[2]),
        &ratios[1..],
    )
    .map_err(|e| corrupt(path, format!("stored geometry is invalid: {e}")))?;
    Ok(geo.with_periodic([periodic[0] != 0, periodic[1] != 0, periodic[2] != 0]))
}

fn read_hierarchy(
    file: &hdf5::File,
    path: &Path,
    geometry: Geometry,
) -> Result<Hierarchy, IoError> {
    let g = group(file, path, "hierarchy")?;
    let ghost = scalar_attr::<i32>(&g, path, "ghost", "/hierarchy")?;
    let lim = vec_attr::<i32>(&g, path, "size_limits", "/hierarchy", Some(2))?;
    let num_levels = read_num_levels(&g, path)?;
    if num_levels > geometry.num_levels() {
        return Err(corrupt(
            path,
            format!(
                "/hierarchy@num_levels is {num_levels}, the stored geometry defines {}",
                geometry.num_levels()
            ),
        ));
    }
    let mut levels = Vec::with_capacity(num_levels);
    for l in 0..num_levels {
        let at = format!("/hierarchy/level{l}");
        let lg = group(&g, path, &format!("level{l}"))?;
        let ids = read_vec::<u32>(&dataset(&lg, path, "ids", &at)?, path, &format!("{at}/ids"))?;
        let parents = read_vec::<i64>(
            &dataset(&lg, path, "parents", &at)?,
            path,
            &format!("{at}/parents"),
        )?;
        let boxes_ds = dataset(&lg, path, "boxes", &at)?;
        let n = ids.len();
        if boxes_ds.shape() != [n, 6] || parents.len() != n {
            return Err(corrupt(
                path,
                format!(
                    "{at}: {n} ids, {} parents and boxes of shape {:?} (expected [{n}, 6])",
                    parents.len(),
                    boxes_ds.shape()
                ),
            ));
        }
        let boxes = read_vec::<i32>(&boxes_ds, path, &format!("{at}/boxes"))?;
        let mut specs = Vec::with_capacity(n);
        for p in 0..n {
            let b = &boxes[6 * p..6 * p + 6];
            let parent = match parents[p] {
                -1 => None,
                id if (0..=i64::from(u32::MAX)).contains(&id) => Some(PatchId(id as u32)),
                id => {
                    return Err(corrupt(path, format!("{at}: patch {p} has parent id {id}")));
                }
            };
            let lo: IntVect = iv(b[0], b[1], b[2]);
            let hi: IntVect = iv(b[3], b[4], b[5]);
            specs.push(PatchSpec {
                id: PatchId(ids[p]),
                interior: IndexBox::new(lo, hi),
                parent,
            });
        }
        levels.push(specs);
    }
    let limits = SizeLimits {
        min: lim[0],
        max: lim[1],
    };
    Hierarchy::new(geometry, ghost, limits, levels)
        .map_err(|e| corrupt(path, format!("stored hierarchy is invalid: {e}")))
}

fn read_state<T: CheckpointReal>(
    file: &hdf5::File,
    path: &Path,
    h: &Hierarchy,
) -> Result<HierarchyData<T>, IoError> {
    let g = group(file, path, "state")?;
    let ncomp = read_ncomp(&g, path)?;
    let offsets = read_vec::<u64>(
        &dataset(&g, path, "offsets", "/state")?,
        path,
        "/state/offsets",
    )?;
    check_offsets_len(offsets.len(), h.num_patches()).map_err(|f| invalid(path, f))?;
    if offsets[0] != 0 {
        return Err(corrupt(
            path,
            format!("/state/offsets starts at {}, not 0", offsets[0]),
        ));
    }
    // Sizes are checked against the offsets before anything is allocated:
    // a damaged @ncomp must not make the reader ask for terabytes.
    for (i, p) in h.patches().iter().enumerate() {
        let want = p.ghost_box().num_cells() as i128 * ncomp as i128;
        let have = i128::from(offsets[i + 1]) - i128::from(offsets[i]);
        if have != want {
            return Err(corrupt(
                path,
                format!(
                    "/state/offsets gives patch {} (level {}) {have} values, its box {} with {} ghosts and {ncomp} components needs {want}",
                    p.id(),
                    p.level(),
                    p.interior(),
                    h.ghost()
                ),
            ));
        }
    }
    // A valid checkpoint may still be larger than this machine allows.
    let values = offsets[h.num_patches()];
    let bytes = values.saturating_mul(2 * std::mem::size_of::<T>() as u64);
    quilt_mesh::memory::check_fits(
        bytes,
        &format!("its state ({} patches, both time levels)", h.num_patches()),
    )
    .map_err(|source| IoError::TooLarge {
        path: path.to_path_buf(),
        source,
    })?;
    let mut data = HierarchyData::<T>::new(h, ncomp)
        .map_err(|e| corrupt(path, format!("/state@ncomp = {ncomp}: {e}")))?;
    debug_assert!(
        data.states()
            .iter()
            .zip(offsets.windows(2))
            .all(|(s, o)| s.old.as_slice().len() as u64 == o[1] - o[0])
    );
    let total = offsets[h.num_patches()] as usize;
    for slot in ["old", "new"] {
        let what = format!("/state/{slot}");
        let ds = dataset(&g, path, slot, "/state")?;
        let desc = ds
            .dtype()
            .and_then(|t| t.to_descriptor())
            .damaged(path, &what)?;
        if desc != T::type_descriptor() {
            return Err(corrupt(
                path,
                format!("{what} holds {desc}, but @real_type says {}", T::NAME),
            ));
        }
        if ds.size() != total {
            return Err(corrupt(
                path,
                format!(
                    "{what} has {} values, /state/offsets says {total}",
                    ds.size()
                ),
            ));
        }
        let mut r = ChunkedReader::<T>::new(&ds, path, &what, total, STATE_CHUNK);
        for s in data.states_mut() {
            let pd = if slot == "old" {
                &mut s.old
            } else {
                &mut s.new
            };
            r.pull(pd.as_mut_slice())?;
        }
        debug_assert_eq!(r.position(), total);
    }
    Ok(data)
}
