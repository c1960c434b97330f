//! Branch-and-bound improvement of the greedy selection.
//!
//! The paper's greedy (take each bin in ratio order if it fits) is the first
//! descent of a depth-first branch and bound over the same order, include
//! before exclude (the structure of Martello & Toth's MT1, *Knapsack
//! Problems*, 1990, §2.5.2). Continuing the search past that first leaf
//! explores exchanges the greedy cannot make (drop a bin so that a larger one
//! fits), pruned by the Dantzig bound: the volume of the following bins in
//! ratio order that fit in the aggregate room left over all queues, the last
//! one fractionally. Bins are placed by the least-loaded rule in the order
//! they are included; when that rejects a bin and the batch would still be
//! small, [`super::packing`] looks for any distribution of its patches. The
//! search stops once the best selection is provably within `gap` of the
//! optimum (against the root's Dantzig bound), which with many small bins is
//! usually right after the greedy pass, and a node budget keeps it off the
//! critical path otherwise. With a zero budget and the distribution search
//! off, the result is exactly the paper's greedy.

use crate::select::packing::{Item, pack, sort_items};
use crate::select::queues::{Selector, place_bin};
use crate::select::selection::{PatchRef, Selection};
use crate::work::BinWork;

/// Most nodes one distribution search may use.
const PACK_NODES: usize = 256;

/// Limits of one search.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SearchLimits {
    /// Most bins in the selection (beyond any already placed).
    pub max_bins: usize,
    /// Nodes allowed beyond the greedy pass.
    pub extra_nodes: usize,
    /// Largest batch, in patches, for which a rejected bin triggers a full
    /// distribution search; 0 disables it.
    pub exact_patches: usize,
    /// Stop once the best selection is within this fraction of the root bound.
    pub gap: f64,
}

impl Selector {
    /// Fills the candidates (bins of `order[from..]` whose largest patch fits
    /// the least-loaded queue; the others can never be taken and would only
    /// loosen the bound) and the prefix sums of their cost and volume.
    fn candidates(&mut self, bins: &[BinWork], from: usize, loads: &[f64], cap: f64) {
        let room = cap - loads.iter().copied().fold(f64::INFINITY, f64::min);
        self.cand.clear();
        for &(_, b) in &self.order[from..] {
            let (costs, order) = self.bin_patches(b);
            if costs[order[0] as usize] <= room {
                self.cand.push(b);
            }
        }
        self.prefix_cost.clear();
        self.prefix_vol.clear();
        let (mut c, mut v) = (0.0, 0.0);
        self.prefix_cost.push(c);
        self.prefix_vol.push(v);
        for &b in &self.cand {
            c += self.bin_cost[b];
            v += bins[b].volume() as f64;
            self.prefix_cost.push(c);
            self.prefix_vol.push(v);
        }
    }

    /// Dantzig bound on the volume obtainable from candidates `k..`
    /// with `room` seconds left over all queues: `O(log n)` by binary search
    /// on the prefix sums.
    #[inline]
    fn dantzig(&self, bins: &[BinWork], k: usize, room: f64) -> f64 {
        let base = self.prefix_cost[k];
        let j = k + self.prefix_cost[k..].partition_point(|&x| x - base <= room) - 1;
        let mut v = self.prefix_vol[j] - self.prefix_vol[k];
        if j < self.cand.len() {
            // The break bin has positive cost: a zero-cost bin never breaks the prefix.
            let b = self.cand[j];
            let rest = room - (self.prefix_cost[j] - base);
            v += bins[b].volume() as f64 * rest / self.bin_cost[b];
        }
        v
    }

