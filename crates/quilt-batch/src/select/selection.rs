//! The result of a batch selection: the chosen bins and the CPU queues.

/// One patch in a CPU queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PatchRef {
    /// Index of the bin in the slice given to the selector.
    pub bin: usize,
    /// Index of the patch within its bin.
    pub patch: usize,
    /// Estimated prepare time of the patch, seconds.
    pub cost: f64,
}

/// A selected batch and its distribution over `P` CPU queues.
///
/// Reusable: the `Selector` methods clear and refill it, keeping its allocations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    pub(crate) bins: Vec<usize>,
    pub(crate) queues: Vec<Vec<PatchRef>>,
    pub(crate) loads: Vec<f64>,
    pub(crate) capacity: f64,
    pub(crate) forced: bool,
    pub(crate) volume: u64,
}

impl Selection {
    /// An empty selection.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn reset(&mut self, queues: usize, capacity: f64) {
        self.bins.clear();
        self.queues.truncate(queues);
        for q in &mut self.queues {
            q.clear();
        }
        self.queues.resize_with(queues, Vec::new);
        self.loads.clear();
        self.loads.resize(queues, 0.0);
        self.capacity = capacity;
        self.forced = false;
        self.volume = 0;
    }

    /// Indices of the chosen bins (into the slice given to the selector), in
    /// the order they were chosen: non-increasing volume / prepare cost for
    /// the adaptive selector, index order for the static one. Never empty.
    pub fn bins(&self) -> &[usize] {
        &self.bins
    }

    /// The `P` queues; queue `q` is prepared by CPU thread `q`. Some may be empty.
    pub fn queues(&self) -> &[Vec<PatchRef>] {
        &self.queues
    }

    /// Estimated prepare time of each queue, seconds.
    pub fn loads(&self) -> &[f64] {
        &self.loads
    }

    /// Estimated prepare time of the batch with `P` threads: the largest queue load.
    pub fn makespan(&self) -> f64 {
        self.loads.iter().copied().fold(0.0, f64::max)
    }

    /// Effective per-queue capacity the selection honoured (capacity plus
    /// tolerance); infinite for selections not bounded by time.
    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// True when no bin fitted and one was taken anyway to guarantee progress;
    /// only that first bin may push queues over [`Selection::capacity`].
    pub fn forced(&self) -> bool {
        self.forced
    }

    /// Total packed volume (ghost-inclusive cells) of the chosen bins.
    pub fn volume(&self) -> u64 {
        self.volume
    }

    /// Number of patches over all queues.
    pub fn patch_count(&self) -> usize {
        self.queues.iter().map(Vec::len).sum()
    }
}
