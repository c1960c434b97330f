//! Where to cut a box: holes, inflection points, bisection, nesting.
//!
//! Berger & Rigoutsos (1991), §3: cut at a *hole* (a slab without tags)
//! when there is one; otherwise at the strongest *inflection point* of the
//! signature, where the discrete Laplacian `Δσ(i) = σ(i-1) - 2σ(i) + σ(i+1)`
//! changes sign with the largest jump `|Δσ(i+1) - Δσ(i)|` (the edge of a
//! cluster); otherwise bisect the longest side. Ties go to the cut nearest
//! the middle of the box, then to the lower axis, so results are
//! deterministic.

use crate::index::IndexBox;

/// A cut of a box along `axis`: the low part ends at cell `at - 1`, the
/// high part starts at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    pub(crate) axis: usize,
    pub(crate) at: i32,
}

/// `|2 at - (lo + hi + 1)|` and the side length: the distance of the cut
/// from the middle relative to the side, compared as a fraction.
#[inline]
fn off_centre(b: &IndexBox, axis: usize, at: i32) -> (i64, i64) {
    let d = (2 * at as i64 - (b.lo[axis] as i64 + b.hi[axis] as i64 + 1)).abs();
    (d, b.size()[axis] as i64)
}

/// Whether fraction `a` is smaller than fraction `b`.
#[inline]
fn less(a: (i64, i64), b: (i64, i64)) -> bool {
    (a.0 as i128) * (b.1 as i128) < (b.0 as i128) * (a.1 as i128)
}

/// The hole cut nearest the middle of `b`. A run of empty slabs `[a, e]`
/// may be cut anywhere in `a ..= e + 1`; the cut must leave both parts of
/// `region` (the partition cell `b` lies in) at least `rmin` cells wide so
/// that boxes can later grow to the minimum size inside their cell.
pub(crate) fn hole_cut(
    b: &IndexBox,
    region: &IndexBox,
    sigs: [&[u64]; 3],
    axes: [bool; 3],
    rmin: i32,
) -> Option<Cut> {
    let mut best: Option<(Cut, (i64, i64), i32)> = None;
    for axis in (0..3).filter(|&a| axes[a]) {
        let s = sigs[axis];
        let lo = b.lo[axis];
        let (vlo, vhi) = (region.lo[axis] + rmin, region.hi[axis] + 1 - rmin);
        let mut i = 1;
        while i + 1 < s.len() {
            if s[i] != 0 {
                i += 1;
                continue;
            }
            let a = i;
            while s[i] == 0 {
                i += 1; // the last slab is tagged, so this stops
            }
            let e = i - 1;
            let (first, last) = ((lo + a as i32).max(vlo), (lo + e as i32 + 1).min(vhi));
            if first > last {
                continue;
            }
            let mid = lo + (a + e).div_ceil(2) as i32;
            let at = mid.clamp(first, last);
            let c = off_centre(b, axis, at);
            let len = (e - a + 1) as i32;
            let better = match best {
                None => true,
                Some((_, bc, blen)) => less(c, bc) || (c == bc && len > blen),
            };
            if better {
                best = Some((Cut { axis, at }, c, len));
            }
        }
    }
    best.map(|(cut, _, _)| cut)
}

/// The strongest sign change of the signature's Laplacian that leaves both
/// parts of `b` at least `bmin` cells wide.
pub(crate) fn inflection_cut(
    b: &IndexBox,
    sigs: [&[u64]; 3],
    axes: [bool; 3],
    bmin: i32,
) -> Option<Cut> {
    let mut best: Option<(Cut, i64, (i64, i64))> = None;
    for axis in (0..3).filter(|&a| axes[a]) {
        let s = sigs[axis];
        let n = s.len();
        if n < 4 {
            continue;
        }
        let lap = |i: usize| s[i - 1] as i64 - 2 * s[i] as i64 + s[i + 1] as i64;
        let mut l1 = lap(1);
        for j in 1..n - 2 {
            let l2 = lap(j + 1);
            let k = (j + 1) as i32; // cells in the low part
            if ((l1 < 0 && l2 > 0) || (l1 > 0 && l2 < 0)) && k >= bmin && n as i32 - k >= bmin {
                let strength = (l2 - l1).abs();
                let at = b.lo[axis] + k;
                let c = off_centre(b, axis, at);
                let better = match best {
                    None => true,
                    Some((_, bs, bc)) => strength > bs || (strength == bs && less(c, bc)),
                };
                if better {
                    best = Some((Cut { axis, at }, strength, c));
                }
            }
            l1 = l2;
        }
    }
    best.map(|(cut, _, _)| cut)
}

/// Cut the longest allowed side at least `2 bmin` long: in half, or, when
/// it exceeds `max`, into `ceil(side / max)` near-equal pieces (this cut
/// takes off the first piece).
pub(crate) fn bisect_cut(b: &IndexBox, axes: [bool; 3], bmin: i32, max: i32) -> Option<Cut> {
    let s = b.size();
    let axis =
        (0..3)
            .filter(|&a| axes[a] && s[a] >= 2 * bmin)
            .fold(None, |best: Option<usize>, a| match best {
                Some(k) if s[k] >= s[a] => Some(k),
                _ => Some(a),
            })?;
    let n = s[axis];
    let pieces = if n > max { (n + max - 1) / max } else { 2 };
    Some(Cut {
        axis,
        at: b.lo[axis] + n / pieces,
    })
}

