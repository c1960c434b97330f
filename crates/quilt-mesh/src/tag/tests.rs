//! Detector checks on analytic fields.

use proptest::prelude::*;

use super::*;
use crate::index::{IndexBox, IntVect, iv};

const DX: [f64; 3] = [0.1, 0.1, 0.1];

/// A field over `interior` grown by `ghost`, from a function of the cell.
fn field(interior: IndexBox, ghost: i32, f: impl Fn(IntVect) -> f64) -> (IndexBox, Vec<f64>) {
    let data = interior.grow(ghost);
    (data, data.iter().map(f).collect())
}

fn run<C: TagCriterion<f64>>(c: &C, interior: IndexBox, data: IndexBox, v: &[f64]) -> TagBox {
    let input = TagInput::new(v, data, interior, DX).unwrap();
    let mut tags = TagBox::new(interior).unwrap();
    c.tag(&input, &mut tags).unwrap();
    tags
}

fn interior() -> IndexBox {
    IndexBox::new(iv(0, 0, 0), iv(15, 11, 9))
}

#[test]
fn planar_shock_tags_the_two_cells_beside_the_face() {
    let xs = 7;
    let (data, v) = field(interior(), 2, |p| if p.x >= xs { 2.0 } else { 1.0 });
    let expect = |p: &IntVect| p.x == xs - 1 || p.x == xs;
    // Jump 1 exceeds tol * h on every direction crossing the face (h <= sqrt(3) dx).
    let grad = run(&GradientDetector::new(5.0).unwrap(), interior(), data, &v);
    let shock = run(
        &ShockDetector::new(5.0, DEFAULT_SHOCK_ONSET).unwrap(),
        interior(),
        data,
        &v,
    );
    for p in interior().iter() {
        assert_eq!(grad.get(&p), expect(&p), "gradient at {p:?}");
        assert_eq!(shock.get(&p), expect(&p), "shock at {p:?}");
    }
    // A jump smaller than tol * dx is not a shock.
    let quiet = run(
        &ShockDetector::new(11.0, 0.85).unwrap(),
        interior(),
        data,
        &v,
    );
    assert_eq!(quiet.count(), 0);
}

#[test]
fn oblique_planar_shock_tags_a_thin_sheet() {
    // Shock on the plane x + y + z = 20: tagged cells lie within one
    // diagonal step of it, and every cell touching it is tagged.
    let (data, v) = field(
        interior(),
        2,
        |p| if p.x + p.y + p.z >= 20 { 3.0 } else { 1.0 },
    );
    let shock = run(
        &ShockDetector::new(1.0, 0.85).unwrap(),
        interior(),
        data,
        &v,
    );
    for p in interior().iter() {
        let s = p.x + p.y + p.z;
        if shock.get(&p) {
            assert!((17..=22).contains(&s), "{p:?} is far from the shock");
        }
        if s == 19 || s == 20 {
            assert!(shock.get(&p), "{p:?} touches the shock");
        }
    }
}

#[test]
fn linear_ramp_below_tolerance_tags_nothing() {
    // Gradient (3, -2, 1.5), magnitude 3.9: every directional slope is <= 3.9.
    let g = [3.0, -2.0, 1.5];
    let ramp = |p: IntVect| (0..3).map(|d| g[d] * p[d] as f64 * DX[d]).sum::<f64>() + 7.0;
    let (data, v) = field(interior(), 2, ramp);
    assert_eq!(
        run(&GradientDetector::new(4.0).unwrap(), interior(), data, &v).count(),
        0
    );
    assert_eq!(
        run(
            &ShockDetector::new(4.0, 0.85).unwrap(),
            interior(),
            data,
            &v
        )
        .count(),
        0
    );
    // Above the tolerance the gradient detector tags everything, but a ramp
    // never dominates its wider stencil (|J1| = |J2| / 2), so no shock.
    let all = interior().num_cells() as u64;
    assert_eq!(
        run(&GradientDetector::new(2.9).unwrap(), interior(), data, &v).count(),
        all
    );
    assert_eq!(
        run(
            &ShockDetector::new(0.1, 0.85).unwrap(),
            interior(),
            data,
            &v
        )
        .count(),
        0
    );
    // With onset below 1/2 the ramp counts as a shock.
    assert_eq!(
        run(
            &ShockDetector::new(0.1, 0.45).unwrap(),
            interior(),
            data,
            &v
        )
        .count(),
        all
    );
}

