//! Time per phase of a step, and run totals.

use std::ops::AddAssign;

use serde::Serialize;

/// Seconds spent per phase. Stages that overlap in pipelined mode each
/// count their own duration, so `prepare + solve + close` may exceed the
/// batch loop's wall time; the difference is what the pipeline hid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PhaseTimes {
    /// Filling patches (interiors, ghosts, probes) into batch buffers.
    pub prepare: f64,
    /// The backend's solves.
    pub solve: f64,
    /// Copying results and flux blocks back.
    pub close: f64,
    /// Flux-register accumulation, refluxing, restriction, state swap.
    pub reflux_restrict: f64,
    /// Ghost fill, tagging, clustering, regrid, re-packing.
    pub regrid: f64,
    /// Output written by the driver (recorded through the integrator).
    pub output: f64,
    /// Time the solve stage was not busy during the batch loop: the wall
    /// time of the loop minus the solve time (CPU work the pipeline could
    /// not hide, batch selection and assembly).
    pub idle: f64,
    /// The CFL scan and other bookkeeping.
    pub other: f64,
    /// Wall time of the batch loop (prepare, solve, close of all batches).
    pub batch_loop: f64,
    /// Wall time of the whole step.
    pub wall: f64,
    /// Core-seconds of the prepare tasks (each patch's fill and probe
    /// copies, summed over the threads that ran them): with `prepare`
    /// (wall), how many cores prepare kept busy.
    pub prepare_tasks: f64,
    /// Core-seconds of the close tasks, as `prepare_tasks`.
    pub close_tasks: f64,
}

impl PhaseTimes {
    /// Prepare and close time the pipeline overlapped with solves:
    /// `prepare + close - (batch_loop - solve)`, at least 0.
    pub fn hidden(&self) -> f64 {
        (self.prepare + self.close - (self.batch_loop - self.solve)).max(0.0)
    }
}

impl AddAssign for PhaseTimes {
    fn add_assign(&mut self, o: Self) {
        self.prepare += o.prepare;
        self.solve += o.solve;
        self.close += o.close;
        self.reflux_restrict += o.reflux_restrict;
        self.regrid += o.regrid;
        self.output += o.output;
        self.idle += o.idle;
        self.other += o.other;
        self.batch_loop += o.batch_loop;
        self.wall += o.wall;
        self.prepare_tasks += o.prepare_tasks;
        self.close_tasks += o.close_tasks;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_time_is_the_overlap() {
        let p = PhaseTimes {
            prepare: 2.0,
            close: 1.0,
            solve: 5.0,
            batch_loop: 6.0,
            ..Default::default()
        };
        assert_eq!(p.hidden(), 2.0);
        let mut q = p;
        q += p;
        assert_eq!(q.solve, 10.0);
        assert_eq!(q.hidden(), 4.0);
    }
}

/// Relative errors of the cost model's estimates against what was measured,
/// summed over batches: the solve estimate of each batch (made when it was
/// chosen), and the prepare estimate of its most loaded CPU queue (made
/// before the batch's own timings refine the model).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EstimateErrors {
    /// Sum over batches of `|estimate − measured| / measured` of the solve.
    pub solve_sum: f64,
    /// Batches in `solve_sum`.
    pub solve_batches: u64,
    /// The same for the prepare of the slowest queue.
    pub prepare_sum: f64,
    /// Batches in `prepare_sum`.
    pub prepare_batches: u64,
}

impl EstimateErrors {
    /// Mean relative error of the solve estimates (0 without batches).
    pub fn solve_mean(&self) -> f64 {
        self.solve_sum / (self.solve_batches.max(1) as f64)
    }

    /// Mean relative error of the prepare estimates (0 without batches).
    pub fn prepare_mean(&self) -> f64 {
        self.prepare_sum / (self.prepare_batches.max(1) as f64)
    }

    pub(crate) fn add_solve(&mut self, estimate: f64, measured: f64) {
        if measured > 0.0 && estimate.is_finite() {
            self.solve_sum += (estimate - measured).abs() / measured;
            self.solve_batches += 1;
        }
    }

    pub(crate) fn add_prepare(&mut self, estimate: f64, measured: f64) {
        if measured > 0.0 && estimate.is_finite() {
            self.prepare_sum += (estimate - measured).abs() / measured;
            self.prepare_batches += 1;
        }
    }
}

impl AddAssign for EstimateErrors {
    fn add_assign(&mut self, o: Self) {
        self.solve_sum += o.solve_sum;
        self.solve_batches += o.solve_batches;
        self.prepare_sum += o.prepare_sum;
        self.prepare_batches += o.prepare_batches;
    }
}
