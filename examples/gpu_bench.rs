//! GPU solver benchmark on the paper's synthetic hierarchies (Raghavan &
//! Vadhiyar 2015, sec. 4.1: 120..420 patches, 5 seeds, 64^3 bins): solver
//! time per step of the default scheme (one block per patch, one patch per
//! bin) against packed bins and the kernel optimisations, as the ratios of
//! the paper's Figure 10 / Table 5, with in-kernel cell updates per second,
//! achieved DRAM bandwidth against the measured device copy bandwidth, the
//! pinned host-device bandwidth, and the cost and error of the FMA fast
//! path.
//!
//! ```text
//! cargo run --release --example gpu_bench -- --patches 120,420 --seeds 2 --steps 5
//! ```
//!
//! With `--traces`, the same configurations are also timed on recorded
//! hierarchies (the paper's real-application traces, Tables 5–7): each
//! hierarchy file written by `euler_sphere` is timed with the scheme whose
//! ghost width it was recorded with, filled with the same synthetic state.
//!
//! Solver time is kernel time on a resident batch (scan + sweeps, CUDA
//! events, median over the timed steps, mean over seeds); the end-to-end
//! `advance` with transfers is timed once per hierarchy size. After the
//! kernel tables, one row per precision times the whole step of an AMR
//! hierarchy kept on the device (fill, probes, sweeps, reflux,
//! restriction, the CFL scan and the regrids among the steps): the
//! default sphere deck unless `--resident-deck` names another.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use quilt::cuda::{
    CudaConfig, CudaSolver, GpuReal, Variant, measure_bandwidth, probe_device, step_traffic,
};
use quilt::integrator::deck::{BackendChoice, Deck, Precision, Residency};
use quilt::integrator::{Integrator, SolveBackend, backend_for};
use quilt::mesh::synthetic::{SyntheticSpec, generate};
use quilt::mesh::{Hierarchy, SizeLimits, read_hierarchy_with};
use quilt::sweep::physics::{Gas, Primitive};
use quilt::sweep::{Batch, BatchLayout, PatchShape, Real, Scheme, SweepOrder};

#[derive(Debug, Parser)]
#[command(about = "GPU solver benchmark on synthetic AMR hierarchies")]
struct Args {
    /// Patch counts of the synthetic hierarchies.
    #[arg(long, value_delimiter = ',', default_value = "120,180,240,300,360,420")]
    patches: Vec<usize>,
    /// Seeds per patch count (1..=seeds).
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// Timed steps per configuration (after one warm-up step).
    #[arg(long, default_value_t = 5)]
    steps: usize,
    /// Schemes (rtvd, tvd, waf).
    #[arg(long, value_delimiter = ',', default_value = "rtvd,tvd,waf")]
    schemes: Vec<String>,
    /// Precisions (f32, f64).
    #[arg(long, value_delimiter = ',', default_value = "f32,f64")]
    precisions: Vec<String>,
    /// Write every measurement to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Only these configurations (table column names, e.g. `+kopt`); the
    /// others are printed as NaN. For profiling runs.
    #[arg(long, value_delimiter = ',')]
    configs: Vec<String>,
    /// Skip the end-to-end advance() timing and the FMA comparison.
    #[arg(long)]
    kernels_only: bool,
    /// Deck of the device-resident whole-step row (default: the default
    /// sphere deck).
    #[arg(long)]
    resident_deck: Option<PathBuf>,
    /// Steps timed in the device-resident whole-step row, after the first
    /// (which loads the state); 0 skips the row.
    #[arg(long, default_value_t = 8)]
    resident_steps: u64,
    /// Hierarchy files (written by `euler_sphere` at its regrids) to time
    /// as well, each with the schemes of its recorded ghost width.
    #[arg(long, value_delimiter = ',')]
    traces: Vec<PathBuf>,
}

