//! Regrid checks: layout invariants and conservation of the moved data.

use proptest::prelude::*;

use super::*;
use crate::geometry::Geometry;
use crate::hierarchy::{BufferPool, PatchId, PatchSpec, SizeLimits};
use crate::index::{IndexBox, IntVect, iv};
use crate::patch_data::PatchData;
use crate::tag::{GradientDetector, TagCriterion, TagInput};

const NCOMP: usize = 2;

/// 32³ base cells in 2³ patches of 16³, ratios 2 then `r2`, ghost 2.
fn base(r2: i32) -> Hierarchy {
    let g = Geometry::with_cubic_cells(iv(32, 32, 32), &[2, r2]).unwrap();
    let mut specs = Vec::new();
    for k in 0..2 {
        for j in 0..2 {
            for i in 0..2 {
                let lo = iv(16 * i, 16 * j, 16 * k);
                specs.push(PatchSpec {
                    id: PatchId(specs.len() as u32),
                    interior: IndexBox::from_lo_size(lo, iv(16, 16, 16)),
                    parent: None,
                });
            }
        }
    }
    Hierarchy::new(g, 2, SizeLimits::default(), vec![specs]).unwrap()
}

/// A smooth background with a density jump on a sphere.
fn init(h: &Hierarchy) -> HierarchyData<f64> {
    let mut d = HierarchyData::new(h, NCOMP).unwrap();
    d.init_with(h, |lg, p, v| {
        let x = lg.cell_center(p);
        let r = ((x.x - 0.5).powi(2) + (x.y - 0.45).powi(2) + (x.z - 0.5).powi(2)).sqrt();
        v[0] = 1.0 + 0.3 * (4.0 * x.x).sin() * x.y + if r < 0.25 { 2.0 } else { 0.0 };
        v[1] = 0.5 + x.z * x.z - 0.2 * x.x;
    })
    .unwrap();
    d
}

/// Per-patch tags from the gradient detector on component 0.
fn detector_tags(h: &Hierarchy, d: &HierarchyData<f64>, tol: f64) -> Vec<TagBox> {
    let det = GradientDetector::new(tol).unwrap();
    h.patches()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let lg = h.level_geometry(p.level()).unwrap();
            let input = TagInput::from_patch(d.old(i), 0, [lg.dx.x, lg.dx.y, lg.dx.z]).unwrap();
            let mut t = TagBox::new(p.interior()).unwrap();
            det.tag(&input, &mut t).unwrap();
            t
        })
        .collect()
}

/// [`base`], its data, and the regrid of both on the gradient detector's
/// tags.
fn refined(r2: i32) -> (Hierarchy, HierarchyData<f64>, Regridded<f64>) {
    let h0 = base(r2);
    let d0 = init(&h0);
    let tags = detector_tags(&h0, &d0, 4.0);
    let r1 = regrid(&h0, d0.clone(), &tags, &RegridOptions::default()).unwrap();
    (h0, d0, r1)
}

/// Tags where `f(level, cell)` holds.
fn analytic_tags(h: &Hierarchy, f: impl Fn(usize, IntVect) -> bool) -> Vec<TagBox> {
    h.patches()
        .iter()
        .map(|p| {
            let mut t = TagBox::new(p.interior()).unwrap();
            for c in p.interior().iter() {
                if f(p.level(), c) {
                    t.set(&c).unwrap();
                }
            }
            t
        })
        .collect()
}

/// Tags on a shell (level 0) and on a smaller half shell (level 1), so
/// that a level 2 appears and the level-1 boxes move.
fn shell_tags(h1: &Hierarchy) -> Vec<TagBox> {
    analytic_tags(h1, |l, c| {
        let s = if l == 0 { 1.0 } else { 2.0 };
        let x = (c.cast::<f64>().add_scalar(0.5)) / s - nalgebra::Vector3::new(20.0, 14.0, 16.0);
        let r = x.norm();
        if l == 0 {
            (6.0..9.0).contains(&r)
        } else {
            (7.0..8.0).contains(&r) && x.x < 0.0
        }
    })
}

