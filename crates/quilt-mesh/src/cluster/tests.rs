//! Property checks of the clustering guarantees (see the module docs).

use proptest::prelude::*;

use super::*;
use crate::cluster::nesting::wrap_cell;
use crate::index::{IntVect, iv};

#[derive(Debug, Clone)]
struct Case {
    domain: IndexBox,
    blobs: Vec<(IntVect, IntVect)>,
    points: Vec<IntVect>,
    /// `None`: the coarse level covers the domain.
    patches: Option<Vec<IndexBox>>,
    /// Periodic axes of the domain.
    periodic: [bool; 3],
    options: ClusterOptions,
}

fn arb_options() -> impl Strategy<Value = ClusterOptions> {
    (
        prop::sample::select(vec![2, 4]),
        0i32..4,
        prop::sample::select(vec![(8, 32), (16, 64), (12, 48), (16, 40)]),
        0.5f64..0.95,
        0.5f64..0.95,
        0i32..3,
        any::<bool>(),
    )
        .prop_map(
            |(ratio, ghost, (min_patch, max_patch), efficiency, combine, buf, undo)| {
                ClusterOptions {
                    ratio,
                    efficiency,
                    combine_efficiency: combine,
                    min_patch,
                    max_patch,
                    ghost,
                    nesting_buffer: buf,
                    undo_unprofitable_cuts: undo,
                    blocks: None,
                }
            },
        )
        .prop_filter("valid options", |o| o.validate().is_ok())
}

/// Blocks of a grid over the domain, some left out.
fn arb_patches(domain: IndexBox) -> impl Strategy<Value = Option<Vec<IndexBox>>> {
    let s = domain.size();
    (
        any::<bool>(),
        prop::array::uniform3(prop::collection::vec(0.1f64..0.9, 1..3)),
        prop::collection::vec(any::<bool>(), 27),
    )
        .prop_map(move |(whole, cuts, keep)| {
            if whole {
                return None;
            }
            let mut edges: [Vec<i32>; 3] = Default::default();
            for d in 0..3 {
                let mut e: Vec<i32> = cuts[d]
                    .iter()
                    .map(|f| domain.lo[d] + (f * s[d] as f64) as i32)
                    .collect();
                e.push(domain.lo[d]);
                e.push(domain.hi[d] + 1);
                e.sort();
                e.dedup();
                edges[d] = e;
            }
            let mut out = Vec::new();
            let mut k = 0;
            for z in edges[2].windows(2) {
                for y in edges[1].windows(2) {
                    for x in edges[0].windows(2) {
                        if keep[k % 27]
                            || out.is_empty()
                                && k + 1
                                    == (edges[0].len() - 1)
                                        * (edges[1].len() - 1)
                                        * (edges[2].len() - 1)
                        {
                            out.push(IndexBox::new(
                                iv(x[0], y[0], z[0]),
                                iv(x[1] - 1, y[1] - 1, z[1] - 1),
                            ));
                        }
                        k += 1;
                    }
                }
            }
            Some(out)
        })
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        prop::array::uniform3(-8i32..8),
        prop::array::uniform3(12i32..44),
    )
        .prop_flat_map(|(lo, size)| {
            let domain =
                IndexBox::from_lo_size(iv(lo[0], lo[1], lo[2]), iv(size[0], size[1], size[2]));
            let cell = (
                domain.lo.x..=domain.hi.x,
                domain.lo.y..=domain.hi.y,
                domain.lo.z..=domain.hi.z,
            )
                .prop_map(|(x, y, z)| iv(x, y, z));
            let half = prop::array::uniform3(0i32..7).prop_map(|h| iv(h[0], h[1], h[2]));
            (
                Just(domain),
                prop::collection::vec((cell.clone(), half), 0..5),
                prop::collection::vec(cell, 0..40),
                arb_patches(domain),
                prop::array::uniform3(any::<bool>()),
                arb_options(),
            )
        })
        .prop_map(|(domain, blobs, points, patches, periodic, options)| Case {
            domain,
            blobs,
            points,
            patches,
            periodic,
            options,
        })
}