#[test]
fn diagonal_jumps_are_seen() {
    // An octant: the cell at (a-1, b-1, c-1) differs only from its body-diagonal neighbour.
    let (a, b, c) = (6, 5, 4);
    let (data, v) = field(interior(), 2, |p| {
        if p.x >= a && p.y >= b && p.z >= c {
            1.0
        } else {
            0.0
        }
    });
    let corner = iv(a - 1, b - 1, c - 1);
    for q in [
        iv(a, b - 1, c - 1),
        iv(a - 2, b - 1, c - 1),
        iv(a - 1, b, c - 1),
        iv(a, b, c - 1),
    ] {
        assert_eq!(v[data.offset(&corner)], v[data.offset(&q)]);
    }
    let grad = run(&GradientDetector::new(1.0).unwrap(), interior(), data, &v);
    let shock = run(
        &ShockDetector::new(1.0, 0.85).unwrap(),
        interior(),
        data,
        &v,
    );
    assert!(grad.get(&corner) && shock.get(&corner));
    // A wedge: the cell at (a-1, b-1, z) sees the jump only across a face diagonal.
    let (data, v) = field(
        interior(),
        2,
        |p| if p.x >= a && p.y >= b { 1.0 } else { 0.0 },
    );
    let grad = run(&GradientDetector::new(1.0).unwrap(), interior(), data, &v);
    for z in 0..=9 {
        assert!(grad.get(&iv(a - 1, b - 1, z)));
        assert!(!grad.get(&iv(a - 2, b - 2, z)));
    }
}

#[test]
fn previous_tags_relax_the_tolerance() {
    let xs = 7;
    let (data, v) = field(interior(), 2, |p| if p.x >= xs { 1.2 } else { 1.0 });
    // Jump 0.2 < tol * dx = 0.3, but > 0.125 * tol * sqrt(3) dx = 0.065.
    let det = GradientDetector::new(3.0).unwrap();
    assert_eq!(run(&det, interior(), data, &v).count(), 0);
    let mut prev = TagBox::new(interior()).unwrap();
    prev.set(&iv(xs, 3, 3)).unwrap();
    prev.set(&iv(0, 0, 0)).unwrap();
    let input = TagInput::new(&v, data, interior(), DX)
        .unwrap()
        .with_previous(&prev)
        .unwrap();
    let mut tags = TagBox::new(interior()).unwrap();
    det.tag(&input, &mut tags).unwrap();
    assert_eq!(tags.iter().collect::<Vec<_>>(), vec![iv(xs, 3, 3)]);
    let shock = ShockDetector::new(3.0, 0.85).unwrap();
    let mut tags = TagBox::new(interior()).unwrap();
    shock.tag(&input, &mut tags).unwrap();
    assert_eq!(tags.count(), 1);
}

#[test]
fn bad_input_is_reported() {
    let (data, v) = field(interior(), 1, |_| 0.0);
    let input = TagInput::new(&v, data, interior(), DX).unwrap();
    let mut tags = TagBox::new(interior()).unwrap();
    assert!(matches!(
        ShockDetector::new(1.0, 0.85)
            .unwrap()
            .tag(&input, &mut tags),
        Err(TagError::StencilOutsideData { width: 2, .. })
    ));
    assert!(
        GradientDetector::new(1.0)
            .unwrap()
            .tag(&input, &mut tags)
            .is_ok()
    );
    let mut small = TagBox::new(interior().grow(-1)).unwrap();
    assert!(matches!(
        GradientDetector::new(1.0).unwrap().tag(&input, &mut small),
        Err(TagError::InteriorOutsideTags { .. })
    ));
    assert!(matches!(
        TagInput::new(&v[1..], data, interior(), DX),
        Err(TagError::DataLength { .. })
    ));
    assert!(matches!(
        TagInput::new(&v, data, interior(), [0.1, -1.0, 0.1]),
        Err(TagError::BadCellSize { axis: 1, .. })
    ));
    assert!(matches!(
        TagInput::new(&v, data, interior().grow(2), DX),
        Err(TagError::InteriorOutsideData { .. })
    ));
    assert!(GradientDetector::new(f64::NAN).is_err());
    assert!(ShockDetector::new(1.0, 1.5).is_err());
    assert!(
        ShockDetector::new(1.0, 0.5)
            .unwrap()
            .with_retag_factors(2.0, 0.5)
            .is_err()
    );
}

