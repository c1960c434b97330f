//! GPU against CPU: every scheme, precision, variant and sweep order on
//! synthetic batches and on Riemann problems. Needs a CUDA GPU: run on the
//! GPU machine with `--ignored` (scripts/gpu-check.sh). With FMA contraction
//! off the GPU must reproduce quilt-sweep bit for bit (far inside the
//! required 1e-12 in f64 and 1e-5 in f32).

mod common;

use std::sync::Arc;

use common::*;
use quilt_cuda::{CudaConfig, CudaError, CudaSolver, ExternalBox, GpuReal, HostRegistry, Variant};
use quilt_mesh::locked::{Mapping, PageLock};
use quilt_sweep::exact::{ExactRiemann, State1d};
use quilt_sweep::physics::{Gas, Primitive};
use quilt_sweep::uniform::{Boundary, UniformGrid, even_cuts};
use quilt_sweep::{
    Batch, BoxPart, BoxRate, HostAlloc, PatchShape, Real, Restricted, Scheme, SweepError,
    SweepOrder, Workspace,
};

const NEEDS_GPU: &str = "needs a CUDA GPU: run with --ignored on the GPU machine";

fn tol<T: Real>() -> f64 {
    if T::NAME == "f64" { 1e-12 } else { 1e-5 }
}

/// One step of `batch` on the GPU (each configuration) and on the CPU, in
/// both orders; data, fluxes and reports must agree bit for bit.
fn check_batch<T: GpuReal>(
    scheme: Scheme,
    gas: Gas,
    batch: &Batch<T>,
    configs: &[CudaConfig],
    what: &str,
) {
    let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
    let dt = cpu.max_dt(batch, 0.8 * cpu.cfl_limit()).unwrap();
    for order in [SweepOrder::Xyz, SweepOrder::Zyx] {
        let (want, want_r) = cpu_step(scheme, gas, batch, dt, order);
        for cfg in configs {
            let mut gpu = CudaSolver::<T>::new(scheme, gas, *cfg).unwrap();
            let (got, got_r) = gpu_step(&mut gpu, batch, dt, order);
            let name = format!(
                "{what}: {} {} {:?} {}",
                scheme.name(),
                T::NAME,
                order,
                config_name(cfg)
            );
            let (bw, rel) = compare(got.data(), want.data(), batch.layout().bin_edge());
            let (fbw, frel) = compare_flat(got.flux(), want.flux());
            assert!(
                rel <= tol::<T>() && frel <= tol::<T>(),
                "{name}: relative difference {rel:e} / flux {frel:e}"
            );
            assert!(bw, "{name}: state not bitwise equal (rel {rel:e})");
            assert!(fbw, "{name}: fluxes not bitwise equal (rel {frel:e})");
            assert_eq!(got_r, want_r, "{name}: step reports differ");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn every_scheme_precision_and_variant_matches_the_cpu_on_synthetic_batches() {
    if !gpu() {
        return;
    }
    let gas = Gas::ideal(1.4);
    for (n, scheme) in schemes().into_iter().enumerate() {
        let g = scheme.ghost_width();
        let layout = packed(&shapes(14, g, 2 * g + 4, 44, 7 + n as u64));
        check_batch::<f64>(
            scheme,
            gas,
            &fill(layout.clone(), &gas, 3, false),
            &configs(),
            "synthetic",
        );
        check_batch::<f32>(
            scheme,
            gas,
            &fill(layout, &gas, 3, false),
            &configs(),
            "synthetic",
        );
    }
    let _ = NEEDS_GPU;
}

/// A layout of more than the 4096 descriptors from which the solver makes
/// its pass tables on the device (`layout_table`, from starts made on the
/// host) steps as on the CPU in every variant: the device's tables are
/// those the host would have made.
#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn large_layouts_tables_made_on_the_device_match_the_cpu() {
    if !gpu() {
        return;
    }
    let gas = Gas::ideal(1.4);
    for (n, scheme) in schemes().into_iter().take(3).enumerate() {
        let g = scheme.ghost_width();
        let layout = packed(&shapes(4200, g, 2 * g + 2, 2 * g + 7, 31 + n as u64));
        assert!(layout.patches().len() > 4096);
        check_batch::<f64>(
            scheme,
            gas,
            &fill(layout, &gas, 5, false),
            &configs(),
            "large layout",
        );
    }
}

/// Passive scalars: each scheme's scalar pass (`CudaConfig::scalars`)
/// reproduces quilt-sweep's consistent multifluid advection bit for bit,
/// in every variant, both precisions and both orders, fluxes included; a
/// solver compiled for another component count refuses the batch.
#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn passive_scalars_match_the_cpu_bit_for_bit() {
    if !gpu() {
        return;
    }
    let gas = Gas::ideal(1.4);
    let with = |c: CudaConfig| CudaConfig { scalars: 3, ..c };
    let cfgs: Vec<CudaConfig> = configs().into_iter().map(with).collect();
    for (n, scheme) in schemes().into_iter().enumerate().take(3) {
        let g = scheme.ghost_width();
        let layout = packed_with(&shapes(10, g, 2 * g + 4, 40, 11 + n as u64), 8);
        check_batch::<f64>(
            scheme,
            gas,
            &fill(layout.clone(), &gas, 5, false),
            &cfgs,
            "scalars",
        );
        check_batch::<f32>(scheme, gas, &fill(layout, &gas, 5, false), &cfgs, "scalars");
    }
    // The other options of each scheme, in the default configuration.
    for (n, scheme) in schemes().into_iter().enumerate().skip(3) {
        let g = scheme.ghost_width();
        let layout = packed_with(&shapes(6, g, 2 * g + 4, 32, 21 + n as u64), 8);
        check_batch::<f64>(
            scheme,
            gas,
            &fill(layout, &gas, 6, false),
            &cfgs[2..3],
            "scalars",
        );
    }
    let scheme = Scheme::rtvd();
    let layout = packed_with(&shapes(4, 3, 12, 20, 1), 7);
    let batch = fill::<f64>(layout, &gas, 1, false);
    let mut gpu = CudaSolver::<f64>::new(scheme, gas, CudaConfig::default()).unwrap();
    let err = gpu
        .advance(&mut batch.clone(), 1e-4, SweepOrder::Xyz)
        .expect_err("a 7-component batch on a 5-component solver");
    assert!(matches!(err, CudaError::Unsupported(_)), "{err}");
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn floors_act_and_are_counted_as_on_the_cpu() {
    if !gpu() {
        return;
    }
    // Floors just under the initial state of the expanding flows: every
    // scheme's outflow drops below them.
    let gas = Gas {
        eos: quilt_sweep::physics::IdealGas { gamma: 1.4 },
        density_floor: 0.045,
        pressure_floor: 0.0195,
    };
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        let g = scheme.ghost_width();
        let layout = packed(&shapes(6, g, 2 * g + 6, 30, 99));
        let batch = fill::<f64>(layout, &gas, 5, true);
        let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
        let dt = cpu.max_dt(&batch, 0.8 * cpu.cfl_limit()).unwrap();
        let (_, r) = cpu_step(scheme, gas, &batch, dt, SweepOrder::Xyz);
        assert!(
            r.floors.total() > 0,
            "{}: the test state must make the floors act",
            scheme.name()
        );
        check_batch::<f64>(scheme, gas, &batch, &configs()[..5], "floors");
        check_batch::<f32>(
            scheme,
            gas,
            &fill(batch.layout().clone(), &gas, 5, true),
            &configs()[..5],
            "floors",
        );
    }
}

/// A shock tube along `axis` on a uniform grid cut into uneven tiles;
/// returns the final grid state per cell along the tube.
fn tube<T: GpuReal>(
    scheme: Scheme,
    cfg: Option<CudaConfig>,
    axis: usize,
    left: State1d,
    right: State1d,
    t_end: f64,
    packed_layout: bool,
) -> (Vec<[T; 5]>, UniformGrid<T>) {
    let gas = Gas::ideal(1.4);
    let g = scheme.ghost_width();
    let n = 160u32;
    let mut cells = [6u32; 3];
    cells[axis] = n;
    let mut cuts: [Vec<u32>; 3] = std::array::from_fn(|_| even_cuts(6, 4));
    // Uneven tiles that fit a 64-bin with up to 4 ghosts per side.
    cuts[axis] = vec![48, 23, 53, 36];
    let mut bc = [Boundary::Periodic; 3];
    bc[axis] = Boundary::Outflow;
    let mut grid = UniformGrid::<T>::new(cells, [1.0 / f64::from(n); 3], bc, g, cuts).unwrap();
    grid.init(|_, x| {
        let s = if x[axis] < 0.5 { left } else { right };
        let mut vel = [0.0; 3];
        vel[axis] = s.u;
        Primitive {
            rho: s.rho,
            vel,
            p: s.p,
        }
        .to_conserved(&gas)
    });
    let mut batch = if packed_layout {
        let items: Vec<[u32; 3]> = grid.shapes().iter().map(|s| s.extent).collect();
        let p = quilt_pack::pack(&items, [64; 3], &quilt_pack::PackOptions::default()).unwrap();
        let pl: Vec<(u32, [u32; 3])> = p
            .placements
            .iter()
            .map(|x| (x.bin as u32, x.offset))
            .collect();
        grid.packed_batch(64, &pl).unwrap()
    } else {
        grid.one_per_slot_batch(64).unwrap()
    };
    let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
    let mut gpu = cfg.map(|c| CudaSolver::<T>::new(scheme, gas, c).unwrap());
    let mut ws = Workspace::new();
    let (mut t, mut step) = (0.0, 0u64);
    while t < t_end {
        grid.fill(&mut batch).unwrap();
        let dt = cpu
            .max_dt(&batch, 0.8 * cpu.cfl_limit())
            .unwrap()
            .min(t_end - t);
        let order = SweepOrder::for_step(step);
        match gpu.as_mut() {
            Some(g) => g.advance(&mut batch, dt, order).map(|_| ()).unwrap(),
            None => cpu
                .advance(&mut batch, dt, order, &mut ws)
                .map(|_| ())
                .unwrap(),
        }
        grid.gather(&batch).unwrap();
        t += dt;
        step += 1;
    }
    let profile = (0..n)
        .map(|i| {
            let mut c = [0u32; 3];
            c[axis] = i;
            grid.get(c).unwrap()
        })
        .collect();
    (profile, grid)
}

/// L1 error of the density of a tube profile (cells over [0, 1], the
/// discontinuity at 0.5) against the exact Riemann solution at `t_end`.
fn l1_density_error<T: Real>(profile: &[[T; 5]], l: State1d, r: State1d, t_end: f64) -> f64 {
    let exact = ExactRiemann::new(l, r, 1.4).unwrap();
    let h = 1.0 / profile.len() as f64;
    profile
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let x = (i as f64 + 0.5) * h;
            let s = exact.cell_average(x - 0.5 * h, x + 0.5 * h, 0.5, t_end, 16);
            (u[0].as_f64() - s.rho).abs() * h
        })
        .sum()
}

