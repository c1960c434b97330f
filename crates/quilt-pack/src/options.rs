//! Settings of a packing run: heuristic, merit function, item ordering,
//! rotation, and the orderings C-EPBFD tries.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ParseOptionError;

/// Which extreme-point construction heuristic places the items
/// (Crainic, Perboli & Tadei 2008, section 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Heuristic {
    /// EP-FFD: each item goes to the first open bin, and in it the first
    /// extreme point (lowest `y`, then `z`, then `x`), where it fits.
    /// The fastest; use it when packing time matters more than bins.
    EpFfd,
    /// EP-BFD: each item goes to the extreme point, over all open bins, of
    /// best [`Merit`]. The paper's recommended single-pass heuristic and the
    /// one the founding AMR paper (Raghavan & Vadhiyar 2015) uses.
    #[default]
    EpBfd,
    /// C-EPBFD: EP-BFD run once per ordering of
    /// [`PackOptions::c_epbfd_orders`] ([`PackOptions::sort`], then
    /// [`PackOptions::orders`]), keeping the packing with fewest bins.
    /// Slower by the number of orderings tried; stops early when a packing
    /// meets the lower bound.
    CEpBfd,
}

/// How EP-BFD scores a candidate placement (lower is better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Merit {
    /// Residual space (RS): the sum over the axes of the residual space of
    /// the extreme point minus the item's side, i.e. the item that most
    /// tightly fills the free space around a point wins. Ties go to the
    /// fuller bin.
    #[default]
    ResidualSpace,
    /// Free volume (FV): the free volume of the bin after the placement, i.e.
    /// best fit by bin volume; within one bin the residual-space merit picks
    /// the point.
    FreeVolume,
}

/// The order in which items are offered to the heuristic. "Height" is the
/// `y` side (`h` of `(w, h, d)`), "area" the base area `w·d` unless stated
/// otherwise. All orderings are non-increasing; remaining ties keep the
/// input order, so packing is deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum SortOrder {
    /// Volume, ties by height: the paper's choice for EP-BFD.
    #[default]
    VolumeHeight,
    /// Height, ties by volume.
    HeightVolume,
    /// Base area, ties by height.
    AreaHeight,
    /// Height, ties by base area.
    HeightArea,
    /// Items grouped into clusters of base area `δ %` of the bin's base area
    /// wide; clusters by decreasing area, items in a cluster by decreasing
    /// height.
    ClusteredAreaHeight {
        /// Cluster width δ in percent of the bin's base area (1..=100).
        delta_percent: u32,
    },
    /// Items grouped into clusters of height `δ %` of the bin's height wide;
    /// clusters by decreasing height, items in a cluster by decreasing base
    /// area.
    ClusteredHeightArea {
        /// Cluster width δ in percent of the bin's height (1..=100).
        delta_percent: u32,
    },
    /// [`SortOrder::ClusteredHeightArea`] along `x`: clusters of width `w`
    /// δ % of the bin's width wide, by decreasing width; in a cluster by
    /// decreasing area `h·d` of the face orthogonal to `x`. Not in the
    /// paper; see [`SortOrder::long_side_first`].
    ClusteredWidthArea {
        /// Cluster width δ in percent of the bin's width (1..=100).
        delta_percent: u32,
    },
    /// [`SortOrder::ClusteredHeightArea`] along `z`: clusters of depth `d`,
    /// in a cluster by decreasing area `w·h`. Not in the paper; see
    /// [`SortOrder::long_side_first`].
    ClusteredDepthArea {
        /// Cluster width δ in percent of the bin's depth (1..=100).
        delta_percent: u32,
    },
}

impl SortOrder {
    /// The cluster width δ of a clustered ordering.
    pub fn delta_percent(&self) -> Option<u32> {
        match *self {
            SortOrder::ClusteredAreaHeight { delta_percent }
            | SortOrder::ClusteredHeightArea { delta_percent }
            | SortOrder::ClusteredWidthArea { delta_percent }
            | SortOrder::ClusteredDepthArea { delta_percent } => Some(delta_percent),
            _ => None,
        }
    }

    /// The orderings of the paper's C-EPBFD: the four plain orderings, then
    /// clustered area–height and height–area for each cluster width δ
    /// (Crainic, Perboli & Tadei try δ over 1..=100).
    pub fn paper_orders(deltas: &[u32]) -> Vec<SortOrder> {
        let mut orders = vec![
            SortOrder::VolumeHeight,
            SortOrder::HeightVolume,
            SortOrder::AreaHeight,
            SortOrder::HeightArea,
        ];
        for &delta_percent in deltas {
            orders.push(SortOrder::ClusteredAreaHeight { delta_percent });
            orders.push(SortOrder::ClusteredHeightArea { delta_percent });
        }
        orders
    }

