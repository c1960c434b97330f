//! Bad input yields errors that name the patch and the cell.

use quilt_sweep::physics::{Gas, Primitive};
use quilt_sweep::{
    Batch, BatchLayout, ConfigError, PatchShape, Scheme, Solver, SweepError, SweepOrder, Workspace,
};

/// Two patches (ids 40 and 41) at rest, every cell set.
fn batch(g: u32) -> Batch<f64> {
    let shapes = [
        PatchShape::new(40, [6, 5, 4], g, [0.1; 3]),
        PatchShape::new(41, [4, 4, 4], g, [0.1; 3]),
    ];
    let layout = BatchLayout::packed(32, 5, &shapes, &[(0, [0, 0, 0]), (0, [16, 0, 0])]).unwrap();
    let mut b = Batch::new(layout);
    let u = Primitive::at_rest(1.0, 1.0).to_conserved(&Gas::default());
    for (p, s) in shapes.iter().enumerate() {
        let e = s.extent;
        for k in 0..e[2] {
            for j in 0..e[1] {
                for i in 0..e[0] {
                    for c in 0..5 {
                        b.set(p, c, [i, j, k], u[c as usize]).unwrap();
                    }
                }
            }
        }
    }
    b
}

fn solvers() -> Vec<Solver> {
    [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()]
        .into_iter()
        .map(|s| Solver::new(s, Gas::default()).unwrap())
        .collect()
}

#[test]
fn nan_and_negative_states_name_patch_and_cell() {
    for solver in solvers() {
        let g = solver.ghost_width();
        let mut ws = Workspace::new();
        // NaN density in a ghost cell of the second patch.
        let mut b = batch(g);
        b.set(1, 0, [0, 2, 3], f64::NAN).unwrap();
        let e = solver
            .advance(&mut b, 1e-3, SweepOrder::Xyz, &mut ws)
            .unwrap_err();
        let want = [-(g as i64), 2 - g as i64, 3 - g as i64];
        match &e {
            SweepError::BadState {
                patch, cell, what, ..
            } => {
                assert_eq!((*patch, *cell, *what), (41, want, "density is not finite"));
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("patch 41"), "{e}");
        // Negative density in the interior of the first patch.
        let mut b = batch(g);
        b.set(0, 0, [g + 1, g, g + 2], -1.0).unwrap();
        let e = solver.max_dt(&b, 0.3).unwrap_err();
        assert!(
            matches!(
                e,
                SweepError::BadState {
                    patch: 40,
                    cell: [1, 0, 2],
                    what: "density is not positive",
                    ..
                }
            ),
            "{e}"
        );
        // Negative pressure: energy below the kinetic energy.
        let mut b = batch(g);
        b.set(0, 1, [g, g, g], 3.0).unwrap();
        let e = solver
            .advance(&mut b, 1e-3, SweepOrder::Zyx, &mut ws)
            .unwrap_err();
        assert!(
            matches!(
                e,
                SweepError::BadState {
                    patch: 40,
                    cell: [0, 0, 0],
                    what: "pressure is not positive",
                    ..
                }
            ),
            "{e}"
        );
        // Infinite energy.
        let mut b = batch(g);
        b.set(1, 4, [g, g, g + 3], f64::INFINITY).unwrap();
        let e = solver
            .advance(&mut b, 1e-3, SweepOrder::Xyz, &mut ws)
            .unwrap_err();
        assert!(
            matches!(
                e,
                SweepError::BadState {
                    patch: 41,
                    cell: [0, 0, 3],
                    ..
                }
            ),
            "{e}"
        );
    }
}

#[test]
fn time_steps_above_the_cfl_limit_are_rejected() {
    for solver in solvers() {
        let g = solver.ghost_width();
        let mut b = batch(g);
        // A fast cell in patch 41 sets the limit.
        let w = Primitive {
            rho: 1.0,
            vel: [0.0, 0.0, 3.0],
            p: 1.0,
        }
        .to_conserved(&solver.gas());
        for c in 0..5 {
            b.set(1, c, [g + 2, g + 1, g], w[c as usize]).unwrap();
        }
        let limit = solver.cfl_limit();
        let dt = solver.max_dt(&b, limit).unwrap();
        let expect = limit * 0.1 / (3.0 + 1.4f64.sqrt());
        assert!((dt - expect).abs() < 1e-12 * expect, "{dt} vs {expect}");
        let mut ws = Workspace::new();
        let e = solver
            .advance(&mut b.clone(), 1.01 * dt, SweepOrder::Xyz, &mut ws)
            .unwrap_err();
        match e {
            SweepError::Cfl {
                patch,
                cell,
                courant,
                ..
            } => {
                assert_eq!((patch, cell), (41, [2, 1, 0]));
                assert!((courant - 1.01 * limit).abs() < 1e-9);
            }
            other => panic!("{other}"),
        }
        solver
            .advance(&mut b, dt, SweepOrder::Xyz, &mut ws)
            .unwrap();
        assert!(matches!(
            solver.max_dt(&b, 1.5 * limit),
            Err(SweepError::Config(ConfigError::Cfl { .. }))
        ));
        assert!(matches!(
            solver.max_dt(&b, 0.0),
            Err(SweepError::Config(ConfigError::Cfl { .. }))
        ));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = solver
                .advance(&mut batch(g), bad, SweepOrder::Xyz, &mut ws)
                .unwrap_err();
            assert!(matches!(e, SweepError::TimeStep(_)), "{e}");
        }
    }
}