/// Checks the moved data: level 0 unchanged, old same-level data copied
/// exactly, every other fine cell interpolated conservatively from the new
/// coarser level. Returns the largest relative conservation error.
fn check_transfer(old_h: &Hierarchy, old: &HierarchyData<f64>, r: &Regridded<f64>) -> f64 {
    let (h, d) = (&r.hierarchy, &r.data);
    for i in h.level_range(0) {
        assert_eq!(d.old(i), old.old(i), "level 0 patch {i} changed");
    }
    let mut worst = 0.0f64;
    for l in 1..h.num_levels() {
        let ratio = h.geometry().ratios()[l];
        let (mut copied, mut interpolated) = (0i64, 0i64);
        for (n, p) in h.level_patches(l).iter().enumerate() {
            let i = h.level_range(l).start + n;
            let fine = d.old(i);
            let olds = if l < old_h.num_levels() {
                old_h.patches_intersecting(l, &p.interior())
            } else {
                Vec::new()
            };
            for c in p.interior().coarsen(ratio).iter() {
                let cells = IndexBox::new(c, c).refine(ratio);
                let covered = olds
                    .iter()
                    .filter(|&&o| old_h.patches()[o].interior().contains_box(&cells))
                    .count();
                if covered > 0 {
                    let o = olds
                        .iter()
                        .copied()
                        .find(|&o| old_h.patches()[o].interior().contains_box(&cells))
                        .unwrap();
                    for f in cells.iter() {
                        for k in 0..NCOMP {
                            assert_eq!(
                                fine.get(k, &f),
                                old.old(o).get(k, &f),
                                "copied value at {f:?}"
                            );
                        }
                    }
                    copied += cells.num_cells();
                    continue;
                }
                // Old fine patches are aligned to the ratio, so a coarse
                // cell's fine cells are either all old or all new.
                assert!(
                    olds.iter()
                        .all(|&o| !old_h.patches()[o].interior().intersects(&cells))
                );
                interpolated += cells.num_cells();
                let q = h.patches_intersecting(l - 1, &IndexBox::new(c, c))[0];
                for k in 0..NCOMP {
                    let cv = d.old(q).get(k, &c);
                    let mean = cells.iter().map(|f| fine.get(k, &f)).sum::<f64>()
                        / cells.num_cells() as f64;
                    worst = worst.max((mean - cv).abs() / cv.abs().max(1e-300));
                }
            }
        }
        assert_eq!(r.stats.copied[l], copied, "level {l} copied cells");
        assert_eq!(
            r.stats.interpolated[l], interpolated,
            "level {l} interpolated cells"
        );
    }
    worst
}

/// The volume-weighted total of component `k` over the cells of level `l`
/// not covered by level `l + 1`, summed over levels (the composite integral).
fn composite_integral(h: &Hierarchy, d: &HierarchyData<f64>, k: usize) -> f64 {
    let mut total = 0.0;
    for l in 0..h.num_levels() {
        let vol = h.level_geometry(l).unwrap().cell_volume();
        for (n, p) in h.level_patches(l).iter().enumerate() {
            let i = h.level_range(l).start + n;
            let mut sum = d.old(i).interior_sum(k);
            if l + 1 < h.num_levels() {
                let r = h.geometry().ratios()[l + 1];
                for c in &h.level_patches(l + 1).to_vec() {
                    let under = c.interior().coarsen(r).intersect(&p.interior());
                    sum -= d.old(i).region_sum(k, &under);
                }
            }
            total += sum * vol;
        }
    }
    total
}