    /// "Long side first" along each axis: clusters of δ = 51 % split items
    /// into those longer than half the bin on that axis and the rest. Two
    /// items longer than half the bin on an axis can never lie side by side
    /// along it, so packing them first, largest cross-section first, treats
    /// them as the two-dimensional problem they are and lets the shorter
    /// items fill in. On patch-sized items (sides 16..=64 in 64³ bins) the
    /// best of volume–height and these three comes within 0.2 % of the
    /// paper's 204-ordering C-EPBFD (see `docs/quilt-pack.md`).
    pub fn long_side_first() -> [SortOrder; 3] {
        [
            SortOrder::ClusteredHeightArea { delta_percent: 51 },
            SortOrder::ClusteredWidthArea { delta_percent: 51 },
            SortOrder::ClusteredDepthArea { delta_percent: 51 },
        ]
    }
}

/// Settings of [`crate::pack`]. Build with `..Default::default()` so that
/// fields added later do not break callers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackOptions {
    /// The construction heuristic (default EP-BFD).
    pub heuristic: Heuristic,
    /// The merit function of EP-BFD and C-EPBFD (default residual space).
    pub merit: Merit,
    /// The item ordering of EP-FFD and EP-BFD, and the first ordering C-EPBFD
    /// tries (default volume–height).
    pub sort: SortOrder,
    /// Whether items may be turned to any of their six axis-aligned
    /// orientations. Off by default: a patch's axes matter to the sweep
    /// kernels, so a turned patch needs its data transposed.
    pub allow_rotation: bool,
    /// The orderings C-EPBFD tries after [`PackOptions::sort`] (repeats
    /// are skipped). Default: [`SortOrder::long_side_first`]; for the
    /// paper's sweep use [`SortOrder::paper_orders`].
    pub orders: Vec<SortOrder>,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            heuristic: Heuristic::default(),
            merit: Merit::default(),
            sort: SortOrder::default(),
            allow_rotation: false,
            orders: SortOrder::long_side_first().to_vec(),
        }
    }
}

impl PackOptions {
    /// The orderings C-EPBFD runs, in the order tried: [`PackOptions::sort`]
    /// first, then [`PackOptions::orders`], without repeats.
    pub fn c_epbfd_orders(&self) -> Vec<SortOrder> {
        let mut orders = vec![self.sort];
        for &order in &self.orders {
            if !orders.contains(&order) {
                orders.push(order);
            }
        }
        orders
    }
}

impl fmt::Display for Heuristic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Heuristic::EpFfd => "ep-ffd",
            Heuristic::EpBfd => "ep-bfd",
            Heuristic::CEpBfd => "c-epbfd",
        })
    }
}

impl FromStr for Heuristic {
    type Err = ParseOptionError;

    /// Accepts `ep-ffd`, `ep-bfd`, `c-epbfd` (case-insensitive, `_` for `-`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match normalise(s).as_str() {
            "ep-ffd" | "epffd" => Ok(Heuristic::EpFfd),
            "ep-bfd" | "epbfd" => Ok(Heuristic::EpBfd),
            "c-epbfd" | "cepbfd" | "c-ep-bfd" => Ok(Heuristic::CEpBfd),
            _ => Err(ParseOptionError {
                kind: "heuristic",
                text: s.to_owned(),
                expected: "one of ep-ffd, ep-bfd, c-epbfd",
            }),
        }
    }
}

impl fmt::Display for Merit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Merit::ResidualSpace => "rs",
            Merit::FreeVolume => "fv",
        })
    }
}

impl FromStr for Merit {
    type Err = ParseOptionError;

    /// Accepts `rs` / `residual-space` and `fv` / `free-volume`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match normalise(s).as_str() {
            "rs" | "residual-space" => Ok(Merit::ResidualSpace),
            "fv" | "free-volume" => Ok(Merit::FreeVolume),
            _ => Err(ParseOptionError {
                kind: "merit",
                text: s.to_owned(),
                expected: "one of rs (residual-space), fv (free-volume)",
            }),
        }
    }
}

