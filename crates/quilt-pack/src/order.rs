//! Item orderings (Crainic, Perboli & Tadei 2008, section 5.1): the sequence
//! in which the construction heuristics see the items.

use crate::geometry::{HEIGHT_AXIS, base_area, other_axes, volume};
use crate::{Extent, SortOrder};

/// Writes into `order` the item indices in the order `sort` offers them.
///
/// Keys are non-increasing; ties keep input order (a stable sort on index),
/// which makes every heuristic deterministic. `sort`'s cluster width must
/// already be validated (1..=100).
pub(crate) fn sort_items(items: &[Extent], bin: Extent, sort: SortOrder, order: &mut Vec<usize>) {
    order.clear();
    order.extend(0..items.len());
    let h = |i: usize| u128::from(items[i][HEIGHT_AXIS]);
    let vol = |i: usize| u128::from(volume(items[i]));
    let area = |i: usize| u128::from(base_area(items[i]));
    // Keys are (primary, secondary, tertiary) compared in reverse; the
    // tertiary key only matters for clustered orderings.
    let key: Box<dyn Fn(usize) -> (u128, u128, u128)> = match sort {
        SortOrder::VolumeHeight => Box::new(|i| (vol(i), h(i), 0)),
        SortOrder::HeightVolume => Box::new(|i| (h(i), vol(i), 0)),
        SortOrder::AreaHeight => Box::new(|i| (area(i), h(i), 0)),
        SortOrder::HeightArea => Box::new(|i| (h(i), area(i), 0)),
        SortOrder::ClusteredAreaHeight { delta_percent } => {
            // Cluster k holds areas in [k, k+1) · δ/100 · W·D, computed in
            // integers so the split does not depend on rounding.
            let width = u128::from(delta_percent) * u128::from(base_area(bin));
            Box::new(move |i| (area(i) * 100 / width, h(i), area(i)))
        }
        SortOrder::ClusteredHeightArea { delta_percent } => {
            clustered_along(items, bin, HEIGHT_AXIS, delta_percent)
        }
        SortOrder::ClusteredWidthArea { delta_percent } => {
            clustered_along(items, bin, 0, delta_percent)
        }
        SortOrder::ClusteredDepthArea { delta_percent } => {
            clustered_along(items, bin, 2, delta_percent)
        }
    };
    order.sort_by_cached_key(|&i| std::cmp::Reverse(key(i)));
}

/// Key of a clustered side–area ordering along `axis`: the cluster of the
/// item's side on `axis` (clusters δ % of the bin side wide), then the area
/// of the face orthogonal to `axis`, then the side itself.
fn clustered_along<'a>(
    items: &'a [Extent],
    bin: Extent,
    axis: usize,
    delta_percent: u32,
) -> Box<dyn Fn(usize) -> (u128, u128, u128) + 'a> {
    let width = u128::from(delta_percent) * u128::from(bin[axis]);
    let (a, b) = other_axes(axis);
    Box::new(move |i| {
        let e = items[i];
        let side = u128::from(e[axis]);
        (
            side * 100 / width,
            u128::from(e[a]) * u128::from(e[b]),
            side,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: Extent = [64, 64, 64];

    fn order_of(items: &[Extent], sort: SortOrder) -> Vec<usize> {
        let mut order = Vec::new();
        sort_items(items, BIN, sort, &mut order);
        order
    }

    #[test]
    fn volume_height_breaks_ties_by_height_then_index() {
        // volumes: 8000, 8000, 8000, 27000
        let items = [[20, 20, 20], [10, 40, 20], [40, 10, 20], [30, 30, 30]];
        assert_eq!(order_of(&items, SortOrder::VolumeHeight), vec![3, 1, 0, 2]);
    }

    #[test]
    fn height_first_orders() {
        let items = [[10, 30, 10], [20, 30, 20], [60, 20, 60], [5, 40, 5]];
        assert_eq!(order_of(&items, SortOrder::HeightVolume), vec![3, 1, 0, 2]);
        assert_eq!(order_of(&items, SortOrder::HeightArea), vec![3, 1, 0, 2]);
        assert_eq!(order_of(&items, SortOrder::AreaHeight), vec![2, 1, 0, 3]);
    }

    #[test]
    fn clustered_area_height_groups_areas() {
        // Bin base area 4096; δ = 50 % gives clusters [0, 2048) and [2048, 4096].
        // Areas: 2000 (cluster 0), 100 (0), 2500 (1), 2100 (1).
        let items = [[40, 10, 50], [10, 60, 10], [50, 5, 50], [42, 20, 50]];
        assert_eq!(
            order_of(&items, SortOrder::ClusteredAreaHeight { delta_percent: 50 }),
            vec![3, 2, 1, 0]
        );
        // With δ = 1 % every area is its own cluster: plain area order.
        assert_eq!(
            order_of(&items, SortOrder::ClusteredAreaHeight { delta_percent: 1 }),
            order_of(&items, SortOrder::AreaHeight)
        );
    }

    #[test]
    fn clustered_orderings_along_each_axis_agree() {
        // Turning every item so that its x (or z) side becomes its height
        // turns the width (depth) ordering into the height ordering.
        let items = [
            [40, 10, 50],
            [10, 60, 10],
            [50, 5, 50],
            [42, 20, 50],
            [33, 33, 20],
            [20, 64, 30],
        ];
        let swap = |p: [usize; 3]| {
            items
                .iter()
                .map(|e| [e[p[0]], e[p[1]], e[p[2]]])
                .collect::<Vec<_>>()
        };
        let delta_percent = 51;
        let height = SortOrder::ClusteredHeightArea { delta_percent };
        assert_eq!(
            order_of(&items, SortOrder::ClusteredWidthArea { delta_percent }),
            order_of(&swap([1, 0, 2]), height)
        );
        assert_eq!(
            order_of(&items, SortOrder::ClusteredDepthArea { delta_percent }),
            order_of(&swap([0, 2, 1]), height)
        );
        // δ = 51 %: sides above 32 of 64 come first.
        assert_eq!(
            order_of(&items, SortOrder::ClusteredWidthArea { delta_percent })[..4],
            [3, 4, 0, 2]
        );
    }

    #[test]
    fn clustered_height_area_groups_heights() {
        // δ = 25 % of 64: clusters of 16 cells; heights 20, 30 share cluster 1.
        let items = [[10, 20, 10], [5, 30, 5], [30, 10, 30], [8, 40, 8]];
        assert_eq!(
            order_of(&items, SortOrder::ClusteredHeightArea { delta_percent: 25 }),
            vec![3, 0, 1, 2]
        );
    }
}
