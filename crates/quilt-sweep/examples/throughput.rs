//! Prints cell updates per second for every scheme and precision on the
//! synthetic batch of the `sweep` bench (420 patches by default), on one
//! thread and on all threads:
//!
//! ```text
//! cargo run --release -p quilt-sweep --example throughput -- [STEPS] [SCHEME...]
//! ```

use std::time::Instant;

use quilt_sweep::physics::Gas;
use quilt_sweep::{Real, Scheme, Solver, SweepOrder, Workspace};

#[path = "../benches/synthetic.rs"]
mod synthetic;

/// User + system CPU seconds of this process (Linux `/proc/self/stat`), so
/// that one-thread rates stay meaningful on a shared, loaded machine.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn measure<T: Real>(scheme: Scheme, steps: u64) {
    let gas = Gas::ideal(1.4);
    let solver = Solver::new(scheme, gas).expect("solver");
    let mut batch = synthetic::synthetic::<T>(synthetic::patches(), solver.ghost_width(), &gas);
    let dt = 0.5 * solver.max_dt(&batch, 0.5 * solver.cfl_limit()).expect("dt");
    let cells = batch.layout().interior_cells();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let mut ws = Workspace::new();
    let mut rates = Vec::new();
    for pool in [Some(&one), None] {
        let mut run = || {
            let t = Instant::now();
            let c = cpu_seconds();
            for s in 0..steps {
                solver
                    .advance(&mut batch, dt, SweepOrder::for_step(s), &mut ws)
                    .expect("step");
            }
            let wall = t.elapsed().as_secs_f64();
            // One thread: CPU time (robust to other load); all threads: wall.
            match (pool.is_some(), c, cpu_seconds()) {
                (true, Some(a), Some(b)) if b > a => b - a,
                _ => wall,
            }
        };
        let secs = match pool {
            Some(p) => p.install(run),
            None => run(),
        };
        rates.push(cells as f64 * steps as f64 / secs);
    }
    println!(
        "| {:>4} | {} | {:>9} | {:>5.1}% | {:>10.3e} | {:>10.3e} ({} threads) |",
        scheme.name(),
        T::NAME,
        cells,
        100.0 * batch.layout().fill_ratio(),
        rates[0],
        rates[1],
        rayon::current_num_threads()
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let steps: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let names: Vec<String> = args.collect();
    println!(
        "| scheme | prec | interior cells | bin fill | cell updates/s, 1 thread (CPU time) | all threads (wall) |"
    );
    println!("|---|---|---|---|---|---|");
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        if !names.is_empty() && !names.iter().any(|n| n == scheme.name()) {
            continue;
        }
        measure::<f32>(scheme, steps);
        measure::<f64>(scheme, steps);
    }
}