/// Straightforward evaluation of the documented formulas, cell by cell.
fn reference(v: &TagInput<'_, f32>, tol: f64, onset: Option<f64>, p: IntVect) -> bool {
    reference_relaxed(v, tol, onset, p, false)
}

/// [`reference`] with the thresholds of a cell tagged at the previous
/// regrid when `relaxed` (SAMRAI's default factors).
fn reference_relaxed(
    v: &TagInput<'_, f32>,
    tol: f64,
    onset: Option<f64>,
    p: IntVect,
    relaxed: bool,
) -> bool {
    let (tol, onset) = if relaxed {
        (
            tol * DEFAULT_RETAG_TOL_FACTOR,
            onset.map(|o| o * DEFAULT_RETAG_ONSET_FACTOR),
        )
    } else {
        (tol, onset)
    };
    let at = |q: IntVect| v.value(&q).unwrap() as f64;
    DIRECTIONS.iter().any(|e| {
        let e = iv(e[0], e[1], e[2]);
        let h = (0..3)
            .map(|d| (e[d] as f64 * DX[d]).powi(2))
            .sum::<f64>()
            .sqrt();
        let f = (at(p) - at(p - e)).abs().max((at(p + e) - at(p)).abs());
        let thr = (tol * h) as f32 as f64;
        if f <= thr {
            return false;
        }
        match onset {
            None => true,
            Some(o) => {
                let j1 = at(p + e) - at(p - e);
                let j2 = at(p + 2 * e) - at(p - 2 * e);
                j1.abs() >= (o as f32 as f64) * j2.abs() || j1 * j2 < 0.0
            }
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The strided kernels agree with the formulas on random `f32` fields.
    #[test]
    fn kernels_match_the_formulas(vals in prop::collection::vec(0u8..4, 12 * 11 * 10), tol in 0.0f64..30.0, onset in 0.0f64..1.0) {
        let interior = IndexBox::new(iv(2, -3, 5), iv(9, 3, 10));
        let data = interior.grow(2);
        let v: Vec<f32> = vals.iter().map(|&x| x as f32 * 0.5).collect();
        prop_assert_eq!(v.len() as i64, data.num_cells());
        let input = TagInput::new(&v, data, interior, DX).unwrap();
        let mut g = TagBox::new(interior).unwrap();
        GradientDetector::new(tol).unwrap().tag(&input, &mut g).unwrap();
        let mut s = TagBox::new(interior).unwrap();
        ShockDetector::new(tol, onset).unwrap().tag(&input, &mut s).unwrap();
        for p in interior.iter() {
            prop_assert_eq!(g.get(&p), reference(&input, tol, None, p));
            prop_assert_eq!(s.get(&p), reference(&input, tol, Some(onset), p));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Rows longer than the detectors' pieces of 64 cells, with previous
    /// tags relaxing some cells' thresholds: the same tags as the formulas.
    #[test]
    fn long_rows_and_previous_tags_match_the_formulas(
        vals in prop::collection::vec(0u8..4, 74 * 7 * 7),
        prev in prop::collection::vec(any::<bool>(), 70 * 3 * 3),
        tol in 0.0f64..30.0,
        onset in 0.0f64..1.0,
    ) {
        let interior = IndexBox::new(iv(-1, 0, 4), iv(68, 2, 6));
        let data = interior.grow(2);
        let v: Vec<f32> = vals.iter().map(|&x| x as f32 * 0.5).collect();
        prop_assert_eq!(v.len() as i64, data.num_cells());
        let mut previous = TagBox::new(interior).unwrap();
        for (p, &t) in interior.iter().zip(&prev) {
            if t {
                previous.set(&p).unwrap();
            }
        }
        let input = TagInput::new(&v, data, interior, DX)
            .unwrap()
            .with_previous(&previous)
            .unwrap();
        let mut g = TagBox::new(interior).unwrap();
        GradientDetector::new(tol).unwrap().tag(&input, &mut g).unwrap();
        let mut s = TagBox::new(interior).unwrap();
        ShockDetector::new(tol, onset).unwrap().tag(&input, &mut s).unwrap();
        for p in interior.iter() {
            let r = previous.get(&p);
            prop_assert_eq!(g.get(&p), reference_relaxed(&input, tol, None, p, r), "gradient at {:?}", p);
            prop_assert_eq!(s.get(&p), reference_relaxed(&input, tol, Some(onset), p, r), "shock at {:?}", p);
        }
    }
}
