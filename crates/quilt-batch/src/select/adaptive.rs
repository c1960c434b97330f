//! Adaptive batch selection: the paper's knapsack with `P` queues (section 3.2).
//!
//! While the GPU solves batch `i`, the CPU prepares batch `i + 1`. Each of the
//! `P` CPU threads has the estimated remaining solve time (plus a tolerance)
//! as its capacity. Bins are considered in non-increasing order of packed
//! volume / prepare cost (Dantzig's greedy order for the 0-1 knapsack,
//! Martello & Toth 1990, §2.4), ties by index; a bin is taken if each of its
//! patches, largest first, can go to the currently least-loaded queue without
//! that queue exceeding the capacity, and skipped otherwise (the scan goes on,
//! so smaller bins further down can still fill the remaining room).
//!
//! That greedy pass is the paper's algorithm. It can be far from optimal when
//! bins are large against the capacity (48 % below the optimum on some of the
//! test instances), so a bounded branch and bound continues from it
//! (`search.rs`), with an exact distribution search for small batches
//! (`packing.rs`); see docs/quilt-batch.md for the measured gaps.

use crate::error::{BatchError, Result};
use crate::model::CostModel;
use crate::select::queues::Selector;
use crate::select::search::SearchLimits;
use crate::select::selection::Selection;
use crate::work::BinWork;

/// Size of the first batch, when nothing is on the GPU to hide its preparation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FirstBatch {
    /// The first `n` bins in the adaptive order (at least one).
    Bins(usize),
    /// As many bins as an adaptive selection with this per-queue capacity takes.
    Seconds(f64),
}

/// Options of the adaptive selector.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptiveOptions {
    /// Capacity is multiplied by `1 + relative_tolerance` (the paper's
    /// "tolerance limit"): estimates are ±10 %, and a CPU that finishes a
    /// little late costs less than a GPU batch that is too small.
    pub relative_tolerance: f64,
    /// Seconds added to the capacity after the relative tolerance.
    pub absolute_tolerance: f64,
    /// Most bins in one batch (the batch buffer's size); at least 1.
    pub max_bins: usize,
    /// Node budget of the branch-and-bound search that continues after the
    /// greedy pass (see `select/search.rs`); 0 returns the paper's greedy alone.
    pub search_nodes: usize,
    /// When the least-loaded rule rejects a bin and the batch would hold at
    /// most this many patches, the search looks for any distribution of its
    /// patches over the queues (exact within the node budget). Small batches
    /// of large patches are where the rule loses most; 0 disables it.
    pub exact_patches: usize,
    /// The search stops as soon as the selection is provably within this
    /// fraction of the optimum (its volume ≥ `(1 - search_gap)` × the Dantzig
    /// bound at the root). With many small bins the greedy pass usually meets
    /// this at once and no search node is spent. In `[0, 1)`.
    pub search_gap: f64,
    /// Size of the first batch.
    pub first_batch: FirstBatch,
}

impl Default for AdaptiveOptions {
    /// 5 % relative tolerance, no absolute tolerance, no bin limit, a search
    /// budget of 1000 nodes stopping within 1 % of the bound, distribution
    /// search up to 64 patches, a first batch of one bin.
    fn default() -> Self {
        Self {
            relative_tolerance: 0.05,
            absolute_tolerance: 0.0,
            max_bins: usize::MAX,
            search_nodes: 1000,
            exact_patches: 64,
            search_gap: 0.01,
            first_batch: FirstBatch::Bins(1),
        }
    }
}

impl AdaptiveOptions {
    /// Checks the option values.
    ///
    /// # Errors
    /// [`BatchError::InvalidOption`] naming the first bad option.
    pub fn validate(&self) -> Result<()> {
        let bad = |name, value: f64| BatchError::InvalidOption {
            name,
            value: value.to_string(),
            reason: "must be finite and non-negative",
        };
        if !(self.relative_tolerance.is_finite() && self.relative_tolerance >= 0.0) {
            return Err(bad("relative_tolerance", self.relative_tolerance));
        }
        if !(self.absolute_tolerance.is_finite() && self.absolute_tolerance >= 0.0) {
            return Err(bad("absolute_tolerance", self.absolute_tolerance));
        }
        if !(self.search_gap >= 0.0 && self.search_gap < 1.0) {
            return Err(BatchError::InvalidOption {
                name: "search_gap",
                value: self.search_gap.to_string(),
                reason: "must lie in [0, 1)",
            });
        }
        if self.max_bins == 0 {
            return Err(BatchError::InvalidOption {
                name: "max_bins",
                value: "0".into(),
                reason: "must be at least 1",
            });
        }
        match self.first_batch {
            FirstBatch::Bins(0) => Err(BatchError::InvalidOption {
                name: "first_batch",
                value: "Bins(0)".into(),
                reason: "the first batch needs at least one bin",
            }),
            FirstBatch::Seconds(s) if !(s.is_finite() && s >= 0.0) => {
                Err(bad("first_batch seconds", s))
            }
            _ => Ok(()),
        }
    }
}

pub(crate) fn check_common(bins: &[BinWork], queues: usize) -> Result<()> {
    if bins.is_empty() {
        return Err(BatchError::NoBins);
    }
    if queues == 0 {
        return Err(BatchError::NoQueues);
    }
    Ok(())
}

