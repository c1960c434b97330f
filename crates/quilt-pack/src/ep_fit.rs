//! The construction heuristics EP-FFD, EP-BFD and C-EPBFD (Crainic, Perboli
//! & Tadei 2008, section 4) over [`BinState`]s, with reusable scratch memory.

use crate::extreme_points::BinState;
use crate::geometry::volume;
use crate::order::sort_items;
use crate::{Extent, Heuristic, Merit, Packing, Placement, SortOrder};

/// Scratch memory of [`crate::pack_with`]: bins, extreme points, orderings.
/// Reusing one workspace across packings (as C-EPBFD does internally, or a
/// caller repacking every regrid) avoids re-allocating per packing.
#[derive(Debug, Clone, Default)]
pub struct PackWorkspace {
    /// Bin states; the first `bins_used` are live, the rest keep capacity.
    bins: Vec<BinState>,
    bins_used: usize,
    /// Bins that may still take an item, in opening order, with a summary
    /// that lets the scan skip most of them without touching their state.
    open: Vec<OpenBin>,
    /// Item indices in the order they are offered.
    order: Vec<usize>,
    /// Per position in `order`: component-wise minimum side and minimum
    /// volume of the items from that position on (for closing bins).
    suffix_min: Vec<(Extent, u64)>,
    /// Orientations of every item, flattened: item `i` has
    /// `orients[orient_start[i]..orient_start[i + 1]]`.
    orients: Vec<Extent>,
    orient_start: Vec<usize>,
    placements: Vec<Placement>,
}

/// What a single EP-FFD or EP-BFD pass needs to know.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pass {
    pub first_fit: bool,
    pub merit: Merit,
    pub sort: SortOrder,
    pub allow_rotation: bool,
}

/// An open bin as the scan sees it first: free volume and the largest
/// residual space on each axis over its extreme points. An item larger
/// than either cannot go in, so the bin's points need not be read.
#[derive(Debug, Clone, Copy)]
struct OpenBin {
    bin: usize,
    free_volume: u64,
    max_rs: [u32; 3],
}

impl OpenBin {
    fn of(bin: usize, state: &BinState) -> Self {
        let mut max_rs = [0; 3];
        for ep in &state.eps {
            for (m, &r) in max_rs.iter_mut().zip(&ep.rs) {
                *m = (*m).max(r);
            }
        }
        OpenBin {
            bin,
            free_volume: state.free_volume,
            max_rs,
        }
    }

    /// Whether some orientation in `orients` might fit (a necessary test).
    #[inline]
    fn may_fit(&self, orients: &[Extent], item_volume: u64) -> bool {
        self.free_volume >= item_volume
            && orients
                .iter()
                .any(|e| e[0] <= self.max_rs[0] && e[1] <= self.max_rs[1] && e[2] <= self.max_rs[2])
    }
}

/// A scored candidate placement; lower merits are better.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    merit: (u64, u64),
    bin: usize,
    pos: [u32; 3],
    extent: Extent,
}

impl PackWorkspace {
    /// A workspace with nothing allocated yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lists each item's orientations: the item itself, or with rotation its
    /// distinct axis permutations that fit in the bin.
    fn prepare_orientations(&mut self, items: &[Extent], bin: Extent, allow_rotation: bool) {
        self.orients.clear();
        self.orient_start.clear();
        for &[w, h, d] in items {
            self.orient_start.push(self.orients.len());
            let start = self.orients.len();
            if allow_rotation {
                for e in [
                    [w, h, d],
                    [w, d, h],
                    [h, w, d],
                    [h, d, w],
                    [d, w, h],
                    [d, h, w],
                ] {
                    let fits = (0..3).all(|a| e[a] <= bin[a]);
                    if fits && !self.orients[start..].contains(&e) {
                        self.orients.push(e);
                    }
                }
            } else {
                self.orients.push([w, h, d]);
            }
        }
        self.orient_start.push(self.orients.len());
    }

    /// Suffix minima over the offered order, so a bin that cannot take the
    /// smallest remaining side or volume is closed for good.
    fn prepare_suffix_minima(&mut self, items: &[Extent], allow_rotation: bool) {
        self.suffix_min.clear();
        self.suffix_min
            .resize(self.order.len() + 1, ([u32::MAX; 3], u64::MAX));
        for k in (0..self.order.len()).rev() {
            let e = items[self.order[k]];
            let lower = if allow_rotation {
                let m = e[0].min(e[1]).min(e[2]);
                [m; 3]
            } else {
                e
            };
            let (next_e, next_v) = self.suffix_min[k + 1];
            self.suffix_min[k] = (
                [
                    next_e[0].min(lower[0]),
                    next_e[1].min(lower[1]),
                    next_e[2].min(lower[2]),
                ],
                next_v.min(volume(e)),
            );
        }
    }

