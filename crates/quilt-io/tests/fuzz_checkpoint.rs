//! Fuzzing checkpoints: a tiny valid checkpoint, truncated, bit-flipped,
//! zeroed or overwritten at pseudo-random offsets, and foreign files (text,
//! junk, a VTKHDF output, an f32 checkpoint read as f64, stored values that
//! contradict each other), must each be read back bit for bit as written
//! or refused with an error naming the file, by both readers, within
//! bounded time, without a panic, and without touching the file.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use common::spec;
use quilt_io::{
    CheckpointInfo, CheckpointReal, IoError, RunState, read_checkpoint, read_checkpoint_info,
    write_checkpoint, write_vtkhdf,
};
use quilt_mesh::{Geometry, Hierarchy, HierarchyData, SizeLimits, iv};

/// Damaged copies of the checkpoint read per run.
const CASES: u64 = 120;

/// Far more than reading a tiny file takes on a loaded machine; a read
/// that takes longer hangs.
const TIME_LIMIT: Duration = Duration::from_secs(30);

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Two levels, three patches of a few cells, one ghost cell: the file is
/// mostly HDF5 structure, so most damage hits structure.
fn tiny_hierarchy() -> Hierarchy {
    let geo = Geometry::new([0.0; 3], [2.0, 1.0, 1.0], iv(8, 4, 4), &[2]).unwrap();
    let levels = vec![
        vec![
            spec(5, [0, 0, 0], [3, 3, 3], None),
            spec(2, [4, 0, 0], [7, 3, 3], None),
        ],
        vec![spec(9, [4, 2, 2], [11, 5, 5], Some(5))],
    ];
    Hierarchy::new(geo, 1, SizeLimits { min: 1, max: 16 }, levels).unwrap()
}

/// Values from random bit patterns (NaN payloads, infinities, -0 among
/// them), so that only a byte-exact read compares equal.
fn tiny_data<T: CheckpointReal>(h: &Hierarchy, from_bits: fn(u64) -> T) -> HierarchyData<T> {
    let mut d = HierarchyData::<T>::new(h, 2).unwrap();
    let mut k = 0u64;
    for s in d.states_mut() {
        for v in s.old.as_mut_slice().iter_mut().chain(s.new.as_mut_slice()) {
            k += 1;
            *v = from_bits(splitmix(k));
        }
    }
    d
}

fn run_state() -> RunState {
    RunState {
        time: 0.25,
        step: 7,
        counters: BTreeMap::from([("regrids".to_string(), 2)]),
        values: BTreeMap::from([("dt".to_string(), 1.0 / 3.0)]),
        deck: "[run]\nend_time = 1.0\n".to_string(),
    }
}

fn bytes_of<T: CheckpointReal>(d: &HierarchyData<T>) -> Vec<u8> {
    let mut out = Vec::new();
    for s in d.states() {
        out.extend_from_slice(bytemuck::cast_slice(s.old.as_slice()));
        out.extend_from_slice(bytemuck::cast_slice(s.new.as_slice()));
    }
    out
}

/// The checkpoint as written, and what the readers must return for it.
struct Original {
    bytes: Vec<u8>,
    hierarchy: Hierarchy,
    state: Vec<u8>,
    info: CheckpointInfo,
}

fn original(dir: &Path) -> Original {
    let path = dir.join("original.h5");
    let h = tiny_hierarchy();
    let d = tiny_data::<f64>(&h, f64::from_bits);
    write_checkpoint(&path, &run_state(), &h, &d).unwrap();
    let info = read_checkpoint_info(&path).unwrap();
    assert_eq!(info.run, run_state());
    Original {
        bytes: fs::read(&path).unwrap(),
        hierarchy: h,
        state: bytes_of(&d),
        info,
    }
}

/// Runs `f` on a thread of its own; a panic becomes a finding, and a
/// read that does not end in [`TIME_LIMIT`] fails the test at once (the
/// HDF5 library is locked by the stuck read, so nothing else could run).
fn bounded<R: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(TIME_LIMIT) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(p)) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("{what}: panicked: {msg}"))
        }
        Err(_) => panic!("{what}: no answer in {TIME_LIMIT:?}"),
    }
}

