//! The synthetic 420-patch batch shared by the `sweep` bench and the
//! `throughput` example.

use quilt_sweep::physics::{Gas, Primitive};
use quilt_sweep::{Batch, BatchLayout, PatchShape, Real};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Patch count: `QUILT_BENCH_PATCHES` or 420.
pub fn patches() -> usize {
    std::env::var("QUILT_BENCH_PATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(420)
}

/// The synthetic batch: random extents, packed, every cell (ghosts too) set
/// to a smooth moving state.
pub fn synthetic<T: Real>(n: usize, ghost: u32, gas: &Gas) -> Batch<T> {
    let mut rng = ChaCha8Rng::seed_from_u64(2015);
    let shapes: Vec<PatchShape> = (0..n)
        .map(|i| {
            let extent = [0; 3].map(|_: u32| rng.random_range(16..=64u32));
            PatchShape {
                id: i as u64,
                extent,
                ghost,
                level: 0,
                dx: [1.0 / 256.0; 3],
                user: 0,
            }
        })
        .collect();
    let items: Vec<[u32; 3]> = shapes.iter().map(|s| s.extent).collect();
    let packing =
        quilt_pack::pack(&items, [64; 3], &quilt_pack::PackOptions::default()).expect("pack");
    let placements: Vec<(u32, [u32; 3])> = packing
        .placements
        .iter()
        .map(|p| (p.bin as u32, p.offset))
        .collect();
    let layout = BatchLayout::packed(64, 5, &shapes, &placements).expect("layout");
    let mut batch = Batch::<T>::new(layout);
    let descs = batch.layout().patches().to_vec();
    for (p, d) in descs.iter().enumerate() {
        let e = d.extent;
        let mut dense = vec![T::zero(); 5 * (e[0] * e[1] * e[2]) as usize];
        let cells = (e[0] * e[1] * e[2]) as usize;
        for k in 0..e[2] {
            for j in 0..e[1] {
                for i in 0..e[0] {
                    let x = [i, j, k].map(|v| f64::from(v) / 16.0 + p as f64);
                    let w = Primitive {
                        rho: 1.0 + 0.2 * (x[0] + 0.5 * x[1]).sin(),
                        vel: [0.3 * x[2].cos(), 0.2, -0.1 * x[0].sin()],
                        p: 1.0 + 0.1 * (x[1] - x[2]).cos(),
                    };
                    let u = w.to_conserved(gas);
                    let at = ((k * e[1] + j) * e[0] + i) as usize;
                    for c in 0..5 {
                        dense[c * cells + at] = T::from_f64(u[c]);
                    }
                }
            }
        }
        batch.load_patch(p, &dense).expect("load");
    }
    batch
}
