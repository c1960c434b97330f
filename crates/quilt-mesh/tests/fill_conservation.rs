//! Conservation checks: restriction keeps sums to round-off, and a
//! two-level subcycled advection with refluxing conserves the total to
//! 1e-13 relative over many steps (and visibly does not without it).

use proptest::prelude::*;
use quilt_mesh::fill::{BoundaryConditions, FillScratch, GhostFill, PhysicalBc};
use quilt_mesh::flux_register::{FaceFluxes, FluxRegister};
use quilt_mesh::interp::Limiter;
use quilt_mesh::restrict::{TimeLevel, covered_coarse_cells, restrict_hierarchy};
use quilt_mesh::{
    Geometry, Hierarchy, HierarchyData, IndexBox, IntVect, PatchData, PatchId, PatchSpec, Side,
    SizeLimits, SyntheticSpec, generate, iv,
};

/// A deterministic pseudo-random value in `[0.5, 1.5)` per cell.
fn noise(p: &IntVect, c: usize, salt: u64) -> f64 {
    let mut x = (p.x as i64 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (p.y as i64 as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (p.z as i64 as u64).wrapping_mul(0x1656_67B1_9E37_79F9)
        ^ (c as u64 + 1).wrapping_mul(salt);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    0.5 + (x >> 11) as f64 / (1u64 << 53) as f64
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Restriction over random synthetic hierarchies: for every fine level,
    /// the volume-weighted sum over its interiors equals the sum over the
    /// coarse cells it covers, to round-off.
    #[test]
    fn restriction_conserves_sums(extra in 1usize..24, seed in 0u64..1000, ratio in prop::sample::select(vec![2, 4])) {
        let h = generate(&SyntheticSpec {
            patches: 8 + extra,
            seed,
            ratio,
            domain_cells: 32,
            base_patch: 16,
            limits: SizeLimits { min: 10, max: 32 },
            ..Default::default()
        })
        .unwrap();
        let mut d = HierarchyData::<f64>::new(&h, 2).unwrap();
        d.init_with(&h, |lg, p, v| {
            for (c, x) in v.iter_mut().enumerate() {
                *x = noise(p, c, lg.level as u64 + 7);
            }
        })
        .unwrap();
        let before = d.clone();
        restrict_hierarchy(&h, &mut d, TimeLevel::Old).unwrap();
        for l in 1..h.num_levels() {
            let (lg, clg) = (h.level_geometry(l).unwrap(), h.level_geometry(l - 1).unwrap());
            for c in 0..2 {
                let mut fine = 0.0;
                let mut coarse = 0.0;
                for i in h.level_range(l) {
                    // The finer levels were restricted onto level l first.
                    fine += d.old(i).interior_sum(c) * lg.cell_volume();
                    let under = covered_coarse_cells(&h.patches()[i].interior(), lg.ratio);
                    for ci in h.patches_intersecting(l - 1, &under) {
                        coarse += d.old(ci).region_sum(c, &under) * clg.cell_volume();
                    }
                }
                prop_assert!((fine - coarse).abs() <= 1e-13 * fine.abs(), "level {l}: {fine} vs {coarse}");
            }
            // Uncovered coarse cells are untouched.
            for ci in h.level_range(l - 1) {
                let p = &h.patches()[ci];
                for q in p.interior().iter().step_by(7) {
                    let covered = h
                        .level_range(l)
                        .any(|i| covered_coarse_cells(&h.patches()[i].interior(), lg.ratio).contains(&q));
                    if !covered {
                        prop_assert_eq!(d.old(ci).get(0, &q), before.old(ci).get(0, &q));
                    }
                }
            }
        }
    }
}

/// Two levels over a periodic 16³ domain: fine patches A and B abut
/// (partly sharing a face), C touches the periodic boundary.
fn two_levels(r: i32) -> Hierarchy {
    let g = Geometry::with_cubic_cells(iv(16, 16, 16), &[r])
        .unwrap()
        .with_periodic([true; 3]);
    let b = |lo: [i32; 3], hi: [i32; 3]| {
        IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2]))
    };
    let spec = |id: u32, bx: IndexBox, parent: Option<u32>| PatchSpec {
        id: PatchId(id),
        interior: bx,
        parent: parent.map(PatchId),
    };
    Hierarchy::new(
        g,
        1,
        SizeLimits { min: 4, max: 64 },
        vec![
            vec![
                spec(0, b([0, 0, 0], [7, 15, 15]), None),
                spec(1, b([8, 0, 0], [15, 15, 15]), None),
            ],
            vec![
                spec(10, b([2, 2, 3], [7, 9, 8]).refine(r), Some(0)),
                spec(11, b([8, 4, 4], [13, 7, 10]).refine(r), Some(1)),
                spec(12, b([0, 12, 12], [3, 15, 15]).refine(r), Some(0)),
            ],
        ],
    )
    .unwrap()
}

const VEL: [f64; 3] = [1.0, -0.6, 0.35];

/// Upwind time-integrated fluxes `dt·a_d·U_upwind` on every face of the
/// interior along each axis (component-major, `x` fastest over
/// `interior.faces(d)`), and the conservative update of `new` from `old`.
fn upwind(old: &PatchData<f64>, new: &mut PatchData<f64>, dt: f64, dx: f64) -> [Vec<f64>; 3] {
    let interior = old.interior();
    let nc = old.ncomp();
    let fluxes: [Vec<f64>; 3] = std::array::from_fn(|d| {
        let faces = interior.faces(d);
        let mut e = iv(0, 0, 0);
        e[d] = 1;
        let mut out = Vec::with_capacity(nc * faces.num_cells() as usize);
        for c in 0..nc {
            for f in faces.iter() {
                let up = if VEL[d] > 0.0 { f - e } else { f };
                out.push(dt * VEL[d] * old.get(c, &up));
            }
        }
        out
    });
    for c in 0..nc {
        for p in interior.iter() {
            let mut u = old.get(c, &p);
            for (d, fl) in fluxes.iter().enumerate() {
                let faces = interior.faces(d);
                let n = faces.num_cells() as usize;
                let mut e = iv(0, 0, 0);
                e[d] = 1;
                u -= (fl[c * n + faces.offset(&(p + e))] - fl[c * n + faces.offset(&p)]) / dx;
            }
            new.set(c, &p, u);
        }
    }
    fluxes
}

