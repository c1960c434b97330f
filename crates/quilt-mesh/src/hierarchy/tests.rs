//! Hierarchy layout and data checks: hand-built cases with known answers,
//! and property tests comparing the precomputed relations and the
//! validation against cell-by-cell brute force.

use proptest::prelude::*;

use super::*;
use crate::cluster::nesting::wrap_cell;
use crate::error::MeshError;
use crate::geometry::Geometry;
use crate::index::{IndexBox, IntVect, Side, iv};
use crate::synthetic::{SyntheticSpec, generate};

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

/// Level 0: two 16x32x32 patches side by side over a 32³ domain. Level 1
/// (ratio 2): patch 10 inside patch 0 touching the low-x domain boundary,
/// patch 11 abutting it across the coarse patch boundary.
fn two_level(periodic: [bool; 3]) -> Result<Hierarchy, MeshError> {
    let g = Geometry::with_cubic_cells(iv(32, 32, 32), &[2])?.with_periodic(periodic);
    Hierarchy::new(
        g,
        2,
        SizeLimits { min: 8, max: 64 },
        vec![
            vec![
                spec(0, bx([0, 0, 0], [15, 31, 31]), None),
                spec(1, bx([16, 0, 0], [31, 31, 31]), None),
            ],
            vec![
                spec(10, bx([0, 8, 8], [31, 23, 23]), Some(0)),
                spec(11, bx([32, 8, 8], [47, 23, 23]), Some(1)),
            ],
        ],
    )
}

#[test]
fn hand_built_relations() {
    let h = two_level([false; 3]).unwrap();
    assert_eq!(h.num_levels(), 2);
    assert_eq!(h.level_range(1), 2..4);
    let p10 = &h.patches()[2];
    let p11 = &h.patches()[3];
    assert_eq!(p10.id(), PatchId(10));
    assert_eq!(p10.parent(), Some(0));
    assert_eq!(h.patches()[0].children(), &[2]);
    assert_eq!(h.patches()[1].children(), &[3]);

    // 10 reads x = 32..=33 from 11; 11 reads x = 30..=31 from 10.
    assert_eq!(p10.sibling_overlaps().len(), 1);
    let o = p10.sibling_overlaps()[0];
    assert_eq!((o.source, o.shift), (3, iv(0, 0, 0)));
    assert_eq!(o.region, bx([32, 8, 8], [33, 23, 23]));
    assert_eq!(
        p11.sibling_overlaps()[0].region,
        bx([30, 8, 8], [31, 23, 23])
    );

    // Low x of 10 is the physical boundary; high x is a sibling; the
    // other four faces are coarse-fine.
    assert_eq!(
        p10.physical_face(0, Side::Lo),
        Some(bx([-2, 8, 8], [-1, 23, 23]))
    );
    assert!(p10.coarse_fine_faces(0, Side::Lo).is_empty());
    assert!(p10.coarse_fine_faces(0, Side::Hi).is_empty());
    assert_eq!(p10.physical_face(0, Side::Hi), None);
    assert_eq!(
        p10.coarse_fine_faces(1, Side::Hi).boxes(),
        &[bx([0, 24, 8], [31, 24, 23])]
    );
    assert_eq!(p10.coarse_fine_faces(2, Side::Lo).num_cells(), 32 * 16);

    // Ghost counts add up to the ghost shell, and match by hand.
    let gc = p10.ghost_counts();
    let shell = p10.ghost_box().num_cells() - p10.interior().num_cells();
    assert_eq!(gc.total(), shell);
    assert_eq!(gc.copied, 2 * 16 * 16);
    assert_eq!(gc.physical, 2 * 20 * 20);
    assert_eq!(gc.interpolated, shell - gc.copied - gc.physical);

    // Level 0 covers the domain: no coarse-fine ghosts; 0 and 1 exchange.
    let p0 = &h.patches()[0];
    assert!(p0.coarse_fine_ghosts().is_empty());
    assert!(p0.coarse_overlaps().is_empty());
    assert_eq!(p0.ghost_counts().copied, 2 * 32 * 32);

    // Coarse tags of 11: under its ghost box grown by one coarse cell,
    // x = 14..=25: patch 0 provides 14..=15, patch 1 16..=25.
    let c: Vec<_> = p11
        .coarse_overlaps()
        .iter()
        .map(|o| (o.source, o.region))
        .collect();
    assert_eq!(
        c,
        vec![
            (0, bx([14, 2, 2], [15, 13, 13])),
            (1, bx([16, 2, 2], [25, 13, 13]))
        ]
    );

    assert_eq!(
        h.patches_intersecting(1, &bx([31, 0, 0], [32, 63, 63])),
        vec![2, 3]
    );
    assert_eq!(h.index_of(PatchId(11)), Some(3));
    assert_eq!(h.index_of(PatchId(12)), None);
    assert_eq!(h.level_cells(1), 2 * 32 * 16 * 16 - 16 * 16 * 16);
}

