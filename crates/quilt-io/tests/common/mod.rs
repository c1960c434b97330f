//! A small three-level output with analytic data, shared by the read-back
//! and ParaView tests.
#![allow(dead_code)]

use std::path::PathBuf;

use quilt_io::{AmrOutput, CellArray, LevelOutput};
use quilt_mesh::{Geometry, Hierarchy, IndexBox, PatchId, PatchSpec, SizeLimits, iv};

/// Domain origin.
pub const ORIGIN: [f64; 3] = [-0.5, 0.25, 1.0];
/// Level-0 cell size (anisotropic on purpose: catches swapped axes).
pub const H0: [f64; 3] = [0.125, 0.25, 0.5];
/// Refinement ratio from level `l` to `l + 1`.
pub const RATIOS: [i32; 2] = [2, 4];
/// `density = C0 + G . x` at cell centres: distinct along every axis, so a
/// transposed or shifted layout shows.
pub const C0: f64 = 2.0;
/// Density gradient.
pub const G: [f64; 3] = [1.0, 10.0, 100.0];

/// Patch boxes per level (inclusive cell indices of the level's index space).
pub fn boxes() -> Vec<Vec<IndexBox>> {
    vec![
        // Level 0: 8 x 4 x 3 cells in two patches.
        vec![
            IndexBox::new(iv(0, 0, 0), iv(3, 3, 2)),
            IndexBox::new(iv(4, 0, 0), iv(7, 3, 2)),
        ],
        // Level 1 (ratio 2): two patches of different sizes.
        vec![
            IndexBox::new(iv(2, 2, 0), iv(7, 5, 3)),
            IndexBox::new(iv(10, 0, 2), iv(13, 3, 5)),
        ],
        // Level 2 (ratio 4 from level 1): one patch inside level 1's first.
        vec![IndexBox::new(iv(12, 12, 4), iv(23, 19, 11))],
    ]
}

/// Cell size of level `l`.
pub fn spacing(l: usize) -> [f64; 3] {
    let r: i32 = RATIOS[..l].iter().product();
    [H0[0] / r as f64, H0[1] / r as f64, H0[2] / r as f64]
}

/// Cell centre of cell `(i, j, k)` of level `l`.
pub fn centre(l: usize, i: i32, j: i32, k: i32) -> [f64; 3] {
    let h = spacing(l);
    let p = [i, j, k];
    std::array::from_fn(|d| ORIGIN[d] + (p[d] as f64 + 0.5) * h[d])
}

/// The analytic density.
pub fn density(x: [f64; 3]) -> f64 {
    C0 + G[0] * x[0] + G[1] * x[1] + G[2] * x[2]
}

/// Cells of `b` in output order (x fastest).
pub fn cells(b: &IndexBox) -> impl Iterator<Item = (i32, i32, i32)> + '_ {
    (b.lo.z..=b.hi.z).flat_map(move |k| {
        (b.lo.y..=b.hi.y).flat_map(move |j| (b.lo.x..=b.hi.x).map(move |i| (i, j, k)))
    })
}

/// The output: density, velocity = x, pressure = density², total energy
/// = density + 1 (f64), patch id (i32, numbered across levels).
pub fn output(time: f64, step: u64) -> AmrOutput {
    let mut levels = Vec::new();
    let mut next_id = 0i32;
    for (l, bs) in boxes().into_iter().enumerate() {
        let (mut rho, mut vel, mut p, mut e, mut id) = (vec![], vec![], vec![], vec![], vec![]);
        for b in &bs {
            for (i, j, k) in cells(b) {
                let x = centre(l, i, j, k);
                let r = density(x) + time;
                rho.push(r);
                vel.extend_from_slice(&x);
                p.push(r * r);
                e.push(r + 1.0);
                id.push(next_id);
            }
            next_id += 1;
        }
        levels.push(LevelOutput {
            spacing: spacing(l),
            boxes: bs,
            cell_arrays: vec![
                CellArray::scalar("density", rho),
                CellArray::vector("velocity", vel),
                CellArray::scalar("pressure", p),
                CellArray::scalar("total_energy", e),
                CellArray::scalar("patch_id", id),
            ],
        });
    }
    AmrOutput {
        origin: ORIGIN,
        time,
        step,
        levels,
    }
}