/// The configurations of one table row, in column order: the default
/// scheme (one patch per bin), then packed bins with more and more of the
/// kernel optimisations, the fused launches, and the FMA fast path.
fn configs() -> Vec<(&'static str, CudaConfig, bool)> {
    let one = |v| CudaConfig {
        chunks: 1,
        ..CudaConfig::variant(v)
    };
    let fused = |v| CudaConfig {
        fused: true,
        ..one(v)
    };
    vec![
        ("default", CudaConfig::variant(Variant::Default), false),
        ("packed", one(Variant::Packed), true),
        ("+warp", one(Variant::PackedWarp), true),
        ("+kopt", one(Variant::PackedOpt), true),
        ("+march", one(Variant::PackedMarch), true),
        (
            "kopt4",
            CudaConfig {
                march_blocks: Some(4),
                ..one(Variant::PackedOpt)
            },
            true,
        ),
        ("kopt-f", fused(Variant::PackedOpt), true),
        ("march-f", fused(Variant::PackedMarch), true),
        (
            "fma",
            CudaConfig {
                fma: true,
                ..one(Variant::PackedOpt)
            },
            true,
        ),
        (
            "fast",
            CudaConfig {
                fma: true,
                fast_f32: true,
                ..one(Variant::PackedOpt)
            },
            true,
        ),
    ]
}

/// The `hierarchy` of rows and CSV lines of the synthetic hierarchies.
const SYNTHETIC: &str = "synthetic";

/// Columns of [`configs`] that are packed variants without FMA (the best of
/// them is "packed + kernel optimisations"): bitwise the CPU reference.
const PACKED: std::ops::Range<usize> = 1..8;
/// FMA contraction alone, and with approximate f32 division and square root
/// (in f64 the same kernels as "fma").
const FMA: usize = 8;
const FAST: usize = 9;

/// Patch shapes of a synthetic hierarchy with `ghost` ghost layers.
fn hierarchy_shapes(patches: usize, seed: u64, ghost: u32) -> anyhow::Result<Vec<PatchShape>> {
    let h = generate(&SyntheticSpec {
        patches,
        seed,
        ghost: ghost as i32,
        ..Default::default()
    })
    .context("synthetic hierarchy")?;
    shapes_of(&h, ghost)
}

/// The descriptor shapes of `h`'s patches with `ghost` ghost layers.
fn shapes_of(h: &Hierarchy, ghost: u32) -> anyhow::Result<Vec<PatchShape>> {
    let geom = h.geometry();
    h.patches()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = p.interior().size();
            let dx = geom.level(p.level())?.dx;
            Ok(PatchShape {
                id: u64::from(p.id().0),
                extent: [s.x, s.y, s.z].map(|v| (v + 2 * ghost as i32) as u32),
                ghost,
                level: p.level() as u32,
                dx: [dx.x, dx.y, dx.z],
                user: i as u32,
            })
        })
        .collect()
}

/// A recorded hierarchy: its name (the file's stem) and patches.
struct Trace {
    name: String,
    h: Hierarchy,
}

fn read_traces(paths: &[PathBuf]) -> anyhow::Result<Vec<Trace>> {
    // Any patch size: the bins' edge is checked when the layout is made.
    let limits = SizeLimits { min: 1, max: 1024 };
    paths
        .iter()
        .map(|path| {
            let h = read_hierarchy_with(path, limits)
                .with_context(|| format!("reading the trace {}", path.display()))?;
            let name = path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            Ok(Trace { name, h })
        })
        .collect()
}

fn packed_layout(shapes: &[PatchShape]) -> anyhow::Result<BatchLayout> {
    let items: Vec<[u32; 3]> = shapes.iter().map(|s| s.extent).collect();
    let p = quilt::pack::pack(&items, [64; 3], &quilt::pack::PackOptions::default())
        .context("packing")?;
    let pl: Vec<(u32, [u32; 3])> = p
        .placements
        .iter()
        .map(|x| (x.bin as u32, x.offset))
        .collect();
    Ok(BatchLayout::packed(64, 5, shapes, &pl)?)
}

