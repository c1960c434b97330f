//! Ghost fill checks: linear fields through interpolation, constants and
//! exact images through every boundary type, sibling and periodic copies,
//! counts against the layout, bin targets and in-place fills.

use std::sync::Arc;

use proptest::prelude::*;
use quilt_mesh::fill::{
    BinPlacement, BoundaryConditions, BoundaryFace, FillScratch, FillTarget, GhostFill, PhysicalBc,
    UserBoundary, split_bins,
};
use quilt_mesh::interp::Limiter;
use quilt_mesh::{
    Geometry, Hierarchy, HierarchyData, IndexBox, IntVect, LevelGeometry, PatchData, PatchId,
    PatchSpec, Real, Side, SizeLimits, SyntheticSpec, generate, iv,
};

fn bx(lo: [i32; 3], hi: [i32; 3]) -> IndexBox {
    IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2]))
}

fn spec(id: u32, b: IndexBox, parent: Option<u32>) -> PatchSpec {
    PatchSpec {
        id: PatchId(id),
        interior: b,
        parent: parent.map(PatchId),
    }
}

/// Three levels over a 32³ domain, ghost 3: two coarse patches; level 1
/// (ratio 2) has a patch touching the low-x and low-y domain faces and a
/// sibling abutting it; level 2 (ratio `r2`) one patch inside the first.
fn three_levels(r2: i32, periodic: [bool; 3]) -> Hierarchy {
    let g = Geometry::new([0.0; 3], [2.0, 1.0, 1.5], iv(32, 32, 32), &[2, r2])
        .unwrap()
        .with_periodic(periodic);
    let f = r2;
    Hierarchy::new(
        g,
        3,
        SizeLimits { min: 8, max: 64 },
        vec![
            vec![
                spec(0, bx([0, 0, 0], [15, 31, 31]), None),
                spec(1, bx([16, 0, 0], [31, 31, 31]), None),
            ],
            vec![
                spec(10, bx([0, 0, 8], [23, 19, 27]), Some(0)),
                spec(11, bx([24, 4, 10], [43, 23, 25]), Some(1)),
            ],
            vec![spec(
                20,
                bx([4 * f, 2 * f, 12 * f], [14 * f - 1, 12 * f - 1, 20 * f - 1]),
                Some(10),
            )],
        ],
    )
    .unwrap()
}

fn linear(lg: &LevelGeometry, p: &IntVect, c: usize) -> f64 {
    let x = lg.cell_center(p);
    (c as f64 + 1.0) * (0.7 + 1.3 * x.x - 2.1 * x.y + 0.45 * x.z)
}

fn init_linear(h: &Hierarchy, ncomp: usize) -> HierarchyData<f64> {
    let mut d = HierarchyData::new(h, ncomp).unwrap();
    d.init_with(h, |lg, p, v| {
        for (c, x) in v.iter_mut().enumerate() {
            *x = linear(lg, p, c);
        }
    })
    .unwrap();
    // Ghost cells of the old state must not leak into a fill.
    for s in d.states_mut() {
        let i = s.old.interior();
        let db = s.old.data_box();
        for c in 0..ncomp {
            for p in db.iter().filter(|p| !i.contains(p)) {
                s.old.set(c, &p, f64::NAN);
            }
        }
    }
    d
}

fn prepare_all<T: Real>(
    fill: &GhostFill<T>,
    h: &Hierarchy,
    d: &HierarchyData<T>,
) -> Vec<PatchData<T>> {
    let mut s = FillScratch::new();
    h.patches()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut out = PatchData::filled(p.interior(), h.ghost(), d.ncomp(), T::nan()).unwrap();
            let counts = fill
                .prepare(d, i, 0.0, &mut FillTarget::patch(&mut out), &mut s)
                .unwrap();
            assert_eq!(counts.ghosts, p.ghost_counts(), "patch {}", p.id());
            assert_eq!(counts.interior, p.interior().num_cells());
            assert_eq!(
                counts.total(),
                p.ghost_box().num_cells(),
                "every cell written once"
            );
            out
        })
        .collect()
}