/// A fresh scratch directory under the target directory's tmp.
pub fn scratch(name: &str) -> PathBuf {
    let base = option_env!("CARGO_TARGET_TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("quilt-io-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A patch spec from corner arrays.
pub fn spec(id: u32, lo: [i32; 3], hi: [i32; 3], parent: Option<u32>) -> PatchSpec {
    PatchSpec {
        id: PatchId(id),
        interior: IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2])),
        parent: parent.map(PatchId),
    }
}

/// A hierarchy of three levels (ratios 2 and 4) over a non-unit, partly periodic domain,
/// with ids that are not positions.
pub fn hierarchy() -> Hierarchy {
    let geo = Geometry::new([-1.0, 0.0, 2.0], [1.0, 0.5, 3.0], iv(16, 8, 8), &[2, 4, 2])
        .unwrap()
        .with_periodic([true, false, false]);
    let levels = vec![
        vec![
            spec(7, [0, 0, 0], [7, 7, 7], None),
            spec(3, [8, 0, 0], [15, 7, 7], None),
        ],
        vec![
            spec(11, [8, 4, 4], [15, 11, 7], Some(7)),
            spec(12, [16, 4, 4], [23, 11, 11], Some(3)),
        ],
        vec![spec(40, [72, 24, 24], [87, 39, 39], Some(12))],
    ];
    Hierarchy::new(geo, 2, SizeLimits { min: 4, max: 64 }, levels).unwrap()
}

/// Ratio of specific heats of the analytic Euler state.
pub const GAMMA: f64 = 1.4;

/// Analytic primitive state at `x`: density `1 + x + 2y + 3z` (linear, so
/// cell averages equal centre values), velocity `x`, pressure `1 + x²`.
pub fn euler_primitive(x: [f64; 3]) -> (f64, [f64; 3], f64) {
    (1.0 + x[0] + 2.0 * x[1] + 3.0 * x[2], x, 1.0 + x[0] * x[0])
}

/// Conserved variables `(ρ, ρu, ρv, ρw, E)` of [`euler_primitive`].
pub fn euler_conserved(x: [f64; 3]) -> [f64; 5] {
    let (r, u, p) = euler_primitive(x);
    let ke = 0.5 * r * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    [r, r * u[0], r * u[1], r * u[2], p / (GAMMA - 1.0) + ke]
}

/// The caller-side conserved → shown map of the Euler equations.
pub fn euler_fields<T: quilt_mesh::Real>(c: &[T]) -> quilt_io::CellFields {
    let r = c[0].as_f64();
    let u = [c[1].as_f64() / r, c[2].as_f64() / r, c[3].as_f64() / r];
    let e = c[4].as_f64();
    let ke = 0.5 * r * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    quilt_io::CellFields {
        density: r,
        velocity: u,
        pressure: (GAMMA - 1.0) * (e - ke),
        total_energy: e,
    }
}

/// Euler data on [`hierarchy`], ghosts included, in precision `T`.
pub fn euler_data<T: quilt_mesh::Real>(h: &Hierarchy) -> quilt_mesh::HierarchyData<T> {
    let mut d = quilt_mesh::HierarchyData::<T>::new(h, 5).unwrap();
    d.init_with(h, |lg, p, v| {
        let c = lg.cell_center(p);
        let u = euler_conserved([c.x, c.y, c.z]);
        for (dst, src) in v.iter_mut().zip(u) {
            *dst = T::from_f64(src);
        }
    })
    .unwrap();
    d
}
