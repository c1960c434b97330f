//! Scratch state of a selector and the least-loaded queue placement.

use crate::model::CostModel;
use crate::select::search::SearchScratch;
use crate::select::selection::{PatchRef, Selection};
use crate::work::BinWork;

/// Reusable scratch memory of the selectors.
///
/// Selection sits on the critical path between batches, so one `Selector`
/// kept by the integrator lets every selection run without allocating once
/// its vectors have grown to the largest problem seen.
#[derive(Clone, Debug, Default)]
pub struct Selector {
    /// Prepare cost of every patch, bins concatenated.
    pub(crate) patch_cost: Vec<f64>,
    /// Start of each bin's patches in `patch_cost` (`bins + 1` entries).
    pub(crate) patch_start: Vec<usize>,
    /// Per bin, its local patch indices in placement order (cost non-increasing).
    pub(crate) patch_order: Vec<u32>,
    /// Sort keys of one bin's patches.
    keys: Vec<(u64, u32)>,
    /// Prepare cost of each bin (one thread).
    pub(crate) bin_cost: Vec<f64>,
    /// `(volume / prepare cost, bin index)` in consideration order.
    pub(crate) order: Vec<(f64, usize)>,
    /// Search: candidate bins, in order.
    pub(crate) cand: Vec<usize>,
    /// Prefix sums of bin prepare cost over `cand` (`n + 1` entries).
    pub(crate) prefix_cost: Vec<f64>,
    /// Prefix sums of bin volume over `cand`.
    pub(crate) prefix_vol: Vec<f64>,
    /// Search: candidate positions included on the current path.
    pub(crate) path: Vec<usize>,
    /// Search: bins of the best selection found, in order.
    pub(crate) best: Vec<usize>,
    /// Search: the rest of its working memory.
    pub(crate) scratch: SearchScratch,
    /// Queue loads while a bin is tried.
    pub(crate) trial: Vec<f64>,
    /// Queue of each patch of the bin being tried.
    pub(crate) placed: Vec<usize>,
}

impl Selector {
    /// A selector with empty scratch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fills the per-patch and per-bin prepare costs and each bin's patch order.
    pub(crate) fn prepare_costs(&mut self, bins: &[BinWork], model: &CostModel) {
        self.patch_cost.clear();
        self.patch_start.clear();
        self.patch_order.clear();
        self.bin_cost.clear();
        for bin in bins {
            let start = self.patch_cost.len();
            self.patch_start.push(start);
            let mut total = 0.0;
            for p in bin.patches() {
                let c = model.patch_prepare(p);
                total += c;
                self.patch_cost.push(c);
            }
            self.bin_cost.push(total);
            // Largest patch first (LPT, Graham 1969): the least-loaded rule then
            // keeps queues closer together than arrival order does. Costs are
            // non-negative, so their bit patterns order like the values: the
            // sort runs on plain integer pairs (descending cost, then index).
            self.keys.clear();
            self.keys.extend(
                self.patch_cost[start..]
                    .iter()
                    .zip(0u32..)
                    .map(|(c, i)| (u64::MAX - c.to_bits(), i)),
            );
            self.keys.sort_unstable();
            self.patch_order.extend(self.keys.iter().map(|k| k.1));
        }
        self.patch_start.push(self.patch_cost.len());
    }

    /// Patch costs of bin `b` and its placement order (local indices).
    #[inline]
    pub(crate) fn bin_patches(&self, b: usize) -> (&[f64], &[u32]) {
        let (s, e) = (self.patch_start[b], self.patch_start[b + 1]);
        (&self.patch_cost[s..e], &self.patch_order[s..e])
    }

    /// Places bin `b`'s patches into `out`, each on the least-loaded queue
    /// (see [`place_bin`]). Unless `force`, fails without touching `out` when
    /// a patch would push its queue above `cap`.
    pub(crate) fn try_place(
        &mut self,
        bins: &[BinWork],
        b: usize,
        cap: f64,
        force: bool,
        out: &mut Selection,
    ) -> bool {
        let mut trial = std::mem::take(&mut self.trial);
        let mut placed = std::mem::take(&mut self.placed);
        trial.clear();
        trial.extend_from_slice(&out.loads);
        placed.clear();
        let (costs, order) = self.bin_patches(b);
        let ok = place_bin(costs, order, &mut trial, cap, force, Some(&mut placed));
        if ok {
            out.loads.copy_from_slice(&trial);
            for (&local, &q) in order.iter().zip(&placed) {
                out.queues[q].push(PatchRef {
                    bin: b,
                    patch: local as usize,
                    cost: costs[local as usize],
                });
            }
            out.bins.push(b);
            out.volume += bins[b].volume();
        }
        self.trial = trial;
        self.placed = placed;
        ok
    }
}

/// Places a bin's patches in `order`, each on the least-loaded queue (lowest
/// index on ties), adding its cost to `loads` and recording the queue in
/// `placed`. Unless `force`, returns false as soon as a patch would push its
/// queue above `cap`, leaving `loads` partly updated (callers keep a copy).
/// The least-loaded queue is the only candidate the rule allows, so failing
/// there means the bin does not fit under the rule.
#[inline]
pub(crate) fn place_bin(
    costs: &[f64],
    order: &[u32],
    loads: &mut [f64],
    cap: f64,
    force: bool,
    mut placed: Option<&mut Vec<usize>>,
) -> bool {
    for &local in order {
        let c = costs[local as usize];
        let q = least_loaded(loads);
        if !force && loads[q] + c > cap {
            return false;
        }
        loads[q] += c;
        if let Some(p) = placed.as_deref_mut() {
            p.push(q);
        }
    }
    true
}

/// Index of the smallest load, lowest index on ties.
#[inline]
fn least_loaded(loads: &[f64]) -> usize {
    let mut best = 0;
    for (i, &l) in loads.iter().enumerate().skip(1) {
        if l < loads[best] {
            best = i;
        }
    }
    best
}
