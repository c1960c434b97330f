//! The order in which the bins of one step are batched: quilt-batch's
//! adaptive knapsack selection (each batch's preparation sized to hide
//! behind the estimated solve of the batch in flight) or the static
//! scheme (a fixed number of patches per batch).

use quilt_batch::{AdaptiveOptions, BinWork, CostModel, PatchRef, Selection, Selector};

use crate::deck::BatchMode;
use crate::error::IntegratorError;

/// One selected batch: global bin indices and the CPU queues (whose
/// `PatchRef::bin` index `bins`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Pick {
    pub bins: Vec<usize>,
    pub queues: Vec<Vec<PatchRef>>,
    /// Estimated solve seconds of the batch.
    pub solve_estimate: f64,
    /// Estimated prepare seconds of the batch: the expected time of its
    /// slowest queue ([`quilt_batch::CostModel::slowest_queue`]).
    pub prepare_estimate: f64,
    /// Estimated close seconds of the batch's most loaded queue.
    pub close_estimate: f64,
}

/// The bins of one step not yet batched, and the selector state.
pub(crate) struct Scheduler {
    mode: BatchMode,
    n_fixed: usize,
    queues: usize,
    opts: AdaptiveOptions,
    selector: Selector,
    selection: Selection,
    remaining: Vec<usize>,
    work: Vec<BinWork>,
    /// Bins held back until `remaining` is done (a second phase).
    later: Vec<usize>,
    later_work: Vec<BinWork>,
}

impl Scheduler {
    /// A scheduler for `mode` with `queues` CPU queues.
    pub fn new(mode: BatchMode, n_fixed: usize, queues: usize, max_bins: usize) -> Self {
        let opts = AdaptiveOptions {
            max_bins: if max_bins == 0 { usize::MAX } else { max_bins },
            ..AdaptiveOptions::default()
        };
        Self {
            mode,
            n_fixed,
            queues: queues.max(1),
            opts,
            selector: Selector::new(),
            selection: Selection::new(),
            remaining: Vec::new(),
            work: Vec::new(),
            later: Vec::new(),
            later_work: Vec::new(),
        }
    }

    /// Starts a step over all bins of `work`, batching the bins `first`
    /// marks before any other (each phase selected as usual): a run over
    /// ranks solves the bins whose results other ranks wait for first.
    pub fn start_first(&mut self, work: &[BinWork], first: Option<&[bool]>) {
        self.remaining.clear();
        self.work.clear();
        self.later.clear();
        self.later_work.clear();
        for (b, w) in work.iter().enumerate() {
            if first.is_none_or(|f| f.get(b).copied().unwrap_or(false)) {
                self.remaining.push(b);
                self.work.push(w.clone());
            } else {
                self.later.push(b);
                self.later_work.push(w.clone());
            }
        }
    }

    /// Whether bins remain.
    pub fn is_done(&self) -> bool {
        self.remaining.is_empty() && self.later.is_empty()
    }