/// A cut that separates a part of `b` free of forbidden cells: at the first
/// or last slab holding a forbidden cell (`bad[d][i] > 0`), keeping the
/// free part with the most tags. `None` when forbidden cells reach both
/// ends of `b` along every axis.
pub(crate) fn nesting_cut(b: &IndexBox, sigs: [&[u64]; 3], bad: [&[u64]; 3]) -> Option<Cut> {
    let mut best: Option<(Cut, u64)> = None;
    for axis in 0..3 {
        let (s, bad) = (sigs[axis], bad[axis]);
        let n = s.len();
        let (Some(f), Some(l)) = (
            bad.iter().position(|&c| c > 0),
            bad.iter().rposition(|&c| c > 0),
        ) else {
            continue;
        };
        let mut consider = |at: usize, good: u64| {
            if best.is_none_or(|(_, g)| good > g) {
                best = Some((
                    Cut {
                        axis,
                        at: b.lo[axis] + at as i32,
                    },
                    good,
                ));
            }
        };
        if f > 0 {
            consider(f, s[..f].iter().sum());
        }
        if l + 1 < n {
            consider(l + 1, s[l + 1..].iter().sum());
        }
    }
    best.map(|(cut, _)| cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::iv;

    fn line(n: i32) -> IndexBox {
        IndexBox::new(iv(0, 0, 0), iv(n - 1, 0, 0))
    }

    #[test]
    fn holes_are_cut_in_their_middle_nearest_the_centre() {
        let s: [u64; 12] = [1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1];
        let b = line(12);
        let one = [1u64];
        let cut = hole_cut(&b, &b, [&s, &one, &one], [true; 3], 1).unwrap();
        // Runs [1,2] (cut 2, off-centre |4-12|=8) and [7,9] (cut 8, |16-12|=4).
        assert_eq!(cut, Cut { axis: 0, at: 8 });
        // A region minimum of 5 allows cuts at 5..=7 only: the right run at its low end.
        assert_eq!(
            hole_cut(&b, &b, [&s, &one, &one], [true; 3], 5),
            Some(Cut { axis: 0, at: 7 })
        );
        assert_eq!(hole_cut(&b, &b, [&s, &one, &one], [true; 3], 6), None);
        let wide = IndexBox::new(iv(0, 0, 0), iv(20, 0, 0));
        assert_eq!(
            hole_cut(&b, &wide, [&s, &one, &one], [true; 3], 5),
            Some(Cut { axis: 0, at: 8 })
        );
    }

    #[test]
    fn inflection_at_the_edge_of_a_cluster() {
        // A dense block then a sparse tail: the Laplacian jumps at the edge.
        let s: [u64; 10] = [5, 5, 5, 5, 1, 1, 1, 1, 1, 1];
        let one = [1u64];
        let cut = inflection_cut(&line(10), [&s, &one, &one], [true; 3], 2).unwrap();
        assert_eq!(cut, Cut { axis: 0, at: 4 });
        assert_eq!(
            inflection_cut(&line(10), [&s, &one, &one], [true; 3], 5),
            None
        );
    }

    #[test]
    fn bisection_respects_min_and_max() {
        let b = IndexBox::new(iv(0, 0, 0), iv(9, 29, 3));
        assert_eq!(
            bisect_cut(&b, [true; 3], 3, 30),
            Some(Cut { axis: 1, at: 15 })
        );
        assert_eq!(
            bisect_cut(&b, [true, false, true], 3, 30),
            Some(Cut { axis: 0, at: 5 })
        );
        assert_eq!(bisect_cut(&b, [false, false, true], 3, 30), None);
        let long = IndexBox::new(iv(0, 0, 0), iv(69, 0, 0));
        // 70 cells, max 30: three pieces of about 23.
        assert_eq!(
            bisect_cut(&long, [true; 3], 6, 30),
            Some(Cut { axis: 0, at: 23 })
        );
    }

    #[test]
    fn nesting_cut_keeps_the_free_part_with_most_tags() {
        let b = IndexBox::new(iv(0, 0, 0), iv(5, 5, 0));
        let sx: [u64; 6] = [1, 1, 1, 1, 1, 1];
        let sy: [u64; 6] = [4, 1, 1, 0, 0, 0];
        let sz: [u64; 1] = [6];
        // Forbidden cells in x >= 4 and y >= 3.
        let bx: [u64; 6] = [0, 0, 0, 0, 3, 3];
        let by: [u64; 6] = [0, 0, 0, 2, 2, 2];
        let bz: [u64; 1] = [6];
        let cut = nesting_cut(&b, [&sx, &sy, &sz], [&bx, &by, &bz]).unwrap();
        assert_eq!(cut, Cut { axis: 1, at: 3 });
    }
}
