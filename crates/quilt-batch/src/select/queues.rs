//! Scratch state of a selector and the least-loaded queue placement.

use crate::model::CostModel;
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
    /// Prepare cost of each bin (one thread).
    pub(crate) bin_cost: Vec<f64>,
    /// `(volume / prepare cost, bin index)` in consideration order.
    pub(crate) order: Vec<(f64, usize)>,
    /// Queue loads while a bin is tried.
    trial: Vec<f64>,
    /// Queue of each patch of the bin being tried.
    placed: Vec<usize>,
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
            // keeps queues closer together than arrival order does.
            let costs = &self.patch_cost[start..];
            let first = self.patch_order.len();
            self.patch_order.extend(0..bin.patches().len() as u32);
            self.patch_order[first..].sort_unstable_by(|&a, &b| {
                costs[b as usize]
                    .total_cmp(&costs[a as usize])
                    .then(a.cmp(&b))
            });
        }
        self.patch_start.push(self.patch_cost.len());
    }

    /// Places bin `b`'s patches, each on the least-loaded queue (lowest index
    /// on ties). Unless `force`, fails without touching `out` as soon as a
    /// patch would push its queue above `cap`; since the least-loaded queue
    /// is the only candidate, failing there means it fits nowhere under the rule.
    pub(crate) fn try_place(
        &mut self,
        bins: &[BinWork],
        b: usize,
        cap: f64,
        force: bool,
        out: &mut Selection,
    ) -> bool {
        self.trial.clear();
        self.trial.extend_from_slice(&out.loads);
        self.placed.clear();
        let start = self.patch_start[b];
        let n = self.patch_start[b + 1] - start;
        for &local in &self.patch_order[start..start + n] {
            let c = self.patch_cost[start + local as usize];
            let q = least_loaded(&self.trial);
            if !force && self.trial[q] + c > cap {
                return false;
            }
            self.trial[q] += c;
            self.placed.push(q);
        }
        out.loads.copy_from_slice(&self.trial);
        for (&local, &q) in self.patch_order[start..start + n].iter().zip(&self.placed) {
            out.queues[q].push(PatchRef {
                bin: b,
                patch: local as usize,
                cost: self.patch_cost[start + local as usize],
            });
        }
        out.bins.push(b);
        out.volume += bins[b].volume();
        true
    }
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
