//! Throughput of quilt-io: building the Euler output from patch data,
//! writing it as VTKHDF, and writing / reading checkpoints (fsync included).
//!
//! Hierarchy: 64³ base cells in 8 patches of 32³ plus a ratio-2 level of 8
//! patches of 32³ (524 288 cells), 5 components, 2 ghost cells.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use quilt_io::{
    CellFields, RunState, euler_output, read_checkpoint, write_checkpoint, write_vtkhdf,
};
use quilt_mesh::{
    Geometry, Hierarchy, HierarchyData, IndexBox, PatchId, PatchSpec, SizeLimits, iv,
};

fn cube_patches(
    first_id: u32,
    origin: i32,
    parent: impl Fn(usize) -> Option<PatchId>,
) -> Vec<PatchSpec> {
    (0..8)
        .map(|n| {
            let o = iv(
                origin + (n as i32 & 1) * 32,
                origin + ((n as i32 >> 1) & 1) * 32,
                origin + (n as i32 >> 2) * 32,
            );
            PatchSpec {
                id: PatchId(first_id + n as u32),
                interior: IndexBox::from_lo_size(o, iv(32, 32, 32)),
                parent: parent(n),
            }
        })
        .collect()
}

fn setup() -> (Hierarchy, HierarchyData<f64>) {
    let geo = Geometry::new([0.0; 3], [1.0; 3], iv(64, 64, 64), &[2]).unwrap();
    let levels = vec![
        cube_patches(0, 0, |_| None),
        cube_patches(8, 32, |n| Some(PatchId(n as u32))),
    ];
    let h = Hierarchy::new(geo, 2, SizeLimits { min: 8, max: 64 }, levels).unwrap();
    let mut d = HierarchyData::<f64>::new(&h, 5).unwrap();
    d.init_with(&h, |_, p, v| {
        let r = 1.0 + 0.01 * (p.x + p.y + p.z) as f64;
        v.copy_from_slice(&[r, 0.1 * r, 0.2 * r, 0.3 * r, 2.5 + 0.07 * r]);
    })
    .unwrap();
    (h, d)
}

fn fields(c: &[f64]) -> CellFields {
    let r = c[0];
    let u = [c[1] / r, c[2] / r, c[3] / r];
    let ke = 0.5 * r * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    CellFields {
        density: r,
        velocity: u,
        pressure: 0.4 * (c[4] - ke),
        total_energy: c[4],
    }
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quilt-io-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn benches(c: &mut Criterion) {
    let (h, d) = setup();
    let cells = h.total_cells() as u64;
    let dir = scratch();

    let mut g = c.benchmark_group("output");
    g.throughput(Throughput::Elements(cells));
    g.bench_function("euler_output", |b| {
        b.iter(|| black_box(euler_output(&h, |i| d.old(i), 0.0, 0, fields).unwrap()))
    });
    let out = euler_output(&h, |i| d.old(i), 0.0, 0, fields).unwrap();
    let vtk = dir.join("bench.hdf");
    g.bench_function("write_vtkhdf", |b| {
        b.iter(|| write_vtkhdf(&vtk, &out).unwrap())
    });
    g.finish();

    let chk = dir.join("bench.h5");
    let run = RunState::default();
    let state_bytes: u64 = d
        .states()
        .iter()
        .map(|s| 2 * std::mem::size_of_val(s.old.as_slice()) as u64)
        .sum();
    let mut g = c.benchmark_group("checkpoint");
    g.throughput(Throughput::Bytes(state_bytes));
    g.bench_function("write", |b| {
        b.iter(|| write_checkpoint(&chk, &run, &h, &d).unwrap())
    });
    g.bench_function("read", |b| {
        b.iter(|| black_box(read_checkpoint::<f64>(&chk).unwrap()))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = io;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = benches
}
criterion_main!(io);