#[test]
fn linear_fields_are_exact_inside_the_domain() {
    for r2 in [2, 4] {
        let h = three_levels(r2, [false; 3]);
        let d = init_linear(&h, 2);
        for lim in [Limiter::MinMod, Limiter::MonotonizedCentral] {
            let fill = GhostFill::new(&h, BoundaryConditions::outflow(), lim).unwrap();
            let out = prepare_all(&fill, &h, &d);
            let mut interpolated = 0;
            for (p, o) in h.patches().iter().zip(&out) {
                let lg = h.level_geometry(p.level()).unwrap();
                for q in p.ghost_box().iter().filter(|q| lg.domain.contains(q)) {
                    for c in 0..2 {
                        let (got, want) = (o.get(c, &q), linear(lg, &q, c));
                        assert!(
                            (got - want).abs() < 1e-12,
                            "r2 {r2} {lim:?} patch {} cell {q:?} comp {c}: {got} vs {want}",
                            p.id()
                        );
                    }
                }
                interpolated += p.ghost_counts().interpolated;
            }
            assert!(interpolated > 1000, "the test must exercise interpolation");
        }
    }
}

#[test]
fn piecewise_constant_and_f32() {
    let h = three_levels(2, [false; 3]);
    let mut d = HierarchyData::<f32>::new(&h, 1).unwrap();
    d.init_with(&h, |lg, _, v| v[0] = (lg.level as f32 + 1.0) * 0.25)
        .unwrap();
    let fill = GhostFill::new(
        &h,
        BoundaryConditions::outflow(),
        Limiter::PiecewiseConstant,
    )
    .unwrap();
    let out = prepare_all(&fill, &h, &d);
    for (p, o) in h.patches().iter().zip(&out) {
        // Copied cells carry the level's constant, interpolated ones the
        // coarse level's.
        for q in p.ghost_box().iter() {
            let v = o.get(0, &q);
            let ok = [p.level(), p.level().saturating_sub(1)]
                .iter()
                .any(|&l| v == (l as f32 + 1.0) * 0.25);
            assert!(ok, "patch {} cell {q:?}: {v}", p.id());
        }
    }
    // f32 linear data interpolates to f32 round-off.
    let d = init_linear(&h, 1);
    let mut d32 = HierarchyData::<f32>::new(&h, 1).unwrap();
    for (a, b) in d32.states_mut().iter_mut().zip(d.states()) {
        for (x, y) in a.old.as_mut_slice().iter_mut().zip(b.old.as_slice()) {
            *x = *y as f32;
        }
    }
    let fill = GhostFill::new(
        &h,
        BoundaryConditions::outflow(),
        Limiter::MonotonizedCentral,
    )
    .unwrap();
    let out = prepare_all(&fill, &h, &d32);
    for (p, o) in h.patches().iter().zip(&out) {
        let lg = h.level_geometry(p.level()).unwrap();
        for q in p.ghost_box().iter().filter(|q| lg.domain.contains(q)) {
            assert!((o.get(0, &q) as f64 - linear(lg, &q, 0)).abs() < 2e-5);
        }
    }
}

fn clamp(lg: &LevelGeometry, p: &IntVect) -> IntVect {
    let d = lg.domain;
    iv(
        p.x.clamp(d.lo.x, d.hi.x),
        p.y.clamp(d.lo.y, d.hi.y),
        p.z.clamp(d.lo.z, d.hi.z),
    )
}

fn mirror(lg: &LevelGeometry, p: &IntVect) -> (IntVect, [bool; 3]) {
    let d = lg.domain;
    let mut m = *p;
    let mut flipped = [false; 3];
    for a in 0..3 {
        if p[a] < d.lo[a] {
            m[a] = 2 * d.lo[a] - 1 - p[a];
            flipped[a] = true;
        } else if p[a] > d.hi[a] {
            m[a] = 2 * d.hi[a] + 1 - p[a];
            flipped[a] = true;
        }
    }
    (m, flipped)
}

