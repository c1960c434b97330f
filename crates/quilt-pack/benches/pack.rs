//! Packing time per heuristic, merit and ordering, on patch-sized items
//! (sides uniform in 16..=64, ghosts included) in 64³ bins.
//!
//! `cargo bench -p quilt-pack --bench pack`; throughput is in items/s.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use quilt_pack::{Extent, Heuristic, Merit, PackOptions, PackWorkspace, SortOrder, pack_with};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BIN: Extent = [64, 64, 64];

fn uniform_items(n: usize, seed: u64) -> Vec<Extent> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| [rng.random_range(16..=64), rng.random_range(16..=64), rng.random_range(16..=64)])
        .collect()
}

fn configure<'a>(c: &'a mut Criterion, name: &str) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    group
}

/// Every heuristic × merit × ordering on 600 items.
fn heuristics(c: &mut Criterion) {
    let items = uniform_items(600, 600);
    let mut group = configure(c, "uniform600");
    group.throughput(Throughput::Elements(items.len() as u64));
    let mut ws = PackWorkspace::new();
    for sort in [
        SortOrder::VolumeHeight,
        SortOrder::HeightVolume,
        SortOrder::AreaHeight,
        SortOrder::HeightArea,
        SortOrder::ClusteredAreaHeight { delta_percent: 10 },
        SortOrder::ClusteredHeightArea { delta_percent: 10 },
    ] {
        for (heuristic, merit) in [
            (Heuristic::EpFfd, Merit::ResidualSpace),
            (Heuristic::EpBfd, Merit::ResidualSpace),
            (Heuristic::EpBfd, Merit::FreeVolume),
        ] {
            let opts = PackOptions { heuristic, merit, sort, ..Default::default() };
            let id = match heuristic {
                Heuristic::EpFfd => format!("{heuristic}/{sort}"),
                _ => format!("{heuristic}-{merit}/{sort}"),
            };
            group.bench_function(id, |b| b.iter(|| pack_with(&mut ws, black_box(&items), BIN, &opts).unwrap()));
        }
    }
    for merit in [Merit::ResidualSpace, Merit::FreeVolume] {
        let opts = PackOptions { heuristic: Heuristic::CEpBfd, merit, ..Default::default() };
        group.bench_function(format!("c-epbfd-{merit}/default-orders"), |b| {
            b.iter(|| pack_with(&mut ws, black_box(&items), BIN, &opts).unwrap())
        });
    }
    group.finish();
}

/// The default (EP-BFD, residual space, volume–height) against item count.
fn scaling(c: &mut Criterion) {
    let mut group = configure(c, "ep-bfd-scaling");
    let mut ws = PackWorkspace::new();
    let opts = PackOptions::default();
    for n in [120, 240, 360, 480, 600] {
        let items = uniform_items(n, n as u64);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &items, |b, items| {
            b.iter(|| pack_with(&mut ws, black_box(items), BIN, &opts).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, heuristics, scaling);
criterion_main!(benches);
