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

use crate::error::{BatchError, Result};
use crate::model::CostModel;
use crate::select::queues::Selector;
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
    /// Size of the first batch.
    pub first_batch: FirstBatch,
}

impl Default for AdaptiveOptions {
    /// 5 % relative tolerance, no absolute tolerance, no bin limit, a first batch of one bin.
    fn default() -> Self {
        Self {
            relative_tolerance: 0.05,
            absolute_tolerance: 0.0,
            max_bins: usize::MAX,
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
        self.scan(bins, 0, cap, opts.max_bins, out);
        if out.bins.is_empty() {
            // Nothing fits: take the bin the order prefers anyway, so the
            // pipeline always advances, then let smaller bins fill the other
            // queues under the capacity.
            let first = self.order[0].1;
            self.try_place(bins, first, cap, true, out);
            out.forced = true;
            log::debug!(
                "no bin fits capacity {cap:.3e} s; forced bin {first} (makespan {:.3e} s)",
                out.makespan()
            );
            self.scan(bins, 1, cap, opts.max_bins, out);
        }
        Ok(())
    }

    /// Considers `order[from..]` in turn, taking every bin that fits.
    fn scan(
        &mut self,
        bins: &[BinWork],
        from: usize,
        cap: f64,
        max_bins: usize,
        out: &mut Selection,
    ) {
        // Room left over all queues: a bin costing more cannot fit whatever
        // the distribution, so it is skipped without trying. The small slack
        // keeps rounding in the sum from rejecting a bin that exactly fits.
        let room =
            |loads: &[f64]| loads.iter().map(|&l| (cap - l).max(0.0)).sum::<f64>() * (1.0 + 1e-9);
        let mut left = room(&out.loads);
        for k in from..self.order.len() {
            if out.bins.len() >= max_bins {
                break;
            }
            let b = self.order[k].1;
            if self.bin_cost[b] > left {
                continue;
            }
            if self.try_place(bins, b, cap, false, out) {
                left = room(&out.loads);
            }
        }
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
/// `queues` CPU threads may be loaded up to `capacity * (1 + relative_tolerance)
/// + absolute_tolerance`. Returns at least one bin: if none fits, the first in
/// the adaptive order is taken anyway and [`Selection::forced`] is set.
/// Deterministic: equal inputs give equal selections, ties broken by index.
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
