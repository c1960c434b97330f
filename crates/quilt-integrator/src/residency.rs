//! `run.residency = "auto"`: whether the state lives in the backend,
//! weighed in bytes against the device's memory, at the start and again at
//! every regrid.
//!
//! The budget is `run.device_memory_fraction` of the device's free memory
//! plus what the resident state holds already, capped by
//! `run.device_memory_limit`. A hierarchy whose resident state
//! ([`crate::resident::ResidentPlan::device_bytes`]) fits it is kept in the
//! backend; one that does not runs host-staged, the mode for problems
//! larger than device memory. At a regrid of a resident hierarchy the old
//! and the new state are on the device together while the state moves
//! ([`RegridMove::InBackend`]); when only the new one fits, the state goes
//! through host memory instead ([`RegridMove::ThroughHost`]), and when not
//! even that fits the run continues host-staged ([`RegridMove::ToHost`]).
//! Every path gives the same state bit for bit.

use quilt_mesh::Hierarchy;

use crate::backend::DeviceMemory;

/// How a regrid of a resident hierarchy moves its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegridMove {
    /// Device to device: both states fit the budget together.
    InBackend,
    /// Back to the host, regridded there, and the new state loaded: only
    /// the new state fits.
    ThroughHost,
    /// Back to the host for good: the new state does not fit.
    ToHost,
}

/// Bytes the resident state may take: `fraction` of the device's free
/// memory plus the `held` bytes of the state resident now, capped by
/// `limit` (0: no cap). A backend without device memory of its own has a
/// budget only when `limit` gives one.
pub(crate) fn budget(
    memory: Option<DeviceMemory>,
    held: u64,
    fraction: f64,
    limit: u64,
) -> Option<u64> {
    let cap = if limit > 0 { limit } else { u64::MAX };
    match memory {
        Some(m) => {
            let usable = (m.free.saturating_add(held) as f64 * fraction) as u64;
            Some(usable.min(cap))
        }
        None => (limit > 0).then_some(limit),
    }
}

/// How a regrid from a resident state of `old` bytes to one of `new` bytes
/// moves it under `budget`.
pub(crate) fn regrid_move(old: u64, new: u64, budget: u64) -> RegridMove {
    if old.saturating_add(new) <= budget {
        RegridMove::InBackend
    } else if new <= budget {
        RegridMove::ThroughHost
    } else {
        RegridMove::ToHost
    }
}

/// A lower bound of the resident state's bytes for `h` with `ncomp`
/// values of `value_size` bytes per cell: every patch's ghost-grown box in
/// the batch and its interior in the compact array. Spares building the
/// resident plan of a hierarchy that cannot fit.
pub(crate) fn lower_bound(h: &Hierarchy, ncomp: usize, value_size: usize) -> u64 {
    let cells: i64 = h
        .patches()
        .iter()
        .map(|p| p.ghost_box().num_cells() + p.interior().num_cells())
        .sum();
    cells.max(0) as u64 * (ncomp * value_size) as u64
}

/// Gigabytes, for log lines.
pub(crate) fn gb(bytes: u64) -> f64 {
    bytes as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;

    fn mem(free: u64) -> Option<DeviceMemory> {
        Some(DeviceMemory {
            free,
            total: 80 * GB,
        })
    }

    #[test]
    fn the_budget_is_a_fraction_of_free_and_held_memory_under_the_limit() {
        assert_eq!(budget(mem(10 * GB), 0, 0.5, 0), Some(5 * GB));
        assert_eq!(budget(mem(10 * GB), 10 * GB, 0.5, 0), Some(10 * GB));
        assert_eq!(budget(mem(10 * GB), 0, 0.5, 2 * GB), Some(2 * GB));
        assert_eq!(budget(mem(10 * GB), 0, 1.0, 20 * GB), Some(10 * GB));
        // Host memory only: a budget exists only by the limit.
        assert_eq!(budget(None, 0, 0.9, 0), None);
        assert_eq!(budget(None, 7, 0.9, 3 * GB), Some(3 * GB));
    }

    #[test]
    fn a_regrid_moves_in_the_backend_only_when_both_states_fit() {
        assert_eq!(regrid_move(4, 5, 9), RegridMove::InBackend);
        assert_eq!(regrid_move(4, 5, 8), RegridMove::ThroughHost);
        assert_eq!(regrid_move(4, 5, 5), RegridMove::ThroughHost);
        assert_eq!(regrid_move(4, 5, 4), RegridMove::ToHost);
        assert_eq!(
            regrid_move(u64::MAX, 1, u64::MAX - 1),
            RegridMove::ThroughHost
        );
    }
}
