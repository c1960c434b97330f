//! Growing boxes below the minimum side to the minimum.
//!
//! A box narrower than the minimum along an axis is widened to exactly the
//! minimum, as evenly on both sides as the room allows. First every box
//! tries inside its own partition cell (cells are disjoint, so these growths
//! never collide, and when the nesting region is a box every cell is at
//! least the minimum wide, so every box succeeds). Boxes that could not grow
//! there then try anywhere inside the nesting region that no other box
//! occupies. Boxes that still cannot grow stay narrow and are counted.

use crate::index::IndexBox;

use super::berger_rigoutsos::Candidate;
use super::nesting::Nesting;

/// Shifts to try for adding `m` cells: `k` cells below, `m - k` above,
/// most balanced first.
fn splits(m: i32) -> impl Iterator<Item = i32> {
    let k0 = m / 2;
    (0..=2 * m + 1)
        .map(move |t| {
            if t % 2 == 1 {
                k0 + (t + 1) / 2
            } else {
                k0 - t / 2
            }
        })
        .filter(move |&k| (0..=m).contains(&k))
}

/// Widens `b` along every narrow axis, each time taking the first shift
/// that `fits`.
fn widen(b: IndexBox, min: i32, fits: impl Fn(&IndexBox) -> bool) -> IndexBox {
    let mut b = b;
    for d in 0..3 {
        let s = b.size()[d];
        if s >= min {
            continue;
        }
        let m = min - s;
        for k in splits(m) {
            let mut g = b;
            g.lo[d] -= k;
            g.hi[d] += m - k;
            if fits(&g) {
                b = g;
                break;
            }
        }
    }
    b
}

fn narrow(b: &IndexBox, min: i32) -> bool {
    (0..3).any(|d| b.size()[d] < min)
}

/// Grows the boxes to `min` cells per side where room allows; returns how
/// many remain narrower.
pub(crate) fn grow_to_min(cands: &mut [Candidate], nesting: &Nesting, min: i32) -> usize {
    for c in cands.iter_mut() {
        if narrow(&c.b, min) {
            let region = c.region;
            c.b = widen(c.b, min, |g| {
                region.contains_box(g) && nesting.contains_box(g)
            });
        }
    }
    let mut left = 0;
    for i in 0..cands.len() {
        if !narrow(&cands[i].b, min) {
            continue;
        }
        let others = &*cands;
        let g = widen(cands[i].b, min, |g| {
            nesting.contains_box(g)
                && others
                    .iter()
                    .enumerate()
                    .all(|(j, o)| j == i || !o.b.intersects(g))
        });
        cands[i].b = g;
        if narrow(&g, min) {
            left += 1;
        }
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_balanced_first() {
        assert_eq!(splits(0).collect::<Vec<_>>(), vec![0]);
        assert_eq!(splits(3).collect::<Vec<_>>(), vec![1, 2, 0, 3]);
        assert_eq!(splits(4).collect::<Vec<_>>(), vec![2, 3, 1, 4, 0]);
    }
}
