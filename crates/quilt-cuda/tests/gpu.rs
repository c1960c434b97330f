//! GPU against CPU: every scheme, precision, variant and sweep order on
//! synthetic batches and on Riemann problems. Needs a CUDA GPU: run on the
//! GPU machine with `--ignored` (scripts/gpu-check.sh). With FMA contraction
//! off the GPU must reproduce quilt-sweep bit for bit (far inside the
//! required 1e-12 in f64 and 1e-5 in f32).

mod common;

use common::*;
use quilt_cuda::{CudaConfig, CudaError, CudaSolver, GpuReal, Variant};
use quilt_sweep::exact::{ExactRiemann, State1d};
use quilt_sweep::physics::{Gas, Primitive};
use quilt_sweep::uniform::{Boundary, UniformGrid, even_cuts};
use quilt_sweep::{Batch, HostAlloc, Real, Scheme, SweepError, SweepOrder, Workspace};

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

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn floors_act_and_are_counted_as_on_the_cpu() {
    if !gpu() {
        return;
    }
    // Floors just under the initial state of the expanding flows: every
    // scheme's outflow drops below them.
    let gas = Gas {
        gamma: 1.4,
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