    fn open_bin(&mut self, bin: Extent) -> usize {
        if self.bins_used == self.bins.len() {
            self.bins.push(BinState::default());
        }
        let b = self.bins_used;
        self.bins[b].reset(bin);
        self.bins_used += 1;
        self.open.push(OpenBin::of(b, &self.bins[b]));
        b
    }

    /// One EP-FFD or EP-BFD pass. Inputs are validated by the caller: every
    /// item has at least one orientation that fits the bin.
    ///
    /// With `give_up_at`, the pass stops and returns `None` as soon as it
    /// can no longer finish with fewer bins: when the bins opened plus the
    /// bins the remaining volume needs beyond the free space of the open
    /// bins reach `give_up_at`.
    pub(crate) fn run(
        &mut self,
        items: &[Extent],
        bin: Extent,
        pass: Pass,
        give_up_at: Option<usize>,
    ) -> Option<Packing> {
        sort_items(items, bin, pass.sort, &mut self.order);
        self.prepare_orientations(items, bin, pass.allow_rotation);
        self.prepare_suffix_minima(items, pass.allow_rotation);
        self.bins_used = 0;
        self.open.clear();
        self.placements.clear();
        self.placements.resize(
            items.len(),
            Placement {
                item: 0,
                bin: 0,
                offset: [0; 3],
                extent: [0; 3],
            },
        );

        let bin_volume = u128::from(volume(bin));
        let mut remaining: u128 = items.iter().map(|&e| u128::from(volume(e))).sum();
        // Free cells in open bins: the most the remaining items can use
        // without opening bins.
        let mut open_free: u128 = 0;
        for k in 0..self.order.len() {
            let item = self.order[k];
            let item_volume = volume(items[item]);
            let (min_e, min_v) = self.suffix_min[k];
            if k == 0 || self.suffix_min[k - 1] != (min_e, min_v) {
                // The smallest remaining item grew: drop points and bins that
                // can no longer take anything, so scans skip them.
                let bins = &mut self.bins;
                self.open.retain_mut(|o| {
                    let alive = bins[o.bin].prune(min_e, min_v);
                    *o = OpenBin::of(o.bin, &bins[o.bin]);
                    if !alive {
                        open_free -= u128::from(o.free_volume);
                    }
                    alive
                });
            }
            let orient_range = self.orient_start[item]..self.orient_start[item + 1];
            let orients = &self.orients[orient_range.clone()];

            let mut best: Option<Candidate> = None;
            for o in &self.open {
                if !o.may_fit(orients, item_volume) {
                    continue;
                }
                let b = o.bin;
                let state = &self.bins[b];
                let found = if pass.first_fit {
                    first_fit_in(state, orients, b)
                } else {
                    best_fit_in(
                        state,
                        orients,
                        b,
                        item_volume,
                        pass.merit,
                        best.map(|c| c.merit),
                    )
                };
                if let Some(c) = found {
                    best = Some(c);
                    if pass.first_fit {
                        break;
                    }
                }
            }

            let chosen = match best {
                Some(c) => c,
                None => {
                    let b = self.open_bin(bin);
                    open_free += bin_volume;
                    let state = &self.bins[b];
                    let orients = &self.orients[orient_range];
                    let found = if pass.first_fit {
                        first_fit_in(state, orients, b)
                    } else {
                        best_fit_in(state, orients, b, item_volume, pass.merit, None)
                    };
                    // A fresh bin's origin point admits every orientation
                    // that fits the bin, and the caller checked there is one.
                    found.expect("an empty bin takes every validated item")
                }
            };
            let state = &mut self.bins[chosen.bin];
            state.place(chosen.pos, chosen.extent, bin);
            remaining -= u128::from(item_volume);
            open_free -= u128::from(item_volume);
            let (next_e, next_v) = self.suffix_min[k + 1];
            let alive = state.prune(next_e, next_v);
            let summary = OpenBin::of(chosen.bin, state);
            if let Some(slot) = self.open.iter().position(|o| o.bin == chosen.bin) {
                if alive {
                    self.open[slot] = summary;
                } else {
                    open_free -= u128::from(summary.free_volume);
                    self.open.remove(slot);
                }
            }
            if let Some(limit) = give_up_at {
                let more = remaining.saturating_sub(open_free).div_ceil(bin_volume) as usize;
                if self.bins_used + more >= limit {
                    return None;
                }
            }
            self.placements[item] = Placement {
                item,
                bin: chosen.bin,
                offset: chosen.pos,
                extent: chosen.extent,
            };
        }

        Some(Packing {
            bin,
            bins_used: self.bins_used,
            placements: self.placements.clone(),
        })
    }