#[test]
fn two_regrids_nest_and_conserve() {
    let h0 = base(4);
    let d0 = init(&h0);
    let tags = detector_tags(&h0, &d0, 4.0);
    let tagged: u64 = tags.iter().map(TagBox::count).sum();
    assert!(tagged > 0);
    let opts = RegridOptions::default();
    let r1 = regrid(&h0, d0.clone(), &tags, &opts).unwrap();
    assert_eq!(r1.hierarchy.num_levels(), 2);
    // Every tag lies under level 1.
    for t in &tags {
        for c in t.iter() {
            let f = IndexBox::new(c, c).refine(2);
            assert!(
                !r1.hierarchy.patches_intersecting(1, &f).is_empty(),
                "tag {c:?} not refined"
            );
        }
    }
    let e1 = check_transfer(&h0, &d0, &r1);
    assert!(e1 < 1e-14, "conservation error {e1}");
    // Level 1 is restriction-consistent with level 0 (all interpolated), so
    // the composite integral equals the level-0 integral.
    for k in 0..NCOMP {
        let before = composite_integral(&h0, &d0, k);
        let after = composite_integral(&r1.hierarchy, &r1.data, k);
        assert!(
            (after - before).abs() <= 1e-13 * before.abs(),
            "component {k}: {before} -> {after}"
        );
    }

    // Second regrid: tags on a shell (level 0) and on a smaller shell
    // (level 1, so a level 2 appears at ratio 4); the level-1 boxes move.
    let h1 = &r1.hierarchy;
    let tags = shell_tags(h1);
    let r2 = regrid(h1, r1.data.clone(), &tags, &opts).unwrap();
    assert_eq!(r2.hierarchy.num_levels(), 3);
    assert!(
        r2.stats.copied[1] > 0 && r2.stats.interpolated[1] > 0,
        "{:?}",
        r2.stats
    );
    assert_eq!(r2.stats.copied[2], 0);
    let e2 = check_transfer(h1, &r1.data, &r2);
    assert!(e2 < 1e-14, "conservation error {e2}");
    // The same transfer in recycled memory (buffers full of NaN, of every
    // size) gives the same interiors: ghost cells and new states are left
    // as the memory held them, and no NaN reaches an interior cell.
    let mut pool = BufferPool::new();
    for d in [&r1.data, &r2.data] {
        for s in d.states() {
            let n = PatchData::<f64>::len_for(&s.interior(), s.old.ghost(), NCOMP).unwrap();
            for len in [n, n / 2 + 1] {
                pool.put(vec![f64::NAN; len]);
            }
        }
    }
    let (recycled, stats) =
        transfer_in(h1, r1.data.clone(), &r2.hierarchy, opts.limiter, &mut pool).unwrap();
    assert_eq!(stats, r2.stats);
    for (a, b) in recycled.states().iter().zip(r2.data.states()) {
        assert_eq!(a.interior(), b.interior());
        assert_eq!(a.new.data_box(), b.new.data_box());
        for c in 0..NCOMP {
            for p in a.interior().iter() {
                assert_eq!(
                    a.old.get(c, &p).to_bits(),
                    b.old.get(c, &p).to_bits(),
                    "recycled memory changed the transfer at {p:?}"
                );
            }
        }
    }
    assert!(!pool.is_empty());
    // Patches whose box did not change keep their id.
    for p in r2.hierarchy.patches() {
        if let Some(i) = h1.index_of(p.id()) {
            assert_eq!(h1.patches()[i].interior(), p.interior());
            assert_eq!(h1.patches()[i].level(), p.level());
        }
    }
}

#[test]
fn no_tags_remove_the_fine_levels() {
    let (h0, d0, r1) = refined(2);
    assert_eq!(r1.hierarchy.num_levels(), 2);
    let empty: Vec<TagBox> = r1
        .hierarchy
        .patches()
        .iter()
        .map(|p| TagBox::new(p.interior()).unwrap())
        .collect();
    let r2 = regrid(
        &r1.hierarchy,
        r1.data.clone(),
        &empty,
        &RegridOptions::default(),
    )
    .unwrap();
    assert_eq!(r2.hierarchy.num_levels(), 1);
    assert_eq!(r2.data.states(), d0.states());
    // max_levels caps the depth.
    let capped = RegridOptions {
        max_levels: 1,
        ..Default::default()
    };
    let r3 = regrid(&h0, d0.clone(), &detector_tags(&h0, &d0, 4.0), &capped).unwrap();
    assert_eq!(r3.hierarchy.num_levels(), 1);
}

