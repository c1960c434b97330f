//! One batch selection from 500 bins with P = 16 CPU queues: it sits on the
//! critical path between two batches, so it must take far less than 1 ms.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use quilt_batch::{
    AdaptiveOptions, BinWork, Coefficients, CostModel, PatchWork, Selection, Selector,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// 500 bins of 1–12 patches (interiors 8–40 cells per axis, 3 ghost layers,
/// at most a 64³ bin's volume each), random ghost-fill splits.
fn bins() -> Vec<BinWork> {
    let mut rng = ChaCha8Rng::seed_from_u64(500);
    (0..500)
        .map(|_| {
            let n = rng.random_range(1..=12);
            let mut patches = Vec::new();
            let mut volume = 0u64;
            for _ in 0..n {
                let extent = [0; 3].map(|_: u32| rng.random_range(8..=40u32) + 6);
                let p = PatchWork::new(extent, 3);
                let g = p.ghost_cells();
                let interp = rng.random_range(0..=g);
                let copied = rng.random_range(0..=g - interp);
                let p = p.with_ghost_fill(interp, copied);
                if !patches.is_empty() && volume + p.cells() > 64 * 64 * 64 {
                    break;
                }
                volume += p.cells();
                patches.push(p);
            }
            BinWork::new(patches, 40).unwrap()
        })
        .collect()
}

fn select(c: &mut Criterion) {
    let bins = bins();
    let model = CostModel::new(Coefficients::gpu_default()).unwrap();
    let queues = 16;
    let total: f64 = bins.iter().map(|b| model.bin_prepare(b)).sum();
    let mut group = c.benchmark_group("select_500_bins_p16");
    group.throughput(Throughput::Elements(bins.len() as u64));
    // Capacities where a batch takes about 1/20, 1/5 and 1/2 of the bins.
    for share in [0.05, 0.2, 0.5] {
        let capacity = total / queues as f64 * share;
        for (name, opts) in [
            ("adaptive", AdaptiveOptions::default()),
            (
                "greedy",
                AdaptiveOptions {
                    search_nodes: 0,
                    exact_patches: 0,
                    ..AdaptiveOptions::default()
                },
            ),
        ] {
            let mut selector = Selector::new();
            let mut out = Selection::new();
            selector
                .adaptive(&bins, capacity, queues, &model, &opts, &mut out)
                .unwrap();
            eprintln!(
                "{name} share {share}: {} bins, {} patches, makespan / capacity {:.3}",
                out.bins().len(),
                out.patch_count(),
                out.makespan() / capacity
            );
            group.bench_function(BenchmarkId::new(name, share), |b| {
                b.iter(|| {
                    selector
                        .adaptive(black_box(&bins), capacity, queues, &model, &opts, &mut out)
                        .unwrap();
                    black_box(out.bins().len())
                })
            });
        }
    }
    let mut selector = Selector::new();
    let mut out = Selection::new();
    group.bench_function("static_n120", |b| {
        b.iter(|| {
            selector
                .fixed(black_box(&bins), 120, queues, &model, &mut out)
                .unwrap();
            black_box(out.bins().len())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2))
        .sample_size(30);
    targets = select
}
criterion_main!(benches);
