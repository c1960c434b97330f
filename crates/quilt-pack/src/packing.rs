//! The result of a packing: where each item went, and statistics over bins.

use serde::{Deserialize, Serialize};

use crate::Extent;
use crate::geometry::{PlacedBox, volume};

/// Where one item went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Placement {
    /// Index of the item in the slice given to [`crate::pack`].
    pub item: usize,
    /// Index of the bin, in the order bins were opened (0-based).
    pub bin: usize,
    /// Offset of the item's low corner in the bin, in cells.
    pub offset: [u32; 3],
    /// The item's extent as placed: its input extent, or a permutation of it
    /// when [`crate::PackOptions::allow_rotation`] is on.
    pub extent: Extent,
}

impl Placement {
    /// Whether the item was placed turned (its extent differs from `input`).
    pub fn is_rotated(&self, input: Extent) -> bool {
        self.extent != input
    }

    /// The high corner (exclusive) of the item in its bin (saturating at
    /// `u32::MAX` for placements that could not come from [`crate::pack`]).
    pub fn end(&self) -> [u32; 3] {
        [
            self.offset[0].saturating_add(self.extent[0]),
            self.offset[1].saturating_add(self.extent[1]),
            self.offset[2].saturating_add(self.extent[2]),
        ]
    }
}

/// A packing of items into identical bins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packing {
    /// The bin extent.
    pub bin: Extent,
    /// Number of bins opened; every bin holds at least one item.
    pub bins_used: usize,
    /// One placement per item, indexed by item: `placements[i].item == i`.
    pub placements: Vec<Placement>,
}

/// A defect [`Packing::verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackingDefect {
    /// The number of placements differs from the number of items.
    #[error("{placements} placements for {items} items")]
    Count {
        /// Placements in the packing.
        placements: usize,
        /// Items given.
        items: usize,
    },
    /// `placements[index].item != index`.
    #[error("placement {index} names item {item}")]
    Misnumbered {
        /// Position in `placements`.
        index: usize,
        /// The item it names.
        item: usize,
    },
    /// The placed extent is not the item's extent (nor a permutation of it
    /// where rotation was allowed).
    #[error("item {item} placed as {placed:?}, but its extent is {input:?}")]
    WrongExtent {
        /// The item.
        item: usize,
        /// Extent as placed.
        placed: Extent,
        /// Extent as given.
        input: Extent,
    },
    /// An item sticks out of its bin or names a bin past `bins_used`.
    #[error("item {item} lies outside bin {bin}")]
    OutsideBin {
        /// The item.
        item: usize,
        /// Its bin.
        bin: usize,
    },
    /// Two items share cells.
    #[error("items {first} and {second} overlap in bin {bin}")]
    Overlap {
        /// Lower item index.
        first: usize,
        /// Higher item index.
        second: usize,
        /// The bin.
        bin: usize,
    },
    /// A bin below `bins_used` holds no item.
    #[error("bin {bin} is empty")]
    EmptyBin {
        /// The bin.
        bin: usize,
    },
}

impl Packing {
    /// Cells of one bin.
    fn bin_volume(&self) -> u128 {
        u128::from(self.bin[0]) * u128::from(self.bin[1]) * u128::from(self.bin[2])
    }

    /// Cells occupied by items.
    pub fn packed_volume(&self) -> u128 {
        self.placements
            .iter()
            .map(|p| u128::from(volume(p.extent)))
            .sum()
    }

    /// Packed volume over the volume of the bins used, in `[0, 1]`; 0 for an
    /// empty packing.
    pub fn efficiency(&self) -> f64 {
        if self.bins_used == 0 {
            return 0.0;
        }
        self.packed_volume() as f64 / (self.bins_used as f64 * self.bin_volume() as f64)
    }

    /// The continuous lower bound `⌈Σ volume / bin volume⌉` on the number of
    /// bins any packing of these items needs (Martello, Pisinger & Vigo's L0).
    pub fn lower_bound(&self) -> usize {
        let bin = self.bin_volume();
        if bin == 0 {
            return 0;
        }
        self.packed_volume().div_ceil(bin) as usize
    }

    /// Fill fraction of each bin, by bin index. Placements naming a bin
    /// past `bins_used` (which [`Packing::verify`] reports) are left out.
    pub fn fill_per_bin(&self) -> Vec<f64> {
        let mut cells = vec![0u128; self.bins_used];
        for p in &self.placements {
            if let Some(c) = cells.get_mut(p.bin) {
                *c += u128::from(volume(p.extent));
            }
        }
        let bin = self.bin_volume() as f64;
        cells.into_iter().map(|c| c as f64 / bin).collect()
    }

    /// The items of each bin, by bin index; within a bin in placement
    /// order, which is increasing item index for packings from
    /// [`crate::pack`]. Placements naming a bin past `bins_used` are left out.
    pub fn bin_members(&self) -> Vec<Vec<usize>> {
        let mut members = vec![Vec::new(); self.bins_used];
        for p in &self.placements {
            if let Some(m) = members.get_mut(p.bin) {
                m.push(p.item);
            }
        }
        members
    }

    /// `(bin, offset)` per item, in item order: the form
    /// `quilt_sweep`'s `BatchLayout::packed` takes. Bin indices saturate at
    /// `u32::MAX`, far beyond any packing of patches.
    pub fn bin_offsets(&self) -> Vec<(u32, [u32; 3])> {
        self.placements
            .iter()
            .map(|p| (u32::try_from(p.bin).unwrap_or(u32::MAX), p.offset))
            .collect()
    }

    /// Checks that `self` is a valid packing of `items`: one placement per
    /// item in item order, extents as given (or permuted when
    /// `rotation_allowed`), every item inside its bin, no two items sharing
    /// a cell, and no empty bin.
    ///
    /// # Performance
    /// Quadratic in the items of each bin; meant for tests and debugging.
    pub fn verify(&self, items: &[Extent], rotation_allowed: bool) -> Result<(), PackingDefect> {
        if self.placements.len() != items.len() {
            return Err(PackingDefect::Count {
                placements: self.placements.len(),
                items: items.len(),
            });
        }
        for (index, p) in self.placements.iter().enumerate() {
            if p.item != index {
                return Err(PackingDefect::Misnumbered {
                    index,
                    item: p.item,
                });
            }
            let input = items[index];
            let same = if rotation_allowed {
                let mut a = p.extent;
                let mut b = input;
                a.sort_unstable();
                b.sort_unstable();
                a == b
            } else {
                p.extent == input
            };
            if !same {
                return Err(PackingDefect::WrongExtent {
                    item: index,
                    placed: p.extent,
                    input,
                });
            }
            let inside = p.bin < self.bins_used
                && (0..3).all(|a| {
                    u64::from(p.offset[a]) + u64::from(p.extent[a]) <= u64::from(self.bin[a])
                });
            if !inside {
                return Err(PackingDefect::OutsideBin {
                    item: index,
                    bin: p.bin,
                });
            }
        }
        for (bin, members) in self.bin_members().iter().enumerate() {
            if members.is_empty() {
                return Err(PackingDefect::EmptyBin { bin });
            }
            for (k, &i) in members.iter().enumerate() {
                // Items are numbered by position (checked above), so `i`
                // indexes `placements`.
                let pi = &self.placements[i];
                let bi = PlacedBox::new(pi.offset, pi.extent);
                for &j in &members[k + 1..] {
                    let pj = &self.placements[j];
                    if bi.overlaps(pj.offset, pj.end()) {
                        return Err(PackingDefect::Overlap {
                            first: i,
                            second: j,
                            bin,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}
