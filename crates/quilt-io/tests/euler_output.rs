//! `euler_output`: from a quilt-mesh hierarchy and its data to the
//! mesh-agnostic output, checked cell by cell against the analytic state.

mod common;

use quilt_io::vtkhdf::EULER_ARRAYS;
use quilt_io::{CellValues, IoError, euler_output};
use quilt_mesh::Real;

fn values_f64(v: &CellValues) -> Vec<f64> {
    match v {
        CellValues::F64(v) => v.clone(),
        CellValues::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        CellValues::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
    }
}

fn check<T: Real>(tol: f64) {
    let h = common::hierarchy();
    let d = common::euler_data::<T>(&h);
    let o = euler_output(&h, |i| d.old(i), 1.5, 9, common::euler_fields::<T>).unwrap();
    assert_eq!((o.time, o.step), (1.5, 9));
    let lo = h.geometry().prob_lo();
    assert_eq!(o.origin, [lo.x, lo.y, lo.z]);
    assert_eq!(o.levels.len(), h.num_levels());
    for (l, level) in o.levels.iter().enumerate() {
        let lg = h.level_geometry(l).unwrap();
        assert_eq!(level.spacing, [lg.dx.x, lg.dx.y, lg.dx.z]);
        let names: Vec<_> = level.cell_arrays.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, EULER_ARRAYS);
        let want_f32 = std::mem::size_of::<T>() == 4;
        assert_eq!(
            matches!(level.cell_arrays[0].values, CellValues::F32(_)),
            want_f32
        );
        let rho = values_f64(&level.array("density").unwrap().values);
        let vel = values_f64(&level.array("velocity").unwrap().values);
        let p = values_f64(&level.array("pressure").unwrap().values);
        let ids = values_f64(&level.array("patch_id").unwrap().values);
        let mut n = 0;
        for (patch, b) in h.level_patches(l).iter().zip(&level.boxes) {
            assert_eq!(*b, patch.interior());
            for (i, j, k) in common::cells(b) {
                let c = lg.cell_center(&quilt_mesh::iv(i, j, k));
                let (r, u, pr) = common::euler_primitive([c.x, c.y, c.z]);
                let close = |a: f64, b: f64| (a - b).abs() <= tol * b.abs().max(1.0);
                assert!(
                    close(rho[n], r),
                    "level {l} cell {i},{j},{k}: {} vs {r}",
                    rho[n]
                );
                for d in 0..3 {
                    assert!(close(vel[3 * n + d], u[d]), "velocity {d} at {i},{j},{k}");
                }
                assert!(close(p[n], pr), "pressure at {i},{j},{k}: {} vs {pr}", p[n]);
                assert_eq!(ids[n], f64::from(patch.id().0));
                n += 1;
            }
        }
        assert_eq!(n, level.num_cells());
    }
}

#[test]
fn f64_fields_match_the_analytic_state() {
    check::<f64>(1e-12);
}

#[test]
fn f32_fields_are_written_in_f32() {
    check::<f32>(1e-5);
}

#[test]
fn data_of_another_layout_is_rejected() {
    let h = common::hierarchy();
    let d = common::euler_data::<f64>(&h);
    // Off by one patch: every level's first patch gets its neighbour's data.
    let err = euler_output(
        &h,
        |i| d.old((i + 1) % d.len()),
        0.0,
        0,
        common::euler_fields::<f64>,
    )
    .unwrap_err();
    assert!(matches!(err, IoError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("level 0, patch 7"), "{err}");
}
