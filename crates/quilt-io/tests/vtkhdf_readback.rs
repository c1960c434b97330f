//! Reads a written VTKHDF file back through plain HDF5 calls and checks every
//! attribute, shape, element type and value against the layout ParaView's
//! reader expects.

mod common;

use std::fs;
use std::path::Path;

use hdf5::types::{FloatSize, IntSize, TypeDescriptor};
use quilt_io::vtkhdf::{FileSeries, VtkHdfSeries, write_vtkhdf};
use quilt_io::{CellValues, IoError};

fn descriptor_of_attr(loc: &hdf5::Group, name: &str) -> (TypeDescriptor, Vec<usize>) {
    let a = loc
        .attr(name)
        .unwrap_or_else(|e| panic!("attribute {name}: {e}"));
    (a.dtype().unwrap().to_descriptor().unwrap(), a.shape())
}

fn check_file(path: &Path, time: f64, step: u64) {
    let expected = common::output(time, step);
    let f = hdf5::File::open(path).unwrap();
    let root = f.group("VTKHDF").unwrap();

    let (ty, shape) = descriptor_of_attr(&root, "Version");
    assert_eq!(ty, TypeDescriptor::Integer(IntSize::U4));
    assert_eq!(shape, vec![2]);
    assert_eq!(
        root.attr("Version").unwrap().read_raw::<i32>().unwrap(),
        vec![1, 0]
    );

    let (ty, shape) = descriptor_of_attr(&root, "Type");
    assert_eq!(
        ty,
        TypeDescriptor::FixedAscii(14),
        "Type must be fixed-length ASCII"
    );
    assert!(shape.is_empty(), "Type is a scalar attribute");
    let t: hdf5::types::FixedAscii<14> = root.attr("Type").unwrap().read_scalar().unwrap();
    assert_eq!(t.as_str(), "OverlappingAMR");

    let (ty, shape) = descriptor_of_attr(&root, "Origin");
    assert_eq!(ty, TypeDescriptor::Float(FloatSize::U8));
    assert_eq!(shape, vec![3]);
    assert_eq!(
        root.attr("Origin").unwrap().read_raw::<f64>().unwrap(),
        common::ORIGIN.to_vec()
    );

    let mut members = root.member_names().unwrap();
    members.sort();
    assert_eq!(members, vec!["Level0", "Level1", "Level2"]);

    let boxes = common::boxes();
    for (l, level) in expected.levels.iter().enumerate() {
        let g = root.group(&format!("Level{l}")).unwrap();
        let (ty, shape) = descriptor_of_attr(&g, "Spacing");
        assert_eq!((ty, shape), (TypeDescriptor::Float(FloatSize::U8), vec![3]));
        assert_eq!(
            g.attr("Spacing").unwrap().read_raw::<f64>().unwrap(),
            common::spacing(l).to_vec()
        );

        let ds = g.dataset("AMRBox").unwrap();
        assert_eq!(
            ds.dtype().unwrap().to_descriptor().unwrap(),
            TypeDescriptor::Integer(IntSize::U4)
        );
        assert_eq!(ds.shape(), vec![boxes[l].len(), 6]);
        let rows = ds.read_raw::<i32>().unwrap();
        for (p, b) in boxes[l].iter().enumerate() {
            assert_eq!(
                rows[6 * p..6 * p + 6],
                [b.lo.x, b.hi.x, b.lo.y, b.hi.y, b.lo.z, b.hi.z],
                "level {l} box {p}"
            );
        }

        let cd = g.group("CellData").unwrap();
        let mut names = cd.member_names().unwrap();
        names.sort();
        assert_eq!(
            names,
            vec![
                "density",
                "patch_id",
                "pressure",
                "total_energy",
                "velocity"
            ]
        );
        let ncells: usize = boxes[l].iter().map(|b| b.num_cells() as usize).sum();
        for a in &level.cell_arrays {
            let ds = cd.dataset(&a.name).unwrap();
            let want_shape = if a.components == 1 {
                vec![ncells]
            } else {
                vec![ncells, a.components]
            };
            assert_eq!(ds.shape(), want_shape, "level {l} {}", a.name);
            let desc = ds.dtype().unwrap().to_descriptor().unwrap();
            match &a.values {
                CellValues::F64(v) => {
                    assert_eq!(desc, TypeDescriptor::Float(FloatSize::U8));
                    assert_eq!(&ds.read_raw::<f64>().unwrap(), v, "level {l} {}", a.name);
                }
                CellValues::I32(v) => {
                    assert_eq!(desc, TypeDescriptor::Integer(IntSize::U4));
                    assert_eq!(&ds.read_raw::<i32>().unwrap(), v, "level {l} {}", a.name);
                }
                CellValues::F32(_) => unreachable!("fixture writes no f32"),
            }
        }

        // Independent of the fixture's own loops: value n of the density is
        // the analytic function at the centre of the n-th cell, x fastest.
        let rho = cd.dataset("density").unwrap().read_raw::<f64>().unwrap();
        let vel = cd.dataset("velocity").unwrap().read_2d::<f64>().unwrap();
        let mut n = 0;
        for b in &boxes[l] {
            for k in b.lo.z..=b.hi.z {
                for j in b.lo.y..=b.hi.y {
                    for i in b.lo.x..=b.hi.x {
                        let x = common::centre(l, i, j, k);
                        assert!((rho[n] - (common::density(x) + time)).abs() < 1e-12);
                        assert_eq!([vel[[n, 0]], vel[[n, 1]], vel[[n, 2]]], x);
                        n += 1;
                    }
                }
            }
        }
        assert_eq!(n, ncells);
    }

    let meta = f.group("Quilt").unwrap();
    assert_eq!(
        meta.attr("Time").unwrap().read_scalar::<f64>().unwrap(),
        time
    );
    assert_eq!(
        meta.attr("Step").unwrap().read_scalar::<u64>().unwrap(),
        step
    );
}

