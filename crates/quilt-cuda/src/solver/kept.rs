//! Device states of recently used layouts, kept so that batches of a known
//! layout allocate nothing, with a memory budget shared by every solver of
//! the process on a device.

use std::sync::Mutex;

use super::state::LayoutState;
use crate::real::GpuReal;

/// Bytes held by kept layout states, per device ordinal, over all solvers:
/// one solver cannot evict another's states, so each keeps only what the
/// shared budget leaves.
static KEPT_BYTES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn adjust(ordinal: usize, add: usize, sub: usize) -> usize {
    let mut kept = KEPT_BYTES.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() <= ordinal {
        kept.resize(ordinal + 1, 0);
    }
    kept[ordinal] = (kept[ordinal] + add).saturating_sub(sub);
    kept[ordinal]
}

/// A solver's kept layout states, least recently used first.
pub(crate) struct KeptStates<T: GpuReal> {
    states: Vec<LayoutState<T>>,
    ordinal: usize,
}

impl<T: GpuReal> KeptStates<T> {
    pub fn new(ordinal: usize) -> Self {
        Self {
            states: Vec::new(),
            ordinal,
        }
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Takes out the first kept state `pick` accepts.
    pub fn take(&mut self, pick: impl Fn(&LayoutState<T>) -> bool) -> Option<LayoutState<T>> {
        let i = self.states.iter().position(pick)?;
        let st = self.states.remove(i);
        adjust(self.ordinal, 0, st.device_bytes());
        Some(st)
    }

    /// Keeps `st`, then gives up the least recently used states while more
    /// than `max` are kept or the process keeps more than `budget` bytes on
    /// this device; returns them.
    pub fn keep(&mut self, st: LayoutState<T>, max: usize, budget: usize) -> Vec<LayoutState<T>> {
        let mut total = adjust(self.ordinal, st.device_bytes(), 0);
        self.states.push(st);
        let mut out = Vec::new();
        while !self.states.is_empty() && (self.states.len() > max || total > budget) {
            let old = self.states.remove(0);
            total = adjust(self.ordinal, 0, old.device_bytes());
            out.push(old);
        }
        out
    }

    pub fn clear(&mut self) {
        let bytes = self.states.iter().map(LayoutState::device_bytes).sum();
        adjust(self.ordinal, 0, bytes);
        self.states.clear();
    }
}

impl<T: GpuReal> Drop for KeptStates<T> {
    fn drop(&mut self) {
        self.clear();
    }
}
