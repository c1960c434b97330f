//! Lower bounds on the number of bins, to judge a packing against.
//!
//! The continuous bound `L0 = ⌈Σ v / V⌉` is weak when many items are longer
//! than half the bin on some axes: two items longer than half the bin on
//! both `x` and `y` cannot sit side by side in the `xy` plane, so in one bin
//! they must be stacked along `z`, and the items large in `x` and `y` form a
//! one-dimensional bin packing instance along `z`. Martello, Pisinger & Vigo
//! ("The three-dimensional bin packing problem", *Operations Research*
//! 48(2), 2000) bound that instance with Martello & Toth's `L2`; the
//! maximum over the three axes is their `L1`.

use crate::Extent;
use crate::geometry::volume;

/// The best of the continuous bound `L0` and Martello–Pisinger–Vigo's `L1`
/// on the bins any fixed-orientation packing of `items` into `bin` needs.
///
/// Items must be validated (non-zero, fitting the bin) as for
/// [`crate::pack`]; the bound is only meaningful without rotation (with
/// rotation use [`crate::Packing::lower_bound`], the continuous bound).
///
/// # Example
/// ```
/// // Three 40³ items: the volume fits in one 64³ bin, but no two of them
/// // can share one.
/// let items = [[40, 40, 40]; 3];
/// assert_eq!(quilt_pack::bins_lower_bound(&items, [64, 64, 64]), 3);
/// ```
pub fn bins_lower_bound(items: &[Extent], bin: Extent) -> usize {
    let total: u128 = items.iter().map(|&e| u128::from(volume(e))).sum();
    let bin_volume = u128::from(bin[0]) * u128::from(bin[1]) * u128::from(bin[2]);
    let l0 = if bin_volume == 0 {
        0
    } else {
        total.div_ceil(bin_volume) as usize
    };
    let mut sizes = Vec::with_capacity(items.len());
    let mut best = l0;
    for axis in 0..3 {
        let (a, b) = ((axis + 1) % 3, (axis + 2) % 3);
        sizes.clear();
        sizes.extend(
            items
                .iter()
                .filter(|e| {
                    2 * u64::from(e[a]) > u64::from(bin[a])
                        && 2 * u64::from(e[b]) > u64::from(bin[b])
                })
                .map(|e| e[axis]),
        );
        best = best.max(one_dimensional_l2(&sizes, bin[axis]));
    }
    best
}

/// Martello & Toth's `L2` for one-dimensional bin packing of `sizes` (each
/// at most `capacity`): for every threshold `k ≤ C/2`, items above `C - k`
/// and items above `C/2` each need a bin of their own, and items in
/// `[k, C/2]` must fit in what the latter leave free or open new bins.
fn one_dimensional_l2(sizes: &[u32], capacity: u32) -> usize {
    if sizes.is_empty() {
        return 0;
    }
    let c = u64::from(capacity);
    // Only thresholds equal to an item size (or 0) change the sets.
    let mut thresholds: Vec<u64> = sizes
        .iter()
        .map(|&s| u64::from(s))
        .filter(|&s| 2 * s <= c)
        .collect();
    thresholds.push(0);
    thresholds.sort_unstable();
    thresholds.dedup();
    let mut best = 0usize;
    for &k in &thresholds {
        let (mut n1, mut n2, mut sum2, mut sum3) = (0usize, 0usize, 0u64, 0u64);
        for &s in sizes {
            let s = u64::from(s);
            if s > c - k {
                n1 += 1;
            } else if 2 * s > c {
                n2 += 1;
                sum2 += s;
            } else if s >= k {
                sum3 += s;
            }
        }
        let room = n2 as u64 * c - sum2;
        let extra = sum3.saturating_sub(room).div_ceil(c) as usize;
        best = best.max(n1 + n2 + extra);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l2_counts_large_items_and_filler() {
        // Capacity 10: two 6s need two bins; three 4s fit in their room (2 × 4
        // free) only partly: 12 - 8 = 4 more, one extra bin.
        assert_eq!(one_dimensional_l2(&[6, 6, 4, 4, 4], 10), 3);
        // Items of 5 pair up exactly.
        assert_eq!(one_dimensional_l2(&[5, 5, 5, 5], 10), 2);
        // 8s leave 2 free, less than the 3s need: k = 3 separates them.
        assert_eq!(one_dimensional_l2(&[8, 8, 3, 3], 10), 3);
        assert_eq!(one_dimensional_l2(&[], 10), 0);
    }

    #[test]
    fn bound_is_at_least_continuous_and_stacking() {
        let bin = [64, 64, 64];
        // Flat plates large in x and z stack along y: 4 plates of height 20
        // need 2 bins although their volume fits in 1.3.
        let plates = [[40, 20, 40]; 4];
        assert_eq!(bins_lower_bound(&plates, bin), 2);
        // Small cubes: only the continuous bound applies.
        let cubes = [[16, 16, 16]; 65];
        assert_eq!(bins_lower_bound(&cubes, bin), 2);
    }
}