/// An error must name the file first.
fn names_file(path: &Path, e: &IoError) -> Result<(), String> {
    let s = e.to_string();
    if s.starts_with(&path.display().to_string()) {
        Ok(())
    } else {
        Err(format!("error does not name the file: {s}"))
    }
}

/// Both readers on `path`: each refuses it naming the file, or returns
/// exactly what `o` holds. Returns what went wrong, if anything.
fn check_reads(path: &Path, o: &Original, what: &str) -> Vec<String> {
    let before = fs::read(path).unwrap();
    let mut findings = Vec::new();
    let p = path.to_path_buf();
    match bounded(what, move || read_checkpoint::<f64>(&p)) {
        Ok(Ok(c)) => {
            if c.run != o.info.run || c.run.time.to_bits() != o.info.run.time.to_bits() {
                findings.push(format!(
                    "{what}: read_checkpoint: run state changed: {:?}",
                    c.run
                ));
            }
            if c.hierarchy.specs() != o.hierarchy.specs()
                || c.hierarchy.geometry() != o.hierarchy.geometry()
                || c.hierarchy.ghost() != o.hierarchy.ghost()
                || c.hierarchy.limits() != o.hierarchy.limits()
            {
                findings.push(format!("{what}: read_checkpoint: hierarchy changed"));
            }
            if bytes_of(&c.data) != o.state {
                findings.push(format!("{what}: read_checkpoint: state changed"));
            }
        }
        Ok(Err(e)) => {
            if what.contains("case 79") {
                eprintln!("R {e}");
            }
            findings.extend(names_file(path, &e).err())
        }
        Err(panic) => findings.push(panic),
    }
    if what.contains("case 79") {
        eprintln!("after first read");
    }
    let p = path.to_path_buf();
    match bounded(what, move || read_checkpoint_info(&p)) {
        Ok(Ok(info)) if info != o.info => {
            // Not the Debug form: a damaged string may not be UTF-8.
            let r = &info.real_type;
            findings.push(format!(
                "{what}: read_checkpoint_info: changed: real_type {:?} (bytes {:?}), version {}, \
                 levels {}, patches {}, ncomp {}, run state {}",
                String::from_utf8_lossy(r.as_bytes()),
                r.as_bytes(),
                info.version,
                info.num_levels,
                info.num_patches,
                info.ncomp,
                if info.run == o.info.run {
                    "equal"
                } else {
                    "changed"
                }
            ));
        }
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            if what.contains("case 79") {
                eprintln!("I {e}");
            }
            findings.extend(names_file(path, &e).err())
        }
        Err(panic) => findings.push(panic),
    }
    if fs::read(path).unwrap() != before {
        findings.push(format!("{what}: reading changed the file"));
    }
    findings.iter_mut().for_each(|f| f.insert_str(0, "  "));
    findings
}

/// Case `i`: the original damaged in one of four ways at a pseudo-random
/// offset, and a description of the damage.
fn damage(bytes: &[u8], i: u64) -> (Vec<u8>, String) {
    let r = splitmix(0xc4ec_4901 ^ i);
    let at = (r >> 8) as usize % bytes.len();
    let mut b = bytes.to_vec();
    let what = match i % 4 {
        0 => {
            b.truncate(at);
            format!("truncated to {at} bytes")
        }
        1 => {
            let bit = (r & 7) as u8;
            b[at] ^= 1 << bit;
            format!("bit {bit} of byte {at} flipped")
        }
        2 => {
            let end = (at + 1 + (r & 63) as usize).min(b.len());
            b[at..end].fill(0);
            format!("bytes {at}..{end} zeroed")
        }
        _ => {
            let end = (at + 1 + (r & 15) as usize).min(b.len());
            for (k, x) in b[at..end].iter_mut().enumerate() {
                *x = splitmix(r ^ k as u64) as u8;
            }
            format!("bytes {at}..{end} overwritten")
        }
    };
    (b, what)
}

