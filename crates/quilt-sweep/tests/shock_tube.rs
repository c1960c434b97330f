//! Sod's shock tube for every scheme and precision, along every axis.

mod common;

use common::{Arrangement, Tube, cfl_of, l1_errors, run_tube, schemes};

#[test]
fn sod_l1_density_error_within_bound_for_every_scheme_and_precision() {
    let tube = Tube::sod();
    for scheme in schemes() {
        let (p64, s64) = run_tube::<f64>(scheme, &tube, 0, 400, cfl_of(scheme), Arrangement::Packed, 1, 1);
        let (p32, _) = run_tube::<f32>(scheme, &tube, 0, 400, cfl_of(scheme), Arrangement::Packed, 1, 1);
        let e64 = l1_errors(&p64, &tube);
        let e32 = l1_errors(&p32, &tube);
        eprintln!(
            "Sod {:>4}: L1 rho f64 {:.5}  f32 {:.5}  (u {:.5}, p {:.5}), {} steps",
            scheme.name(),
            e64[0],
            e32[0],
            e64[1],
            e64[2],
            s64.steps
        );
        assert!(e64[0] <= 0.006, "{}: f64 L1 density error {}", scheme.name(), e64[0]);
        assert!(e32[0] <= 0.006, "{}: f32 L1 density error {}", scheme.name(), e32[0]);
        assert_eq!(s64.floors.total(), 0, "{}: floors used on Sod", scheme.name());
    }
}

#[test]
fn sod_is_bitwise_identical_along_x_y_and_z() {
    let tube = Tube::sod();
    for scheme in schemes() {
        let cfl = cfl_of(scheme);
        let (x, _) = run_tube::<f64>(scheme, &tube, 0, 400, cfl, Arrangement::Packed, 2, 2);
        let (y, _) = run_tube::<f64>(scheme, &tube, 1, 400, cfl, Arrangement::Packed, 2, 2);
        let (z, _) = run_tube::<f64>(scheme, &tube, 2, 400, cfl, Arrangement::Packed, 2, 2);
        for i in 0..x.len() {
            for v in 1..4 {
                assert_eq!(x[i][v].to_bits(), y[i][v].to_bits(), "{} x/y cell {i} var {v}", scheme.name());
                assert_eq!(x[i][v].to_bits(), z[i][v].to_bits(), "{} x/z cell {i} var {v}", scheme.name());
            }
        }
    }
}
