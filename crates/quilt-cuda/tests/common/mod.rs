//! Helpers of the GPU tests: device check, synthetic batches, comparisons.
#![allow(dead_code)]

use quilt_cuda::{CudaConfig, CudaSolver, GpuReal, Variant, probe};
use quilt_sweep::physics::{Gas, Primitive};
use quilt_sweep::{
    Batch, BatchLayout, PatchShape, Real, Scheme, StepReport, SweepOrder, Workspace,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Whether a usable GPU is present (with a message when not). With
/// `QUILT_REQUIRE_GPU=1` a missing GPU fails the test instead.
pub fn gpu() -> bool {
    match probe() {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var("QUILT_REQUIRE_GPU").map_or(true, |v| v != "1"),
                "QUILT_REQUIRE_GPU=1 but no GPU: {e}"
            );
            eprintln!("skipping: {e}");
            false
        }
    }
}

/// Every scheme with default options, and variants of each option.
pub fn schemes() -> Vec<Scheme> {
    use quilt_sweep::scheme::{RtvdLimiter, SlopeLimiter, TvdFlux, WafLimiter};
    vec![
        Scheme::rtvd(),
        Scheme::tvd(),
        Scheme::waf(),
        Scheme::Rtvd {
            limiter: RtvdLimiter::Minmod,
        },
        Scheme::Tvd {
            slope: SlopeLimiter::Minmod,
            flux: TvdFlux::Llf,
        },
        Scheme::Waf {
            limiter: WafLimiter::Superbee,
        },
        Scheme::Waf {
            limiter: WafLimiter::VanAlbada,
        },
        Scheme::Waf {
            limiter: WafLimiter::Minbee,
        },
    ]
}

/// Every configuration worth comparing: the four variants and the fused
/// launch.
pub fn configs() -> Vec<CudaConfig> {
    let mut v: Vec<CudaConfig> = Variant::ALL
        .iter()
        .map(|&x| CudaConfig::variant(x))
        .collect();
    v.push(CudaConfig {
        fused: true,
        ..CudaConfig::variant(Variant::PackedOpt)
    });
    // Several chunks on few streams, and the default scheme in small batches.
    v.push(CudaConfig {
        chunks: 3,
        streams: 2,
        ..CudaConfig::variant(Variant::PackedOpt)
    });
    v.push(CudaConfig {
        n_fixed: Some(5),
        ..CudaConfig::variant(Variant::Default)
    });
    v
}

pub fn config_name(c: &CudaConfig) -> String {
    format!(
        "{}{} (streams {}, chunks {}, n_fixed {:?})",
        c.variant.name(),
        if c.fused { " fused" } else { "" },
        c.streams,
        c.chunks,
        c.n_fixed
    )
}

/// `n` random patch shapes with sides (ghosts included) in `lo..=hi`, a
/// few cell sizes and levels.
pub fn shapes(n: usize, ghost: u32, lo: u32, hi: u32, seed: u64) -> Vec<PatchShape> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let level = rng.random_range(0..3u32);
            let h = 1.0 / (32.0 * f64::from(1u32 << level));
            PatchShape {
                id: 1000 + 7 * i as u64,
                extent: [0; 3].map(|_: u32| rng.random_range(lo..=hi)),
                ghost,
                level,
                dx: [h, h * 1.25, h * 0.8],
                user: i as u32,
            }
        })
        .collect()
}

/// The shapes bin-packed into 64^3 bins (quilt-pack, default options).
pub fn packed(shapes: &[PatchShape]) -> BatchLayout {
    packed_with(shapes, 5)
}

/// [`packed`] with `ncomp` components per cell (passive scalars after the
/// Euler five).
pub fn packed_with(shapes: &[PatchShape], ncomp: u32) -> BatchLayout {
    let items: Vec<[u32; 3]> = shapes.iter().map(|s| s.extent).collect();
    let p = quilt_pack::pack(&items, [64; 3], &quilt_pack::PackOptions::default()).expect("pack");
    let pl: Vec<(u32, [u32; 3])> = p
        .placements
        .iter()
        .map(|x| (x.bin as u32, x.offset))
        .collect();
    BatchLayout::packed(64, ncomp, shapes, &pl).expect("layout")
}

