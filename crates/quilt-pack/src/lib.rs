//! # quilt-pack
//!
//! Extreme-point 3D bin packing of patches into identical bins, after
//! Crainic, Perboli & Tadei, "Extreme point-based heuristics for
//! three-dimensional bin packing", *INFORMS J. on Computing* 20(3), 2008.
//! quilt packs ghost-inclusive patch extents into 64³ bins so that every
//! GPU thread block of a sweep gets an equal share of cells (Raghavan &
//! Vadhiyar 2015, section 3.1).
//!
//! | module | holds |
//! |---|---|
//! | `options` | [`PackOptions`], [`Heuristic`], [`Merit`], [`SortOrder`] |
//! | `order` | item orderings (volume–height, clustered area–height, …) |
//! | `extreme_points` | one bin: placed boxes, extreme points, residual spaces |
//! | `ep_fit` | EP-FFD, EP-BFD and C-EPBFD over bins; [`PackWorkspace`] |
//! | `packing` | [`Packing`], [`Placement`], statistics, [`Packing::verify`] |
//! | `lower_bound` | [`bins_lower_bound`]: Martello–Pisinger–Vigo bounds |
//! | `items_file` | [`parse_items`] for `w,h,d` item lists |
//! | `hierarchy` | [`pack_hierarchy`]: the patches of a `quilt-mesh` hierarchy |
//!
//! # Example
//! ```
//! use quilt_pack::{pack, PackOptions};
//!
//! let items = [[32, 64, 64], [32, 32, 64], [32, 32, 64], [40, 40, 40]];
//! let packing = pack(&items, [64, 64, 64], &PackOptions::default()).unwrap();
//! assert_eq!(packing.bins_used, 2);
//! assert_eq!(packing.lower_bound(), 2);
//! packing.verify(&items, false).unwrap();
//! ```
//!
//! # Conventions
//! An [`Extent`] is `(w, h, d)`, the sides along `(x, y, z)` in cells.
//! The orderings call `y` the height and `w·d` the base area. Items keep
//! their orientation unless [`PackOptions::allow_rotation`] is set. Results
//! depend only on the input: ties are broken by bin, point and item order.
#![warn(missing_docs)]

mod ep_fit;
mod error;
mod extreme_points;
mod geometry;
mod hierarchy;
mod items_file;
mod lower_bound;
mod options;
mod order;
mod packing;

pub use ep_fit::PackWorkspace;
pub use error::{ItemsFileError, PackError, ParseOptionError};
pub use hierarchy::{HierarchyPacking, PatchRef, pack_hierarchy, pack_patches, patch_extents};
pub use items_file::{parse_extent, parse_items};
pub use lower_bound::bins_lower_bound;
pub use options::{Heuristic, Merit, PackOptions, SortOrder};
pub use packing::{Packing, PackingDefect, Placement};

/// Sides `(w, h, d)` of a box along `(x, y, z)`, in cells.
pub type Extent = [u32; 3];

/// Packs `items` into bins of extent `bin`.
///
/// Returns one [`Placement`] per item (`placements[i].item == i`) and the
/// number of bins opened. Equal inputs give equal outputs.
///
/// # Errors
/// [`PackError`] when the bin has a zero side or a volume above 2⁶⁴, an
/// item has a zero side or does not fit in the bin (naming the item), or a
/// clustered ordering has a cluster width outside 1..=100 %.
///
/// # Performance
/// EP-BFD is `O(n · b · p)` for `n` items, `b` open bins and `p` extreme
/// points per bin; bins that can take none of the remaining items are
/// closed, so `b` stays small. C-EPBFD costs one EP-BFD per ordering. See
/// `docs/quilt-pack.md` for measured times.
pub fn pack(items: &[Extent], bin: Extent, opts: &PackOptions) -> Result<Packing, PackError> {
    pack_with(&mut PackWorkspace::new(), items, bin, opts)
}

/// [`pack`] with caller-provided scratch memory, for repeated packings.
///
/// # Errors
/// As [`pack`].
pub fn pack_with(
    workspace: &mut PackWorkspace,
    items: &[Extent],
    bin: Extent,
    opts: &PackOptions,
) -> Result<Packing, PackError> {
    validate(items, bin, opts)?;
    let packing = match opts.heuristic {
        Heuristic::EpFfd | Heuristic::EpBfd => {
            let pass =
                ep_fit::single_pass(opts.heuristic, opts.merit, opts.sort, opts.allow_rotation);
            workspace
                .run(items, bin, pass, None)
                .expect("a pass without a bin limit always finishes")
        }
        Heuristic::CEpBfd => {
            let orders = opts.c_epbfd_orders();
            workspace.run_multi(items, bin, opts.merit, opts.allow_rotation, &orders)
        }
    };
    log::debug!(
        "{} packed {} items into {} bins (lower bound {}, efficiency {:.4})",
        opts.heuristic,
        items.len(),
        packing.bins_used,
        packing.lower_bound(),
        packing.efficiency()
    );
    Ok(packing)
}

fn validate(items: &[Extent], bin: Extent, opts: &PackOptions) -> Result<(), PackError> {
    if bin.contains(&0) {
        return Err(PackError::EmptyBin { bin });
    }
    if geometry::checked_volume(bin).is_none() {
        return Err(PackError::BinTooLarge { bin });
    }
    let check_delta = |order: &SortOrder| match order.delta_percent() {
        Some(delta_percent) if !(1..=100).contains(&delta_percent) => {
            Err(PackError::InvalidClusterWidth { delta_percent })
        }
        _ => Ok(()),
    };
    check_delta(&opts.sort)?;
    if opts.heuristic == Heuristic::CEpBfd {
        opts.orders.iter().try_for_each(check_delta)?;
    }
    for (item, &extent) in items.iter().enumerate() {
        if extent.contains(&0) {
            return Err(PackError::EmptyItem { item, extent });
        }
        let fits = |e: Extent| (0..3).all(|a| e[a] <= bin[a]);
        let fits_some_way = if opts.allow_rotation {
            let mut sorted_item = extent;
            let mut sorted_bin = bin;
            sorted_item.sort_unstable();
            sorted_bin.sort_unstable();
            (0..3).all(|a| sorted_item[a] <= sorted_bin[a])
        } else {
            fits(extent)
        };
        if !fits_some_way {
            let axis = (0..3).find(|&a| extent[a] > bin[a]).unwrap_or(0);
            return Err(PackError::ItemTooLarge {
                item,
                extent,
                bin,
                axis,
                needed: extent[axis],
                available: bin[axis],
                rotation_allowed: opts.allow_rotation,
            });
        }
    }
    Ok(())
}
