//! A small three-level output with analytic data, shared by the read-back
//! and ParaView tests.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::PathBuf;

use quilt_io::{AmrOutput, CellArray, LevelOutput};
use quilt_mesh::{IndexBox, iv};

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

/// Number of cells of each level covered by the next finer level (what
/// VTK blanks).
pub fn covered_cells() -> Vec<usize> {
    let bs = boxes();
    (0..bs.len())
        .map(|l| {
            if l + 1 == bs.len() {
                return 0;
            }
            let mut covered = HashSet::new();
            for fb in &bs[l + 1] {
                let cb = fb.coarsen(RATIOS[l]);
                for b in &bs[l] {
                    let ov = b.intersect(&cb);
                    if !ov.is_empty() {
                        covered.extend(cells(&ov));
                    }
                }
            }
            covered.len()
        })
        .collect()
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