/// A smooth moving state in every cell of every patch (ghosts included),
/// computed on all host cores.
fn fill<T: Real>(layout: BatchLayout, gas: &Gas) -> anyhow::Result<Batch<T>> {
    let mut batch = Batch::<T>::new(layout);
    let descs = batch.layout().patches().to_vec();
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let dense: Vec<Vec<T>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let descs = &descs;
                s.spawn(move || {
                    (t..descs.len())
                        .step_by(threads)
                        .map(|p| {
                            let e = descs[p].extent.map(|v| v as usize);
                            let cells = e[0] * e[1] * e[2];
                            let mut d = vec![T::zero(); 5 * cells];
                            for k in 0..e[2] {
                                for j in 0..e[1] {
                                    for i in 0..e[0] {
                                        let x = [i, j, k].map(|v| v as f64 / 16.0 + p as f64);
                                        let w = Primitive {
                                            rho: 1.0 + 0.2 * (x[0] + 0.5 * x[1]).sin(),
                                            vel: [0.3 * x[2].cos(), 0.2, -0.1 * x[0].sin()],
                                            p: 1.0 + 0.1 * (x[1] - x[2]).cos(),
                                        };
                                        let u = w.to_conserved(gas);
                                        let at = (k * e[1] + j) * e[0] + i;
                                        for c in 0..5 {
                                            d[c * cells + at] = T::from_f64(u[c]);
                                        }
                                    }
                                }
                            }
                            (p, d)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<(usize, Vec<T>)> = hs
            .into_iter()
            .flat_map(|h| h.join().expect("fill thread"))
            .collect();
        all.sort_by_key(|x| x.0);
        all.into_iter().map(|x| x.1).collect()
    });
    for (p, d) in dense.iter().enumerate() {
        batch.load_patch(p, d)?;
    }
    Ok(batch)
}

/// The same patches (ghosts included) in another layout of the same shapes.
fn repack<T: Real>(src: &Batch<T>, layout: BatchLayout) -> anyhow::Result<Batch<T>> {
    let mut dst = Batch::<T>::new(layout);
    let mut buf = Vec::new();
    for (p, d) in src.layout().patches().iter().enumerate() {
        buf.resize(5 * d.total_cells() as usize, T::zero());
        src.store_patch(p, &mut buf)?;
        dst.load_patch(p, &buf)?;
    }
    Ok(dst)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Componentwise relative difference (max |a-b| / max |b| per component).
fn rel_diff<T: Real>(a: &[T], b: &[T]) -> f64 {
    let block = 64usize.pow(3);
    let mut m = [0.0f64; 5];
    let mut d = [0.0f64; 5];
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let c = (i / block) % 5;
        m[c] = m[c].max(y.as_f64().abs());
        d[c] = d[c].max((x.as_f64() - y.as_f64()).abs());
    }
    (0..5)
        .map(|c| if m[c] > 0.0 { d[c] / m[c] } else { d[c] })
        .fold(0.0, f64::max)
}

/// One measurement: a configuration on one hierarchy.
#[derive(Clone, Debug, Default)]
struct Run {
    solver_ms: f64,
    scan_ms: f64,
    cells: u64,
}

/// Times `steps` resident steps (after a warm-up) of `gpu` on `batch`.
fn time_resident<T: GpuReal>(
    gpu: &mut CudaSolver<T>,
    batch: &Batch<T>,
    dt: f64,
    steps: usize,
) -> anyhow::Result<Run> {
    gpu.upload(batch)?;
    gpu.step_resident(dt, SweepOrder::Xyz)?;
    let mut solver = Vec::new();
    let mut scan = Vec::new();
    let mut cells = 0;
    for s in 0..steps {
        let r = gpu.step_resident(dt, SweepOrder::for_step(s as u64 + 1))?;
        let t = gpu.last_timing();
        solver.push(t.scan_ms + t.sweep_ms);
        scan.push(t.scan_ms);
        cells = r.cells;
    }
    Ok(Run {
        solver_ms: median(solver),
        scan_ms: median(scan),
        cells,
    })
}

#[derive(Default)]
struct Row {
    patches: usize,
    /// [`SYNTHETIC`] or the trace's name.
    hierarchy: String,
    bins: f64,
    fill: f64,
    cells: f64,
    ms: Vec<f64>,
    traffic: f64,
    fma_diff: f64,
    fast_diff: f64,
}

impl Row {
    /// The fastest bitwise packed configuration's time per step (ms).
    fn best_ms(&self) -> f64 {
        self.ms[PACKED]
            .iter()
            .copied()
            .filter(|m| m.is_finite())
            .fold(f64::INFINITY, f64::min)
    }
}

/// Times every configuration of `cfgs` on the patches `shapes` (filled
/// with the synthetic state), adding each time divided by `share` into
/// `row` and a CSV line per configuration (`hierarchy`: the hierarchy's
/// name, `seed`: 0 for a trace).
#[allow(clippy::too_many_arguments)]
fn time_hierarchy<T: GpuReal>(
    args: &Args,
    scheme: Scheme,
    solvers: &mut [CudaSolver<T>],
    shapes: &[PatchShape],
    (hierarchy, seed): (&str, u64),
    share: f64,
    row: &mut Row,
    csv: &mut Vec<String>,
) -> anyhow::Result<()> {
    let gas = Gas::ideal(1.4);
    let cfgs = configs();
    let n = shapes.len();
    let packed = packed_layout(shapes)?;
    let slots = BatchLayout::one_per_slot(64, 5, shapes)?;
    row.bins += f64::from(packed.nbins()) / share;
    row.fill += packed.fill_ratio() / share;
    let bp = fill::<T>(packed, &gas)?;
    let bs = repack(&bp, slots)?;
    let dt = solvers[1].cpu().max_dt(&bp, 0.5 * scheme.cfl_limit())?;
    let traffic = step_traffic(bp.layout(), &scheme, std::mem::size_of::<T>() as u64);
    row.traffic += traffic as f64 / share;
    for (i, (name, _, packed_layout)) in cfgs.iter().enumerate() {
        if !args.configs.is_empty() && !args.configs.iter().any(|c| c == name) {
            row.ms[i] = f64::NAN;
            continue;
        }
        let batch = if *packed_layout { &bp } else { &bs };
        let run = time_resident(&mut solvers[i], batch, dt, args.steps).with_context(|| {
            format!(
                "{} {} {name}, {hierarchy} ({n} patches), seed {seed}",
                scheme.name(),
                T::NAME
            )
        })?;
        row.ms[i] += run.solver_ms / share;
        row.cells = run.cells as f64 / 1e6;
        csv.push(format!(
            "{},{},{n},{seed},{name},{:.4},{:.4},{},{},{:.1},{hierarchy}",
            scheme.name(),
            T::NAME,
            run.solver_ms,
            run.scan_ms,
            run.cells,
            traffic,
            traffic as f64 / run.solver_ms / 1e6
        ));
    }
    if seed == 1 && !args.kernels_only {
        // The fast paths: one step from the same input with and without
        // them (without is bitwise the CPU reference).
        let k = cfgs.iter().position(|c| c.0 == "+kopt").expect("kopt");
        let mut a = bp.clone();
        solvers[k].advance(&mut a, dt, SweepOrder::Xyz)?;
        for (f, diff) in [(FMA, &mut row.fma_diff), (FAST, &mut row.fast_diff)] {
            let mut b = bp.clone();
            solvers[f].advance(&mut b, dt, SweepOrder::Xyz)?;
            *diff = rel_diff(b.data(), a.data());
        }
    }
    Ok(())
}

/// The rows of one scheme and precision: the synthetic hierarchies of
/// every size (means over the seeds), then each trace recorded with the
/// scheme's ghost width.
fn bench<T: GpuReal>(
    args: &Args,
    scheme: Scheme,
    traces: &[Trace],
    copy_gbs: f64,
    csv: &mut Vec<String>,
) -> anyhow::Result<Vec<Row>> {
    let gas = Gas::ideal(1.4);
    let g = scheme.ghost_width();
    let cfgs = configs();
    let mut solvers = cfgs
        .iter()
        .map(|(_, c, _)| CudaSolver::<T>::new(scheme, gas, *c))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rows = Vec::new();
    let mut hierarchies: Vec<(String, Vec<Vec<PatchShape>>)> = Vec::new();
    for &n in &args.patches {
        let seeds = (1..=args.seeds)
            .map(|seed| hierarchy_shapes(n, seed, g))
            .collect::<anyhow::Result<_>>()?;
        hierarchies.push((SYNTHETIC.to_string(), seeds));
    }
    for t in traces.iter().filter(|t| t.h.ghost() == g as i32) {
        hierarchies.push((t.name.clone(), vec![shapes_of(&t.h, g)?]));
    }
    for (hierarchy, seeds) in hierarchies {
        let mut row = Row {
            patches: seeds[0].len(),
            hierarchy: hierarchy.clone(),
            ms: vec![0.0; cfgs.len()],
            ..Default::default()
        };
        let share = seeds.len() as f64;
        let trace = hierarchy != SYNTHETIC;
        for (k, shapes) in seeds.iter().enumerate() {
            let seed = if trace { 0 } else { k as u64 + 1 };
            time_hierarchy(
                args,
                scheme,
                &mut solvers,
                shapes,
                (&hierarchy, seed),
                share,
                &mut row,
                csv,
            )?;
        }
        let n = row.patches;
        let best = row.best_ms();
        eprintln!(
            "{} {} {} {n} patches: default {:.3} ms, packed {:.3}, best {:.3} ms; {:.2e} cells/s; {:.0} GB/s ({:.0}% of copy)",
            scheme.name(),
            T::NAME,
            row.hierarchy,
            row.ms[0],
            row.ms[1],
            best,
            row.cells * 1e6 / (best * 1e-3),
            row.traffic / (best * 1e-3) / 1e9,
            100.0 * row.traffic / (best * 1e-3) / 1e9 / copy_gbs
        );
        rows.push(row);
    }
    // End-to-end advance with transfers on the largest set (seed 1).
    if let Some(&n) = args.patches.iter().max().filter(|_| !args.kernels_only) {
        let shapes = hierarchy_shapes(n, 1, g)?;
        let mut batch = fill::<T>(packed_layout(&shapes)?, &gas)?;
        let mut gpu = CudaSolver::<T>::new(scheme, gas, CudaConfig::default())?;
        let dt = gpu.cpu().max_dt(&batch, 0.5 * scheme.cfl_limit())?;
        let mut walls = Vec::new();
        let mut last = Default::default();
        for s in 0..4u64 {
            let t = Instant::now();
            gpu.advance(&mut batch, dt, SweepOrder::for_step(s))?;
            walls.push(t.elapsed().as_secs_f64() * 1e3);
            last = gpu.last_timing();
        }
        walls.remove(0);
        let t: quilt::cuda::StepTiming = last;
        println!(
            "{} {} advance() with transfers, {n} patches, 4 chunks on 4 streams: {:.2} ms per step (GPU span {:.2} ms: upload {:.2}, scan {:.2}, sweeps {:.2}, download {:.2}; host copies {:.2} ms)",
            scheme.name(),
            T::NAME,
            median(walls),
            t.total_ms,
            t.upload_ms,
            t.scan_ms,
            t.sweep_ms,
            t.download_ms,
            t.host_ms
        );
    }
    for (k, info) in solvers[4].kernel_info().iter().enumerate() {
        if k == 0 {
            println!(
                "  kernels ({} {}): name, registers, local bytes, shared bytes, blocks/SM",
                scheme.name(),
                T::NAME
            );
        }
        println!(
            "    {:<22} {:>4} {:>5} {:>6} {:>3}",
            info.name, info.registers, info.local_bytes, info.shared_bytes, info.blocks_per_sm
        );
    }
    Ok(rows)
}

fn print_table(scheme: Scheme, prec: &str, rows: &[Row], copy_gbs: f64) {
    println!();
    println!(
        "{} {prec}: solver time per step (ms, kernels on a resident batch, mean over seeds of the median of steps)",
        scheme.name().to_uppercase()
    );
    let names: Vec<String> = configs().iter().map(|c| format!("{:>8}", c.0)).collect();
    println!(
        "hierarchy   patches  bins  fill  Mcells |{} | LB x  LB+K x | Gcell/s   GB/s  %copy | fast: Gcell/s   GB/s  %copy | rel diff: fma    fast",
        names.join("")
    );
    for r in rows {
        let best = r.best_ms();
        let gbs = r.traffic / (best * 1e-3) / 1e9;
        let fast = r.ms[FAST];
        let fast_gbs = r.traffic / (fast * 1e-3) / 1e9;
        let ms: Vec<String> =
            r.ms.iter()
                .map(|m| {
                    if m.is_finite() {
                        format!("{m:>8.3}")
                    } else {
                        format!("{:>8}", "-")
                    }
                })
                .collect();
        println!(
            "{:<11} {:>7} {:>5.1} {:>5.2} {:>7.2} |{} | {:>4.2} {:>6.2} | {:>7.2} {:>6.0} {:>5.1} |       {:>7.2} {:>6.0} {:>5.1} |      {:.1e} {:.1e}",
            r.hierarchy,
            r.patches,
            r.bins,
            r.fill,
            r.cells,
            ms.join(""),
            r.ms[0] / r.ms[1],
            r.ms[0] / best,
            r.cells * 1e6 / (best * 1e-3) / 1e9,
            gbs,
            100.0 * gbs / copy_gbs,
            r.cells * 1e6 / (fast * 1e-3) / 1e9,
            fast_gbs,
            100.0 * fast_gbs / copy_gbs,
            r.fma_diff,
            r.fast_diff
        );
    }
    let synthetic = synthetic_rows(rows);
    let lb = mean(synthetic.iter().map(|r| r.ms[0] / r.ms[1]));
    let all = mean(synthetic.iter().map(|r| r.ms[0] / r.best_ms()));
    println!(
        "mean speedup over the default scheme: packed {lb:.2}x, packed + kernel optimisations {all:.2}x"
    );
    for r in rows.iter().filter(|r| r.hierarchy != SYNTHETIC) {
        println!(
            "trace {}: packed {:.2}x, packed + kernel optimisations {:.2}x the default scheme",
            r.hierarchy,
            r.ms[0] / r.ms[1],
            r.ms[0] / r.best_ms()
        );
    }
}

/// The rows of the synthetic hierarchies (the paper's averaged figures).
fn synthetic_rows(rows: &[Row]) -> Vec<&Row> {
    rows.iter().filter(|r| r.hierarchy == SYNTHETIC).collect()
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    sum / n.max(1) as f64
}

fn main() -> std::process::ExitCode {
    quilt::integrator::cli::exit_status(run_main().map(|()| std::process::ExitCode::SUCCESS))
}

fn run_main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    if args.patches.is_empty() || args.seeds == 0 || args.steps == 0 {
        bail!("--patches, --seeds and --steps must be non-empty / positive");
    }
    // A bad trace is an error before any GPU work.
    let traces = read_traces(&args.traces)?;
    let info = probe_device(args.device).context("no usable CUDA device")?;
    println!("device: {info}");
    let schemes: Vec<Scheme> = args
        .schemes
        .iter()
        .map(|s| Scheme::from_names(s, None))
        .collect::<Result<_, _>>()?;
    for t in &traces {
        if !schemes
            .iter()
            .any(|s| s.ghost_width() as i32 == t.h.ghost())
        {
            println!(
                "trace {} was recorded with {} ghost layers, which no scheme of --schemes has: not timed",
                t.name,
                t.h.ghost()
            );
        }
    }
    for p in &args.precisions {
        if p != "f32" && p != "f64" {
            bail!("unknown precision `{p}` (expected f32, f64)");
        }
    }
    let t = Instant::now();
    quilt::cuda::precompile(args.device, &schemes, &[false, true])?;
    println!(
        "kernels compiled in {:.1} s (NVRTC, {} files x 2 FMA modes, in parallel)",
        t.elapsed().as_secs_f64(),
        schemes.len()
    );
    let bw = measure_bandwidth(args.device, 1 << 30, 256 << 20, 9)?;
    println!(
        "bandwidth: device copy {:.0} GB/s (read + write), pinned host->device {:.1} GB/s, device->host {:.1} GB/s",
        bw.device_copy, bw.host_to_device, bw.device_to_host
    );
    let mut csv = vec![
        "scheme,precision,patches,seed,config,solver_ms,scan_ms,cells,traffic_bytes,gbs,hierarchy"
            .to_string(),
    ];
    let mut tables = Vec::new();
    for &scheme in &schemes {
        for p in &args.precisions {
            let rows = if p == "f32" {
                bench::<f32>(&args, scheme, &traces, bw.device_copy, &mut csv)?
            } else {
                bench::<f64>(&args, scheme, &traces, bw.device_copy, &mut csv)?
            };
            // Each table as soon as it is complete, and the CSV so far: a
            // run cut short keeps what it measured.
            print_table(scheme, p, &rows, bw.device_copy);
            if let Some(path) = &args.csv {
                std::fs::write(path, csv.join("\n") + "\n")
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            tables.push((scheme, p.clone(), rows));
        }
    }
    if args.resident_steps > 0 {
        println!();
        for p in &args.precisions {
            let row = if p == "f32" {
                resident_row::<f32>(&args, Precision::F32)?
            } else {
                resident_row::<f64>(&args, Precision::F64)?
            };
            println!("{row}");
        }
    }
    // The goals of the issue.
    println!();
    for (scheme, p, rows) in &tables {
        let lb = mean(synthetic_rows(rows).iter().map(|r| r.ms[0] / r.ms[1]));
        println!(
            "goal packed >= 1.5x default ({} {p}): {:.2}x -> {}",
            scheme.name(),
            lb,
            if lb >= 1.5 { "met" } else { "NOT met" }
        );
        if scheme.name() == "rtvd"
            && p == "f32"
            && let Some(r) = synthetic_rows(rows).into_iter().find(|r| r.patches == 420)
        {
            let best = r.best_ms();
            for (what, ms) in [("bitwise", best), ("fast", r.ms[FAST])] {
                let cps = r.cells * 1e6 / (ms * 1e-3);
                let frac = r.traffic / (ms * 1e-3) / 1e9 / bw.device_copy;
                println!(
                    "goal RTVD f32 420 patches ({what}) >= 5e9 cell updates/s: {cps:.2e} -> {}; >= 50% of copy bandwidth: {:.1}% -> {}",
                    if cps >= 5e9 { "met" } else { "NOT met" },
                    100.0 * frac,
                    if frac >= 0.5 { "met" } else { "NOT met" }
                );
            }
        }
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, csv.join("\n") + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// The whole step of a hierarchy kept on the device, as the integrator
/// runs it.
struct ResidentRow {
    deck: String,
    precision: &'static str,
    patches: usize,
    cells: u64,
    steps: u64,
    secs: f64,
    regrid_secs: f64,
    first_secs: f64,
    updates: u64,
    /// Fill, refluxing and restriction's share of the steps' device time.
    amr_share: f64,
}

impl std::fmt::Display for ResidentRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "resident whole step ({}, {}): {} patches, {:.2} M cells at the end; {:.2} ms per step over {} steps ({:.2} ms without regrids), {:.3e} cell updates/s; first step (the load) {:.1} ms; fill, refluxing and restriction {:.1} % of the steps' device time",
            self.deck,
            self.precision,
            self.patches,
            self.cells as f64 / 1e6,
            1e3 * self.secs / self.steps as f64,
            self.steps,
            1e3 * (self.secs - self.regrid_secs) / self.steps as f64,
            self.updates as f64 / self.secs,
            1e3 * self.first_secs,
            100.0 * self.amr_share
        )
    }
}

/// Runs the resident deck in precision `T`: one step to load the state,
/// then `--resident-steps` timed steps (regrids included, as the deck
/// schedules them).
fn resident_row<T: quilt::integrator::Real>(
    args: &Args,
    precision: Precision,
) -> anyhow::Result<ResidentRow> {
    let (mut deck, name) = match &args.resident_deck {
        Some(path) => (
            Deck::from_file(path)?,
            path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
        ),
        None => (Deck::default(), "default sphere deck".to_string()),
    };
    deck.run.precision = precision;
    deck.run.backend = BackendChoice::Cuda;
    deck.run.residency = Residency::Device;
    deck.run.max_steps = 0;
    let backend: Box<dyn SolveBackend<T>> = backend_for(&deck)?;
    let mut it = Integrator::new(&deck, backend)?;
    let t = Instant::now();
    it.step()?;
    let first_secs = t.elapsed().as_secs_f64();
    let (mut secs, mut regrid_secs, mut updates, mut steps) = (0.0, 0.0, 0, 0);
    while steps < args.resident_steps && !it.finished() {
        steps += 1;
        let t = Instant::now();
        let info = it.step()?;
        secs += t.elapsed().as_secs_f64();
        regrid_secs += info.phases.regrid;
        updates += info.cells;
    }
    let h = it.hierarchy();
    Ok(ResidentRow {
        deck: name,
        precision: if precision == Precision::F32 {
            "f32"
        } else {
            "f64"
        },
        patches: h.num_patches(),
        cells: h.total_cells() as u64,
        steps: steps.max(1),
        secs,
        regrid_secs,
        first_secs,
        updates,
        amr_share: it
            .backend()
            .solve_totals()
            .map_or(0.0, |g| g.resident_secs.amr_share()),
    })
}
