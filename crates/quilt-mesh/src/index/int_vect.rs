//! Integer index vectors and the one floor division every coarsening uses.

use nalgebra::Vector3;

/// A point of a (cell-centred) index space: `(i, j, k)` along `(x, y, z)`.
pub type IntVect = Vector3<i32>;

/// Shorthand constructor for an [`IntVect`].
#[inline]
pub const fn iv(i: i32, j: i32, k: i32) -> IntVect {
    Vector3::new(i, j, k)
}

/// The index of the coarse cell that contains fine cell `i` for refinement
/// ratio `ratio` (floor division, so negative indices coarsen correctly).
///
/// Every coarsening in quilt goes through this function so that boxes,
/// points and ghost regions agree on which coarse cell owns a fine cell.
#[inline]
pub fn coarsen_index(i: i32, ratio: i32) -> i32 {
    debug_assert!(ratio > 0, "refinement ratio must be positive");
    i.div_euclid(ratio)
}

/// Component-wise [`coarsen_index`].
#[inline]
pub fn coarsen_vect(p: &IntVect, ratio: i32) -> IntVect {
    p.map(|c| coarsen_index(c, ratio))
}

/// The first axis along which `v` is largest (ties go to the lower axis).
#[inline]
pub fn argmax_axis(v: &IntVect) -> usize {
    let mut best = 0;
    for d in 1..3 {
        if v[d] > v[best] {
            best = d;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarsen_is_floor_division() {
        assert_eq!(coarsen_index(7, 2), 3);
        assert_eq!(coarsen_index(-1, 2), -1);
        assert_eq!(coarsen_index(-4, 4), -1);
        assert_eq!(coarsen_index(-5, 4), -2);
        assert_eq!(coarsen_vect(&iv(-3, 0, 5), 2), iv(-2, 0, 2));
    }

    #[test]
    fn argmax_prefers_lower_axis_on_ties() {
        assert_eq!(argmax_axis(&iv(3, 3, 1)), 0);
        assert_eq!(argmax_axis(&iv(1, 4, 4)), 1);
        assert_eq!(argmax_axis(&iv(1, 2, 9)), 2);
    }
}