/// A batch filled with smooth waves, a contact and a shock-like jump per
/// patch (so that every limiter branch is taken), all ghosts included.
/// `expand` adds strongly diverging flows of low pressure, which make the
/// floors act when the gas has high floors. Passive scalars, if the layout
/// has any: the first `0.37 ρ`, the second the gas beyond the jump, the
/// others smooth mass fractions in `[0, 1]`.
pub fn fill<T: Real>(layout: BatchLayout, gas: &Gas, seed: u64, expand: bool) -> Batch<T> {
    let nc = layout.ncomp() as usize;
    let mut batch = Batch::<T>::new(layout);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let descs = batch.layout().patches().to_vec();
    for (p, d) in descs.iter().enumerate() {
        let e = d.extent.map(|v| v as usize);
        let cells = e[0] * e[1] * e[2];
        let mut dense = vec![T::zero(); nc * cells];
        let phase: f64 = rng.random_range(0.0..6.0);
        let jump_axis = rng.random_range(0..3usize);
        let jump_at = rng.random_range(0.3..0.7) * e[jump_axis] as f64;
        let amp: f64 = rng.random_range(0.1..0.9);
        for k in 0..e[2] {
            for j in 0..e[1] {
                for i in 0..e[0] {
                    let c = [i, j, k];
                    let x = c.map(|v| v as f64 / 7.0 + phase);
                    let side = c[jump_axis] as f64 > jump_at;
                    let mut w = Primitive {
                        rho: 1.0 + 0.3 * (x[0] + 0.5 * x[1]).sin() + if side { 2.0 } else { 0.0 },
                        vel: [
                            amp * x[2].cos(),
                            0.4 * (x[0] - x[1]).sin(),
                            -0.3 * x[0].sin() + if side { -0.5 } else { 0.2 },
                        ],
                        p: 1.0 + 0.2 * (x[1] - x[2]).cos() + if side { 3.0 } else { 0.0 },
                    };
                    if expand {
                        let mid = c[0] as f64 - e[0] as f64 / 2.0;
                        w.vel[0] = 4.0 * mid.signum();
                        w.rho = 0.05 + 0.01 * x[1].sin().abs();
                        w.p = 0.02;
                    }
                    let u = w.to_conserved(gas);
                    let at = (k * e[1] + j) * e[0] + i;
                    for v in 0..5 {
                        dense[v * cells + at] = T::from_f64(u[v]);
                    }
                    for v in 5..nc {
                        let phi = match v {
                            5 => 0.37,
                            6 => f64::from(u8::from(side)),
                            _ => 0.5 + 0.5 * (x[0] + x[2] + v as f64).sin(),
                        };
                        dense[v * cells + at] = T::from_f64(phi * u[0]);
                    }
                }
            }
        }
        batch.load_patch(p, &dense).expect("load");
    }
    batch
}

/// Largest componentwise relative difference `max_i |a - b| / max_i |b|`
/// over the values of each component (one block of `B^3` values per bin
/// and component), and whether all values agree bit for bit.
pub fn compare<T: Real>(a: &[T], b: &[T], bin_edge: u32) -> (bool, f64) {
    assert_eq!(a.len(), b.len());
    let block = (bin_edge as usize).pow(3);
    let mut maxabs = [0.0f64; 5];
    let mut maxdiff = [0.0f64; 5];
    let mut bitwise = true;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let c = (i / block) % 5;
        let (x, y) = (x.as_f64(), y.as_f64());
        if x.to_bits() != y.to_bits() {
            bitwise = false;
        }
        maxabs[c] = maxabs[c].max(y.abs());
        maxdiff[c] = maxdiff[c].max((x - y).abs());
    }
    let rel = (0..5)
        .map(|c| {
            if maxabs[c] > 0.0 {
                maxdiff[c] / maxabs[c]
            } else {
                maxdiff[c]
            }
        })
        .fold(0.0, f64::max);
    (bitwise, rel)
}

/// Same for flux buffers (one scale for all values).
pub fn compare_flat<T: Real>(a: &[T], b: &[T]) -> (bool, f64) {
    assert_eq!(a.len(), b.len());
    let mut bitwise = true;
    let (mut m, mut d) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        bitwise &= x.as_f64().to_bits() == y.as_f64().to_bits();
        m = m.max(y.as_f64().abs());
        d = d.max((x.as_f64() - y.as_f64()).abs());
    }
    (bitwise, if m > 0.0 { d / m } else { d })
}

/// One CPU step of a copy of `batch`.
pub fn cpu_step<T: Real>(
    scheme: Scheme,
    gas: Gas,
    batch: &Batch<T>,
    dt: f64,
    order: SweepOrder,
) -> (Batch<T>, StepReport) {
    let cpu = quilt_sweep::Solver::new(scheme, gas).expect("solver");
    let mut b = batch.clone();
    let r = cpu
        .advance(&mut b, dt, order, &mut Workspace::new())
        .expect("cpu step");
    (b, r)
}

/// One GPU step of a copy of `batch`.
pub fn gpu_step<T: GpuReal>(
    gpu: &mut CudaSolver<T>,
    batch: &Batch<T>,
    dt: f64,
    order: SweepOrder,
) -> (Batch<T>, StepReport) {
    let mut b = batch.clone();
    let r = gpu
        .advance(&mut b, dt, order)
        .unwrap_or_else(|e| panic!("gpu step: {e}"));
    (b, r)
}
