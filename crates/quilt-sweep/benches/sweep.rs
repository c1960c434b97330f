//! Cell updates per second per scheme and precision on a synthetic batch of
//! 420 patches (extents uniform in [16, 64] per axis, ghosts included,
//! bin-packed into 64^3 bins), the workload of Raghavan & Vadhiyar (2015)
//! sec. 4.1.
//!
//! `per_core/*` runs on a one-thread rayon pool (the per-core figure of the
//! performance table), `all_cores/*` on the global pool. Throughput is in
//! interior cells advanced by one full step. `QUILT_BENCH_PATCHES` overrides
//! the patch count (e.g. on machines with little memory: the f64 TVD batch of
//! 420 patches needs about 5 GB).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use quilt_sweep::physics::Gas;
use quilt_sweep::{Real, Scheme, Solver, SweepOrder, Workspace};

#[path = "synthetic.rs"]
mod synthetic;
use synthetic::{patches, synthetic};

/// Whether a criterion name filter on the command line selects any
/// benchmark of this scheme and precision (building a 420-patch batch that
/// will not be measured takes long and, for f64 TVD, about 5 GB).
fn selected(group: &str, scheme: Scheme, prec: &str) -> bool {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    filter.is_none_or(|f| {
        ["per_core", "all_cores"]
            .iter()
            .any(|l| format!("{group}/{l}/{}/{prec}", scheme.name()).contains(&f))
    })
}

fn bench_scheme<T: Real>(c: &mut Criterion, scheme: Scheme) {
    let group_name = format!("sweep_{}_patches", patches());
    if !selected(&group_name, scheme, T::NAME) {
        return;
    }
    let gas = Gas::ideal(1.4);
    let solver = Solver::new(scheme, gas).expect("solver");
    let n = patches();
    let batch = synthetic::<T>(n, solver.ghost_width(), &gas);
    let cells = batch.layout().interior_cells();
    let dt = 0.5 * solver.max_dt(&batch, 0.5 * solver.cfl_limit()).expect("dt");
    eprintln!(
        "{} {}: {n} patches, {} bins (fill {:.1}%), {cells} interior cells",
        scheme.name(),
        T::NAME,
        batch.layout().nbins(),
        100.0 * batch.layout().fill_ratio()
    );
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(cells));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(1));
    group.measurement_time(Duration::from_secs(1));
    for (label, pool) in [("per_core", Some(&one)), ("all_cores", None)] {
        let mut b = batch.clone();
        let mut ws = Workspace::new();
        let mut step = 0u64;
        group.bench_function(format!("{label}/{}/{}", scheme.name(), T::NAME), |bench| {
            bench.iter(|| {
                // Ghost cells go stale between iterations but stay valid
                // states, so the batch can be stepped repeatedly.
                let mut go = || {
                    solver
                        .advance(&mut b, dt, SweepOrder::for_step(step), &mut ws)
                        .expect("step")
                };
                let r = match pool {
                    Some(p) => p.install(go),
                    None => go(),
                };
                step += 1;
                black_box(r)
            })
        });
    }
    group.finish();
}

fn sweeps(c: &mut Criterion) {
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        bench_scheme::<f32>(c, scheme);
        bench_scheme::<f64>(c, scheme);
    }
}

criterion_group!(benches, sweeps);
criterion_main!(benches);