impl fmt::Display for SortOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortOrder::VolumeHeight => f.write_str("volume-height"),
            SortOrder::HeightVolume => f.write_str("height-volume"),
            SortOrder::AreaHeight => f.write_str("area-height"),
            SortOrder::HeightArea => f.write_str("height-area"),
            SortOrder::ClusteredAreaHeight { delta_percent } => {
                write!(f, "clustered-area-height:{delta_percent}")
            }
            SortOrder::ClusteredHeightArea { delta_percent } => {
                write!(f, "clustered-height-area:{delta_percent}")
            }
            SortOrder::ClusteredWidthArea { delta_percent } => {
                write!(f, "clustered-width-area:{delta_percent}")
            }
            SortOrder::ClusteredDepthArea { delta_percent } => {
                write!(f, "clustered-depth-area:{delta_percent}")
            }
        }
    }
}

const SORT_NAMES: &str = "one of volume-height (vh), height-volume (hv), area-height (ah), height-area (ha), \
     clustered-area-height:DELTA (cah:DELTA), clustered-height-area:DELTA (cha:DELTA), \
     clustered-width-area:DELTA (cwa:DELTA), clustered-depth-area:DELTA (cda:DELTA)";

impl FromStr for SortOrder {
    type Err = ParseOptionError;

    /// Accepts the [`fmt::Display`] spellings and the short forms `vh`, `hv`,
    /// `ah`, `ha`, `cah:δ`, `cha:δ`, `cwa:δ`, `cda:δ`; a clustered ordering without `:δ`
    /// gets δ = 10. The value of δ is checked by [`crate::pack`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = normalise(s);
        let err = || ParseOptionError {
            kind: "sort order",
            text: s.to_owned(),
            expected: SORT_NAMES,
        };
        let (name, delta) = match text.split_once(':') {
            Some((name, delta)) => (name, Some(delta.trim().parse::<u32>().map_err(|_| err())?)),
            None => (text.as_str(), None),
        };
        let plain = |order: SortOrder| {
            if delta.is_some() {
                Err(err())
            } else {
                Ok(order)
            }
        };
        let delta_percent = delta.unwrap_or(10);
        match name {
            "volume-height" | "vh" => plain(SortOrder::VolumeHeight),
            "height-volume" | "hv" => plain(SortOrder::HeightVolume),
            "area-height" | "ah" => plain(SortOrder::AreaHeight),
            "height-area" | "ha" => plain(SortOrder::HeightArea),
            "clustered-area-height" | "cah" => Ok(SortOrder::ClusteredAreaHeight { delta_percent }),
            "clustered-height-area" | "cha" => Ok(SortOrder::ClusteredHeightArea { delta_percent }),
            "clustered-width-area" | "cwa" => Ok(SortOrder::ClusteredWidthArea { delta_percent }),
            "clustered-depth-area" | "cda" => Ok(SortOrder::ClusteredDepthArea { delta_percent }),
            _ => Err(err()),
        }
    }
}

fn normalise(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace('_', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for h in [Heuristic::EpFfd, Heuristic::EpBfd, Heuristic::CEpBfd] {
            assert_eq!(h.to_string().parse::<Heuristic>(), Ok(h));
        }
        for m in [Merit::ResidualSpace, Merit::FreeVolume] {
            assert_eq!(m.to_string().parse::<Merit>(), Ok(m));
        }
        let mut all = SortOrder::paper_orders(&[1, 10, 100]);
        all.extend(SortOrder::long_side_first());
        for o in all {
            assert_eq!(o.to_string().parse::<SortOrder>(), Ok(o));
        }
        assert_eq!(
            "CAH".parse::<SortOrder>(),
            Ok(SortOrder::ClusteredAreaHeight { delta_percent: 10 })
        );
    }

    #[test]
    fn bad_names_are_rejected() {
        assert!("ep-xfd".parse::<Heuristic>().is_err());
        assert!("volume".parse::<Merit>().is_err());
        assert!("vh:5".parse::<SortOrder>().is_err());
        assert!("cah:x".parse::<SortOrder>().is_err());
        let e = "nonsense".parse::<SortOrder>().unwrap_err();
        assert!(e.to_string().contains("nonsense"));
    }

    #[test]
    fn c_epbfd_orders_are_unique_and_start_with_sort() {
        let opts = PackOptions {
            sort: SortOrder::ClusteredAreaHeight { delta_percent: 10 },
            orders: SortOrder::paper_orders(&[5, 10, 20]),
            ..Default::default()
        };
        let orders = opts.c_epbfd_orders();
        assert_eq!(orders[0], opts.sort);
        assert_eq!(orders.len(), 4 + 2 * 3);
        for (i, a) in orders.iter().enumerate() {
            assert!(!orders[i + 1..].contains(a));
        }
        let default = PackOptions::default().c_epbfd_orders();
        assert_eq!(default[0], SortOrder::VolumeHeight);
        assert_eq!(&default[1..], &SortOrder::long_side_first());
    }
}