    /// The next batch. `in_flight` is the estimated time left on the solver
    /// when the batch's preparation starts (`None` for the first batch of a
    /// step, which has nothing to hide behind).
    pub fn next(
        &mut self,
        model: &CostModel,
        in_flight: Option<f64>,
    ) -> Result<Option<Pick>, IntegratorError> {
        if self.remaining.is_empty() {
            std::mem::swap(&mut self.remaining, &mut self.later);
            std::mem::swap(&mut self.work, &mut self.later_work);
        }
        if self.remaining.is_empty() {
            return Ok(None);
        }
        match (self.mode, in_flight) {
            (BatchMode::Static, _) => self.selector.fixed(
                &self.work,
                self.n_fixed,
                self.queues,
                model,
                &mut self.selection,
            )?,
            (BatchMode::Adaptive, None) => self.selector.first(
                &self.work,
                self.queues,
                model,
                &self.opts,
                &mut self.selection,
            )?,
            (BatchMode::Adaptive, Some(capacity)) => self.selector.adaptive(
                &self.work,
                capacity.max(0.0),
                self.queues,
                model,
                &self.opts,
                &mut self.selection,
            )?,
        }
        let chosen = self.selection.bins();
        let bins: Vec<usize> = chosen.iter().map(|&b| self.remaining[b]).collect();
        // Queue entries name bins by position in the slice given to the
        // selector; renumber them by position in this batch.
        let mut pos = vec![usize::MAX; self.work.len()];
        for (n, &b) in chosen.iter().enumerate() {
            pos[b] = n;
        }
        let queues: Vec<Vec<PatchRef>> = self
            .selection
            .queues()
            .iter()
            .map(|q| {
                q.iter()
                    .map(|r| PatchRef {
                        bin: pos[r.bin],
                        ..*r
                    })
                    .collect()
            })
            .collect();
        let picked: Vec<&BinWork> = chosen.iter().map(|&b| &self.work[b]).collect();
        let solve_estimate = model.batch_solve(picked.iter().copied());
        let mut prepare_load = vec![0.0; self.queues];
        let mut close_load = vec![0.0; self.queues];
        for (q, refs) in self.selection.queues().iter().enumerate() {
            for r in refs {
                let w = &self.work[r.bin].patches()[r.patch];
                prepare_load[q] += model.patch_prepare(w);
                close_load[q] += model.patch_close(w);
            }
        }
        let prepare_estimate = model.slowest_queue(&prepare_load);
        let close_estimate = close_load.iter().copied().fold(0.0, f64::max);
        // Drop the chosen bins, keeping the others in order.
        let mut keep = vec![true; self.work.len()];
        for &b in chosen {
            keep[b] = false;
        }
        let mut n = 0;
        self.remaining.retain(|_| {
            n += 1;
            keep[n - 1]
        });
        let mut n = 0;
        self.work.retain(|_| {
            n += 1;
            keep[n - 1]
        });
        Ok(Some(Pick {
            bins,
            queues,
            solve_estimate,
            prepare_estimate,
            close_estimate,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_batch::PatchWork;

    fn bins() -> Vec<BinWork> {
        (0..7)
            .map(|i| {
                let p = PatchWork::new([16 + 2 * i, 22, 22], 3).with_ghost_fill(100, 200);
                BinWork::new(vec![p, p], 40).unwrap()
            })
            .collect()
    }

    fn drain(mode: BatchMode) -> Vec<Vec<usize>> {
        let mut s = Scheduler::new(mode, 3, 2, 0);
        let w = bins();
        s.start_first(&w, None);
        let model = CostModel::default();
        let mut out = Vec::new();
        let mut in_flight = None;
        while let Some(p) = s.next(&model, in_flight).unwrap() {
            let patches: usize = p.queues.iter().map(Vec::len).sum();
            assert_eq!(patches, 2 * p.bins.len());
            for q in &p.queues {
                for r in q {
                    assert!(r.bin < p.bins.len());
                }
            }
            in_flight = Some(p.solve_estimate - p.close_estimate);
            out.push(p.bins);
        }
        out
    }

    #[test]
    fn every_bin_is_batched_once() {
        for mode in [BatchMode::Adaptive, BatchMode::Static] {
            let batches = drain(mode);
            let mut all: Vec<usize> = batches.concat();
            all.sort_unstable();
            assert_eq!(all, (0..7).collect::<Vec<_>>(), "{mode:?}");
        }
        // Static: whole bins while the patch count stays within 3 -> one bin each.
        assert!(drain(BatchMode::Static).iter().all(|b| b.len() == 1));
    }

    #[test]
    fn marked_bins_come_first() {
        let first = [false, true, false, false, true, false, true];
        for mode in [BatchMode::Adaptive, BatchMode::Static] {
            let mut s = Scheduler::new(mode, 3, 2, 0);
            s.start_first(&bins(), Some(&first));
            let model = CostModel::default();
            let mut order = Vec::new();
            let mut in_flight = None;
            while let Some(p) = s.next(&model, in_flight).unwrap() {
                in_flight = Some(p.solve_estimate - p.close_estimate);
                order.extend(p.bins);
            }
            assert!(s.is_done());
            let mut head = order[..3].to_vec();
            head.sort_unstable();
            assert_eq!(head, [1, 4, 6], "{mode:?}: {order:?}");
            order.sort_unstable();
            assert_eq!(order, (0..7).collect::<Vec<_>>(), "{mode:?}");
        }
    }
}
