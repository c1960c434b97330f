//! Sod's shock tube (gamma = 1.4, t = 0.2, 400 cells) for every scheme:
//! L1 density error in both precisions, and bitwise identical results along
//! x, y and z in f64.

mod common;

use common::{Arrangement, Tube, cfl_of, l1_errors, run_tube};
use quilt_sweep::Scheme;

fn sod(scheme: Scheme) {
    let tube = Tube::sod();
    let cfl = cfl_of(scheme);
    let (x, sx) = run_tube::<f64>(scheme, &tube, 0, 400, cfl, Arrangement::Packed, 1, 1);
    let (x32, _) = run_tube::<f32>(scheme, &tube, 0, 400, cfl, Arrangement::Packed, 1, 1);
    let e64 = l1_errors(&x, &tube);
    let e32 = l1_errors(&x32, &tube);
    eprintln!(
        "Sod {:>4}: L1 rho f64 {:.5}  f32 {:.5}  (u {:.5}, p {:.5}), {} steps",
        scheme.name(),
        e64[0],
        e32[0],
        e64[1],
        e64[2],
        sx.steps
    );
    assert!(
        e64[0] <= 0.006,
        "{}: f64 L1 density error {}",
        scheme.name(),
        e64[0]
    );
    assert!(
        e32[0] <= 0.006,
        "{}: f32 L1 density error {}",
        scheme.name(),
        e32[0]
    );
    assert_eq!(
        sx.floors.total(),
        0,
        "{}: floors used on Sod",
        scheme.name()
    );
    // The y and z runs put the tube into differently shaped patches (the
    // packing differs) and sweep it in another position of the sweep order.
    for axis in [1, 2] {
        let (y, _) = run_tube::<f64>(scheme, &tube, axis, 400, cfl, Arrangement::Packed, 1, 1);
        for (i, (a, b)) in x.iter().zip(&y).enumerate() {
            for v in 1..4 {
                assert_eq!(
                    a[v].to_bits(),
                    b[v].to_bits(),
                    "{}: axis {axis}, cell {i}, var {v}",
                    scheme.name()
                );
            }
        }
    }
}

#[test]
fn sod_rtvd() {
    sod(Scheme::rtvd());
}

#[test]
fn sod_tvd() {
    sod(Scheme::tvd());
}

#[test]
fn sod_waf() {
    sod(Scheme::waf());
}
