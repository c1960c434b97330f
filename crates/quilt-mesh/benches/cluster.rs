//! Clustering a 128³ tag field (goal: <= 50 ms), the tagging steps that
//! precede it (shock and gradient detectors on one patch, buffer dilation)
//! and a whole
//! regrid of a 128³ level.
//!
//! Run: `cargo bench -p quilt-mesh --bench cluster`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use quilt_mesh::cluster::{ClusterOptions, Clusterer, Nesting};
use quilt_mesh::regrid::{RegridOptions, regrid};
use quilt_mesh::tag::{
    DEFAULT_SHOCK_ONSET, GradientDetector, ShockDetector, TagBox, TagCriterion, TagInput,
};
use quilt_mesh::{
    Geometry, Hierarchy, HierarchyData, IndexBox, IntVect, PatchId, PatchSpec, SizeLimits, iv,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const N: i32 = 128;

/// Nanoseconds this thread has run on a CPU (Linux `schedstat`), so that a
/// measurement on a shared, loaded machine counts only our own work.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Criterion `iter_custom` body timing `iters` calls of `f` in on-CPU time
/// (wall time where `schedstat` is missing).
fn cpu_time<R>(iters: u64, mut f: impl FnMut() -> R) -> Duration {
    let (c0, w0) = (thread_cpu_ns(), std::time::Instant::now());
    for _ in 0..iters {
        black_box(f());
    }
    match (c0, thread_cpu_ns()) {
        (Some(a), Some(b)) => Duration::from_nanos(b - a),
        _ => w0.elapsed(),
    }
}

fn domain() -> IndexBox {
    IndexBox::new(iv(0, 0, 0), iv(N - 1, N - 1, N - 1))
}

fn radius(p: IntVect, c: [f64; 3]) -> f64 {
    let d = [
        p.x as f64 + 0.5 - c[0],
        p.y as f64 + 0.5 - c[1],
        p.z as f64 + 0.5 - c[2],
    ];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}

/// The Euler sphere problem's shock front: a shell 4 cells thick at radius 40.
fn shell() -> TagBox {
    let mut t = TagBox::new(domain()).unwrap();
    for p in domain().iter() {
        if (38.0..42.0).contains(&radius(p, [64.0, 64.0, 64.0])) {
            t.set(&p).unwrap();
        }
    }
    t
}

/// 40 random balls of radius 3..12 plus 2000 isolated tags (noise).
fn blobs() -> TagBox {
    let mut rng = ChaCha8Rng::seed_from_u64(2015);
    let mut t = TagBox::new(domain()).unwrap();
    for _ in 0..40 {
        let c = [
            rng.random_range(0.0..N as f64),
            rng.random_range(0.0..N as f64),
            rng.random_range(0.0..N as f64),
        ];
        let r = rng.random_range(3.0..12.0);
        let b = IndexBox::new(
            iv((c[0] - r) as i32, (c[1] - r) as i32, (c[2] - r) as i32),
            iv((c[0] + r) as i32, (c[1] + r) as i32, (c[2] + r) as i32),
        )
        .intersect(&domain());
        for p in b.iter() {
            if radius(p, c) < r {
                t.set(&p).unwrap();
            }
        }
    }
    for _ in 0..2000 {
        let p = iv(
            rng.random_range(0..N),
            rng.random_range(0..N),
            rng.random_range(0..N),
        );
        t.set(&p).unwrap();
    }
    t
}

fn bench_cluster(c: &mut Criterion) {
    let nesting = Nesting::whole_domain(domain()).unwrap();
    let options = ClusterOptions::default();
    let mut g = c.benchmark_group("cluster_128");
    g.throughput(Throughput::Elements(domain().num_cells() as u64));
    let mut buffered = shell();
    buffered.buffer(2, &domain()).unwrap();
    for (name, tags) in [
        ("shell", shell()),
        ("shell_buffer2", buffered),
        ("blobs", blobs()),
    ] {
        for undo in [false, true] {
            let o = ClusterOptions {
                undo_unprofitable_cuts: undo,
                ..options
            };
            let out = Clusterer::new(o)
                .unwrap()
                .cluster(std::slice::from_ref(&tags), &nesting)
                .unwrap();
            let patch_cells: i64 = out
                .fine_boxes
                .iter()
                .map(|b| b.grow(o.ghost).num_cells())
                .sum();
            println!(
                "cluster_128/{name} (undo_unprofitable_cuts {undo}): {} tags -> {} boxes, efficiency {:.3}, fine sides {}..={}, {} fine patch cells with ghosts",
                out.tagged,
                out.coarse_boxes.len(),
                out.efficiency(),
                out.fine_boxes
                    .iter()
                    .map(|b| b.size().min())
                    .min()
                    .unwrap_or(0),
                out.fine_boxes
                    .iter()
                    .map(|b| b.size().max())
                    .max()
                    .unwrap_or(0),
                patch_cells,
            );
        }
        let mut clusterer = Clusterer::new(options).unwrap();
        g.bench_function(name, |b| {
            b.iter(|| {
                clusterer
                    .cluster(black_box(std::slice::from_ref(&tags)), &nesting)
                    .unwrap()
            })
        });
        g.bench_function(format!("{name}_cpu"), |b| {
            b.iter_custom(|iters| {
                cpu_time(iters, || {
                    clusterer
                        .cluster(std::slice::from_ref(&tags), &nesting)
                        .unwrap()
                })
            })
        });
    }
    g.finish();
}

fn bench_tagging(c: &mut Criterion) {
    let mut g = c.benchmark_group("tagging");
    // Buffer of 2 cells around the shell over the whole 128³ level.
    let tags = shell();
    g.throughput(Throughput::Elements(domain().num_cells() as u64));
    g.bench_function("buffer2_shell_128_cpu", |b| {
        b.iter_custom(|iters| {
            cpu_time(iters, || {
                let mut t = tags.clone();
                t.buffer(2, &domain()).unwrap();
                t
            })
        })
    });
    // Shock detector on one 64³ patch (2 ghost cells) holding a spherical shock.
    let interior = IndexBox::new(iv(0, 0, 0), iv(63, 63, 63));
    let data = interior.grow(2);
    let v: Vec<f64> = data
        .iter()
        .map(|p| {
            if radius(p, [0.0, 0.0, 0.0]) < 40.0 {
                10.0
            } else {
                1.0
            }
        })
        .collect();
    let input = TagInput::new(&v, data, interior, [1.0 / 128.0; 3]).unwrap();
    let det = ShockDetector::new(1.0, DEFAULT_SHOCK_ONSET).unwrap();
    g.throughput(Throughput::Elements(interior.num_cells() as u64));
    g.bench_function("shock_detector_64_cpu", |b| {
        let mut t = TagBox::new(interior).unwrap();
        b.iter_custom(|iters| {
            cpu_time(iters, || {
                t.clear();
                det.tag(&input, &mut t).unwrap();
                t.count()
            })
        })
    });
    let grad = GradientDetector::new(1.0).unwrap();
    g.bench_function("gradient_detector_64_cpu", |b| {
        let mut t = TagBox::new(interior).unwrap();
        b.iter_custom(|iters| {
            cpu_time(iters, || {
                t.clear();
                grad.tag(&input, &mut t).unwrap();
                t.count()
            })
        })
    });
    g.finish();
}

/// A whole regrid of a 128³ base level (4³ patches of 32³, 5 components,
/// f64): tags on the shell, clustering, the new layout and the data transfer
/// (about 2.6 M fine cells interpolated).
fn bench_regrid(c: &mut Criterion) {
    let geometry = Geometry::with_cubic_cells(iv(N, N, N), &[2, 2]).unwrap();
    let mut specs = Vec::new();
    for p in IndexBox::new(iv(0, 0, 0), iv(3, 3, 3)).iter() {
        specs.push(PatchSpec {
            id: PatchId(specs.len() as u32),
            interior: IndexBox::from_lo_size(p * 32, iv(32, 32, 32)),
            parent: None,
        });
    }
    let h = Hierarchy::new(geometry, 2, SizeLimits::default(), vec![specs]).unwrap();
    let mut data = HierarchyData::<f64>::new(&h, 5).unwrap();
    data.init_with(&h, |_, p, v| {
        let r = radius(*p, [64.0, 64.0, 64.0]);
        v[0] = if r < 40.0 { 4.0 } else { 1.0 };
        v[1..4].fill(0.0);
        v[4] = v[0] * 2.5;
    })
    .unwrap();
    let shell = shell();
    let tags: Vec<TagBox> = h
        .patches()
        .iter()
        .map(|p| {
            let mut t = TagBox::new(p.interior()).unwrap();
            t.union_with(&shell);
            t
        })
        .collect();
    let opts = RegridOptions::default();
    let out = regrid(&h, data.clone(), &tags, &opts).unwrap();
    println!(
        "regrid/shell_128: {} level-1 patches, {} cells interpolated",
        out.hierarchy.level_patches(1).len(),
        out.stats.interpolated[1]
    );
    let mut g = c.benchmark_group("regrid");
    g.throughput(Throughput::Elements(out.stats.interpolated[1] as u64));
    g.bench_function("shell_128", |b| {
        b.iter_batched(
            || data.clone(),
            |d| regrid(&h, d, black_box(&tags), &opts).unwrap(),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_cluster, bench_tagging, bench_regrid
}
criterion_main!(benches);
