//! Checkpoints: bitwise round trip in f32 and f64, and clear errors for
//! truncated, damaged, foreign, other-version and other-precision files.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{hierarchy, spec};
use quilt_io::{
    CheckpointReal, IoError, RunState, read_checkpoint, read_checkpoint_info, write_checkpoint,
};
use quilt_mesh::{Geometry, Hierarchy, HierarchyData, SizeLimits, iv};

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Every value, ghosts and both time levels included, from random bit
/// patterns: NaN payloads, infinities, subnormals and -0 all occur, so
/// anything but a byte-exact round trip shows.
fn data<T: CheckpointReal>(h: &Hierarchy, from_bits: impl Fn(u64) -> T) -> HierarchyData<T> {
    let mut d = HierarchyData::<T>::new(h, 5).unwrap();
    for (i, s) in d.states_mut().iter_mut().enumerate() {
        for (slot, pd) in [&mut s.old, &mut s.new].into_iter().enumerate() {
            for (k, v) in pd.as_mut_slice().iter_mut().enumerate() {
                *v = from_bits(splitmix(
                    ((i as u64) << 40) ^ ((slot as u64) << 39) ^ k as u64,
                ));
            }
        }
    }
    d
}

fn run_state() -> RunState {
    RunState {
        time: 0.123_456_789_012_345_68,
        step: 4242,
        counters: BTreeMap::from([
            ("regrids".to_string(), 17),
            ("cells updated".to_string(), u64::MAX - 3),
        ]),
        values: BTreeMap::from([
            ("dt".to_string(), 1.0e-3 / 3.0),
            ("neg zero".to_string(), -0.0),
        ]),
        deck: "[domain]\nbase = [32, 32, 32] # é\n".to_string(),
    }
}

fn bits<T: CheckpointReal>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