fn tags_of(case: &Case) -> TagBox {
    let mut t = TagBox::new(case.domain).unwrap();
    for (c, h) in &case.blobs {
        t.set_box(&IndexBox::new(c - h, c + h));
    }
    for p in &case.points {
        t.set(p).unwrap();
    }
    t
}

fn nesting_of(case: &Case) -> Nesting {
    match &case.patches {
        None => Nesting::whole_domain(case.domain).unwrap(),
        Some(p) => Nesting::from_patches_periodic(
            case.domain,
            case.periodic,
            p,
            case.options.effective_nesting_buffer(),
        )
        .unwrap(),
    }
}

/// `tags` cut at the middle of the domain's `y` into two fields, the upper
/// half first: clustering must not depend on how tags are split.
fn halves(case: &Case, tags: &TagBox) -> [TagBox; 2] {
    let mid = case.domain.lo.y + case.domain.size().y / 2;
    let (lo_half, hi_half) = case.domain.chop(1, mid);
    let mut a = TagBox::new(lo_half).unwrap();
    let mut b = TagBox::new(hi_half).unwrap();
    a.union_with(tags);
    b.union_with(tags);
    [b, a]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn clustering_guarantees(case in arb_case()) {
        let tags = tags_of(&case);
        let nesting = nesting_of(&case);
        let o = case.options;
        let lim = o.validate().unwrap();
        let out = cluster(std::slice::from_ref(&tags), &nesting, o).unwrap();
        let boxes = &out.coarse_boxes;

        // Every allowed tag is covered exactly once; the others are dropped.
        let mut kept = 0u64;
        for p in tags.iter() {
            let n = boxes.iter().filter(|b| b.contains(&p)).count();
            if nesting.contains_box(&IndexBox::new(p, p)) {
                kept += 1;
                prop_assert_eq!(n, 1, "tag {:?} covered {} times", p, n);
            } else {
                prop_assert_eq!(n, 0, "forbidden tag {:?} covered", p);
            }
        }
        prop_assert_eq!(out.tagged, kept);
        prop_assert_eq!(out.dropped, tags.count() - kept);

        for (i, b) in boxes.iter().enumerate() {
            for c in &boxes[i + 1..] {
                prop_assert!(!b.intersects(c), "{} and {} overlap", b, c);
            }
            // Nesting, and the hierarchy's form of it: the coarse cells under the
            // ghost-grown fine box belong to coarse patches, those outside the
            // domain along a periodic axis through their periodic image, those
            // outside along another axis exempt.
            prop_assert!(nesting.contains_box(b), "{} leaves the nesting region", b);
            let fine = out.fine_boxes[i];
            prop_assert_eq!(fine, b.refine(o.ratio));
            prop_assert!(fine.is_coarsenable(o.ratio));
            if let Some(patches) = &case.patches {
                let under = fine.grow(o.ghost).coarsen(o.ratio);
                for c in under.iter() {
                    let Some(w) = wrap_cell(&case.domain, case.periodic, c) else { continue };
                    prop_assert!(patches.iter().any(|p| p.contains(&w)), "{} not nested at {:?}", fine, c);
                }
            }
            // Size limits (fine cells with ghosts).
            let s = fine.size() + iv(2 * o.ghost, 2 * o.ghost, 2 * o.ghost);
            prop_assert!(s.max() <= o.max_patch, "{} too large", fine);
            if case.patches.is_none() {
                prop_assert!(s.min() >= o.min_patch, "{} too small", fine);
            }
            // Efficiency of the tags' bounding box, where a cut was possible.
            let mut core = IndexBox::empty();
            let mut n = 0u64;
            tags.for_each_in(b, |p| {
                core = core.bounding(&IndexBox::new(p, p));
                n += 1;
            });
            prop_assert!(n > 0, "box {} holds no tag", b);
            let need = o.efficiency.min(o.combine_efficiency);
            let cuttable = (0..3).any(|d| core.size()[d] >= 2 * lim.min);
            prop_assert!(
                n as f64 >= need * core.num_cells() as f64 || !cuttable || o.undo_unprofitable_cuts,
                "box {} core {} efficiency {} < {}", b, core, n as f64 / core.num_cells() as f64, need
            );
        }
        let narrow = boxes.iter().filter(|b| b.size().min() < lim.min).count();
        prop_assert_eq!(out.undersized, narrow);

        // Deterministic, with fresh or reused scratch, and independent of how
        // the tags are split into fields.
        let mut c = Clusterer::new(o).unwrap();
        prop_assert_eq!(&c.cluster(std::slice::from_ref(&tags), &nesting).unwrap(), &out);
        prop_assert_eq!(&c.cluster(std::slice::from_ref(&tags), &nesting).unwrap(), &out);
        prop_assert_eq!(&c.cluster(&halves(&case, &tags), &nesting).unwrap(), &out);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Uniform blocks: every allowed tag covered once, boxes disjoint and
    /// nested, and the box over a tag whose block the nesting region holds
    /// whole is that block.
    #[test]
    fn blocks_cover_tags_with_aligned_blocks(case in arb_case(), pick in 0i32..8) {
        let mut o = case.options;
        let lim = o.validate().unwrap();
        // A block side (coarse cells) the size limits admit.
        let side = lim.min + pick % (lim.max - lim.min + 1);
        o.blocks = Some(side * o.ratio);
        prop_assume!(o.validate().is_ok());
        let tags = tags_of(&case);
        let nesting = nesting_of(&case);
        let out = cluster(std::slice::from_ref(&tags), &nesting, o).unwrap();
        let boxes = &out.coarse_boxes;
        let mut kept = 0u64;
        for p in tags.iter() {
            let over: Vec<&IndexBox> = boxes.iter().filter(|b| b.contains(&p)).collect();
            if !nesting.contains_box(&IndexBox::new(p, p)) {
                prop_assert!(over.is_empty(), "forbidden tag {:?} covered", p);
                continue;
            }
            kept += 1;
            prop_assert_eq!(over.len(), 1, "tag {:?} covered {} times", p, over.len());
            let q = IndexBox::new(p, p).coarsen(side).lo;
            let block = IndexBox::from_lo_size(q * side, iv(side, side, side));
            if nesting.contains_box(&block) {
                prop_assert_eq!(*over[0], block, "tag {:?}", p);
            }
        }
        prop_assert_eq!(out.tagged, kept);
        for (i, b) in boxes.iter().enumerate() {
            for c in &boxes[i + 1..] {
                prop_assert!(!b.intersects(c), "{} and {} overlap", b, c);
            }
            prop_assert!(nesting.contains_box(b), "{} leaves the nesting region", b);
            prop_assert_eq!(out.fine_boxes[i], b.refine(o.ratio));
            prop_assert!(tags.count_in(b) > 0, "box {} holds no tag", b);
            let s = out.fine_boxes[i].size() + iv(2 * o.ghost, 2 * o.ghost, 2 * o.ghost);
            prop_assert!(s.max() <= o.max_patch, "{} too large", b);
        }
        // Independent of how the tags are split into fields.
        prop_assert_eq!(&cluster(&halves(&case, &tags), &nesting, o).unwrap(), &out);
    }
}

#[test]
fn blocks_of_a_size_the_limits_refuse_are_an_error() {
    for n in [0, 15, 4, 80] {
        let o = ClusterOptions {
            blocks: Some(n),
            ..ClusterOptions::default()
        };
        assert!(
            matches!(
                o.validate(),
                Err(ClusterError::BadOption {
                    option: "blocks",
                    ..
                })
            ),
            "blocks = {n}"
        );
    }
    let o = ClusterOptions {
        blocks: Some(16),
        ..ClusterOptions::default()
    };
    assert!(o.validate().is_ok());
}

#[test]
fn empty_tags_give_no_boxes() {
    let domain = IndexBox::new(iv(0, 0, 0), iv(31, 31, 31));
    let out = cluster(
        &[TagBox::new(domain).unwrap()],
        &Nesting::whole_domain(domain).unwrap(),
        ClusterOptions::default(),
    )
    .unwrap();
    assert!(out.coarse_boxes.is_empty());
    assert_eq!(out.efficiency(), 1.0);
}

#[test]
fn two_separate_blobs_give_two_tight_boxes() {
    let domain = IndexBox::new(iv(0, 0, 0), iv(63, 63, 63));
    let a = IndexBox::new(iv(4, 4, 4), iv(13, 13, 13));
    let b = IndexBox::new(iv(40, 30, 20), iv(51, 41, 29));
    let mut t = TagBox::new(domain).unwrap();
    t.set_box(&a);
    t.set_box(&b);
    let o = ClusterOptions {
        min_patch: 8,
        max_patch: 64,
        ghost: 2,
        ..Default::default()
    };
    let out = cluster(&[t], &Nesting::whole_domain(domain).unwrap(), o).unwrap();
    assert_eq!(out.coarse_boxes, vec![a, b]);
    assert_eq!(out.fine_boxes, vec![a.refine(2), b.refine(2)]);
    assert_eq!(out.efficiency(), 1.0);
}

#[test]
fn overlapping_tag_fields_are_rejected() {
    let domain = IndexBox::new(iv(0, 0, 0), iv(31, 31, 31));
    let t1 = TagBox::new(IndexBox::new(iv(0, 0, 0), iv(15, 15, 15))).unwrap();
    let t2 = TagBox::new(IndexBox::new(iv(15, 0, 0), iv(31, 15, 15))).unwrap();
    let err = cluster(
        &[t1, t2],
        &Nesting::whole_domain(domain).unwrap(),
        ClusterOptions::default(),
    );
    assert!(matches!(
        err,
        Err(ClusterError::OverlappingTags { a: 0, b: 1, .. })
    ));
    assert!(matches!(
        Clusterer::new(ClusterOptions {
            ratio: 8,
            ..Default::default()
        }),
        Err(ClusterError::BadRatio(8))
    ));
}

#[test]
fn a_spherical_shell_is_covered_efficiently() {
    let domain = IndexBox::new(iv(0, 0, 0), iv(63, 63, 63));
    let mut t = TagBox::new(domain).unwrap();
    for p in domain.iter() {
        let r = ((p - iv(32, 32, 32)).cast::<f64>().add_scalar(0.5)).norm();
        if (20.0..23.0).contains(&r) {
            t.set(&p).unwrap();
        }
    }
    let mut o = ClusterOptions {
        ratio: 2,
        ghost: 2,
        min_patch: 8,
        undo_unprofitable_cuts: false,
        ..Default::default()
    };
    let nesting = Nesting::whole_domain(domain).unwrap();
    let plain = cluster(std::slice::from_ref(&t), &nesting, o).unwrap();
    o.undo_unprofitable_cuts = true;
    let undone = cluster(&[t], &nesting, o).unwrap();
    // A thin shell cannot be covered at full efficiency by boxes of at least
    // 2 coarse cells per side, but far better than by its bounding box (0.2).
    assert!(
        plain.efficiency() > 0.5,
        "efficiency {}",
        plain.efficiency()
    );
    assert!(
        undone.efficiency() > 0.4,
        "efficiency {}",
        undone.efficiency()
    );
    assert_eq!(plain.undersized + undone.undersized, 0);
    // Undoing unprofitable cuts gives fewer patches with fewer cells in all
    // (ghosts included).
    let cells = |c: &Clustering| -> i64 {
        c.fine_boxes
            .iter()
            .map(|b| b.grow(o.ghost).num_cells())
            .sum()
    };
    assert!(undone.fine_boxes.len() < plain.fine_boxes.len());
    assert!(
        cells(&undone) < cells(&plain),
        "{} vs {}",
        cells(&undone),
        cells(&plain)
    );
}