/// The six boundary faces of `interior` taken from whole-patch face arrays,
/// in quilt-sweep's per-patch flux-buffer order.
fn sweep_block(interior: &IndexBox, nc: usize, fluxes: &[Vec<f64>; 3]) -> Vec<f64> {
    let mut out = Vec::new();
    for (d, fl) in fluxes.iter().enumerate() {
        let faces = interior.faces(d);
        let n = faces.num_cells() as usize;
        for side in Side::BOTH {
            let bf = interior.boundary_faces(d, side);
            for c in 0..nc {
                for f in bf.iter() {
                    out.push(fl[c * n + faces.offset(&f)]);
                }
            }
        }
    }
    out
}

/// Runs `steps` coarse steps of subcycled upwind advection; returns the
/// largest relative change of the total of each component.
fn run(r: i32, steps: usize, reflux: bool) -> f64 {
    let h = two_levels(r);
    let nc = 2;
    let mut d = HierarchyData::<f64>::new(&h, nc).unwrap();
    d.init_with(&h, |lg, p, v| {
        for (c, x) in v.iter_mut().enumerate() {
            *x = noise(p, c, lg.level as u64 + 1);
        }
    })
    .unwrap();
    restrict_hierarchy(&h, &mut d, TimeLevel::Old).unwrap();
    let bc = BoundaryConditions::for_geometry(h.geometry(), PhysicalBc::Outflow);
    let fill = GhostFill::new(&h, bc, Limiter::MonotonizedCentral).unwrap();
    let mut scratch = FillScratch::new();
    let mut reg = FluxRegister::new(&h, 1, nc).unwrap();
    let total = |d: &HierarchyData<f64>, c: usize| d.level_integral(&h, 0, c).unwrap();
    let start: Vec<f64> = (0..nc).map(|c| total(&d, c)).collect();
    let dxc = h.level_geometry(0).unwrap().dx.x;
    let dxf = h.level_geometry(1).unwrap().dx.x;
    let dtc = 0.8 * dxc / VEL.iter().map(|v| v.abs()).sum::<f64>();
    let mut worst: f64 = 0.0;
    for _ in 0..steps {
        reg.reset();
        for i in h.level_range(0) {
            fill.fill_in_place(&mut d, i, 0.0, &mut scratch).unwrap();
            let s = d.get_mut(i).unwrap();
            let fl = upwind(&s.old, &mut s.new, dtc, dxc);
            for (axis, f) in fl.iter().enumerate() {
                let faces = FaceFluxes::new(f, h.patches()[i].interior().faces(axis), nc).unwrap();
                reg.add_coarse(i, axis, &faces, 1.0).unwrap();
            }
        }
        for sub in 0..r {
            for i in h.level_range(1) {
                fill.fill_in_place(&mut d, i, 0.0, &mut scratch).unwrap();
            }
            for i in h.level_range(1) {
                let s = d.get_mut(i).unwrap();
                let fl = upwind(&s.old, &mut s.new, dtc / r as f64, dxf);
                let block = sweep_block(&h.patches()[i].interior(), nc, &fl);
                reg.add_fine_patch_block(i, &block, 1.0).unwrap();
                if sub + 1 < r {
                    s.swap();
                }
            }
        }
        restrict_hierarchy(&h, &mut d, TimeLevel::New).unwrap();
        if reflux {
            reg.reflux(&h, &mut d, TimeLevel::New).unwrap();
        }
        d.swap_all();
        for (c, s) in start.iter().enumerate() {
            worst = worst.max(((total(&d, c) - s) / s).abs());
        }
    }
    worst
}

#[test]
fn refluxing_conserves_totals_over_many_steps() {
    for r in [2, 4] {
        let with = run(r, 40, true);
        assert!(
            with <= 1e-13,
            "ratio {r}: relative drift {with:e} with refluxing"
        );
        let without = run(r, 5, false);
        eprintln!("ratio {r}: drift {with:e} with refluxing, {without:e} without");
        assert!(
            without > 1e-6,
            "ratio {r}: drift {without:e} without refluxing (test not sensitive)"
        );
    }
}

#[test]
fn register_faces_match_the_layout() {
    let h = two_levels(2);
    let reg = FluxRegister::new(&h, 1, 1).unwrap();
    // Every coarse–fine face cell of every fine patch, counted in coarse
    // faces (ratio² fine faces each).
    let fine_faces: i64 = h
        .level_patches(1)
        .iter()
        .flat_map(|p| {
            (0..3).flat_map(move |a| Side::BOTH.map(|s| p.coarse_fine_faces(a, s).num_cells()))
        })
        .sum();
    assert_eq!(reg.num_faces() as i64 * 4, fine_faces);
    let listed: i64 = h
        .level_range(0)
        .flat_map(|i| reg.coarse_faces(i))
        .map(|(_, f)| f.num_cells())
        .sum();
    assert_eq!(listed as usize, reg.num_faces());
    // Patch 12's low x face crosses the periodic boundary: its coarse
    // cells are x = 15 of coarse patch 1.
    assert!(
        reg.coarse_faces(1)
            .iter()
            .any(|&(a, f)| a == 0 && f.lo.x == 16 && f.lo.y == 12)
    );
}
