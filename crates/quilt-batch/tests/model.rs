//! The cost model against hand-computed eqs. 1–3, and work validation.

use quilt_batch::{
    BatchError, BinWork, CloseCoeffs, Coefficients, CostModel, MAX_EXTENT, PatchWork, Preparation,
    PrepareCoeffs, SolveCoeffs,
};

fn coeffs() -> Coefficients {
    Coefficients {
        solve: SolveCoeffs {
            c1: 1.0,
            c2: 10.0,
            c3: 100.0,
            c_cell: 0.5,
            t_trans: 0.001,
            t_launch: 7.0,
            t_bin: 3.0,
        },
        prepare: PrepareCoeffs {
            k1: 3.0,
            k2: 2.0,
            k_patch: 11.0,
        },
        close: CloseCoeffs {
            k3: 0.25,
            k_flux: 4.0,
            k_patch: 13.0,
        },
    }
}

#[test]
fn columns_cells_and_ghosts_of_a_patch() {
    // 10 x 8 x 6 with 2 ghost layers: interior 6 x 4 x 2.
    let p = PatchWork::new([10, 8, 6], 2)
        .with_ghost_fill(100, 50)
        .with_flux_faces(20);
    assert_eq!(p.cells(), 480);
    assert_eq!(p.interior_extent(), [6, 4, 2]);
    assert_eq!(p.interior_cells(), 48);
    assert_eq!(p.ghost_cells(), 432);
    assert_eq!(p.columns(), [8 * 6, 10 * 6, 10 * 8]);
    assert_eq!(p.interior_faces(), 2 * (4 * 2 + 6 * 2 + 6 * 4));
    p.validate(0).unwrap();
}

#[test]
fn estimates_follow_equations_1_to_3() {
    let m = CostModel::new(coeffs()).unwrap();
    let a = PatchWork::new([10, 8, 6], 2)
        .with_ghost_fill(100, 50)
        .with_flux_faces(20);
    let b = PatchWork::new([5, 5, 5], 1).with_ghost_fill(0, 98);
    let bin1 = BinWork::new(vec![a, b], 40).unwrap();
    let bin2 = BinWork::single(b, 40).unwrap();

    // Eq. 1: columns swept, per patch, summed over the bin; plus c_cell *
    // cells and the bin's fixed cost.
    let nx = 8 * 6 + 5 * 5;
    let ny = 10 * 6 + 5 * 5;
    let nz = 10 * 8 + 5 * 5;
    let cells = 480 + 125;
    assert_eq!(bin1.totals().columns, [nx, ny, nz]);
    let exec1 = nx as f64 + 10.0 * ny as f64 + 100.0 * nz as f64 + 0.5 * cells as f64 + 3.0;
    assert_eq!(m.bin_exec(&bin1), exec1);
    let exec2 = 25.0 + 250.0 + 2500.0 + 0.5 * 125.0 + 3.0;
    assert_eq!(m.bin_exec(&bin2), exec2);

    // Eq. 2: launch + transfer of the first and the last bin + all executions.
    assert_eq!(bin1.bytes(), 605 * 40);
    let batch = [bin1.clone(), bin2.clone(), bin2.clone()];
    let want = 7.0 + 0.001 * (605.0 * 40.0 + 125.0 * 40.0) + exec1 + 2.0 * exec2;
    assert!((m.batch_solve(&batch) - want).abs() < 1e-9 * want);
    // A single bin travels both ways unhidden.
    let want = 7.0 + 0.001 * 2.0 * 125.0 * 40.0 + exec2;
    assert!((m.batch_solve(std::slice::from_ref(&bin2)) - want).abs() < 1e-12 * want);
    assert_eq!(m.batch_solve(std::iter::empty::<&BinWork>()), 0.0);

    // Eq. 3: K1 interpolated + K2 (copied + interior) + per-patch cost.
    let prep_a = 3.0 * 100.0 + 2.0 * (50.0 + 48.0) + 11.0;
    let prep_b = 2.0 * (98.0 + 27.0) + 11.0;
    assert_eq!(m.patch_prepare(&a), prep_a);
    assert_eq!(m.bin_prepare(&bin1), prep_a + prep_b);
    // A probe the device cuts out costs the host nothing.
    assert_eq!(m.patch_prepare(&b.prepared(Preparation::OnDevice)), 0.0);
    let mixed = BinWork::new(vec![a, b.prepared(Preparation::OnDevice)], 40).unwrap();
    assert_eq!(m.bin_prepare(&mixed), prep_a);
    assert_eq!(mixed.totals(), bin1.totals());

    // Close: K3 interior + flux faces + per patch.
    let close_a = 0.25 * 48.0 + 4.0 * 20.0 + 13.0;
    let close_b = 0.25 * 27.0 + 13.0;
    assert_eq!(m.patch_close(&a), close_a);
    assert_eq!(m.bin_close(&bin1), close_a + close_b);
}

#[test]
fn invalid_coefficients_are_rejected_by_name() {
    for (name, edit) in [
        (
            "c2",
            Box::new(|c: &mut Coefficients| c.solve.c2 = -1.0) as Box<dyn Fn(&mut Coefficients)>,
        ),
        (
            "t_trans",
            Box::new(|c: &mut Coefficients| c.solve.t_trans = f64::NAN),
        ),
        (
            "k1",
            Box::new(|c: &mut Coefficients| c.prepare.k1 = f64::INFINITY),
        ),
        (
            "k_flux",
            Box::new(|c: &mut Coefficients| c.close.k_flux = -1e-9),
        ),
    ] {
        let mut c = coeffs();
        edit(&mut c);
        match CostModel::new(c) {
            Err(BatchError::InvalidCoefficient { name: n, .. }) => assert_eq!(n, name),
            other => panic!("{name}: {other:?}"),
        }
    }
    CostModel::new(Coefficients::cpu_default()).unwrap();
    CostModel::new(Coefficients::gpu_default()).unwrap();
}

#[test]
fn invalid_work_is_rejected_with_its_index() {
    let ok = PatchWork::new([8, 8, 8], 2);
    assert!(matches!(
        BinWork::new(vec![], 40),
        Err(BatchError::EmptyBin)
    ));
    assert!(matches!(
        BinWork::new(vec![ok], 0),
        Err(BatchError::ZeroBytesPerCell)
    ));
    let thin = PatchWork::new([8, 4, 8], 2);
    match BinWork::new(vec![ok, thin], 40) {
        Err(e @ BatchError::PatchExtent { patch: 1, .. }) => {
            assert!(e.to_string().contains("patch 1"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let huge = PatchWork::new([MAX_EXTENT + 1, 8, 8], 2);
    assert!(matches!(
        BinWork::new(vec![huge], 40),
        Err(BatchError::PatchExtent { patch: 0, .. })
    ));
    // 8^3 - 4^3 = 448 ghost cells.
    let over = ok.with_ghost_fill(300, 149);
    assert!(matches!(
        BinWork::new(vec![ok, ok, over], 40),
        Err(BatchError::GhostCounts {
            patch: 2,
            available: 448,
            ..
        })
    ));
    BinWork::new(vec![ok.with_ghost_fill(300, 148)], 40).unwrap();
    let overflow = ok.with_ghost_fill(u64::MAX, 1);
    assert!(matches!(
        BinWork::new(vec![overflow], 40),
        Err(BatchError::GhostCounts { .. })
    ));
    let faces = ok.with_flux_faces(97);
    assert!(matches!(
        BinWork::new(vec![faces], 40),
        Err(BatchError::FluxFaces { available: 96, .. })
    ));
}