#[test]
fn periodic_relations() {
    let h = two_level([true, false, false]).unwrap();
    let p10 = &h.patches()[2];
    // Across the periodic low-x boundary there is no level-1 patch at the
    // top of the domain, so those ghosts are interpolated, not physical.
    assert_eq!(p10.physical_face(0, Side::Lo), None);
    assert_eq!(p10.coarse_fine_faces(0, Side::Lo).num_cells(), 16 * 16);
    assert_eq!(p10.ghost_counts().physical, 0);
    // Level 0 patch 0 reads its low-x ghosts from patch 1 shifted by -32.
    let p0 = &h.patches()[0];
    assert!(
        p0.sibling_overlaps()
            .iter()
            .any(|o| o.source == 1 && o.shift == iv(-32, 0, 0) && o.region.lo.x == -2)
    );
    // Coarse tags of 10 wrap around too.
    assert!(
        p10.coarse_overlaps()
            .iter()
            .any(|o| o.shift == iv(-32, 0, 0))
    );
    // A patch spanning a periodic axis copies from itself.
    let g = Geometry::with_cubic_cells(iv(16, 16, 16), &[])
        .unwrap()
        .with_periodic([true; 3]);
    let h = Hierarchy::new(
        g,
        1,
        SizeLimits::default(),
        vec![vec![spec(0, bx([0, 0, 0], [15, 15, 15]), None)]],
    )
    .unwrap();
    let p = &h.patches()[0];
    assert_eq!(p.sibling_overlaps().len(), 26);
    assert_eq!(p.ghost_counts().copied, 18 * 18 * 18 - 16 * 16 * 16);
}