fn round_trip<T: CheckpointReal>(name: &str, from_bits: impl Fn(u64) -> T) {
    let dir = common::scratch(name);
    let path = dir.join("chk.h5");
    let h = hierarchy();
    let d = data::<T>(&h, from_bits);
    let run = run_state();
    write_checkpoint(&path, &run, &h, &d).unwrap();

    let c = read_checkpoint::<T>(&path).unwrap();
    assert_eq!(c.run.time.to_bits(), run.time.to_bits());
    assert_eq!(c.run.values["neg zero"].to_bits(), (-0.0f64).to_bits());
    assert_eq!(c.run, run);
    assert_eq!(c.hierarchy.geometry(), h.geometry());
    assert_eq!(c.hierarchy.ghost(), h.ghost());
    assert_eq!(c.hierarchy.limits(), h.limits());
    assert_eq!(c.hierarchy.specs(), h.specs());
    c.data.check_layout(&h).unwrap();
    assert_eq!(c.data.ncomp(), d.ncomp());
    for (i, (a, b)) in c.data.states().iter().zip(d.states()).enumerate() {
        assert!(
            bits(a.old.as_slice()) == bits(b.old.as_slice()),
            "patch {i} old differs"
        );
        assert!(
            bits(a.new.as_slice()) == bits(b.new.as_slice()),
            "patch {i} new differs"
        );
    }

    let info = read_checkpoint_info(&path).unwrap();
    assert_eq!(info.real_type, T::NAME);
    assert_eq!(info.version, 1);
    assert_eq!((info.num_levels, info.num_patches, info.ncomp), (3, 5, 5));
    assert_eq!(info.run, run);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn f64_round_trip_is_bitwise() {
    round_trip::<f64>("chk-f64", f64::from_bits);
}

#[test]
fn f32_round_trip_is_bitwise() {
    round_trip::<f32>("chk-f32", |b| f32::from_bits(b as u32));
}

#[test]
fn large_state_spans_many_chunks() {
    // Patches larger than one storage chunk and straddling chunk borders.
    let geo = Geometry::new([0.0; 3], [1.0; 3], iv(64, 64, 64), &[]).unwrap();
    let levels = vec![
        (0..8)
            .map(|n| {
                let o = [(n & 1) * 32, ((n >> 1) & 1) * 32, (n >> 2) * 32];
                spec(n as u32, o, [o[0] + 31, o[1] + 31, o[2] + 31], None)
            })
            .collect(),
    ];
    let h = Hierarchy::new(geo, 3, SizeLimits { min: 4, max: 64 }, levels).unwrap();
    let d = data::<f64>(&h, |b| b as f64);
    let dir = common::scratch("chk-large");
    let path = dir.join("chk.h5");
    write_checkpoint(&path, &RunState::default(), &h, &d).unwrap();
    let c = read_checkpoint::<f64>(&path).unwrap();
    assert!(c.data == d);
    fs::remove_dir_all(&dir).unwrap();
}

fn write_sample(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("chk.h5");
    let h = hierarchy();
    write_checkpoint(&path, &run_state(), &h, &data::<f64>(&h, |b| b as f64)).unwrap();
    path
}

#[test]
fn truncated_checkpoint_is_reported_as_damaged() {
    let dir = common::scratch("chk-trunc");
    let path = write_sample(&dir);
    let bytes = fs::read(&path).unwrap();
    let cut = dir.join("cut.h5");
    for len in [bytes.len() - 1, bytes.len() / 2, 600] {
        fs::write(&cut, &bytes[..len]).unwrap();
        let err = read_checkpoint::<f64>(&cut).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, IoError::CorruptCheckpoint { .. }),
            "{len} bytes: {msg}"
        );
        assert!(msg.contains("cut.h5") && msg.contains("truncated"), "{msg}");
    }
    // Too short even for the HDF5 signature.
    fs::write(&cut, &bytes[..4]).unwrap();
    let err = read_checkpoint::<f64>(&cut).unwrap_err();
    assert!(matches!(err, IoError::NotACheckpoint { .. }), "{err}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flipped_state_byte_fails_the_checksum() {
    let dir = common::scratch("chk-flip");
    let path = write_sample(&dir);
    let addr = {
        let f = hdf5::File::open(&path).unwrap();
        let ds = f.dataset("state/new").unwrap();
        ds.chunk_info(0).unwrap().addr as usize
    };
    let mut bytes = fs::read(&path).unwrap();
    bytes[addr + 100] ^= 0x10;
    fs::write(&path, &bytes).unwrap();
    let err = read_checkpoint::<f64>(&path).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, IoError::CorruptCheckpoint { .. }), "{msg}");
    assert!(
        msg.contains("chk.h5") && msg.contains("/state/new") && msg.contains("Fletcher32"),
        "{msg}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn foreign_files_are_not_checkpoints() {
    let dir = common::scratch("chk-foreign");
    // An unrelated HDF5 file.
    let other = dir.join("other.h5");
    {
        let f = hdf5::File::create(&other).unwrap();
        f.new_dataset::<f64>()
            .shape(4)
            .create("temperature")
            .unwrap();
    }
    let err = read_checkpoint::<f64>(&other).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, IoError::NotACheckpoint { .. }), "{msg}");
    assert!(
        msg.contains("other.h5") && msg.contains("`format`"),
        "{msg}"
    );
    assert!(read_checkpoint_info(&other).is_err());

    // A VTKHDF output is HDF5 with a different tag-less layout.
    let out = dir.join("out.hdf");
    quilt_io::write_vtkhdf(&out, &common::output(0.0, 0)).unwrap();
    assert!(matches!(
        read_checkpoint::<f64>(&out),
        Err(IoError::NotACheckpoint { .. })
    ));

    // An HDF5 file with some other `format` tag.
    let tagged = dir.join("tagged.h5");
    {
        let f = hdf5::File::create(&tagged).unwrap();
        let v = hdf5::types::FixedAscii::<8>::from_ascii(b"netcdf-4").unwrap();
        f.new_attr::<hdf5::types::FixedAscii<8>>()
            .create("format")
            .unwrap()
            .write_scalar(&v)
            .unwrap();
    }
    let msg = read_checkpoint::<f64>(&tagged).unwrap_err().to_string();
    assert!(msg.contains("netcdf-4"), "{msg}");

    // Not HDF5 at all.
    let text = dir.join("deck.toml");
    fs::write(&text, "[domain]\n").unwrap();
    let err = read_checkpoint::<f64>(&text).unwrap_err();
    assert!(matches!(err, IoError::NotACheckpoint { .. }), "{err}");
    assert!(err.to_string().contains("not an HDF5 file"), "{err}");

    // Missing file.
    let err = read_checkpoint::<f64>(&dir.join("missing.h5")).unwrap_err();
    assert!(
        matches!(err, IoError::Fs { .. }) && err.to_string().contains("missing.h5"),
        "{err}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn other_version_and_precision_are_refused() {
    let dir = common::scratch("chk-version");
    let path = write_sample(&dir);
    let err = read_checkpoint::<f32>(&path).unwrap_err();
    assert!(matches!(err, IoError::PrecisionMismatch { .. }), "{err}");
    assert!(
        err.to_string().contains("f64") && err.to_string().contains("f32"),
        "{err}"
    );

    {
        let f = hdf5::File::open_rw(&path).unwrap();
        f.attr("format_version")
            .unwrap()
            .write_scalar(&7u32)
            .unwrap();
    }
    let err = read_checkpoint::<f64>(&path).unwrap_err();
    assert!(
        matches!(
            err,
            IoError::UnsupportedVersion {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_structure_names_what_is_missing() {
    let dir = common::scratch("chk-struct");
    let path = write_sample(&dir);
    {
        let f = hdf5::File::open_rw(&path).unwrap();
        f.group("hierarchy/level1")
            .unwrap()
            .unlink("boxes")
            .unwrap();
    }
    let msg = read_checkpoint::<f64>(&path).unwrap_err().to_string();
    assert!(msg.contains("/hierarchy/level1/boxes"), "{msg}");

    let path = write_sample(&dir);
    {
        // A stored hierarchy that violates nesting must be caught by the
        // mesh's validation, not accepted.
        let f = hdf5::File::open_rw(&path).unwrap();
        let ds = f.dataset("hierarchy/level2/boxes").unwrap();
        ds.write_raw(&[0i32, 0, 0, 15, 15, 15][..]).unwrap();
    }
    let msg = read_checkpoint::<f64>(&path).unwrap_err().to_string();
    assert!(msg.contains("stored hierarchy is invalid"), "{msg}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mismatched_data_is_rejected_before_writing() {
    let dir = common::scratch("chk-mismatch");
    let path = write_sample(&dir);
    let before = fs::read(&path).unwrap();
    let h = hierarchy();
    let other = Hierarchy::new(h.geometry().clone(), 1, h.limits(), h.specs()).unwrap();
    let d = data::<f64>(&other, |b| b as f64);
    let err = write_checkpoint(&path, &run_state(), &h, &d).unwrap_err();
    assert!(matches!(err, IoError::Invalid { .. }), "{err}");
    assert_eq!(fs::read(&path).unwrap(), before);
    let mut bad = run_state();
    bad.time = f64::INFINITY;
    assert!(write_checkpoint(&path, &bad, &h, &data::<f64>(&h, |b| b as f64)).is_err());
    assert_eq!(fs::read(&path).unwrap(), before);
    fs::remove_dir_all(&dir).unwrap();
}
