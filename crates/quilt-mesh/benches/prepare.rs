//! Prepare throughput (goal: >= 1e8 cells/s per core): interior copy plus
//! ghost fill of every patch of a 420-patch synthetic hierarchy (paper
//! section 4.1; 5 components), single thread, straight into bins of a
//! batch buffer in quilt-sweep's layout (bin edge 64). Cells counted are
//! those of the ghost-grown boxes, i.e. every value the solver reads.
//!
//! Also measured, as reference points: ghost fill alone into the patches'
//! own arrays (throughput in ghost cells), and one flat copy of the same
//! values per patch (the memory-bandwidth floor). Times are on-CPU time of
//! the benchmark thread, so that other processes on a shared machine do
//! not count (their use of caches and memory bandwidth still does).
//!
//! Run: `cargo bench -p quilt-mesh --bench prepare`. The example
//! `prepare_table` measures the same prepare for 120, 240 and 420 patches
//! as a standalone binary for unloaded machines (docs/quilt-mesh-fill.md).

use std::hint::black_box;
use std::time::Duration;

#[path = "common/prepare_field.rs"]
mod prepare_field;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prepare_field::{NCOMP, old_data};
use quilt_mesh::fill::{BoundaryConditions, FillScratch, FillTarget, GhostFill, PhysicalBc};
use quilt_mesh::interp::Limiter;
use quilt_mesh::{Hierarchy, PatchData, Real, SyntheticSpec, generate};

const BIN: usize = 64;
/// Bins the patches rotate through: more than the last-level cache holds,
/// as a real batch buffer would be.
const NBINS: usize = 8;

/// Nanoseconds this thread has run on a CPU (Linux `schedstat`), so that a
/// measurement on a shared, loaded machine counts only this thread's work.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `iters` calls of `f`, timed in on-CPU time (wall time without schedstat).
fn cpu_time(iters: u64, mut f: impl FnMut()) -> Duration {
    let (c0, w0) = (thread_cpu_ns(), std::time::Instant::now());
    for _ in 0..iters {
        f();
    }
    match (c0, thread_cpu_ns()) {
        (Some(a), Some(b)) => Duration::from_nanos(b - a),
        _ => w0.elapsed(),
    }
}

fn bench_type<T: Real>(c: &mut Criterion, h: &Hierarchy) {
    let old = old_data::<T>(h).expect("old data of the synthetic hierarchy");
    let bc = BoundaryConditions::uniform(PhysicalBc::Reflecting).with_vector([1, 2, 3]);
    let fill = GhostFill::new(h, bc, Limiter::MonotonizedCentral).unwrap();
    let cells: i64 = h.patches().iter().map(|p| p.ghost_box().num_cells()).sum();
    let ghosts = cells - h.total_cells();
    let mut buf = vec![T::zero(); NBINS * NCOMP * BIN * BIN * BIN];
    let mut scratch = FillScratch::new();

    let mut g = c.benchmark_group(format!("prepare_420/{}", T::NAME));
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    g.throughput(Throughput::Elements(cells as u64));
    g.bench_function("into_bins", |b| {
        b.iter_custom(|iters| {
            cpu_time(iters, || {
                for (i, p) in h.patches().iter().enumerate() {
                    let mut t =
                        FillTarget::bin(&mut buf, BIN, NCOMP, i % NBINS, [0; 3], p.ghost_box())
                            .unwrap();
                    black_box(fill.prepare(&old, i, 0.0, &mut t, &mut scratch).unwrap());
                }
            })
        })
    });

    let mut own: Vec<PatchData<T>> = old.clone();
    g.throughput(Throughput::Elements(ghosts as u64));
    g.bench_function("ghosts_only_own_arrays", |b| {
        b.iter_custom(|iters| {
            cpu_time(iters, || {
                for (i, d) in own.iter_mut().enumerate() {
                    let mut t = FillTarget::patch(d);
                    black_box(
                        fill.fill_ghosts(&old, i, 0.0, &mut t, &mut scratch)
                            .unwrap(),
                    );
                }
            })
        })
    });

    g.throughput(Throughput::Elements(cells as u64));
    g.bench_function("memcpy_floor", |b| {
        b.iter_custom(|iters| {
            cpu_time(iters, || {
                // The same number of values moved by one flat copy per
                // patch: the memory-bandwidth floor of any prepare.
                for (i, d) in old.iter().enumerate() {
                    let src = d.as_slice();
                    let at = (i % NBINS) * NCOMP * BIN * BIN * BIN;
                    buf[at..at + src.len()].copy_from_slice(src);
                }
                black_box(&buf);
            })
        })
    });
    g.finish();
}

fn bench_prepare(c: &mut Criterion) {
    let h = generate(&SyntheticSpec {
        patches: 420,
        ..Default::default()
    })
    .unwrap();
    let counts = h
        .patches()
        .iter()
        .map(|p| p.ghost_counts())
        .fold([0i64; 3], |a, g| {
            [a[0] + g.copied, a[1] + g.interpolated, a[2] + g.physical]
        });
    let cells: i64 = h.patches().iter().map(|p| p.ghost_box().num_cells()).sum();
    eprintln!(
        "420 patches, {} levels: {cells} cells with ghosts, {} interior; ghosts copied {}, interpolated {}, physical {}",
        h.num_levels(),
        h.total_cells(),
        counts[0],
        counts[1],
        counts[2]
    );
    bench_type::<f32>(c, &h);
    bench_type::<f64>(c, &h);
}

criterion_group!(benches, bench_prepare);
criterion_main!(benches);