#[test]
fn bad_input_is_reported() {
    let h0 = base(2);
    let d0 = init(&h0);
    let tags = detector_tags(&h0, &d0, 4.0);
    assert!(matches!(
        regrid(&h0, d0.clone(), &tags[1..], &RegridOptions::default()),
        Err(RegridError::TagCount {
            tags: 7,
            patches: 8
        })
    ));
    let bad = RegridOptions {
        tag_buffer: -1,
        ..Default::default()
    };
    assert!(matches!(
        regrid(&h0, d0.clone(), &tags, &bad),
        Err(RegridError::BadOption {
            option: "tag_buffer",
            ..
        })
    ));
    let bad = RegridOptions {
        efficiency: 1.5,
        ..Default::default()
    };
    assert!(matches!(
        regrid(&h0, d0.clone(), &tags, &bad),
        Err(RegridError::Cluster(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Random blobs of tags on every level, three regrids in a row: every
    /// result is a valid hierarchy (nesting, sizes, alignment are checked by
    /// `Hierarchy::new`) and the data moves conservatively.
    #[test]
    fn random_regrids_stay_valid_and_conservative(
        blobs in prop::collection::vec((prop::array::uniform3(0.1f64..0.9), 0.03f64..0.15), 1..4),
        r2 in prop::sample::select(vec![2, 4]),
        limiter in prop::sample::select(vec![Limiter::PiecewiseConstant, Limiter::MinMod, Limiter::MonotonizedCentral]),
    ) {
        let mut h = base(r2);
        let mut d = init(&h);
        let opts = RegridOptions { limiter, ..Default::default() };
        for step in 0..3 {
            let shift = 0.05 * step as f64;
            let tags = analytic_tags(&h, |l, c| {
                let lg = h.level_geometry(l).unwrap();
                let x = lg.cell_center(&c);
                blobs.iter().any(|(b, rad)| {
                    let dx = [x.x - b[0] - shift, x.y - b[1], x.z - b[2]];
                    (dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2]).sqrt() < *rad
                })
            });
            let r = regrid(&h, d.clone(), &tags, &opts).unwrap();
            let e = check_transfer(&h, &d, &r);
            prop_assert!(e < 1e-13, "step {}: conservation error {}", step, e);
            h = r.hierarchy;
            d = r.data;
        }
    }
}

/// A 20³ periodic box (axes as given) in 2³ base patches of 10³, ratios
/// 2 and 2, ghost 3, patches of 16..=28 cells with ghosts: the integrator's
/// periodic test deck at the mesh level.
fn periodic_base(periodic: [bool; 3]) -> Hierarchy {
    let g = Geometry::with_cubic_cells(iv(20, 20, 20), &[2, 2])
        .unwrap()
        .with_periodic(periodic);
    let mut specs = Vec::new();
    for k in 0..2 {
        for j in 0..2 {
            for i in 0..2 {
                specs.push(PatchSpec {
                    id: PatchId(specs.len() as u32),
                    interior: IndexBox::from_lo_size(iv(10 * i, 10 * j, 10 * k), iv(10, 10, 10)),
                    parent: None,
                });
            }
        }
    }
    Hierarchy::new(g, 3, SizeLimits { min: 16, max: 28 }, vec![specs]).unwrap()
}

/// `c` mapped into the domain along periodic axes; `None` when it lies
/// outside along a non-periodic one.
fn wrap(lg: &crate::geometry::LevelGeometry, c: IntVect) -> Option<IntVect> {
    let (lo, n) = (lg.domain.lo, lg.domain.size());
    let mut w = c;
    for d in 0..3 {
        if lg.periodic[d] {
            w[d] = lo[d] + (c[d] - lo[d]).rem_euclid(n[d]);
        } else if !(lo[d]..=lg.domain.hi[d]).contains(&c[d]) {
            return None;
        }
    }
    Some(w)
}

/// Proper nesting cell by cell, periodic images by wrapping (independent
/// of the box arithmetic `Hierarchy::new` uses): every coarse cell under a
/// fine patch's ghost-grown box belongs to a coarse patch after wrapping.
fn assert_properly_nested(h: &Hierarchy) {
    for l in 1..h.num_levels() {
        let clg = h.level_geometry(l - 1).unwrap();
        let r = h.geometry().ratios()[l];
        for p in h.level_patches(l) {
            for c in p.interior().grow(h.ghost()).coarsen(r).iter() {
                if let Some(w) = wrap(clg, c) {
                    assert!(
                        !h.patches_intersecting(l - 1, &IndexBox::new(w, w))
                            .is_empty(),
                        "level {l} patch {} not nested at coarse cell {c:?} (image {w:?})",
                        p.interior()
                    );
                }
            }
        }
    }
}

/// Tags of a ball of radius `rad` around `centre` (periodic distance along
/// periodic axes) on every level below the finest the geometry allows.
fn periodic_ball_tags(h: &Hierarchy, centre: [f64; 3], rad: f64) -> Vec<TagBox> {
    let per = h.geometry().periodic();
    let top = h.geometry().num_levels() - 1;
    analytic_tags(h, |l, c| {
        if l >= top {
            return false;
        }
        let x = h.level_geometry(l).unwrap().cell_center(&c);
        let mut r2 = 0.0;
        for d in 0..3 {
            let mut dx = (x[d] - centre[d]).abs();
            if per[d] {
                dx = dx.min(1.0 - dx);
            }
            r2 += dx * dx;
        }
        r2 < rad * rad
    })
}

/// Every tag and every cell within the tag buffer of it (across periodic
/// faces by wrapping) lies under the next finer level.
fn assert_tags_refined(old: &Hierarchy, tags: &[TagBox], new: &Hierarchy, buffer: i32) {
    for (i, t) in tags.iter().enumerate() {
        let l = old.patches()[i].level();
        if l + 1 >= new.num_levels() {
            assert!(!t.any(), "level {l} tags but no level {}", l + 1);
            continue;
        }
        let lg = old.level_geometry(l).unwrap();
        let r = new.geometry().ratios()[l + 1];
        for c in t.iter() {
            for b in IndexBox::new(c, c).grow(buffer).iter() {
                let Some(w) = wrap(lg, b) else { continue };
                let f = IndexBox::new(w, w).refine(r);
                assert!(
                    new.patches_intersecting(l + 1, &f)
                        .iter()
                        .any(|&q| new.patches()[q].interior().contains_box(&f)),
                    "level {l} cell {w:?} (buffer of tag {c:?}) not refined"
                );
            }
        }
    }
}

/// A ball moving across the periodic x face, one regrid per position, three
/// levels: before periodic images counted for nesting, the new level 1 was
/// not made to cover the ghost cells of a level-2 patch at the face through
/// their images, and `Hierarchy::new` rejected the layout with `NotNested`.
#[test]
fn periodic_regrids_nest_across_the_faces() {
    let mut h = periodic_base([true; 3]);
    let mut d = init(&h);
    let opts = RegridOptions {
        tag_buffer: 1,
        ..Default::default()
    };
    let (mut straddled, mut deep) = (0, 0);
    for step in 0..12 {
        let x = (0.86 + 0.025 * step as f64).rem_euclid(1.0);
        let tags = periodic_ball_tags(&h, [x, 0.5, 0.47], 0.13);
        let r = regrid(&h, d.clone(), &tags, &opts)
            .unwrap_or_else(|e| panic!("regrid {step} (ball at x = {x}): {e}"));
        assert_properly_nested(&r.hierarchy);
        assert_tags_refined(&h, &tags, &r.hierarchy, opts.tag_buffer);
        let e = check_transfer(&h, &d, &r);
        assert!(e < 1e-13, "regrid {step}: conservation error {e}");
        if r.hierarchy.num_levels() == 3 {
            deep += 1;
            let n = r.hierarchy.level_geometry(2).unwrap().domain.hi.x;
            let lv2 = r.hierarchy.level_patches(2);
            if lv2.iter().any(|p| p.interior().lo.x == 0)
                && lv2.iter().any(|p| p.interior().hi.x == n)
            {
                straddled += 1;
            }
        }
        h = r.hierarchy;
        d = r.data;
    }
    assert!(deep >= 10, "three levels in only {deep} of 12 regrids");
    assert!(
        straddled >= 3,
        "level 2 straddled the x face in only {straddled} regrids"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Balls moving in any direction across periodic faces (random periodic
    /// axes, random tag buffer): every regrid gives a properly nested
    /// hierarchy in which the buffered tags are refined through their
    /// periodic images, and data moves conservatively.
    #[test]
    fn periodic_random_regrids_nest(
        periodic in prop::array::uniform3(any::<bool>()),
        start in prop::array::uniform3(0.0f64..1.0),
        vel in prop::array::uniform3(-0.06f64..0.06),
        rad in 0.06f64..0.16,
        buffer in 0i32..3,
    ) {
        let mut h = periodic_base(periodic);
        let mut d = init(&h);
        let opts = RegridOptions { tag_buffer: buffer, ..Default::default() };
        for step in 0..5 {
            let c = [0, 1, 2].map(|k| (start[k] + vel[k] * step as f64).rem_euclid(1.0));
            let tags = periodic_ball_tags(&h, c, rad);
            let r = regrid(&h, d.clone(), &tags, &opts);
            prop_assert!(r.is_ok(), "regrid {}: {}", step, r.unwrap_err());
            let r = r.unwrap();
            assert_properly_nested(&r.hierarchy);
            assert_tags_refined(&h, &tags, &r.hierarchy, buffer);
            let e = check_transfer(&h, &d, &r);
            prop_assert!(e < 1e-13, "regrid {}: conservation error {}", step, e);
            h = r.hierarchy;
            d = r.data;
        }
    }
}

/// Every patch's old state (ghost cells included) one after another in one
/// store, with the placements of their boxes.
fn flat_store(d: &HierarchyData<f64>) -> (Vec<f64>, Vec<crate::flat::Strided>) {
    let mut store = Vec::new();
    let mut places = Vec::new();
    for s in d.states() {
        let [_, sy, sz] = s.old.strides();
        places.push(crate::flat::Strided {
            base: store.len() as u64,
            sy: sy as u64,
            sz: sz as u64,
            sc: s.old.comp_len() as u64,
        });
        store.extend_from_slice(s.old.as_slice());
    }
    (store, places)
}

/// The flat transfer from `old` on `old_h` onto `new_h` against
/// [`transfer`], every interior value bit for bit.
fn check_flat_transfer(
    old_h: &Hierarchy,
    old: &HierarchyData<f64>,
    new_h: &Hierarchy,
    limiter: crate::interp::Limiter,
) {
    let (want, _) = transfer(old_h, old.clone(), new_h, limiter).unwrap();
    let (old_store, old_places) = flat_store(old);
    // The new store: the new hierarchy's boxes, all NaN.
    let (mut new_store, new_places) = flat_store(&want);
    new_store.fill(f64::NAN);
    let items =
        crate::flat::FlatTransfer::new(old_h, &old_places, new_h, &new_places, NCOMP, limiter)
            .unwrap();
    let mut scratch = vec![f64::NAN; items.scratch_len as usize];
    items.run(&old_store, &mut new_store, &mut scratch).unwrap();
    for (i, p) in new_h.patches().iter().enumerate() {
        let w = want.old(i);
        let [_, sy, sz] = w.strides();
        let gb = p.ghost_box();
        for k in 0..NCOMP {
            for c in p.interior().iter() {
                let d = c - gb.lo;
                let at = new_places[i].base as usize
                    + d.x as usize
                    + sy * d.y as usize
                    + sz * d.z as usize
                    + w.comp_len() * k;
                assert_eq!(
                    new_store[at].to_bits(),
                    w.get(k, &c).to_bits(),
                    "patch {i} (level {}), component {k}, cell {c:?}, {limiter:?}",
                    p.level()
                );
            }
        }
    }
    // Too small a store is an error, not a panic.
    let short = &mut new_store[..items.new_len as usize - 1];
    assert!(items.run(&old_store, short, &mut scratch).is_err());
}

#[test]
fn flat_transfer_moves_data_as_transfer_does_bitwise() {
    use crate::interp::Limiter;
    let (h0, d0, r1) = refined(4);
    let opts = RegridOptions::default();
    check_flat_transfer(&h0, &d0, &r1.hierarchy, Limiter::MonotonizedCentral);
    let h1 = &r1.hierarchy;
    let tags = shell_tags(h1);
    let r2 = regrid(h1, r1.data.clone(), &tags, &opts).unwrap();
    assert!(r2.stats.copied[1] > 0 && r2.stats.interpolated[1] > 0);
    for limiter in [
        Limiter::MonotonizedCentral,
        Limiter::MinMod,
        Limiter::PiecewiseConstant,
    ] {
        check_flat_transfer(h1, &r1.data, &r2.hierarchy, limiter);
    }
    // Back to fewer levels: fine data copied where it survives.
    check_flat_transfer(&r2.hierarchy, &r2.data, h1, Limiter::MinMod);
    // A level 0 that differs is refused, as by the host transfer.
    let (_, places) = flat_store(&r1.data);
    let one = Hierarchy::new(
        h1.geometry().clone(),
        2,
        SizeLimits::default(),
        vec![vec![PatchSpec {
            id: PatchId(0),
            interior: IndexBox::from_lo_size(iv(0, 0, 0), iv(32, 32, 32)),
            parent: None,
        }]],
    )
    .unwrap();
    let (_, one_places) = flat_store(&HierarchyData::new(&one, NCOMP).unwrap());
    assert!(matches!(
        crate::flat::FlatTransfer::new(h1, &places, &one, &one_places, NCOMP, Limiter::MinMod),
        Err(RegridError::Level0Changed)
    ));
    assert!(
        crate::flat::FlatTransfer::new(h1, &places[1..], h1, &places, NCOMP, Limiter::MinMod)
            .is_err()
    );
    // Pieces made before the new store is laid out refuse places of
    // another patch count.
    let pieces = crate::flat::TransferPieces::new(h1, &places, h1, NCOMP, Limiter::MinMod).unwrap();
    let err = pieces.place(&places[1..]).unwrap_err();
    assert!(err.to_string().contains("placements"), "{err}");
}

#[test]
fn flat_tags_match_the_detectors_bitwise() {
    use crate::flat::{FlatTag, TagCriterionSpec, TagDetector, TagField};
    use crate::tag::{ShockDetector, euler_pressure};
    let (_, _, r1) = refined(4);
    let h = &r1.hierarchy;
    // Five components shaped like a gas (density, momentum, energy),
    // ghost cells included.
    let mut d = HierarchyData::<f64>::new(h, 5).unwrap();
    d.init_with(h, |lg, p, v| {
        let x = lg.cell_center(p);
        let r = ((x.x - 0.5).powi(2) + (x.y - 0.45).powi(2) + (x.z - 0.5).powi(2)).sqrt();
        v[0] = 1.0 + 0.3 * (4.0 * x.x).sin() * x.y + if r < 0.25 { 2.0 } else { 0.0 };
        v[1] = 0.2 * x.z;
        v[2] = -0.1 * x.x * x.y;
        v[3] = 0.05;
        v[4] = 2.5 + if r < 0.3 { 3.0 } else { 0.0 } + x.y;
    })
    .unwrap();
    let gamma = 1.4;
    // The ideal gas as an equation of state of parameters
    // `[γ, γ − 1, 1/(γ − 1), 0]`.
    let ideal = |k: &[f64; 4], _: f64, rho_e: f64| k[1] * rho_e;
    let criteria = [
        TagCriterionSpec {
            field: TagField::Pressure {
                eos: [gamma, gamma - 1.0, 1.0 / (gamma - 1.0), 0.0],
                rho: 0,
                momentum: [1, 2, 3],
                energy: 4,
            },
            detector: TagDetector::Gradient(GradientDetector::new(6.0).unwrap()),
        },
        TagCriterionSpec {
            field: TagField::Component(0),
            detector: TagDetector::Shock(ShockDetector::new(0.5, 0.85).unwrap()),
        },
    ];
    let (store, places) = flat_store(&d);
    for max_levels in [2, 3] {
        let flat = FlatTag::new(h, &places, 5, &criteria, max_levels).unwrap();
        let tagged = h
            .patches()
            .iter()
            .filter(|p| p.level() + 1 < max_levels)
            .count();
        assert_eq!(flat.items.len(), tagged);
        let mut words = vec![u32::MAX; flat.words as usize];
        flat.run(&store, &mut words, ideal).unwrap();
        let got = flat.tag_boxes(h, &words).unwrap();
        let mut any = 0;
        for (i, p) in h.patches().iter().enumerate() {
            let mut want = TagBox::new(p.interior()).unwrap();
            if p.level() + 1 < max_levels {
                let lg = h.level_geometry(p.level()).unwrap();
                let dx = [lg.dx.x, lg.dx.y, lg.dx.z];
                let s = d.old(i);
                let n = s.comp_len();
                let c = |k: usize| &s.as_slice()[k * n..(k + 1) * n];
                let mut pr = vec![0.0; n];
                euler_pressure(c(0), [c(1), c(2), c(3)], c(4), gamma, &mut pr).unwrap();
                let input = TagInput::new(&pr, s.data_box(), p.interior(), dx).unwrap();
                GradientDetector::new(6.0)
                    .unwrap()
                    .tag(&input, &mut want)
                    .unwrap();
                let input = TagInput::from_patch(s, 0, dx).unwrap();
                ShockDetector::new(0.5, 0.85)
                    .unwrap()
                    .tag(&input, &mut want)
                    .unwrap();
            }
            any += want.count();
            assert_eq!(got[i], want, "tags of patch {i} (level {})", p.level());
        }
        assert!(any > 0);
    }
    // Bad input is an error: too short a store or output, a component
    // out of range, placements that do not match.
    let flat = FlatTag::new(h, &places, 5, &criteria, 3).unwrap();
    let mut words = vec![0; flat.words as usize];
    assert!(
        flat.run(&store[..store.len() / 2], &mut words, ideal)
            .is_err()
    );
    assert!(flat.run(&store, &mut words[1..], ideal).is_err());
    let bad = [TagCriterionSpec {
        field: TagField::Component(5),
        ..criteria[1]
    }];
    assert!(FlatTag::new(h, &places, 5, &bad, 3).is_err());
    assert!(FlatTag::new(h, &places[1..], 5, &criteria, 3).is_err());
    // A set padding bit is refused when the words become fields.
    let mut words = vec![0; flat.words as usize];
    flat.run(&store, &mut words, ideal).unwrap();
    let it = flat.items.iter().find(|it| it.n[0] % 64 != 0).unwrap();
    words[it.word as usize + 1] |= 1 << 31;
    assert!(flat.tag_boxes(h, &words).is_err());
}