#[test]
fn outflow_and_reflecting_images_including_corners() {
    let h = three_levels(2, [false; 3]);
    let d = init_linear(&h, 5);
    let out = prepare_all(
        &GhostFill::new(
            &h,
            BoundaryConditions::outflow(),
            Limiter::MonotonizedCentral,
        )
        .unwrap(),
        &h,
        &d,
    );
    let mut physical = 0;
    for (p, o) in h.patches().iter().zip(&out) {
        let lg = h.level_geometry(p.level()).unwrap();
        for q in p.ghost_box().iter().filter(|q| !lg.domain.contains(q)) {
            physical += 1;
            for c in 0..5 {
                let want = linear(lg, &clamp(lg, &q), c);
                assert!((o.get(c, &q) - want).abs() < 1e-12, "outflow {q:?}");
            }
        }
    }
    assert!(physical > 1000);

    let bc = BoundaryConditions::uniform(PhysicalBc::Reflecting).with_vector([1, 2, 3]);
    let out = prepare_all(&GhostFill::new(&h, bc, Limiter::MinMod).unwrap(), &h, &d);
    for (p, o) in h.patches().iter().zip(&out) {
        let lg = h.level_geometry(p.level()).unwrap();
        for q in p.ghost_box().iter().filter(|q| !lg.domain.contains(q)) {
            let (m, flipped) = mirror(lg, &q);
            for c in 0..5 {
                let negate = (1..=3).contains(&c) && flipped[c - 1];
                let want = linear(lg, &m, c) * if negate { -1.0 } else { 1.0 };
                assert!(
                    (o.get(c, &q) - want).abs() < 1e-12,
                    "reflect {q:?} comp {c}"
                );
            }
        }
    }
}

/// Sets the physical ghosts to the exact linear field (a Dirichlet
/// condition written by the user), counting its calls.
#[derive(Debug, Default)]
struct Exact {
    calls: std::sync::atomic::AtomicUsize,
}

impl UserBoundary<f64> for Exact {
    fn fill(&self, face: &BoundaryFace<'_>, target: &mut FillTarget<'_, f64>) {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(!face.level.domain.contains(&face.region.lo));
        for p in face.region.iter() {
            for c in 0..target.ncomp() {
                target.set(c, &p, linear(face.level, &p, c)).unwrap();
            }
        }
    }
}