    /// Searches the subsets of `order[from..]` added to queues already loaded
    /// as `loads`, for the largest volume with every queue ≤ `cap`. Visits
    /// `candidates + extra_nodes` nodes at most (distribution searches count
    /// their nodes too). Leaves the chosen bins in `best`, their patches with
    /// queues in `best_entries` and the resulting loads in `best_loads`.
    /// `exact_patches` must be 0 unless `loads` are all zero.
    pub(crate) fn search(
        &mut self,
        bins: &[BinWork],
        from: usize,
        loads: &[f64],
        cap: f64,
        lim: SearchLimits,
    ) {
        self.candidates(bins, from, loads, cap);
        let n = self.cand.len();
        let p = loads.len();
        let mut s = std::mem::take(&mut self.scratch);
        s.reset(loads);
        self.path.clear();
        self.best.clear();
        let room = |l: &[f64]| l.iter().map(|&x| (cap - x).max(0.0)).sum::<f64>();
        // Room changes only when a bin goes in or comes out, so it is
        // recomputed there rather than at every node.
        let mut left = room(&s.cur);
        // Once the best selection is within `gap` of the root's bound it is
        // within `gap` of the optimum: searching on cannot pay for itself.
        let good_enough = (1.0 - lim.gap) * self.dantzig(bins, 0, left);
        let budget = n.saturating_add(lim.extra_nodes);
        let mut nodes = 0usize;
        let (mut cur_vol, mut best_vol, mut repacks) = (0u64, 0u64, 0usize);
        let mut first_descent = true;
        let mut k = 0;
        loop {
            let mut exhausted = false;
            while k < n {
                if nodes >= budget {
                    exhausted = true;
                    break;
                }
                nodes += 1;
                // Prune when even the relaxation cannot add one more cell
                // (pointless before the first leaf: nothing to beat yet).
                if !first_descent {
                    let bound = self.dantzig(bins, k, left) * (1.0 + 1e-12);
                    if (cur_vol as f64) + bound < (best_vol + 1) as f64 {
                        break;
                    }
                }
                let b = self.cand[k];
                if self.path.len() < lim.max_bins && self.bin_cost[b] <= left * (1.0 + 1e-9) {
                    s.saved.extend_from_slice(&s.cur);
                    let top = s.saved.len() - p;
                    let (costs, order) = self.bin_patches(b);
                    s.placed.clear();
                    let mut fits =
                        place_bin(costs, order, &mut s.cur, cap, false, Some(&mut s.placed));
                    if fits {
                        for (&local, &q) in order.iter().zip(&s.placed) {
                            s.entries.push((patch_ref(b, local, costs), q));
                        }
                    } else {
                        s.cur.copy_from_slice(&s.saved[top..]);
                        if s.entries.len() + order.len() <= lim.exact_patches {
                            // One distribution search may not eat the whole
                            // budget: proving that a tight set does not fit can
                            // take exponentially many nodes, finding a fit rarely does.
                            let allowed = (budget - nodes).min(PACK_NODES);
                            let mut rem = allowed;
                            fits = s.repack(b, costs, order, cap, &mut rem, self.path.len());
                            nodes += allowed - rem;
                            repacks += usize::from(fits);
                        }
                    }
                    if fits {
                        self.path.push(k);
                        cur_vol += bins[b].volume();
                        left = room(&s.cur);
                    } else {
                        s.saved.truncate(top);
                    }
                }
                k += 1;
            }
            first_descent = false;
            if cur_vol > best_vol {
                best_vol = cur_vol;
                self.best.clear();
                self.best.extend(self.path.iter().map(|&i| self.cand[i]));
                s.best_entries.clone_from(&s.entries);
                s.best_loads.clone_from(&s.cur);
                s.best_repacked = repacks > 0;
            }
            if exhausted || best_vol as f64 >= good_enough {
                break;
            }
            // Backtrack: undo the deepest inclusion and take its exclude branch.
            let Some(last) = self.path.pop() else {
                break;
            };
            let top = s.saved.len() - p;
            s.cur.copy_from_slice(&s.saved[top..]);
            s.saved.truncate(top);
            left = room(&s.cur);
            let b = self.cand[last];
            cur_vol -= bins[b].volume();
            s.entries
                .truncate(s.entries.len() - bins[b].patches().len());
            repacks -= usize::from(s.undo_repack(self.path.len()));
            k = last + 1;
        }
        log::trace!(
            "selection search: {nodes} nodes of {budget}, volume {best_vol}, {} bins",
            self.best.len()
        );
        self.scratch = s;
    }

    /// Writes the best selection of the last search into `out`.
    pub(crate) fn emit(&mut self, bins: &[BinWork], out: &mut Selection) {
        let s = &mut self.scratch;
        out.loads.copy_from_slice(&s.best_loads);
        if s.best_repacked {
            balance(&mut s.best_entries, &mut out.loads);
        }
        for &(e, q) in &s.best_entries {
            out.queues[q].push(e);
        }
        for &b in &self.best {
            out.bins.push(b);
            out.volume += bins[b].volume();
        }
    }
}

fn patch_ref(bin: usize, local: u32, costs: &[f64]) -> PatchRef {
    PatchRef {
        bin,
        patch: local as usize,
        cost: costs[local as usize],
    }
}