impl Selector {
    /// Orders the bins by non-increasing volume / prepare cost, ties by index.
    /// A bin with zero prepare cost has an infinite ratio and comes first.
    fn order_by_ratio(&mut self, bins: &[BinWork]) {
        self.order.clear();
        // Each ratio is computed once so the comparator is two loads.
        self.order.extend(
            bins.iter()
                .zip(&self.bin_cost)
                .enumerate()
                .map(|(i, (bin, &c))| (bin.volume() as f64 / c, i)),
        );
        self.order
            .sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    }

    /// Adaptive selection into `out`; see [`select_adaptive`] for the contract.
    ///
    /// # Errors
    /// As [`select_adaptive`].
    pub fn adaptive(
        &mut self,
        bins: &[BinWork],
        capacity: f64,
        queues: usize,
        model: &CostModel,
        opts: &AdaptiveOptions,
        out: &mut Selection,
    ) -> Result<()> {
        check_common(bins, queues)?;
        opts.validate()?;
        if !(capacity.is_finite() && capacity >= 0.0) {
            return Err(BatchError::InvalidTime {
                what: "capacity".into(),
                value: capacity,
            });
        }
        let cap = capacity * (1.0 + opts.relative_tolerance) + opts.absolute_tolerance;
        self.prepare_costs(bins, model);
        self.order_by_ratio(bins);
        out.reset(queues, cap);
        let lim = SearchLimits {
            max_bins: opts.max_bins,
            extra_nodes: opts.search_nodes,
            exact_patches: opts.exact_patches,
            gap: opts.search_gap,
        };
        self.search(bins, 0, &out.loads, cap, lim);
        if self.best.is_empty() {
            // Nothing fits: take the bin the order prefers anyway, so the
            // pipeline always advances, then fill the other queues under the
            // capacity (by the least-loaded rule only: the forced bin's
            // patches are fixed).
            let first = self.order[0].1;
            self.try_place(bins, first, cap, true, out);
            out.forced = true;
            log::debug!(
                "no bin fits capacity {cap:.3e} s; forced bin {first} (makespan {:.3e} s)",
                out.makespan()
            );
            let lim = SearchLimits {
                max_bins: opts.max_bins - 1,
                exact_patches: 0,
                ..lim
            };
            let loads = std::mem::take(&mut out.loads);
            self.search(bins, 1, &loads, cap, lim);
            out.loads = loads;
        }
        self.emit(bins, out);
        Ok(())
    }

    /// First-batch selection into `out`; see [`select_first`].
    ///
    /// # Errors
    /// As [`select_first`].
    pub fn first(
        &mut self,
        bins: &[BinWork],
        queues: usize,
        model: &CostModel,
        opts: &AdaptiveOptions,
        out: &mut Selection,
    ) -> Result<()> {
        check_common(bins, queues)?;
        opts.validate()?;
        match opts.first_batch {
            FirstBatch::Seconds(s) => self.adaptive(bins, s, queues, model, opts, out),
            FirstBatch::Bins(n) => {
                self.prepare_costs(bins, model);
                self.order_by_ratio(bins);
                out.reset(queues, f64::INFINITY);
                let n = n.min(opts.max_bins).min(bins.len());
                for k in 0..n {
                    let b = self.order[k].1;
                    self.try_place(bins, b, f64::INFINITY, true, out);
                }
                Ok(())
            }
        }
    }
}

/// Selects the next batch to prepare while the GPU solves the current one.
///
/// `capacity` is the estimated time, in seconds, until the GPU finishes its
/// current work (e.g. [`CostModel::batch_solve`] of the batch in flight, minus
/// the CPU time already committed to closing the previous batch). Each of the
/// `queues` CPU threads may be loaded up to
/// `capacity * (1 + relative_tolerance) + absolute_tolerance`.
///
/// The paper's greedy pass comes first; a bounded branch-and-bound search
/// then improves on it where it can ([`AdaptiveOptions::search_nodes`]).
/// Returns at least one bin: if none fits, the first in the adaptive order is
/// taken anyway and [`Selection::forced`] is set. Deterministic: equal inputs
/// give equal selections, ties broken by index.
///
/// # Errors
/// [`BatchError::NoBins`] for an empty slice, [`BatchError::NoQueues`] for
/// `queues == 0`, [`BatchError::InvalidTime`] for a negative or non-finite
/// capacity, [`BatchError::InvalidOption`] for bad options.
///
/// # Performance
/// `O(n log n + m P)` for `n` bins of `m` patches in all; see docs/quilt-batch.md.
pub fn select_adaptive(
    bins: &[BinWork],
    capacity: f64,
    queues: usize,
    model: &CostModel,
    opts: &AdaptiveOptions,
) -> Result<Selection> {
    let mut out = Selection::new();
    Selector::new().adaptive(bins, capacity, queues, model, opts, &mut out)?;
    Ok(out)
}

/// Selects the first batch, when nothing is on the GPU yet, as
/// [`AdaptiveOptions::first_batch`] says: the first `n` bins of the adaptive
/// order spread over the queues, or an adaptive selection with a fixed capacity.
///
/// # Errors
/// As [`select_adaptive`].
pub fn select_first(
    bins: &[BinWork],
    queues: usize,
    model: &CostModel,
    opts: &AdaptiveOptions,
) -> Result<Selection> {
    let mut out = Selection::new();
    Selector::new().first(bins, queues, model, opts, &mut out)?;
    Ok(out)
}