/// Cases of the fixed run that hit a known bug and are skipped until it is
/// fixed, each with the bug (none at present; case 79, which claimed 711
/// million ids, is refused since the reader bounds stored sizes by the
/// file's: [`a_huge_stored_dataspace_is_refused_before_reading`]).
const SKIPPED: [u64; 0] = [];

#[test]
fn damaged_checkpoints_are_refused_or_read_exactly() {
    let dir = common::scratch("fuzz-chk");
    let o = original(&dir);
    let path = dir.join("damaged.h5");
    // `QUILT_FUZZ_CASES=N` damages N other copies, none skipped, for a
    // deeper search by hand; run it under `ulimit -v` while reads allocate
    // what a damaged dataspace says.
    let cases = match std::env::var("QUILT_FUZZ_CASES").map(|n| n.parse::<u64>()) {
        Ok(Ok(n)) => {
            let seed = u64::from(std::process::id()) << 32;
            seed..seed + n
        }
        _ => 0..CASES,
    };
    let mut findings = Vec::new();
    let mut read = 0;
    for i in cases.filter(|i| !SKIPPED.contains(i)) {
        let (bytes, what) = damage(&o.bytes, i);
        fs::write(&path, &bytes).unwrap();
        findings.extend(check_reads(&path, &o, &format!("case {i}: {what}")));
        read += 1;
    }
    assert!(
        findings.is_empty(),
        "{} findings in {read} damaged copies of a {}-byte checkpoint:\n{}",
        findings.len(),
        o.bytes.len(),
        findings.join("\n")
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// Each foreign file is refused by both readers, naming the file and
/// saying why (`expect`).
#[test]
fn foreign_files_are_refused() {
    let dir = common::scratch("fuzz-chk-foreign");
    let o = original(&dir);
    let vtkhdf = dir.join("output.hdf");
    write_vtkhdf(&vtkhdf, &common::output(0.5, 3)).unwrap();
    let junk: Vec<u8> = (0..4096).map(|k| splitmix(k) as u8).collect();
    let signature = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];
    let files: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "not an HDF5 file"),
        (
            "deck",
            b"[run]\nend_time = 1.0\n".to_vec(),
            "not an HDF5 file",
        ),
        ("junk", junk.clone(), "not an HDF5 file"),
        ("signature only", signature.to_vec(), "cannot open"),
        (
            "signature and junk",
            [&signature[..], &junk].concat(),
            "cannot open",
        ),
        ("vtkhdf", fs::read(&vtkhdf).unwrap(), "`format`"),
        (
            "json",
            b"{\"domain_cells\": [8, 8, 8]}".to_vec(),
            "not an HDF5 file",
        ),
    ];
    let mut wrong = Vec::new();
    for (name, bytes, expect) in &files {
        let path = dir.join(format!("{}.h5", name.replace(' ', "-")));
        fs::write(&path, bytes).unwrap();
        wrong.extend(check_reads(&path, &o, name));
        for e in [
            read_checkpoint::<f64>(&path).map(drop),
            read_checkpoint_info(&path).map(drop),
        ] {
            match e {
                Err(e) if e.to_string().contains(expect) => {}
                other => wrong.push(format!("  {name}: expected `{expect}`, got {other:?}")),
            }
        }
    }
    for path in [dir.clone(), dir.join("missing.h5")] {
        match read_checkpoint::<f64>(&path) {
            Err(e) => wrong.extend(names_file(&path, &e).err()),
            Ok(_) => wrong.push(format!("  {} read as a checkpoint", path.display())),
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_f32_checkpoint_is_not_read_as_f64() {
    let dir = common::scratch("fuzz-chk-f32");
    let path = dir.join("f32.h5");
    let h = tiny_hierarchy();
    let d = tiny_data::<f32>(&h, |b| f32::from_bits(b as u32));
    write_checkpoint(&path, &run_state(), &h, &d).unwrap();
    let e = read_checkpoint::<f64>(&path).unwrap_err();
    assert!(matches!(e, IoError::PrecisionMismatch { .. }), "{e}");
    names_file(&path, &e).unwrap();
    assert_eq!(read_checkpoint_info(&path).unwrap().real_type, "f32");
    let c = read_checkpoint::<f32>(&path).unwrap();
    assert_eq!(bytes_of(&c.data), bytes_of(&d));
    fs::remove_dir_all(&dir).unwrap();
}

fn rewrite_attr<A: hdf5::H5Type>(f: &hdf5::File, group: &str, name: &str, v: &[A]) {
    let g = f.group(group).unwrap();
    g.delete_attr(name).unwrap();
    g.new_attr::<A>()
        .shape(v.len())
        .create(name)
        .unwrap()
        .write_raw(v)
        .unwrap();
}

/// Stored values that each pass on their own but contradict the rest, or
/// describe a mesh far too large to hold: refused naming the file, before
/// anything the size of the mesh is allocated.
#[test]
fn contradicting_checkpoints_are_refused() {
    let dir = common::scratch("fuzz-chk-contra");
    let o = original(&dir);
    let big = 1i32 << 30;
    type Forge = Box<dyn Fn(&hdf5::File)>;
    let forged: Vec<(&str, Forge)> = vec![
        (
            "a level-0 domain of 2^90 cells in two patches",
            Box::new(move |f| {
                rewrite_attr(f, "geometry", "base_cells", &[big; 3]);
                rewrite_attr(f, "geometry", "ratios", &[1i32]);
                rewrite_attr(f, "hierarchy", "size_limits", &[1, i32::MAX]);
                f.group("hierarchy")
                    .unwrap()
                    .attr("num_levels")
                    .unwrap()
                    .write_scalar(&1u32)
                    .unwrap();
                let h = big / 2;
                f.dataset("hierarchy/level0/boxes")
                    .unwrap()
                    .write_raw(&[
                        0,
                        0,
                        0,
                        h - 1,
                        big - 1,
                        big - 1,
                        h,
                        0,
                        0,
                        big - 1,
                        big - 1,
                        big - 1,
                    ])
                    .unwrap();
                // Offsets for two patches, so that the sizes are compared.
                let g = f.group("state").unwrap();
                g.unlink("offsets").unwrap();
                g.new_dataset::<u64>()
                    .shape(3)
                    .create("offsets")
                    .unwrap()
                    .write_raw(&[0u64, 10, 20][..])
                    .unwrap();
            }),
        ),
        (
            "a ratio of 3",
            Box::new(|f| rewrite_attr(f, "geometry", "ratios", &[1i32, 3])),
        ),
        (
            "a negative box",
            Box::new(|f| {
                f.dataset("hierarchy/level0/boxes")
                    .unwrap()
                    .write_raw(&[0, 0, 0, -4, 3, 3, 4, 0, 0, 7, 3, 3])
                    .unwrap();
            }),
        ),
        (
            "a parent on the same level",
            Box::new(|f| {
                f.dataset("hierarchy/level1/parents")
                    .unwrap()
                    .write_raw(&[9i64])
                    .unwrap();
            }),
        ),
    ];
    let mut wrong = Vec::new();
    for (k, (what, forge)) in forged.iter().enumerate() {
        let path = dir.join(format!("forged-{k}.h5"));
        fs::write(&path, &o.bytes).unwrap();
        forge(&hdf5::File::open_rw(&path).unwrap());
        let p = path.clone();
        match bounded(what, move || read_checkpoint::<f64>(&p)) {
            Ok(Err(e)) => wrong.extend(names_file(&path, &e).err()),
            Ok(Ok(_)) => wrong.push(format!("  {what}: accepted")),
            Err(panic) => wrong.push(panic),
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    fs::remove_dir_all(&dir).unwrap();
}

/// Bugs this suite found in quilt-io's reader, reported to its owner; each
/// test passes once the bug is fixed (then drop its `ignore`, and the case
/// from [`SKIPPED`]). Each edits a copy of the original checkpoint with
/// `edit`, then runs `check` on it.
fn on_a_copy(
    name: &str,
    edit: impl FnOnce(&Original, &Path),
    check: impl FnOnce(&Original, &Path),
) {
    let dir = common::scratch(&format!("fuzz-chk-{name}"));
    let o = original(&dir);
    let path = dir.join(format!("{name}.h5"));
    fs::write(&path, &o.bytes).unwrap();
    edit(&o, &path);
    check(&o, &path);
    fs::remove_dir_all(&dir).unwrap();
}

/// Both readers refuse `path` as damaged, naming the file and `what`.
fn both_refuse(path: &Path, what: &str) {
    for e in [
        read_checkpoint::<f64>(path).map(drop).unwrap_err(),
        read_checkpoint_info(path).map(drop).unwrap_err(),
    ] {
        assert!(matches!(e, IoError::CorruptCheckpoint { .. }), "{e}");
        names_file(path, &e).unwrap();
        assert!(e.to_string().contains(what), "{e}");
    }
}

/// A dataspace that claims 2^36 entries (a 44 kB file) makes the reader
/// allocate them before reading: `memory allocation of 274877906944 bytes
/// failed`, and the process aborts.
#[test]
fn a_huge_stored_dataspace_is_refused_before_reading() {
    let edit = |_: &Original, path: &Path| {
        let f = hdf5::File::open_rw(path).unwrap();
        let g = f.group("hierarchy/level0").unwrap();
        g.unlink("ids").unwrap();
        g.new_dataset::<u32>()
            .shape(1usize << 36)
            .create("ids")
            .unwrap();
    };
    // read_checkpoint_info finds the ids against /state/offsets instead.
    on_a_copy("huge", edit, |_, path| both_refuse(path, ""));
}

/// `o` with the only occurrence of `from` replaced by `to`, written to `path`.
fn patch(o: &Original, path: &Path, from: &[u8], to: &[u8]) {
    let at: Vec<usize> = (0..o.bytes.len() - from.len())
        .filter(|&i| o.bytes[i..].starts_with(from))
        .collect();
    assert_eq!(at.len(), 1, "{from:?} occurs at {at:?}");
    let mut b = o.bytes.clone();
    b[at[0]..at[0] + to.len()].copy_from_slice(to);
    fs::write(path, b).unwrap();
}

/// A non-ASCII byte in @real_type is read into a `String` that is not
/// UTF-8 (`FixedAscii::as_str` does not check): read_checkpoint_info
/// returns it as Ok, whose Debug form then panics, and read_checkpoint
/// reports a precision `zI\u{f7}` instead of a damaged file. Neither
/// reader checks that @real_type is `f32` or `f64`. The attribute is
/// rewritten through HDF5: a patched byte in the file now fails the object
/// header's checksum before the reader sees the value.
#[test]
fn a_damaged_real_type_is_refused() {
    let edit = |_: &Original, path: &Path| {
        let f = hdf5::File::open_rw(path).unwrap();
        // SAFETY: the point of the test is a non-ASCII byte in the string.
        let bad = unsafe { hdf5::types::FixedAscii::<3>::from_ascii_unchecked(b"f\xf74") };
        let a = f.attr("real_type").unwrap();
        a.write_scalar(&bad).unwrap();
    };
    on_a_copy("real-type", edit, |_, path| both_refuse(path, "real_type"));
}

/// One flipped bit in an attribute value: /run@time 0.25 would read back as
/// 0.25000000000000006. Checkpoints are written in the HDF5 1.10 file
/// format, whose object headers (attributes included) carry checksums, so
/// both readers refuse the file instead (before that, in the library's
/// earliest format, counters, patch boxes and the datasets' own metadata
/// read back changed the same way).
#[test]
fn a_flipped_bit_in_the_run_time_is_detected() {
    let time = 0.25f64.to_le_bytes();
    let mut flipped = time;
    flipped[0] ^= 1;
    let edit = |o: &Original, path: &Path| patch(o, path, &time, &flipped);
    on_a_copy("time", edit, |o, path| {
        let findings = check_reads(path, o, "time bit 0 flipped");
        assert!(findings.is_empty(), "\n{}", findings.join("\n"));
    });
}
