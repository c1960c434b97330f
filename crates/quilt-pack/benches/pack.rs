//! Packing time per heuristic, merit and ordering in 64³ bins, on the
//! ghost-inclusive patches of 600-patch synthetic hierarchies (Raghavan &
//! Vadhiyar 2015, section 4.1) and on items with sides uniform in 16..=64.
//!
//! `cargo bench -p quilt-pack --bench pack`; throughput is in items/s.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use quilt_mesh::{SyntheticSpec, generate};
use quilt_pack::{
    Extent, Heuristic, Merit, PackOptions, PackWorkspace, SortOrder, pack_with, patch_extents,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BIN: Extent = [64, 64, 64];

fn uniform_items(n: usize, seed: u64) -> Vec<Extent> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            [
                rng.random_range(16..=64),
                rng.random_range(16..=64),
                rng.random_range(16..=64),
            ]
        })
        .collect()
}

fn hierarchy_items(n: usize, seed: u64) -> Vec<Extent> {
    let h = generate(&SyntheticSpec {
        patches: n,
        seed,
        ..Default::default()
    })
    .expect("synthetic hierarchy");
    let all: Vec<usize> = (0..h.num_patches()).collect();
    patch_extents(&h, &all).expect("patch extents")
}

fn configure<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    group
}

/// Every heuristic × merit × ordering on 600 items.
fn heuristics(c: &mut Criterion) {
    bench_heuristics(c, "hierarchy600", &hierarchy_items(600, 1));
    bench_heuristics(c, "uniform600", &uniform_items(600, 600));
}

fn bench_heuristics(c: &mut Criterion, name: &str, items: &[Extent]) {
    let mut group = configure(c, name);
    group.throughput(Throughput::Elements(items.len() as u64));
    let mut ws = PackWorkspace::new();
    let mut sorts = vec![
        SortOrder::VolumeHeight,
        SortOrder::HeightVolume,
        SortOrder::AreaHeight,
        SortOrder::HeightArea,
        SortOrder::ClusteredAreaHeight { delta_percent: 10 },
        SortOrder::ClusteredHeightArea { delta_percent: 10 },
    ];
    sorts.extend(SortOrder::long_side_first());
    for sort in sorts {
        for (heuristic, merit) in [
            (Heuristic::EpFfd, Merit::ResidualSpace),
            (Heuristic::EpBfd, Merit::ResidualSpace),
            (Heuristic::EpBfd, Merit::FreeVolume),
        ] {
            let opts = PackOptions {
                heuristic,
                merit,
                sort,
                ..Default::default()
            };
            let id = match heuristic {
                Heuristic::EpFfd => format!("{heuristic}/{sort}"),
                _ => format!("{heuristic}-{merit}/{sort}"),
            };
            group.bench_function(id, |b| {
                b.iter(|| pack_with(&mut ws, black_box(items), BIN, &opts).unwrap())
            });
        }
    }
    for merit in [Merit::ResidualSpace, Merit::FreeVolume] {
        let opts = PackOptions {
            heuristic: Heuristic::CEpBfd,
            merit,
            ..Default::default()
        };
        group.bench_function(format!("c-epbfd-{merit}/default-orders"), |b| {
            b.iter(|| pack_with(&mut ws, black_box(items), BIN, &opts).unwrap())
        });
    }
    let deltas: Vec<u32> = (1..=10).map(|k| 5 * k).collect();
    let opts = PackOptions {
        heuristic: Heuristic::CEpBfd,
        orders: SortOrder::paper_orders(&deltas),
        ..Default::default()
    };
    group.bench_function("c-epbfd-rs/paper-orders-24", |b| {
        b.iter(|| pack_with(&mut ws, black_box(items), BIN, &opts).unwrap())
    });
    group.finish();
}

/// The default (EP-BFD, residual space, volume–height) against hierarchy
/// size, up to ten times the paper's largest.
fn scaling(c: &mut Criterion) {
    let mut group = configure(c, "ep-bfd-scaling");
    let mut ws = PackWorkspace::new();
    let opts = PackOptions::default();
    for n in [120, 240, 360, 480, 600, 1200, 2400, 6000] {
        let items = hierarchy_items(n, 1);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &items, |b, items| {
            b.iter(|| pack_with(&mut ws, black_box(items), BIN, &opts).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, heuristics, scaling);
criterion_main!(benches);