    /// C-EPBFD: EP-BFD over each ordering, keeping the packing with fewest
    /// bins (the earliest ordering on ties). Stops early when a packing
    /// meets the lower bound (Martello–Pisinger–Vigo's without rotation,
    /// the continuous one with), which no ordering can beat.
    pub(crate) fn run_multi(
        &mut self,
        items: &[Extent],
        bin: Extent,
        merit: Merit,
        allow_rotation: bool,
        orders: &[SortOrder],
    ) -> Packing {
        let bound = if allow_rotation {
            0
        } else {
            crate::lower_bound::bins_lower_bound(items, bin)
        };
        let mut best: Option<Packing> = None;
        for &sort in orders {
            let pass = Pass {
                first_fit: false,
                merit,
                sort,
                allow_rotation,
            };
            // Orderings that cannot beat the best so far are abandoned early.
            let Some(packing) = self.run(items, bin, pass, best.as_ref().map(|b| b.bins_used))
            else {
                log::trace!("C-EPBFD ordering {sort}: abandoned");
                continue;
            };
            log::trace!("C-EPBFD ordering {sort}: {} bins", packing.bins_used);
            let better = best
                .as_ref()
                .is_none_or(|b| packing.bins_used < b.bins_used);
            if better {
                let optimal = packing.bins_used <= bound.max(packing.lower_bound());
                best = Some(packing);
                if optimal {
                    break;
                }
            }
        }
        best.unwrap_or(Packing {
            bin,
            bins_used: 0,
            placements: Vec::new(),
        })
    }
}

/// The first extreme point of `state`, in point order, that takes one of
/// `orients` (tried in order).
#[inline]
fn first_fit_in(state: &BinState, orients: &[Extent], b: usize) -> Option<Candidate> {
    for ep in &state.eps {
        for &e in orients {
            if ep.admits(e) && state.is_free(ep.pos, e) {
                return Some(Candidate {
                    merit: (0, 0),
                    bin: b,
                    pos: ep.pos,
                    extent: e,
                });
            }
        }
    }
    None
}

/// The best placement in `state` strictly better than `bound`, if any.
#[inline]
fn best_fit_in(
    state: &BinState,
    orients: &[Extent],
    b: usize,
    item_volume: u64,
    merit: Merit,
    mut bound: Option<(u64, u64)>,
) -> Option<Candidate> {
    let free_after = state.free_volume - item_volume;
    let mut found = None;
    for ep in &state.eps {
        for &e in orients {
            if !ep.admits(e) {
                continue;
            }
            let residual = u64::from(ep.rs[0] - e[0])
                + u64::from(ep.rs[1] - e[1])
                + u64::from(ep.rs[2] - e[2]);
            let score = match merit {
                // Ties between points of equal residual space go to the
                // fuller bin, which keeps later bins free for large items.
                Merit::ResidualSpace => (residual, free_after),
                Merit::FreeVolume => (free_after, residual),
            };
            // Strict improvement only: ties keep the earlier bin and point,
            // which makes the result independent of anything but the input.
            if bound.is_some_and(|m| score >= m) {
                continue;
            }
            if state.is_free(ep.pos, e) {
                bound = Some(score);
                found = Some(Candidate {
                    merit: score,
                    bin: b,
                    pos: ep.pos,
                    extent: e,
                });
            }
        }
    }
    found
}

/// Which single pass a heuristic other than C-EPBFD runs.
pub(crate) fn single_pass(
    heuristic: Heuristic,
    merit: Merit,
    sort: SortOrder,
    allow_rotation: bool,
) -> Pass {
    Pass {
        first_fit: heuristic == Heuristic::EpFfd,
        merit,
        sort,
        allow_rotation,
    }
}