/// Toro's tests 1-3 (Riemann Solvers, 3rd ed., table 4.1) and Sod.
fn riemann_problems() -> Vec<(&'static str, State1d, State1d, f64)> {
    vec![
        (
            "sod",
            State1d::new(1.0, 0.0, 1.0),
            State1d::new(0.125, 0.0, 0.1),
            0.2,
        ),
        (
            "toro1",
            State1d::new(1.0, 0.75, 1.0),
            State1d::new(0.125, 0.0, 0.1),
            0.2,
        ),
        (
            "toro2-123",
            State1d::new(1.0, -2.0, 0.4),
            State1d::new(1.0, 2.0, 0.4),
            0.15,
        ),
        (
            "toro3",
            State1d::new(1.0, 0.0, 1000.0),
            State1d::new(1.0, 0.0, 0.01),
            0.012,
        ),
    ]
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn riemann_problems_match_the_cpu_along_every_axis() {
    if !gpu() {
        return;
    }
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        for (name, l, r, t_end) in riemann_problems() {
            let cfg = CudaConfig::default();
            let (want, _) = tube::<f64>(scheme, None, 0, l, r, t_end, true);
            let mut per_axis = Vec::new();
            for axis in 0..3 {
                let (got, _) = tube::<f64>(scheme, Some(cfg), axis, l, r, t_end, true);
                per_axis.push(got);
            }
            // x against the CPU, bit for bit; y and z against x with the
            // momentum components rotated (symmetry, as on the CPU).
            for (i, (g, w)) in per_axis[0].iter().zip(&want).enumerate() {
                for v in 0..5 {
                    assert_eq!(
                        g[v].to_bits(),
                        w[v].to_bits(),
                        "{} {name}: cell {i} var {v} GPU vs CPU",
                        scheme.name()
                    );
                }
            }
            for axis in 1..3 {
                for (i, (a, x)) in per_axis[axis].iter().zip(&per_axis[0]).enumerate() {
                    let pairs = [(0, 0), (1 + axis, 1), (4, 4)];
                    for (va, vx) in pairs {
                        assert_eq!(
                            a[va].to_bits(),
                            x[vx].to_bits(),
                            "{} {name}: axis {axis} cell {i} differs from x",
                            scheme.name()
                        );
                    }
                }
            }
            if name == "sod" {
                let l1 = l1_density_error(&per_axis[0], l, r, t_end);
                eprintln!("{} Sod on the GPU: L1 density error {l1:.5}", scheme.name());
                assert!(l1 < 0.012, "{} Sod L1 density error {l1}", scheme.name());
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn riemann_problems_in_f32_match_the_cpu() {
    if !gpu() {
        return;
    }
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        let (name, l, r, t_end) = riemann_problems()[0];
        let (want, _) = tube::<f32>(scheme, None, 1, l, r, t_end, true);
        let (got, _) = tube::<f32>(scheme, Some(CudaConfig::default()), 1, l, r, t_end, true);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            for v in 0..5 {
                assert_eq!(
                    g[v].to_bits(),
                    w[v].to_bits(),
                    "{} {name} f32: cell {i} var {v}",
                    scheme.name()
                );
            }
        }
    }
}

/// A page-locked batch takes the interior store back from the device: its
/// interiors and fluxes are the CPU's bit for bit, its ghost cells keep the
/// values prepared before the step.
fn check_page_locked<T: GpuReal>(scheme: Scheme, seed: u64) {
    let gas = Gas::ideal(1.4);
    let g = scheme.ghost_width();
    let layout = packed(&shapes(14, g, 2 * g + 4, 44, seed));
    let input = fill::<T>(layout.clone(), &gas, 3, false);
    let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
    let dt = cpu.max_dt(&input, 0.8 * cpu.cfl_limit()).unwrap();
    for order in [SweepOrder::Xyz, SweepOrder::Zyx] {
        let (want, want_r) = cpu_step(scheme, gas, &input, dt, order);
        let mut gpu = CudaSolver::<T>::new(scheme, gas, CudaConfig::default()).unwrap();
        let alloc = gpu.host_alloc();
        let data = HostAlloc::<T>::alloc(&alloc, layout.data_len()).unwrap();
        let flux = HostAlloc::<T>::alloc(&alloc, layout.flux_len()).unwrap();
        let mut b = Batch::in_memory(layout.clone(), data, flux).unwrap();
        assert!(b.page_locked());
        {
            let (_, d, f) = b.buffers_mut();
            d.copy_from_slice(input.data());
            f.copy_from_slice(input.flux());
        }
        let got_r = gpu.advance(&mut b, dt, order).unwrap();
        let name = format!("page-locked {} {} {order:?}", scheme.name(), T::NAME);
        assert_eq!(got_r, want_r, "{name}: step reports differ");
        assert!(
            compare_flat(b.flux(), want.flux()).0,
            "{name}: fluxes differ"
        );
        let (mut interior, mut ghosts) = (0usize, 0usize);
        for (p, d) in layout.patches().iter().enumerate() {
            let [ex, ey, ez] = d.extent;
            for c in 0..5 {
                for k in 0..ez {
                    for j in 0..ey {
                        for i in 0..ex {
                            let cell = [i, j, k];
                            let inside = (0..3)
                                .all(|a| cell[a] >= d.ghost && cell[a] < d.extent[a] - d.ghost);
                            let got = b.get(p, c, cell).unwrap().as_f64().to_bits();
                            let expect = if inside {
                                interior += 1;
                                want.get(p, c, cell)
                            } else {
                                ghosts += 1;
                                input.get(p, c, cell)
                            };
                            assert_eq!(
                                got,
                                expect.unwrap().as_f64().to_bits(),
                                "{name}: patch {p} component {c} cell {cell:?} (interior: {inside})"
                            );
                        }
                    }
                }
            }
        }
        assert!(interior > 0 && ghosts > 0, "{name}: nothing compared");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn page_locked_batches_get_their_interiors_back_bit_for_bit() {
    if !gpu() {
        return;
    }
    for (n, scheme) in schemes().into_iter().enumerate() {
        check_page_locked::<f64>(scheme, 21 + n as u64);
        check_page_locked::<f32>(scheme, 31 + n as u64);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn packed_bins_and_the_default_scheme_agree() {
    if !gpu() {
        return;
    }
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        let (l, r) = (State1d::new(1.0, 0.0, 1.0), State1d::new(0.125, 0.0, 0.1));
        let (a, _) = tube::<f64>(
            scheme,
            Some(CudaConfig::variant(Variant::Default)),
            2,
            l,
            r,
            0.1,
            false,
        );
        let (b, _) = tube::<f64>(scheme, Some(CudaConfig::default()), 2, l, r, 0.1, true);
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            for v in 0..5 {
                assert_eq!(
                    x[v].to_bits(),
                    y[v].to_bits(),
                    "{}: cell {i} var {v}",
                    scheme.name()
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn resident_steps_and_levels_match_the_cpu() {
    if !gpu() {
        return;
    }
    let gas = Gas::ideal(1.4);
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        let g = scheme.ghost_width();
        let batch = fill::<f64>(packed(&shapes(10, g, 2 * g + 4, 40, 21)), &gas, 8, false);
        let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
        let dt = cpu.max_dt(&batch, 0.5 * cpu.cfl_limit()).unwrap();
        // Two resident steps against two CPU steps (ghosts stale after the
        // first, as on the CPU: the comparison is of the same computation).
        let mut want = batch.clone();
        let mut ws = Workspace::new();
        let mut gpu = CudaSolver::<f64>::new(scheme, gas, CudaConfig::default()).unwrap();
        gpu.upload(&batch).unwrap();
        for step in 0..2 {
            let order = SweepOrder::for_step(step);
            let rc = cpu.advance(&mut want, 0.5 * dt, order, &mut ws).unwrap();
            let rg = gpu.step_resident(0.5 * dt, order).unwrap();
            assert_eq!(rc, rg, "{} resident step {step}", scheme.name());
        }
        let mut got = Batch::new(batch.layout().clone());
        gpu.download(&mut got).unwrap();
        assert!(
            compare(got.data(), want.data(), 64).0,
            "{} resident state",
            scheme.name()
        );
        assert!(
            compare_flat(got.flux(), want.flux()).0,
            "{} resident fluxes",
            scheme.name()
        );
        // Per-level time steps.
        let levels = [dt, 0.5 * dt, 0.25 * dt];
        let mut want = batch.clone();
        let rc = cpu
            .advance_levels(&mut want, &levels, SweepOrder::Zyx, &mut ws)
            .unwrap();
        let mut got = batch.clone();
        let rg = gpu
            .advance_levels(&mut got, &levels, SweepOrder::Zyx)
            .unwrap();
        assert_eq!(rc, rg);
        assert!(
            compare(got.data(), want.data(), 64).0,
            "{} levels",
            scheme.name()
        );
        assert!(
            compare_flat(got.flux(), want.flux()).0,
            "{} levels fluxes",
            scheme.name()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn input_errors_are_the_cpu_errors_and_leave_the_batch_untouched() {
    if !gpu() {
        return;
    }
    let gas = Gas::ideal(1.4);
    let scheme = Scheme::waf();
    let layout = packed(&shapes(8, 2, 12, 30, 4));
    let batch = fill::<f64>(layout, &gas, 1, false);
    let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
    let dt = cpu.max_dt(&batch, 0.9).unwrap();
    for cfg in [CudaConfig::default(), CudaConfig::variant(Variant::Default)] {
        let mut gpu = CudaSolver::<f64>::new(scheme, gas, cfg).unwrap();
        // Time step above the CFL limit.
        let mut b = batch.clone();
        let err = gpu.advance(&mut b, 2.0 * dt, SweepOrder::Xyz).unwrap_err();
        let want = cpu
            .advance(
                &mut batch.clone(),
                2.0 * dt,
                SweepOrder::Xyz,
                &mut Workspace::new(),
            )
            .unwrap_err();
        match &err {
            CudaError::Sweep(e) => assert_eq!(e, &want),
            e => panic!("expected {want}, got {e}"),
        }
        assert!(
            compare(b.data(), batch.data(), 64).0,
            "batch changed by a refused step"
        );
        // A NaN in a ghost cell of patch 5 and a negative density in patch 2.
        let mut b = batch.clone();
        b.set(5, 3, [1, 0, 2], f64::NAN).unwrap();
        b.set(2, 0, [4, 3, 3], -1.0).unwrap();
        let bad = b.clone();
        let err = gpu.advance(&mut b, dt, SweepOrder::Zyx).unwrap_err();
        let want = cpu
            .advance(&mut bad.clone(), dt, SweepOrder::Zyx, &mut Workspace::new())
            .unwrap_err();
        assert!(
            matches!(&err, CudaError::Sweep(e @ SweepError::BadState { .. }) if e.to_string() == want.to_string()),
            "{err} vs {want}"
        );
        assert!(
            compare(b.data(), bad.data(), 64).0,
            "batch changed by a refused step"
        );
        // Bad time steps (on a valid batch: the CPU reports bad input first).
        let mut b = batch.clone();
        assert!(matches!(
            gpu.advance(&mut b, -1.0, SweepOrder::Xyz),
            Err(CudaError::Sweep(SweepError::TimeStep(_)))
        ));
        // With a bad batch the input error comes first, as on the CPU.
        let mut b = bad.clone();
        let err = gpu.advance(&mut b, f64::NAN, SweepOrder::Xyz).unwrap_err();
        assert!(
            matches!(err, CudaError::Sweep(SweepError::BadState { .. })),
            "{err}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn fma_fast_path_stays_within_tolerance() {
    if !gpu() {
        return;
    }
    let gas = Gas::ideal(1.4);
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        let g = scheme.ghost_width();
        let layout = packed(&shapes(12, g, 2 * g + 4, 44, 31));
        for prec in ["f64", "f32"] {
            let cfg = CudaConfig {
                fma: true,
                ..CudaConfig::default()
            };
            let (rel, frel) = if prec == "f64" {
                one_step_diff::<f64>(scheme, gas, fill(layout.clone(), &gas, 2, false), cfg)
            } else {
                one_step_diff::<f32>(scheme, gas, fill(layout.clone(), &gas, 2, false), cfg)
            };
            let t = if prec == "f64" { 1e-12 } else { 1e-5 };
            eprintln!(
                "fma on, {} {prec}: max relative difference state {rel:.2e}, flux {frel:.2e}",
                scheme.name()
            );
            // WAF in f32 is the exception (measured above 1e-5: its wave
            // limiters divide density jumps that FMA rounds differently), so
            // contraction stays off by default; see docs/quilt-cuda.md.
            if !(scheme.name() == "waf" && prec == "f32") {
                assert!(
                    rel <= t && frel <= t,
                    "{} {prec}: {rel:e} / {frel:e} above {t:e}",
                    scheme.name()
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn fast_f32_path_stays_within_tolerance() {
    if !gpu() {
        return;
    }
    let gas = Gas::ideal(1.4);
    let cfg = CudaConfig {
        fma: true,
        fast_f32: true,
        ..CudaConfig::default()
    };
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        // One step of a synthetic batch: the f32 tolerance.
        let g = scheme.ghost_width();
        let layout = packed(&shapes(12, g, 2 * g + 4, 44, 31));
        let (rel, frel) = one_step_diff::<f32>(scheme, gas, fill(layout, &gas, 2, false), cfg);
        eprintln!(
            "fast f32, {}: max relative difference state {rel:.2e}, flux {frel:.2e}",
            scheme.name()
        );
        // WAF is exempt as with FMA alone (see fma_fast_path_stays_within_tolerance).
        if scheme.name() != "waf" {
            assert!(
                rel <= 1e-5 && frel <= 1e-5,
                "{}: {rel:e} / {frel:e} above 1e-5",
                scheme.name()
            );
        }
        // A whole Sod run: the rounding differences of each step do not
        // grow into a different solution.
        let (name, l, r, t_end) = riemann_problems()[0];
        let (want, _) = tube::<f32>(scheme, None, 0, l, r, t_end, true);
        let (got, _) = tube::<f32>(scheme, Some(cfg), 0, l, r, t_end, true);
        let l1 = l1_density_error(&got, l, r, t_end);
        let d = got
            .iter()
            .zip(&want)
            .map(|(u, w)| (f64::from(u[0]) - f64::from(w[0])).abs())
            .fold(0.0, f64::max);
        eprintln!(
            "fast f32, {} {name}: L1 density error {l1:.5}, max density difference to the CPU {d:.2e}",
            scheme.name()
        );
        assert!(l1 < 0.012, "{} {name} L1 density error {l1}", scheme.name());
        assert!(
            d < 1e-3,
            "{} {name}: density differs from the CPU by {d:e}",
            scheme.name()
        );
    }
}

/// Largest relative differences (state, boundary fluxes) between one GPU step
/// with `cfg` and the CPU reference.
fn one_step_diff<T: GpuReal>(
    scheme: Scheme,
    gas: Gas,
    batch: Batch<T>,
    cfg: CudaConfig,
) -> (f64, f64) {
    let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
    let dt = cpu.max_dt(&batch, 0.8 * cpu.cfl_limit()).unwrap();
    let (want, _) = cpu_step(scheme, gas, &batch, dt, SweepOrder::Xyz);
    let mut gpu = CudaSolver::<T>::new(scheme, gas, cfg).unwrap();
    let (got, _) = gpu_step(&mut gpu, &batch, dt, SweepOrder::Xyz);
    (
        compare(got.data(), want.data(), 64).1,
        compare_flat(got.flux(), want.flux()).1,
    )
}

/// A tiny batch through every kernel of every scheme and precision: the
/// workload of the compute-sanitizer runs of scripts/gpu-check.sh.
#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn sanitizer_smoke() {
    if !gpu() {
        return;
    }
    let gas = Gas::ideal(1.4);
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        let g = scheme.ghost_width();
        let layout = packed(&shapes(3, g, 2 * g + 3, 2 * g + 10, 77));
        let cfgs = &configs()[..7];
        check_batch::<f64>(
            scheme,
            gas,
            &fill(layout.clone(), &gas, 9, false),
            cfgs,
            "sanitizer",
        );
        check_batch::<f32>(
            scheme,
            gas,
            &fill(layout, &gas, 9, false),
            cfgs,
            "sanitizer",
        );
        // The scalar kernels too (two scalars).
        let dyed = packed_with(&shapes(3, g, 2 * g + 3, 2 * g + 10, 78), 7);
        let with: Vec<CudaConfig> = cfgs
            .iter()
            .map(|&c| CudaConfig { scalars: 2, ..c })
            .collect();
        check_batch::<f64>(
            scheme,
            gas,
            &fill(dyed.clone(), &gas, 9, false),
            &with,
            "sanitizer",
        );
        check_batch::<f32>(scheme, gas, &fill(dyed, &gas, 9, false), &with, "sanitizer");
    }
}

/// Page-locked memory beyond the machine's is an error saying how much was
/// asked for, not an abort; an overflowing count is one too.
#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn impossible_allocations_are_errors() {
    if !gpu() {
        return;
    }
    let gpu =
        CudaSolver::<f64>::new(Scheme::default(), Gas::ideal(1.4), CudaConfig::default()).unwrap();
    let alloc = gpu.host_alloc();
    let Err(e) = HostAlloc::<f64>::alloc(&alloc, 1 << 47) else {
        panic!("1 PB of page-locked memory was granted");
    };
    let s = e.to_string();
    assert!(s.contains("page-locked") && s.contains("PB"), "{s}");
    let Err(e) = HostAlloc::<f64>::alloc(&alloc, usize::MAX / 2) else {
        panic!("an overflowing allocation was granted");
    };
    assert!(e.to_string().contains("overflows"), "{e}");
    // The solver still works afterwards.
    let small = HostAlloc::<f64>::alloc(&alloc, 1024).unwrap();
    drop(small);
}

// ------------------------------------------------------- external boxes ----

/// Where the external boxes of a test live and what batch they go with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BoxMemory {
    /// One mapping locked through the solver's registry, a page-locked
    /// batch: read and written in place.
    Registered,
    /// Plain vectors, a page-locked batch: copied through the batch.
    Vectors,
    /// Registered boxes with a pageable batch: copied through the batch.
    RegisteredPageableBatch,
}

/// The memory of a test's boxes, sources then destinations; a mapping is
/// unlocked before it goes.
struct BoxStore<T> {
    mapped: Option<(Mapping, Arc<HostRegistry>)>,
    vecs: Vec<Vec<T>>,
    sizes: Vec<usize>,
}

/// Values before the first box in a mapping, so that boxes start at
/// addresses of no particular alignment.
const BOX_SKEW: usize = 3;

/// What a destination box holds before a step: values unlike the
/// source's, so that a ghost written by the store would show.
fn destination_of<T: GpuReal>(src: &[T]) -> Vec<T> {
    src.iter()
        .map(|v| T::from_f64(0.5 * v.as_f64() + 0.25))
        .collect()
}

impl<T: GpuReal> BoxStore<T> {
    /// Source boxes holding `dense` and destinations holding
    /// [`destination_of`] them, in a registered mapping or in vectors.
    fn new(dense: &[Vec<T>], registry: Option<Arc<HostRegistry>>) -> Self {
        let all: Vec<Vec<T>> = dense
            .iter()
            .cloned()
            .chain(dense.iter().map(|d| destination_of(d)))
            .collect();
        let sizes: Vec<usize> = all.iter().map(Vec::len).collect();
        let Some(reg) = registry else {
            return Self {
                mapped: None,
                vecs: all,
                sizes,
            };
        };
        let total = BOX_SKEW + sizes.iter().sum::<usize>();
        let m = Mapping::new(total * std::mem::size_of::<T>(), "external boxes").unwrap();
        // SAFETY: a fresh mapping, written by Mapping::new, unlocked in Drop
        // before it is unmapped.
        unsafe { PageLock::lock(&*reg, m.as_ptr(), m.len()) }.unwrap();
        let mut s = Self {
            mapped: Some((m, reg)),
            vecs: Vec::new(),
            sizes,
        };
        for (b, d) in s.slices().into_iter().zip(&all) {
            b.copy_from_slice(d);
        }
        s
    }

    /// Every box's values, sources then destinations.
    fn slices(&mut self) -> Vec<&mut [T]> {
        match &self.mapped {
            Some((m, _)) => {
                let total = BOX_SKEW + self.sizes.iter().sum::<usize>();
                // SAFETY: the mapping holds `total` values, zeroed or
                // written since; the slices borrow `self` mutably.
                let all = unsafe { std::slice::from_raw_parts_mut(m.as_ptr().cast::<T>(), total) };
                let mut rest = &mut all[BOX_SKEW..];
                let mut out = Vec::new();
                for &n in &self.sizes {
                    let (a, b) = std::mem::take(&mut rest).split_at_mut(n);
                    out.push(a);
                    rest = b;
                }
                out
            }
            None => self.vecs.iter_mut().map(Vec::as_mut_slice).collect(),
        }
    }

    /// The boxes, for descriptors `descs` (in the order of `dense`).
    fn boxes(&mut self, descs: &[usize]) -> Vec<ExternalBox<'_, T>> {
        let mut all = self.slices();
        let dst = all.split_off(descs.len());
        descs
            .iter()
            .zip(all)
            .zip(dst)
            .map(|((&desc, src), dst)| ExternalBox {
                desc,
                src: &*src,
                dst,
                restricted: None,
            })
            .collect()
    }

    /// Copies of the sources' values and of the destinations'.
    fn values(&mut self) -> (Vec<Vec<T>>, Vec<Vec<T>>) {
        let mut all: Vec<Vec<T>> = self.slices().into_iter().map(|b| b.to_vec()).collect();
        let dst = all.split_off(self.sizes.len() / 2);
        (all, dst)
    }
}

impl<T> Drop for BoxStore<T> {
    fn drop(&mut self) {
        if let Some((m, reg)) = &self.mapped {
            // SAFETY: locked in `new`; no step is running.
            unsafe { PageLock::unlock(&**reg, m.as_ptr()) };
        }
    }
}

/// A copy of `b` in page-locked memory of `gpu`'s context.
fn page_locked_copy<T: GpuReal>(gpu: &CudaSolver<T>, b: &Batch<T>) -> Batch<T> {
    let alloc = gpu.host_alloc();
    let l = b.layout().clone();
    let data = HostAlloc::<T>::alloc(&alloc, l.data_len()).unwrap();
    let flux = HostAlloc::<T>::alloc(&alloc, l.flux_len()).unwrap();
    let mut c = Batch::in_memory(l, data, flux).unwrap();
    assert!(c.page_locked());
    let (_, d, f) = c.buffers_mut();
    d.copy_from_slice(b.data());
    f.copy_from_slice(b.flux());
    c
}

/// NaN in every cell of the bins of `descs`: a step that read them would
/// fail its input scan.
fn spoil<T: GpuReal>(batch: &mut Batch<T>, descs: &[usize]) {
    for &p in descs {
        let n = 5 * batch.layout().patches()[p].total_cells() as usize;
        batch
            .load_patch(p, &vec![T::from_f64(f64::NAN); n])
            .unwrap();
    }
}

/// Whether cell `at` of a dense box of extent `e` (components after one
/// another) is a ghost cell of a patch with `g` ghosts.
fn is_ghost(at: usize, e: [usize; 3], g: usize) -> bool {
    let t = at % (e[0] * e[1] * e[2]);
    let q = [t % e[0], t / e[0] % e[1], t / (e[0] * e[1])];
    (0..3).any(|x| q[x] < g || q[x] >= e[x] - g)
}

/// `dst` with the ghost cells of `src` (same patch `d`): what a
/// destination holds after an in-place step whose whole output boxes go
/// down by DMA.
fn ghosts_from<T: GpuReal>(dst: &mut [T], src: &[T], d: &quilt_sweep::PatchDesc) {
    let (e, g) = (d.extent.map(|v| v as usize), d.ghost as usize);
    for (at, (a, b)) in dst.iter_mut().zip(src).enumerate() {
        if is_ghost(at, e, g) {
            *a = *b;
        }
    }
}

fn same_bits<T: GpuReal>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.as_f64().to_bits() == y.as_f64().to_bits())
}

/// Patches of the external case before its probes.
const EXTERNAL_PATCHES: usize = 7;

/// What [`external_case`] builds: batch, kept-out descriptors, probes,
/// dense boxes and time step.
type ExternalCase<T> = (Batch<T>, Vec<usize>, Vec<BoxPart>, Vec<Vec<T>>, f64);

/// A packed batch of patches of different shapes, the descriptors to keep
/// outside it (most, not all), their dense boxes, probes that are parts
/// of the first three boxes (at their far corner, their origin and their
/// middle; the batch holds those parts), and a time step.
fn external_case<T: GpuReal>(scheme: Scheme, gas: Gas, seed: u64) -> ExternalCase<T> {
    let g = scheme.ghost_width();
    let mut shapes = shapes(EXTERNAL_PATCHES, g, 2 * g + 3, 2 * g + 14, seed);
    let external: Vec<usize> = (0..EXTERNAL_PATCHES).filter(|p| p % 3 != 1).collect();
    let mut probes = Vec::new();
    for parent in 0..3 {
        let s = shapes[external[parent]];
        let extent: [u32; 3] = std::array::from_fn(|a| (s.extent[a] - a as u32 - 1).max(2 * g + 1));
        let offset: [u32; 3] = std::array::from_fn(|a| {
            let room = s.extent[a] - extent[a];
            [room, 0, room / 2][parent]
        });
        probes.push(BoxPart {
            desc: shapes.len(),
            parent,
            offset,
        });
        shapes.push(quilt_sweep::PatchShape {
            id: 5000 + parent as u64,
            extent,
            user: 100 + parent as u32,
            ..s
        });
    }
    let mut input = fill::<T>(packed(&shapes), &gas, seed, false);
    let dense: Vec<Vec<T>> = external
        .iter()
        .map(|&p| {
            let mut v = vec![T::zero(); 5 * input.layout().patches()[p].total_cells() as usize];
            input.store_patch(p, &mut v).unwrap();
            v
        })
        .collect();
    load_probes(&mut input, &external, &probes, &dense);
    let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
    let dt = cpu.max_dt(&input, 0.8 * cpu.cfl_limit()).unwrap();
    (input, external, probes, dense, dt)
}

/// Loads each probe from its parent's box (`dense[p.parent]`, the box of
/// descriptor `external[p.parent]`).
fn load_probes<T: GpuReal>(
    batch: &mut Batch<T>,
    external: &[usize],
    probes: &[BoxPart],
    dense: &[Vec<T>],
) {
    for p in probes {
        let extent = batch.layout().patches()[external[p.parent]].extent;
        batch
            .load_patch_from(p.desc, &dense[p.parent], extent, p.offset)
            .unwrap();
    }
}

/// The values of the probes' cells and interiors, `ncomp` per cell.
fn probe_values<T: GpuReal>(batch: &Batch<T>, probes: &[BoxPart]) -> (u64, u64) {
    let l = batch.layout();
    let cells = |f: fn(&quilt_sweep::PatchDesc) -> u64| {
        probes.iter().map(|p| f(&l.patches()[p.desc])).sum::<u64>() * u64::from(l.ncomp())
    };
    (cells(|d| d.total_cells()), cells(|d| d.interior_cells()))
}

/// `advance_external` against load_patch + `advance` + store_interior on
/// a second solver: report, boxes, fluxes, the other patches' cells and
/// the bytes counted, bit for bit; the boxes also against the CPU. The
/// first step of `advance_external` takes its layout from the stager.
fn check_external<T: GpuReal>(scheme: Scheme, seed: u64, memory: BoxMemory) {
    let gas = Gas::ideal(1.4);
    let (input, external, probes, dense, dt) = external_case::<T>(scheme, gas, seed);
    let layout = input.layout().clone();
    let spoilt: Vec<usize> = external
        .iter()
        .copied()
        .chain(probes.iter().map(|p| p.desc))
        .collect();
    let mut copy = CudaSolver::<T>::new(scheme, gas, CudaConfig::default()).unwrap();
    let mut gpu = CudaSolver::<T>::new(scheme, gas, CudaConfig::default()).unwrap();
    let reg = gpu.page_lock();
    assert!(
        Arc::ptr_eq(&reg, &gpu.page_lock()),
        "one registry per solver"
    );
    let batch_of = |gpu: &CudaSolver<T>| {
        let mut b = if memory == BoxMemory::RegisteredPageableBatch {
            input.clone()
        } else {
            page_locked_copy(gpu, &input)
        };
        spoil(&mut b, &spoilt);
        b
    };
    let default_transfers = std::env::var("QUILT_CUDA_TRANSFER").is_err();
    for (step, order) in [SweepOrder::Xyz, SweepOrder::Zyx].into_iter().enumerate() {
        let name = format!(
            "external {} {} {order:?} {memory:?}",
            scheme.name(),
            T::NAME
        );
        // The copy path.
        let mut want = batch_of(&copy);
        let mut want_boxes: Vec<Vec<T>> = dense.iter().map(|d| destination_of(d)).collect();
        for (b, &p) in dense.iter().zip(&external) {
            want.load_patch(p, b).unwrap();
        }
        load_probes(&mut want, &external, &probes, &dense);
        let t0 = copy.totals();
        let want_r = copy.advance(&mut want, dt, order).unwrap();
        let t1 = copy.totals();
        for (b, &p) in want_boxes.iter_mut().zip(&external) {
            want.store_interior(p, b).unwrap();
        }
        // In place (or copied, as the memory dictates).
        let mut got = batch_of(&gpu);
        let registered = memory != BoxMemory::Vectors;
        let mut store = BoxStore::new(&dense, registered.then(|| reg.clone()));
        let staged = (step == 0).then(|| gpu.stager().unwrap().stage(&layout).unwrap());
        let t2 = gpu.totals();
        let (got_r, in_place) = {
            let mut boxes = store.boxes(&external);
            let in_place = gpu.external_in_place(&got, &boxes);
            if default_transfers {
                assert_eq!(in_place, memory == BoxMemory::Registered, "{name}: path");
            }
            let r = gpu
                .advance_external(&mut got, staged, &mut boxes, &probes, dt, order)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (r, in_place)
        };
        let t3 = gpu.totals();
        assert_eq!(got_r, want_r, "{name}: step reports differ");
        // In place, probes come from their parents' copies on the device
        // (mapped: over the bus) and their interiors stay there.
        let (probe_cells, probe_interiors) = probe_values(&input, &probes);
        let mapped = std::env::var("QUILT_CUDA_TRANSFER").is_ok_and(|v| v == "mapped");
        let value = std::mem::size_of::<T>() as u64;
        // Unmapped, whole output boxes go down: their ghost cells too,
        // holding the sources'.
        let box_ghosts: u64 = external
            .iter()
            .map(|&p| {
                let d = &layout.patches()[p];
                (d.total_cells() - d.interior_cells()) * u64::from(layout.ncomp()) * value
            })
            .sum();
        let (saved_up, saved_down) = match (in_place, mapped) {
            (false, _) => (0, 0),
            (true, false) => (probe_cells * value, probe_interiors * value),
            (true, true) => (0, probe_interiors * value),
        };
        let whole_boxes = in_place && !mapped;
        if whole_boxes {
            for (i, &p) in external.iter().enumerate() {
                ghosts_from(&mut want_boxes[i], &dense[i], &layout.patches()[p]);
            }
        }
        let extra_down = if whole_boxes { box_ghosts } else { 0 };
        assert_eq!(
            t3.bytes_up - t2.bytes_up,
            t1.bytes_up - t0.bytes_up - saved_up,
            "{name}: bytes up"
        );
        assert_eq!(
            t3.bytes_down - t2.bytes_down,
            t1.bytes_down - t0.bytes_down - saved_down + extra_down,
            "{name}: bytes down"
        );
        let (sources, got_boxes) = store.values();
        for (i, &p) in external.iter().enumerate() {
            assert!(
                same_bits(&sources[i], &dense[i]),
                "{name}: source box of descriptor {p} changed"
            );
            assert!(
                same_bits(&got_boxes[i], &want_boxes[i]),
                "{name}: box of descriptor {p} differs from the copy path"
            );
        }
        assert!(same_bits(got.flux(), want.flux()), "{name}: fluxes differ");
        for p in (0..layout.patches().len()).filter(|p| !spoilt.contains(p)) {
            let n = 5 * layout.patches()[p].total_cells() as usize;
            let (mut a, mut b) = (vec![T::zero(); n], vec![T::zero(); n]);
            got.store_patch(p, &mut a).unwrap();
            want.store_patch(p, &mut b).unwrap();
            assert!(same_bits(&a, &b), "{name}: patch {p} in the bins differs");
        }
        // Against the CPU: new interiors, the destination's ghosts as they
        // were or (whole boxes) the source's.
        let (cpu, cpu_r) = cpu_step(scheme, gas, &input, dt, order);
        assert_eq!(got_r, cpu_r, "{name}: report differs from the CPU's");
        for (i, &p) in external.iter().enumerate() {
            let mut v = destination_of(&dense[i]);
            cpu.store_interior(p, &mut v).unwrap();
            if whole_boxes {
                ghosts_from(&mut v, &dense[i], &layout.patches()[p]);
            }
            assert!(
                same_bits(&got_boxes[i], &v),
                "{name}: box of descriptor {p} differs from the CPU (or a ghost changed)"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn external_boxes_give_the_copy_paths_results_bit_for_bit() {
    if !gpu() {
        return;
    }
    for (n, scheme) in [Scheme::rtvd(), Scheme::tvd()].into_iter().enumerate() {
        for memory in [
            BoxMemory::Registered,
            BoxMemory::Vectors,
            BoxMemory::RegisteredPageableBatch,
        ] {
            check_external::<f64>(scheme, 41 + n as u64, memory);
            check_external::<f32>(scheme, 51 + n as u64, memory);
        }
    }
}

/// Restriction outputs of external boxes (the new interior's coarse
/// means and CFL rate): computed by the device where the means are
/// registered, by the host otherwise, and bit for bit what
/// [`Restricted::fill_from_box`] gives on the CPU's new interior.
fn check_restricted<T: GpuReal>(scheme: Scheme, seed: u64) {
    let gas = Gas::ideal(1.4);
    let g = scheme.ghost_width();
    let interiors = [[8, 6, 4], [4, 4, 4], [6, 10, 8], [2, 2, 2], [8, 8, 4]];
    let ratios: [u32; 5] = [2, 2, 2, 2, 4];
    let shapes: Vec<PatchShape> = interiors
        .iter()
        .enumerate()
        .map(|(i, &n)| PatchShape::new(10 + i as u64, n, g, [0.05, 0.05, 0.05]))
        .collect();
    let input = fill::<T>(packed(&shapes), &gas, seed, false);
    let layout = input.layout().clone();
    let external: Vec<usize> = (0..shapes.len()).collect();
    let dense: Vec<Vec<T>> = external
        .iter()
        .map(|&p| {
            let mut v = vec![T::zero(); 5 * layout.patches()[p].total_cells() as usize];
            input.store_patch(p, &mut v).unwrap();
            v
        })
        .collect();
    let cpu = quilt_sweep::Solver::new(scheme, gas).unwrap();
    let dt = cpu.max_dt(&input, 0.8 * cpu.cfl_limit()).unwrap();
    let order = SweepOrder::Zyx;
    let (stepped, _) = cpu_step(scheme, gas, &input, dt, order);
    let zeros: Vec<Vec<T>> = external
        .iter()
        .map(|&p| {
            let n = layout.patches()[p].interior_cells() as usize / ratios[p].pow(3) as usize;
            vec![T::zero(); 5 * n]
        })
        .collect();
    let want: Vec<(Vec<T>, BoxRate)> = external
        .iter()
        .map(|&p| {
            let mut new = destination_of(&dense[p]);
            stepped.store_interior(p, &mut new).unwrap();
            let (mut means, mut rate) = (zeros[p].clone(), BoxRate::Unset);
            Restricted {
                ratio: ratios[p],
                means: &mut means,
                rate: &mut rate,
            }
            .fill_from_box(&layout.patches()[p], 5, &new, &gas)
            .unwrap();
            (means, rate)
        })
        .collect();
    for registered in [true, false] {
        let name = format!(
            "restricted {} {} registered {registered}",
            scheme.name(),
            T::NAME
        );
        let mut gpu = CudaSolver::<T>::new(scheme, gas, CudaConfig::default()).unwrap();
        let reg = gpu.page_lock();
        let mut batch = page_locked_copy(&gpu, &input);
        let mut store = BoxStore::new(&dense, Some(reg.clone()));
        let mut outs = BoxStore::new(&zeros, registered.then(|| reg.clone()));
        let mut rates = vec![BoxRate::Unset; external.len()];
        {
            let mut boxes = store.boxes(&external);
            let means = outs.slices();
            for ((b, m), (rate, &ratio)) in boxes
                .iter_mut()
                .zip(means)
                .zip(rates.iter_mut().zip(&ratios))
            {
                b.restricted = Some(Restricted {
                    ratio,
                    means: m,
                    rate,
                });
            }
            assert!(gpu.external_in_place(&batch, &boxes), "{name}: in place");
            gpu.advance_external(&mut batch, None, &mut boxes, &[], dt, order)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let on_device = gpu.totals().restricted_on_device;
        assert_eq!(on_device, if registered { 5 } else { 0 }, "{name}");
        let (means, _) = outs.values();
        for (p, (m, r)) in want.iter().enumerate() {
            assert!(same_bits(&means[p], m), "{name}: means of patch {p}");
            assert!(matches!(r, BoxRate::Max(v) if *v > 0.0), "{name}: {r:?}");
            assert_eq!(rates[p], *r, "{name}: rate of patch {p}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn restriction_outputs_of_external_boxes_are_the_hosts_bit_for_bit() {
    if !gpu() {
        return;
    }
    check_restricted::<f64>(Scheme::rtvd(), 61);
    check_restricted::<f32>(Scheme::rtvd(), 62);
    check_restricted::<f64>(Scheme::tvd(), 63);
}

/// Bad input in an external box: the copy path's error, no source and no
/// destination ghost cell changed.
fn check_external_errors<T: GpuReal>(scheme: Scheme, seed: u64, memory: BoxMemory) {
    let gas = Gas::ideal(1.4);
    let (input, external, probes, mut dense, dt) = external_case::<T>(scheme, gas, seed);
    let spoilt: Vec<usize> = external
        .iter()
        .copied()
        .chain(probes.iter().map(|p| p.desc))
        .collect();
    let mut gpu = CudaSolver::<T>::new(scheme, gas, CudaConfig::default()).unwrap();
    let reg = gpu.page_lock();
    let registered = memory != BoxMemory::Vectors;
    let batch_of = |gpu: &CudaSolver<T>| {
        let mut b = if memory == BoxMemory::RegisteredPageableBatch {
            input.clone()
        } else {
            page_locked_copy(gpu, &input)
        };
        spoil(&mut b, &spoilt);
        b
    };
    // The copy path's error on the same input.
    let copy_error = |gpu: &mut CudaSolver<T>, dense: &[Vec<T>], dt: f64| {
        let mut b = batch_of(gpu);
        for (v, &p) in dense.iter().zip(&external) {
            b.load_patch(p, v).unwrap();
        }
        load_probes(&mut b, &external, &probes, dense);
        gpu.advance(&mut b, dt, SweepOrder::Xyz)
            .unwrap_err()
            .to_string()
    };
    let run = |gpu: &mut CudaSolver<T>, dense: &[Vec<T>], dt: f64, what: &str| {
        let name = format!("{what}: {} {} {memory:?}", scheme.name(), T::NAME);
        let want = copy_error(gpu, dense, dt);
        let mut store = BoxStore::new(dense, registered.then(|| reg.clone()));
        let mut got_batch = batch_of(gpu);
        let got = {
            let mut boxes = store.boxes(&external);
            gpu.advance_external(
                &mut got_batch,
                None,
                &mut boxes,
                &probes,
                dt,
                SweepOrder::Xyz,
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(got, want, "{name}: errors differ");
        // Sources as they were; destinations' ghost cells as they were or
        // the sources' (whole output boxes go down before the verdict;
        // the interiors may hold the failed step's values).
        let (sources, dst) = store.values();
        let bits = |v: &T| v.as_f64().to_bits();
        for (i, d) in dense.iter().enumerate() {
            assert!(same_bits(&sources[i], d), "{name}: source {i} changed");
            let p = &input.layout().patches()[external[i]];
            let (e, g) = (p.extent.map(|v| v as usize), p.ghost as usize);
            let was = destination_of(d);
            for (at, a) in dst[i].iter().enumerate() {
                assert!(
                    !is_ghost(at, e, g) || bits(a) == bits(&was[at]) || bits(a) == bits(&d[at]),
                    "{name}: ghost value {at} of destination {i} is neither its own nor the source's"
                );
            }
        }
    };
    // A time step above the CFL limit.
    run(&mut gpu, &dense, 4.0 * dt, "CFL");
    // A negative density in an interior cell of one box, a NaN in a ghost
    // cell of another.
    let g = input.layout().patches()[external[1]].ghost as usize;
    let e = input.layout().patches()[external[1]]
        .extent
        .map(|v| v as usize);
    dense[1][(g * e[1] + g) * e[0] + g + 1] = T::from_f64(-1.0);
    let cells = dense[2].len() / 5;
    dense[2][3 * cells + 1] = T::from_f64(f64::NAN);
    run(&mut gpu, &dense, dt, "bad state");
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn bad_external_boxes_give_the_copy_paths_errors_and_sources_stay_unchanged() {
    if !gpu() {
        return;
    }
    for memory in [BoxMemory::Registered, BoxMemory::Vectors] {
        check_external_errors::<f64>(Scheme::rtvd(), 61, memory);
        check_external_errors::<f32>(Scheme::tvd(), 62, memory);
    }
}

/// Page-locked buffers are zeroed whichever way they are allocated; the
/// registry locks, refuses overlaps, unlocks, and when dropped unlocks
/// what is left (the same range can be locked again afterwards).
#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn page_locked_memory_is_zeroed_and_registered_ranges_are_released() {
    if !gpu() {
        return;
    }
    let new = || {
        CudaSolver::<f64>::new(Scheme::default(), Gas::ideal(1.4), CudaConfig::default()).unwrap()
    };
    let solver = new();
    let alloc = solver.host_alloc();
    // Below and above the size from which buffers are mapped by the process.
    for len in [100usize, 3 << 18] {
        let mut m = HostAlloc::<f64>::alloc(&alloc, len).unwrap();
        assert!(m.page_locked());
        assert_eq!(m.as_slice().len(), len);
        assert!(m.as_slice().iter().all(|&v| v == 0.0), "{len}: not zeroed");
        m.as_mut_slice().fill(1.5);
    }
    let reg = solver.page_lock();
    let m = Mapping::new(3 << 20, "registry test").unwrap();
    let p = m.as_ptr();
    // SAFETY (here and below): `m` is a written mapping that outlives
    // every registration; no kernel reads it.
    unsafe { reg.register(p, m.len()) }.unwrap();
    assert!(reg.contains(p, m.len()));
    assert!(reg.contains(p.wrapping_add(4096), 100));
    assert!(!reg.contains(p, m.len() + 1));
    assert_eq!(reg.totals(), (1, m.len()));
    assert!(unsafe { reg.register(p, m.len()) }.is_err(), "locked twice");
    assert!(unsafe { reg.register(p.wrapping_add(4096), 4096) }.is_err());
    assert!(unsafe { reg.unregister(p.wrapping_add(4096)) }.is_err());
    unsafe { reg.unregister(p) }.unwrap();
    assert!(!reg.contains(p, 1));
    assert!(unsafe { reg.unregister(p) }.is_err(), "unlocked twice");
    // Locked again, then left locked when the registry goes.
    unsafe { reg.register(p, m.len()) }.unwrap();
    drop(solver);
    drop(reg);
    let solver = new();
    let reg = solver.page_lock();
    unsafe { reg.register(p, m.len()) }
        .unwrap_or_else(|e| panic!("the dropped registry left the range locked: {e}"));
    unsafe { reg.unregister(p) }.unwrap();
    assert_eq!(reg.totals(), (0, 0));
}