/// Working memory of the search.
#[derive(Clone, Debug, Default)]
pub(crate) struct SearchScratch {
    /// Queue loads of the current path.
    cur: Vec<f64>,
    /// Loads saved before each inclusion (depth × P).
    saved: Vec<f64>,
    /// Patches of the current path with their queues, bin after bin.
    entries: Vec<(PatchRef, usize)>,
    /// Queues of `entries` saved before each distribution search that
    /// rewrote them, and where each saved block starts, with its depth.
    snaps: Vec<usize>,
    snap_marks: Vec<(usize, usize)>,
    /// Queue of each patch of the bin being placed.
    placed: Vec<usize>,
    /// Distribution search: patches, resulting loads, queue per patch, suffix sums.
    items: Vec<Item>,
    pack_loads: Vec<f64>,
    assign: Vec<usize>,
    suffix: Vec<f64>,
    /// The best selection found.
    best_entries: Vec<(PatchRef, usize)>,
    best_loads: Vec<f64>,
    best_repacked: bool,
}

impl SearchScratch {
    fn reset(&mut self, loads: &[f64]) {
        self.cur.clear();
        self.cur.extend_from_slice(loads);
        self.best_loads.clear();
        self.best_loads.extend_from_slice(loads);
        self.pack_loads.clear();
        self.pack_loads.resize(loads.len(), 0.0);
        self.saved.clear();
        self.entries.clear();
        self.best_entries.clear();
        self.snaps.clear();
        self.snap_marks.clear();
        self.best_repacked = false;
    }

    /// Looks for a distribution of the path's patches plus bin `b`'s over
    /// empty queues; on success rewrites every entry's queue (saving the old
    /// ones for backtracking, tagged with `depth`) and the loads.
    fn repack(
        &mut self,
        b: usize,
        costs: &[f64],
        order: &[u32],
        cap: f64,
        budget: &mut usize,
        depth: usize,
    ) -> bool {
        self.items.clear();
        self.items
            .extend(self.entries.iter().enumerate().map(|(i, e)| (e.0.cost, i)));
        let m = self.entries.len();
        self.items.extend(
            order
                .iter()
                .enumerate()
                .map(|(j, &l)| (costs[l as usize], m + j)),
        );
        sort_items(&mut self.items);
        if !pack(
            &self.items,
            cap,
            budget,
            &mut self.pack_loads,
            &mut self.assign,
            &mut self.suffix,
        ) {
            return false;
        }
        self.snap_marks.push((depth, self.snaps.len()));
        self.snaps.extend(self.entries.iter().map(|e| e.1));
        for &l in order {
            self.entries.push((patch_ref(b, l, costs), 0));
        }
        for (&(_, seq), &q) in self.items.iter().zip(&self.assign) {
            self.entries[seq].1 = q;
        }
        self.cur.copy_from_slice(&self.pack_loads);
        true
    }

    /// After the bin included at `depth` was removed (and its entries
    /// truncated): restores the queues a distribution search rewrote then.
    fn undo_repack(&mut self, depth: usize) -> bool {
        match self.snap_marks.last() {
            Some(&(d, start)) if d == depth => {
                for (e, &q) in self.entries.iter_mut().zip(&self.snaps[start..]) {
                    e.1 = q;
                }
                self.snaps.truncate(start);
                self.snap_marks.pop();
                true
            }
            _ => false,
        }
    }
}

/// Moves patches from the most to the least loaded queue until they differ
/// by at most the largest patch cost, the guarantee the least-loaded rule
/// gives by construction. Each move takes a patch of cost `c < max - min`, so
/// neither queue leaves `(min, max)`: no queue rises above the old maximum
/// (capacity still holds) and the sum of squared loads strictly decreases,
/// so the loop ends.
fn balance(entries: &mut [(PatchRef, usize)], loads: &mut [f64]) {
    let pmax = entries.iter().map(|e| e.0.cost).fold(0.0, f64::max);
    loop {
        let (mut hi, mut lo) = (0, 0);
        for (q, &l) in loads.iter().enumerate() {
            if l > loads[hi] {
                hi = q;
            }
            if l < loads[lo] {
                lo = q;
            }
        }
        let d = loads[hi] - loads[lo];
        if d <= pmax {
            return;
        }
        let Some(e) = entries
            .iter_mut()
            .filter(|e| e.1 == hi)
            .max_by(|a, b| a.0.cost.total_cmp(&b.0.cost))
        else {
            return;
        };
        e.1 = lo;
        loads[hi] -= e.0.cost;
        loads[lo] += e.0.cost;
    }
}