#[test]
fn constants_through_every_boundary_type_and_user_conditions() {
    let user = Arc::new(Exact::default());
    let faces: Vec<PhysicalBc<f64>> = vec![
        PhysicalBc::Outflow,
        PhysicalBc::Reflecting,
        PhysicalBc::User(user.clone()),
    ];
    for periodic in [[false; 3], [true, false, true]] {
        let h = three_levels(4, periodic);
        let g = h.geometry();
        for (n, bc) in faces.iter().enumerate() {
            // A constant state at rest: every condition keeps it.
            let mut d = HierarchyData::<f64>::new(&h, 5).unwrap();
            d.init_with(&h, |_, _, v| v.copy_from_slice(&[1.5, 0.0, 0.0, 0.0, 2.5]))
                .unwrap();
            let mut bcs = BoundaryConditions::for_geometry(g, bc.clone()).with_vector([1, 2, 3]);
            if n == 2 {
                // The user condition writes the linear field; test it on
                // linear data instead.
                d = init_linear(&h, 5);
                bcs = bcs
                    .with_face(1, Side::Lo, PhysicalBc::User(user.clone()))
                    .unwrap();
            }
            let fill = GhostFill::new(&h, bcs, Limiter::MonotonizedCentral).unwrap();
            let out = prepare_all(&fill, &h, &d);
            for (p, o) in h.patches().iter().zip(&out) {
                let lg = h.level_geometry(p.level()).unwrap();
                for q in p.ghost_box().iter() {
                    for c in 0..5 {
                        let want = if n == 2 {
                            if lg.periodic_domain().contains(&q) {
                                continue;
                            }
                            linear(lg, &q, c)
                        } else {
                            [1.5, 0.0, 0.0, 0.0, 2.5][c]
                        };
                        assert!(
                            (o.get(c, &q) - want).abs() < 1e-12,
                            "{} periodic {periodic:?} patch {} {q:?}",
                            ["outflow", "reflecting", "user"][n],
                            p.id()
                        );
                    }
                }
            }
        }
    }
    assert!(user.calls.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

#[test]
fn periodic_copies_are_exact() {
    // Periodic along x and z. Component 0 is, on level 0, an arbitrary
    // function of the wrapped index (only copies reach it); component 1 is
    // linear in y on every level, so the finer levels interpolate it
    // exactly across the periodic faces too.
    let h = three_levels(2, [true, false, true]);
    let f = |lg: &LevelGeometry, p: &IntVect, c: usize| {
        let n = lg.domain.size();
        let (x, z) = (p.x.rem_euclid(n.x), p.z.rem_euclid(n.z));
        if c == 0 {
            ((x * 37 + z * 11) % 17) as f64
        } else {
            2.0 * lg.cell_center(p).y + 1.0
        }
    };
    let mut d = HierarchyData::<f64>::new(&h, 2).unwrap();
    d.init_with(&h, |lg, p, v| {
        for (c, x) in v.iter_mut().enumerate() {
            *x = f(lg, p, c);
        }
    })
    .unwrap();
    let bc = BoundaryConditions::for_geometry(h.geometry(), PhysicalBc::Outflow);
    let fill = GhostFill::new(&h, bc, Limiter::MonotonizedCentral).unwrap();
    let out = prepare_all(&fill, &h, &d);
    let mut across = [0; 3];
    for (p, o) in h.patches().iter().zip(&out) {
        let lg = h.level_geometry(p.level()).unwrap();
        for q in p.ghost_box().iter() {
            if q.y < lg.domain.lo.y || q.y > lg.domain.hi.y {
                continue;
            }
            if !lg.domain.contains(&q) {
                across[p.level()] += 1;
            }
            let comps = if p.level() == 0 { 0..2 } else { 1..2 };
            for c in comps {
                assert!(
                    (o.get(c, &q) - f(lg, &q, c)).abs() < 1e-12,
                    "patch {} {q:?}",
                    p.id()
                );
            }
        }
    }
    assert!(
        across[0] > 100 && across[1] > 100,
        "the test must cross periodic faces: {across:?}"
    );
    // In place, periodic self-images come from the patch's own interior.
    let mut dd = d.clone();
    fill.fill_all_in_place(&mut dd, 0.0).unwrap();
    let self_images = h
        .patches()
        .iter()
        .enumerate()
        .filter(|(i, p)| p.sibling_overlaps().iter().any(|o| o.source == *i))
        .count();
    assert!(self_images > 0);
    for (s, o) in dd.states().iter().zip(&out) {
        assert_eq!(s.old.as_slice(), o.as_slice());
    }
}

#[test]
fn bins_in_place_and_parallel_agree_with_patch_targets() {
    let h = three_levels(2, [false; 3]);
    let d = init_linear(&h, 3);
    let bc = BoundaryConditions::uniform(PhysicalBc::Reflecting).with_vector([0, 1, 2]);
    let fill = GhostFill::new(&h, bc, Limiter::MonotonizedCentral).unwrap();
    let reference = prepare_all(&fill, &h, &d);

    // Two patches per bin, side by side along x, in a 64³ bin layout.
    let (b, nc) = (64usize, 3usize);
    let placements: Vec<BinPlacement> = h
        .patches()
        .iter()
        .enumerate()
        .map(|(i, p)| BinPlacement {
            bin: i / 2,
            offset: [
                if i % 2 == 0 {
                    0
                } else {
                    64 - p.ghost_box().size().x as usize
                },
                0,
                0,
            ],
            bx: p.ghost_box(),
        })
        .collect();
    // Patches 0 and 1 are 22 + 38 wide: they fit side by side.
    let nbins = h.num_patches().div_ceil(2);
    let mut buf = vec![-7.0f64; nbins * nc * b * b * b];
    let targets = split_bins(&mut buf, b, nc, &placements).unwrap();
    let mut jobs: Vec<_> = targets.into_iter().enumerate().collect();
    let counts = fill.prepare_many(&d, 0.0, &mut jobs).unwrap();
    drop(jobs);
    let mut written = 0;
    for (i, p) in h.patches().iter().enumerate() {
        assert_eq!(counts[i].ghosts, p.ghost_counts());
        let pl = placements[i];
        for q in p.ghost_box().iter() {
            let l = q - p.ghost_box().lo;
            for c in 0..nc {
                let at = ((pl.bin * nc + c) * b + pl.offset[2] + l.z as usize) * b * b
                    + (pl.offset[1] + l.y as usize) * b
                    + pl.offset[0]
                    + l.x as usize;
                assert_eq!(buf[at], reference[i].get(c, &q));
                written += 1;
            }
        }
    }
    assert_eq!(buf.iter().filter(|&&v| v != -7.0).count(), written);

    // In place: the old state's ghosts become the prepared values.
    let mut dd = d.clone();
    fill.fill_all_in_place(&mut dd, 0.0).unwrap();
    for (s, r) in dd.states().iter().zip(&reference) {
        assert_eq!(s.old.as_slice(), r.as_slice());
    }
}

#[test]
fn bad_input_is_an_error() {
    let h = three_levels(2, [false; 3]);
    let d = init_linear(&h, 2);
    // Periodic condition on a non-periodic axis, and the reverse.
    let e = GhostFill::new(
        &h,
        BoundaryConditions::<f64>::uniform(PhysicalBc::Periodic),
        Limiter::MinMod,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not periodic"), "{e}");
    let hp = three_levels(2, [true, false, false]);
    let e = GhostFill::new(&hp, BoundaryConditions::<f64>::outflow(), Limiter::MinMod).unwrap_err();
    assert!(e.to_string().contains("axis 0"), "{e}");
    // A vector component beyond the data, a target of the wrong box, a
    // patch index out of range, data of another layout.
    let bc = BoundaryConditions::outflow().with_vector([1, 2, 3]);
    let fill = GhostFill::new(&h, bc, Limiter::MinMod).unwrap();
    let mut s = FillScratch::new();
    let p = &h.patches()[2];
    let mut out = PatchData::<f64>::new(p.interior(), 3, 2).unwrap();
    let e = fill
        .prepare(&d, 2, 0.0, &mut FillTarget::patch(&mut out), &mut s)
        .unwrap_err();
    assert!(e.to_string().contains("component 2"), "{e}");
    let fill = GhostFill::new(&h, BoundaryConditions::outflow(), Limiter::MinMod).unwrap();
    let mut small = PatchData::<f64>::new(p.interior(), 2, 2).unwrap();
    let e = fill
        .prepare(&d, 2, 0.0, &mut FillTarget::patch(&mut small), &mut s)
        .unwrap_err();
    assert!(e.to_string().contains("ghost-grown box"), "{e}");
    let e = fill
        .prepare(&d, 99, 0.0, &mut FillTarget::patch(&mut out), &mut s)
        .unwrap_err();
    assert!(e.to_string().contains("99"), "{e}");
    let other = HierarchyData::<f64>::new(&three_levels(4, [false; 3]), 2).unwrap();
    let p4 = &h.patches()[4];
    let mut out4 = PatchData::<f64>::new(p4.interior(), 3, 2).unwrap();
    let e = fill
        .prepare(&other, 4, 0.0, &mut FillTarget::patch(&mut out4), &mut s)
        .unwrap_err();
    assert!(e.to_string().contains("does not match"), "{e}");
}

fn small_spec(patches: usize, seed: u64, ratio: i32) -> SyntheticSpec {
    SyntheticSpec {
        patches,
        seed,
        ratio,
        domain_cells: 32,
        base_patch: 16,
        limits: SizeLimits { min: 10, max: 32 },
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// On random synthetic hierarchies: counts match the layout, every cell
    /// is written once, linear fields are exact with both limiters.
    #[test]
    fn synthetic_hierarchies_fill_linear_fields_exactly(
        extra in 1usize..24,
        seed in 0u64..1000,
        ratio in prop::sample::select(vec![2, 4]),
        lim in prop::sample::select(vec![Limiter::MinMod, Limiter::MonotonizedCentral]),
        coef in prop::array::uniform4(-3.0f64..3.0),
    ) {
        let h = generate(&small_spec(8 + extra, seed, ratio)).unwrap();
        let mut d = HierarchyData::<f64>::new(&h, 1).unwrap();
        let f = |lg: &LevelGeometry, p: &IntVect| {
            let x = lg.cell_center(p);
            coef[0] + coef[1] * x.x + coef[2] * x.y + coef[3] * x.z
        };
        d.init_with(&h, |lg, p, v| v[0] = f(lg, p)).unwrap();
        let fill = GhostFill::new(&h, BoundaryConditions::outflow(), lim).unwrap();
        let out = prepare_all(&fill, &h, &d);
        for (p, o) in h.patches().iter().zip(&out) {
            let lg = h.level_geometry(p.level()).unwrap();
            for q in p.ghost_box().iter() {
                let want = f(lg, &clamp(lg, &q));
                prop_assert!((o.get(0, &q) - want).abs() < 1e-11, "patch {} {:?}", p.id(), q);
            }
        }
    }
}