#[test]
fn layouts_that_do_not_suit_the_scheme_are_rejected() {
    for solver in solvers() {
        let g = solver.ghost_width();
        let mut ws = Workspace::new();
        let mut thin = batch(g - 1);
        let e = solver
            .advance(&mut thin, 1e-4, SweepOrder::Xyz, &mut ws)
            .unwrap_err();
        assert!(
            matches!(e, SweepError::GhostWidth { patch: 40, ghost, required, .. } if ghost == g - 1 && required == g),
            "{e}"
        );
        let layout =
            BatchLayout::one_per_slot(32, 4, &[PatchShape::new(1, [4; 3], g, [0.1; 3])]).unwrap();
        let e = solver.advance(
            &mut Batch::<f32>::new(layout),
            1e-4,
            SweepOrder::Xyz,
            &mut Workspace::new(),
        );
        assert!(matches!(
            e,
            Err(SweepError::Components {
                found: 4,
                required: 5
            })
        ));
        let mut b = batch(g);
        let e = solver
            .advance_levels(&mut b, &[], SweepOrder::Xyz, &mut ws)
            .unwrap_err();
        assert!(
            matches!(
                e,
                SweepError::MissingLevel {
                    patch: 40,
                    level: 0,
                    levels: 0
                }
            ),
            "{e}"
        );
        solver
            .advance_levels(&mut b, &[1e-3], SweepOrder::Xyz, &mut ws)
            .unwrap();
    }
}

#[test]
fn bad_configuration_is_rejected() {
    assert!(matches!(
        Solver::new(Scheme::rtvd(), Gas::ideal(1.0)),
        Err(ConfigError::Gamma(_))
    ));
    assert!(matches!(
        Solver::new(Scheme::rtvd(), Gas::ideal(f64::NAN)),
        Err(ConfigError::Gamma(_))
    ));
    let g = Gas {
        pressure_floor: 0.0,
        ..Gas::default()
    };
    assert!(matches!(
        Solver::new(Scheme::waf(), g),
        Err(ConfigError::Floor {
            which: "pressure",
            ..
        })
    ));
    assert!(matches!(
        Scheme::from_names("muscl", None),
        Err(ConfigError::UnknownName { .. })
    ));
    assert!(matches!(
        Scheme::from_names("waf", Some("mc")),
        Err(ConfigError::UnknownName { .. })
    ));
    assert_eq!(
        Scheme::from_names("TVD", Some("minmod")).unwrap().name(),
        "tvd"
    );
    assert_eq!(
        Scheme::from_names("waf", Some("superbee"))
            .unwrap()
            .ghost_width(),
        2
    );
}