fn dir_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn single_file_layout() {
    let dir = common::scratch("readback");
    let path = dir.join("single.hdf");
    write_vtkhdf(&path, &common::output(0.5, 7)).unwrap();
    check_file(&path, 0.5, 7);
    assert_eq!(dir_entries(&dir), vec!["single.hdf"]);
    // Rewriting replaces the file in place.
    write_vtkhdf(&path, &common::output(0.75, 8)).unwrap();
    check_file(&path, 0.75, 8);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn series_lists_every_output_and_survives_a_failed_write() {
    let dir = common::scratch("series");
    let mut s = VtkHdfSeries::create(&dir, "run").unwrap();
    s.write(&common::output(0.0, 0)).unwrap();
    s.write(&common::output(0.25, 10)).unwrap();
    let series_path = dir.join("run.hdf.series");
    let text = fs::read_to_string(&series_path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["file-series-version"], "1.0");
    assert_eq!(v["files"][0]["name"], "run_000000.hdf");
    assert_eq!(v["files"][1]["name"], "run_000010.hdf");
    assert_eq!(v["files"][1]["time"], 0.25);
    assert_eq!(v["files"].as_array().unwrap().len(), 2);
    check_file(&dir.join("run_000010.hdf"), 0.25, 10);

    // A target that cannot be replaced (a directory squats the name): the
    // write fails, names the file, and leaves no temporary and no new entry.
    fs::create_dir(dir.join("run_000020.hdf")).unwrap();
    fs::write(dir.join("run_000020.hdf/keep"), b"x").unwrap();
    let err = s.write(&common::output(0.5, 20)).unwrap_err();
    assert!(matches!(err, IoError::Fs { .. }), "{err}");
    assert!(err.to_string().contains("run_000020.hdf"), "{err}");
    assert_eq!(fs::read_to_string(&series_path).unwrap(), text);
    assert_eq!(
        dir_entries(&dir),
        vec![
            "run.hdf.series",
            "run_000000.hdf",
            "run_000010.hdf",
            "run_000020.hdf"
        ]
    );
    check_file(&dir.join("run_000000.hdf"), 0.0, 0);

    // An invalid output is rejected before anything is touched.
    let mut bad = common::output(0.5, 30);
    bad.levels[2].cell_arrays[0].values = CellValues::F64(vec![1.0]);
    let err = s.write(&bad).unwrap_err();
    assert!(
        err.to_string().contains("level 2") && err.to_string().contains("density"),
        "{err}"
    );
    assert!(!dir.join("run_000030.hdf").exists());

    // An output earlier than the last one (without a resume) is refused
    // before its file is written.
    let err = s.write(&common::output(0.1, 5)).unwrap_err();
    assert!(err.to_string().contains("truncate_after"), "{err}");
    assert!(!dir.join("run_000005.hdf").exists());

    // A restart at t = 0.1 drops the later entry and rewrites it.
    let mut r = VtkHdfSeries::resume(&dir, "run", 0.1).unwrap();
    assert_eq!(r.series().entries().len(), 1);
    r.write(&common::output(0.2, 8)).unwrap();
    let reread = FileSeries::load(&series_path).unwrap();
    let names: Vec<_> = reread.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["run_000000.hdf", "run_000008.hdf"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn f32_arrays_are_stored_as_f32() {
    let dir = common::scratch("f32");
    let mut o = common::output(0.0, 0);
    for level in &mut o.levels {
        for a in &mut level.cell_arrays {
            if let CellValues::F64(v) = &a.values {
                a.values = CellValues::F32(v.iter().map(|&x| x as f32).collect());
            }
        }
    }
    let path = dir.join("f32.hdf");
    write_vtkhdf(&path, &o).unwrap();
    let f = hdf5::File::open(&path).unwrap();
    let ds = f.dataset("VTKHDF/Level1/CellData/velocity").unwrap();
    assert_eq!(
        ds.dtype().unwrap().to_descriptor().unwrap(),
        TypeDescriptor::Float(FloatSize::U4)
    );
    let CellValues::F32(want) = &o.levels[1].cell_arrays[1].values else {
        unreachable!()
    };
    assert_eq!(&ds.read_raw::<f32>().unwrap(), want);
    fs::remove_dir_all(&dir).unwrap();
}