#[test]
fn bad_hierarchies_name_the_problem() {
    let g = || Geometry::with_cubic_cells(iv(32, 32, 32), &[2]).unwrap();
    let base = || {
        vec![
            spec(0, bx([0, 0, 0], [15, 31, 31]), None),
            spec(1, bx([16, 0, 0], [31, 31, 31]), None),
        ]
    };
    let lim = SizeLimits::default();
    let mk = |fine: Vec<PatchSpec>| Hierarchy::new(g(), 2, lim, vec![base(), fine]).unwrap_err();

    let e = mk(vec![spec(5, bx([60, 8, 8], [75, 23, 23]), Some(1))]);
    assert!(
        matches!(
            e,
            MeshError::OutsideDomain {
                level: 1,
                id: PatchId(5),
                ..
            }
        ),
        "{e}"
    );
    let e = mk(vec![spec(5, bx([0, 0, 0], [63, 15, 15]), Some(0))]);
    assert!(
        matches!(e, MeshError::SizeLimit { id: PatchId(5), .. }),
        "{e}"
    );
    assert!(e.to_string().contains("68x20x20"), "{e}");
    let e = mk(vec![spec(5, bx([8, 8, 8], [7, 23, 23]), Some(0))]);
    assert!(
        matches!(e, MeshError::EmptyPatch { id: PatchId(5), .. }),
        "{e}"
    );
    let e = mk(vec![spec(5, bx([8, 8, 8], [23, 23, 23]), Some(9))]);
    assert!(
        matches!(
            e,
            MeshError::BadParent {
                id: PatchId(5),
                parent: 9,
                ..
            }
        ),
        "{e}"
    );
    // The parent must be under the patch.
    let e = mk(vec![spec(5, bx([40, 8, 8], [55, 23, 23]), Some(0))]);
    assert!(e.to_string().contains("does not overlap"), "{e}");
    // Parent resolved automatically when not given.
    let h = Hierarchy::new(
        g(),
        2,
        lim,
        vec![base(), vec![spec(5, bx([24, 8, 8], [47, 23, 23]), None)]],
    )
    .unwrap();
    assert_eq!(h.patches()[2].parent(), Some(1));
    // Duplicate ids across levels.
    let e = mk(vec![spec(1, bx([8, 8, 8], [23, 23, 23]), Some(0))]);
    assert!(
        matches!(
            e,
            MeshError::DuplicateId {
                id: PatchId(1),
                first_level: 0,
                second_level: 1
            }
        ),
        "{e}"
    );
    // An empty level, more levels than the geometry, negative ghost width.
    let e = Hierarchy::new(g(), 2, lim, vec![base(), vec![]]).unwrap_err();
    assert!(matches!(e, MeshError::EmptyLevel { level: 1 }), "{e}");
    let fine = vec![spec(5, bx([8, 8, 8], [23, 23, 23]), Some(0))];
    let e = Hierarchy::new(g(), 2, lim, vec![base(), fine.clone(), fine.clone()]).unwrap_err();
    assert!(matches!(e, MeshError::NoSuchLevel { level: 2, .. }), "{e}");
    assert!(Hierarchy::new(g(), -1, lim, vec![base()]).is_err());
    assert!(Hierarchy::new(g(), 2, SizeLimits { min: 0, max: 10 }, vec![base()]).is_err());
    assert!(Hierarchy::new(g(), 2, lim, vec![]).is_err());
    // The nesting failure names one uncovered coarse box: a level-2 patch
    // whose ghost cells reach past level 1 at x = 7 (level-1 cells).
    let g3 = Geometry::with_cubic_cells(iv(32, 32, 32), &[2, 2]).unwrap();
    let e = Hierarchy::new(
        g3,
        2,
        lim,
        vec![
            base(),
            fine.clone(),
            vec![spec(6, bx([16, 16, 16], [31, 31, 31]), Some(5))],
        ],
    )
    .unwrap_err();
    match &e {
        MeshError::NotNested {
            level: 2,
            id: PatchId(6),
            uncovered,
        } => {
            assert_eq!(uncovered.lo.x, 7, "{e}");
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("not properly nested"), "{e}");
    // A ghost width past the size limits.
    let h = Hierarchy::new(g(), 2, lim, vec![base(), fine]).unwrap();
    assert!(matches!(
        h.with_ghost(40),
        Err(MeshError::InvalidValue { .. })
    ));
}

/// A ghost cell's fate by brute force: physical, copied (and from which
/// source/shift), or interpolated.
#[derive(Debug, PartialEq, Eq)]
enum Fate {
    Physical,
    Copied(usize, IntVect),
    Interpolated,
}

/// Same-level sources of patch `i` (periodic images included, the patch
/// itself only shifted), found pairwise without the spatial index.
fn image_sources(h: &Hierarchy, i: usize) -> Vec<(usize, IntVect, IndexBox)> {
    let patch = &h.patches()[i];
    let lg = h.level_geometry(patch.level()).unwrap();
    let mut out = Vec::new();
    for shift in lg.periodic_shifts() {
        for j in h.level_range(patch.level()) {
            let b = h.patches()[j].interior().shift(&shift);
            if (j != i || shift != iv(0, 0, 0)) && b.intersects(&patch.ghost_box()) {
                out.push((j, shift, b));
            }
        }
    }
    out
}

fn fate(h: &Hierarchy, i: usize, p: &IntVect, sources: &[(usize, IntVect, IndexBox)]) -> Fate {
    let lg = h.level_geometry(h.patches()[i].level()).unwrap();
    if !lg.periodic_domain().contains(p) {
        return Fate::Physical;
    }
    match sources.iter().find(|s| s.2.contains(p)) {
        Some(&(j, shift, _)) => Fate::Copied(j, shift),
        None => Fate::Interpolated,
    }
}

fn check_relations(h: &Hierarchy) -> Result<(), TestCaseError> {
    for (i, patch) in h.patches().iter().enumerate() {
        let l = patch.level();
        let candidates = image_sources(h, i);
        let mut counts = GhostCounts::default();
        let shell = patch.interior().ghost_regions(h.ghost());
        for p in shell.iter().flat_map(|(_, b)| b.iter()) {
            let f = fate(h, i, &p, &candidates);
            let in_tags: Vec<_> = patch
                .sibling_overlaps()
                .iter()
                .filter(|o| o.region.contains(&p))
                .map(|o| (o.source, o.shift))
                .collect();
            match f {
                Fate::Physical => {
                    counts.physical += 1;
                    prop_assert!(patch.physical_ghosts().contains(&p));
                    prop_assert!(in_tags.is_empty());
                }
                Fate::Copied(j, s) => {
                    counts.copied += 1;
                    prop_assert_eq!(in_tags, vec![(j, s)]);
                    prop_assert!(!patch.coarse_fine_ghosts().contains(&p));
                }
                Fate::Interpolated => {
                    counts.interpolated += 1;
                    prop_assert!(patch.coarse_fine_ghosts().contains(&p));
                    prop_assert!(in_tags.is_empty());
                    // Nesting: the coarse cell under it (and its slope
                    // neighbours) are in the coarse tags.
                    prop_assert!(l > 0);
                    let lg = h.level_geometry(l).unwrap();
                    let c = crate::index::coarsen_vect(&p, lg.ratio);
                    prop_assert!(
                        patch
                            .coarse_overlaps()
                            .iter()
                            .any(|o| o.region.contains(&c))
                    );
                }
            }
        }
        prop_assert_eq!(counts, patch.ghost_counts());
        // Faces: the first ghost layer, brute force.
        for axis in 0..3 {
            for side in Side::BOTH {
                let slab = patch.interior().adjacent(axis, side, 1);
                let phys = slab
                    .iter()
                    .all(|p| fate(h, i, &p, &candidates) == Fate::Physical);
                prop_assert_eq!(patch.physical_face(axis, side).is_some(), phys);
                for p in slab.iter() {
                    let cf = fate(h, i, &p, &candidates) == Fate::Interpolated;
                    prop_assert_eq!(patch.coarse_fine_faces(axis, side).contains(&p), cf);
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn relations_match_brute_force(
        seed in any::<u64>(),
        patches in 64usize..110,
        ghost in 1i32..4,
        periodic in prop::array::uniform3(any::<bool>()),
    ) {
        let s = SyntheticSpec { patches, seed, ghost, ..Default::default() };
        let h = generate(&s).unwrap();
        let h = Hierarchy::new(
            h.geometry().clone().with_periodic(periodic),
            h.ghost(),
            h.limits(),
            h.specs(),
        ).unwrap();
        check_relations(&h)?;
    }
}

/// Proper nesting of the box `b` of level `l` cell by cell: every coarse
/// cell under its ghost box is covered by a level `l - 1` patch after
/// wrapping across periodic faces, or lies outside across another face.
fn brute_nested(h: &Hierarchy, periodic: [bool; 3], l: usize, b: &IndexBox) -> bool {
    let lg = h.level_geometry(l).unwrap();
    let clg = h.level_geometry(l - 1).unwrap();
    let coarse: Vec<IndexBox> = h
        .level_patches(l - 1)
        .iter()
        .map(|p| p.interior())
        .collect();
    b.grow(h.ghost()).coarsen(lg.ratio).iter().all(|c| {
        wrap_cell(&clg.domain, periodic, c).is_none_or(|w| coarse.iter().any(|q| q.contains(&w)))
    })
}

/// Brute-force validity of a level-1+ patch moved somewhere else: inside
/// the domain, disjoint from its siblings, aligned, over its parent, and
/// properly nested ([`brute_nested`]).
fn brute_valid(h: &Hierarchy, periodic: [bool; 3], moved: usize, b: &IndexBox) -> bool {
    let patch = &h.patches()[moved];
    let l = patch.level();
    let lg = h.level_geometry(l).unwrap();
    if !lg.domain.contains_box(b) || !b.is_coarsenable(lg.ratio) {
        return false;
    }
    if h.level_range(l)
        .any(|j| j != moved && h.patches()[j].interior().intersects(b))
    {
        return false;
    }
    let parent = &h.patches()[patch.parent().unwrap()];
    if !parent.interior().intersects(&b.coarsen(lg.ratio)) {
        return false;
    }
    if !brute_nested(h, periodic, l, b) {
        return false;
    }
    // Children of the moved patch must still nest in it.
    patch.children().is_empty()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn validation_matches_brute_force(
        seed in 0u64..1000,
        pick in any::<prop::sample::Index>(),
        offset in prop::array::uniform3(-12i32..12),
        periodic in prop::array::uniform3(any::<bool>()),
    ) {
        let h = generate(&SyntheticSpec { patches: 90, seed, ..Default::default() }).unwrap();
        // Move a childless fine patch.
        let fine: Vec<usize> = (64..h.num_patches()).filter(|&i| h.patches()[i].children().is_empty()).collect();
        let moved = fine[pick.index(fine.len())];
        let old = h.patches()[moved].interior();
        let b = old.shift(&iv(offset[0], offset[1], offset[2]));
        let mut specs = h.specs();
        let l = h.patches()[moved].level();
        let k = moved - h.level_range(l).start;
        specs[l][k].interior = b;
        // Periodic axes add nesting requirements across the faces, for the
        // other patches too (their coarse levels are unchanged by the move).
        let others_nested = (h.level_range(1).start..h.num_patches())
            .filter(|&i| i != moved)
            .all(|i| {
                let p = &h.patches()[i];
                brute_nested(&h, periodic, p.level(), &p.interior())
            });
        let geometry = h.geometry().clone().with_periodic(periodic);
        let got = Hierarchy::new(geometry, h.ghost(), h.limits(), specs);
        let expect = others_nested && brute_valid(&h, periodic, moved, &b);
        prop_assert_eq!(got.is_ok(), expect, "{:?}", got.err());
        if let Ok(g) = got {
            // Sibling interiors stay disjoint; nesting holds for all.
            for lvl in 0..g.num_levels() {
                let ps = g.level_patches(lvl);
                for a in 0..ps.len() {
                    for c in a + 1..ps.len() {
                        prop_assert!(!ps[a].interior().intersects(&ps[c].interior()));
                    }
                }
            }
        }
    }
}

/// A fine patch at a periodic face is nested only when the coarse level
/// covers its ghost cells' periodic images at the opposite face; across a
/// physical face nothing is needed.
#[test]
fn nesting_across_periodic_faces() {
    let base = || {
        vec![
            spec(0, bx([0, 0, 0], [15, 31, 31]), None),
            spec(1, bx([16, 0, 0], [31, 31, 31]), None),
        ]
    };
    let lim = SizeLimits { min: 8, max: 64 };
    // A level-2 patch at the low x face of a level 1 that does not reach
    // the high x face.
    let g3 = |periodic| {
        Geometry::with_cubic_cells(iv(32, 32, 32), &[2, 2])
            .unwrap()
            .with_periodic(periodic)
    };
    let lv1 = vec![spec(10, bx([0, 8, 8], [23, 55, 55]), None)];
    let lv2 = vec![spec(20, bx([0, 32, 32], [15, 47, 47]), None)];
    let levels = |lv1: &Vec<PatchSpec>| vec![base(), lv1.clone(), lv2.clone()];
    Hierarchy::new(g3([false; 3]), 2, lim, levels(&lv1)).unwrap();
    let e = Hierarchy::new(g3([true, false, false]), 2, lim, levels(&lv1)).unwrap_err();
    match &e {
        MeshError::NotNested {
            level: 2,
            id: PatchId(20),
            uncovered,
        } => assert_eq!((uncovered.lo.x, uncovered.hi.x), (-1, -1), "{e}"),
        other => panic!("{other}"),
    }
    // Periodic along y only: the ghost cells across x are physical.
    Hierarchy::new(g3([false, true, false]), 2, lim, levels(&lv1)).unwrap();
    // The image at the high x face nests it.
    let mut both = lv1.clone();
    both.push(spec(11, bx([60, 8, 8], [63, 55, 55]), None));
    Hierarchy::new(g3([true, false, false]), 2, lim, levels(&both)).unwrap();
    // Ghost width 2 at ratio 2 needs one level-1 cell across the face: a
    // patch that stops one cell before the high x face does not cover it.
    let mut short = lv1.clone();
    short.push(spec(11, bx([58, 8, 8], [61, 55, 55]), None));
    assert!(matches!(
        Hierarchy::new(g3([true, false, false]), 2, lim, levels(&short)),
        Err(MeshError::NotNested { level: 2, .. })
    ));
}

#[test]
fn data_follows_the_layout() {
    let h = two_level([false; 3]).unwrap();
    let mut d = HierarchyData::<f64>::new(&h, 5).unwrap();
    assert_eq!(d.len(), 4);
    assert_eq!(d.ncomp(), 5);
    d.check_layout(&h).unwrap();
    assert_eq!(d.old(2).data_box(), h.patches()[2].ghost_box());
    // A linear density: level integrals over the covered region agree.
    d.init_with(&h, |lg, p, v| {
        let x = lg.cell_center(p);
        v[0] = 1.0 + x.x + 2.0 * x.y - x.z;
        for (c, vc) in v.iter_mut().enumerate().skip(1) {
            *vc = c as f64;
        }
    })
    .unwrap();
    let l0 = d.level_integral(&h, 0, 0).unwrap();
    // Integral of 1 + x + 2y - z over the unit cube is 1 + 1/2 + 1 - 1/2.
    assert!((l0 - 2.0).abs() < 1e-12, "{l0}");
    assert!((d.level_integral(&h, 0, 3).unwrap() - 3.0).abs() < 1e-12);
    assert!(d.level_integral(&h, 5, 0).is_err());
    assert!(d.level_integral(&h, 0, 5).is_err());
    // Old and new split: write every new from every old in one pass.
    {
        let (old, new) = d.split_old_new();
        for (o, n) in old.iter().zip(new) {
            n.fill(0.0);
            n.copy_region(o, &o.interior(), &iv(0, 0, 0)).unwrap();
            n.comp_mut(0).iter_mut().for_each(|v| *v *= 2.0);
        }
    }
    d.swap_all();
    assert!((d.level_integral(&h, 0, 0).unwrap() - 4.0).abs() < 1e-12);
    // Data for another layout is refused.
    let other = h.with_ghost(1).unwrap();
    assert!(matches!(
        d.check_layout(&other),
        Err(MeshError::LayoutMismatch { .. })
    ));
    assert!(d.init_with(&other, |_, _, _| {}).is_err());
    let g = Geometry::with_cubic_cells(iv(32, 32, 32), &[]).unwrap();
    let single = Hierarchy::new(
        g,
        2,
        SizeLimits::default(),
        vec![vec![spec(0, bx([0, 0, 0], [31, 31, 31]), None)]],
    )
    .unwrap();
    let e = d.check_layout(&single).unwrap_err();
    assert!(
        e.to_string()
            .contains("4 patches of data, 1 in the hierarchy"),
        "{e}"
    );
    let d1 = HierarchyData::<f32>::new(&single, 1).unwrap();
    assert!(d1.get(1).is_none());
    assert!(HierarchyData::<f32>::new(&single, 0).is_err());
}

#[test]
fn summary_counts() {
    let h = generate(&SyntheticSpec {
        patches: 200,
        seed: 2,
        ..Default::default()
    })
    .unwrap();
    let s = h.summary();
    assert_eq!(s.levels.iter().map(|l| l.patches).sum::<usize>(), 200);
    assert_eq!(s.side_histogram.iter().map(|b| b.2).sum::<usize>(), 600);
    assert_eq!(s.levels[0].domain_fraction, 1.0);
    assert_eq!(
        s.levels.iter().map(|l| l.interior_cells).sum::<i64>(),
        h.total_cells()
    );
    let total: i64 = h
        .patches()
        .iter()
        .map(|p| p.ghost_box().num_cells() - p.interior().num_cells())
        .sum();
    assert_eq!(s.ghost_counts.total(), total);
    let text = s.to_string();
    assert!(text.starts_with("200 patches on"), "{text}");
}
