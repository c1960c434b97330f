//! The pipelined batch loop as a dataflow.
//!
//! Three kinds of work run at once: the backend solves one batch at a time
//! on a thread of its own, rayon tasks prepare the next batches (up to
//! [`MAX_AHEAD`] ahead of the solver) and close solved ones (any number at
//! once: each close owns the new states and flux stores of its patches,
//! checked out by [`stages::checkout`]). The calling thread coordinates:
//! it selects batches, hands prepared ones to the solver, starts closes,
//! feeds the cost model, and polls the ranks' transport, whose calls it
//! alone may make.
//!
//! No stage waits for another batch's stage to end unless it needs its
//! result (a lock-step loop, which joins the solve of batch `i` with the
//! prepare of `i + 1` and the close of `i − 1`, leaves the cores idle at
//! the tail of every iteration and the solver idle whenever the CPU side
//! runs longer). Rayon runs a worker's own and stolen subtasks before
//! injected ones, so an earlier batch's prepare finishes before a later
//! one takes the cores.
//!
//! An adaptive batch is sized by when the solver will need it: the
//! estimated solves queued ahead of it against the CPU work committed
//! before its prepare (see [`capacity`]).

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use quilt_mesh::Hierarchy;
use quilt_mesh::PatchData;
use quilt_mesh::fill::OldData;
use quilt_sweep::{StepReport, SweepOrder};

use super::{Books, SharedRing, closed_hook, lock, stage};
use crate::Real;
use crate::backend::{SolveBackend, SolveError};
use crate::error::IntegratorError;
use crate::plan::{FluxStore, PlanLayout};
use crate::ranks::Ranks;
use crate::schedule::{Pick, Scheduler};
use crate::stages::{self, CloseWork, StagedBatch};

/// Batches being prepared or prepared and not yet solving.
const MAX_AHEAD: usize = 2;

/// Batches alive at once beyond those ahead (solving and closing): bounds
/// the ring's memory when closes fall behind.
const MAX_BEHIND: usize = 3;

/// Whether the backend's [`crate::LayoutStage`] builds layouts on the
/// preparing threads (`QUILT_LAYOUT_STAGE=0` leaves them to the solver,
/// to compare).
fn stage_layouts() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("QUILT_LAYOUT_STAGE").map_or(true, |v| v != "0"))
}

/// [`MAX_AHEAD`], or `QUILT_PIPELINE_AHEAD` (1 to 16) to compare depths.
fn max_ahead() -> usize {
    static AHEAD: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *AHEAD.get_or_init(|| {
        std::env::var("QUILT_PIPELINE_AHEAD")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| (1..=16).contains(n))
            .unwrap_or(MAX_AHEAD)
    })
}

/// Microseconds between two polls of the ranks' transport while the loop
/// waits.
const POLL_MICROS: u64 = 200;

/// The borrowed pieces of an integrator the pipelined loop works on.
pub(super) struct Flow<'a, 'b, 'd, T, B: ?Sized, D: ?Sized, F> {
    pub h: &'a Hierarchy,
    pub layout: &'a PlanLayout<T>,
    pub olds: &'a D,
    pub time: f64,
    pub dt: f64,
    pub order: SweepOrder,
    pub backend: &'a mut B,
    pub news: &'a mut Vec<Option<&'d mut PatchData<T>>>,
    pub fluxes: &'a mut FluxStore<T>,
    pub ring: &'a SharedRing<'b, T>,
    pub scheduler: &'a mut Scheduler,
    pub ranks: Option<&'a mut Ranks>,
    pub books: &'a mut Books<'b, T>,
    pub fail: &'a F,
}

/// A selected batch on its way through the stages.
struct Flight<T> {
    id: u64,
    pick: Pick,
    staged: StagedBatch<T>,
    /// When its prepare started and ended.
    prepared: (Instant, Instant),
}

/// What a task or the solver thread reports to the coordinator.
enum Event<'d, T> {
    /// A batch is prepared and queued for the solver.
    Queued {
        id: u64,
    },
    /// A batch could not be prepared.
    Unprepared {
        id: u64,
        error: IntegratorError,
    },
    /// The solver ran a batch (`None`: skipped, the loop is stopping)
    /// over `span`.
    Solved {
        flight: Flight<T>,
        result: Option<Result<StepReport, SolveError>>,
        span: (Instant, Instant),
    },
    /// A prepared batch could not reach the solver (its thread is gone).
    Lost {
        flight: Flight<T>,
    },
    Closed {
        flight: Flight<T>,
        work: CloseWork<'d, T>,
        close_secs: Vec<f64>,
        span: (Instant, Instant),
    },
    Panicked(Box<dyn Any + Send>),
}

/// A batch being prepared or queued on the solver.
struct Ahead {
    id: u64,
    prepare_estimate: f64,
    solve_estimate: f64,
    close_estimate: f64,
    /// When its prepare started, and when it was queued.
    started: Instant,
    queued: Option<Instant>,
}

/// Seconds the prepare of a batch selected now may take before the solver
/// waits for it: the solver's queue (`queued`, whose first batch is being
/// solved since `solving_since` at the latest, and the batches under
/// `preparing`, each starting when its prepare is estimated done) against
/// the CPU work committed before the new prepare (the prepares under way,
/// the closes running and the close of the batch on the solver).
/// Estimates are the cost model's, in seconds of a batch's most loaded
/// queue.
fn capacity(
    queued: &VecDeque<Ahead>,
    preparing: &[Ahead],
    solving_since: Instant,
    closing: f64,
) -> f64 {
    let mut cpu = closing;
    let mut gpu = 0.0_f64;
    for (k, a) in queued.iter().enumerate() {
        if k == 0 {
            let since = a.queued.map_or(solving_since, |q| q.max(solving_since));
            gpu = (a.solve_estimate - since.elapsed().as_secs_f64()).max(0.0);
            cpu += a.close_estimate;
        } else {
            gpu += a.solve_estimate;
        }
    }
    for a in preparing {
        cpu += (a.prepare_estimate - a.started.elapsed().as_secs_f64()).max(0.0);
        gpu = gpu.max(cpu) + a.solve_estimate;
    }
    gpu - cpu
}

/// Microseconds from `t0` to `t`, for the trace.
fn us(t0: Instant, t: Instant) -> u128 {
    t.saturating_duration_since(t0).as_micros()
}

/// Runs every batch the scheduler selects through prepare, solve and close.
pub(super) fn run<T, B, D, F>(flow: Flow<'_, '_, '_, T, B, D, F>) -> Result<(), IntegratorError>
where
    T: Real,
    B: SolveBackend<T> + ?Sized,
    D: OldData<T> + Sync + ?Sized,
    F: Fn(SolveError) -> IntegratorError,
{
    let Flow {
        h,
        layout,
        olds,
        time,
        dt,
        order,
        backend,
        news,
        fluxes,
        ring,
        scheduler,
        mut ranks,
        books,
        fail,
    } = flow;
    let t0 = Instant::now();
    let stager = if stage_layouts() {
        backend.layout_stage()
    } else {
        None
    };
    let stager = stager.as_deref();
    let (events, inbox) = mpsc::channel::<Event<'_, T>>();
    let (to_solver, solver_inbox) = mpsc::channel::<Flight<T>>();
    // Set once the loop fails: the solver skips what is still queued.
    let stop = AtomicBool::new(false);
    std::thread::scope(|threads| {
        let solver_events = events.clone();
        let stop = &stop;
        threads.spawn(move || {
            for mut flight in solver_inbox {
                let started = Instant::now();
                let event = if stop.load(Ordering::Acquire) {
                    Event::Solved {
                        flight,
                        result: None,
                        span: (started, started),
                    }
                } else {
                    let staged = flight.staged.layout_state.take();
                    match catch_unwind(AssertUnwindSafe(|| {
                        backend.solve_staged(&mut flight.staged.batch, staged, dt, order)
                    })) {
                        Ok(result) => Event::Solved {
                            flight,
                            result: Some(result),
                            span: (started, Instant::now()),
                        },
                        Err(p) => Event::Panicked(p),
                    }
                };
                if solver_events.send(event).is_err() {
                    break;
                }
            }
        });
        rayon::in_place_scope(|tasks| {
            let mut preparing: Vec<Ahead> = Vec::new();
            let mut queued: VecDeque<Ahead> = VecDeque::new();
            let mut solving_since = Instant::now();
            // Close estimates of the closes under way.
            let mut closing = 0.0_f64;
            let mut alive = 0_usize;
            // Events still to come.
            let mut outstanding = 0_usize;
            let mut failure: Option<IntegratorError> = None;
            let mut panic: Option<Box<dyn Any + Send>> = None;
            let mut polled = Ok(());
            let mut selecting = true;
            let mut next_id = 0_u64;
            let polls = ranks.as_deref().is_some_and(Ranks::polls);
            let (max_ahead, max_alive) = (max_ahead(), max_ahead() + MAX_BEHIND);
            loop {
                let t = Instant::now();
                // Batches not yet on the solver (the first queued one is).
                let waiting = |p: &Vec<Ahead>, q: &VecDeque<Ahead>| p.len() + q.len().max(1) - 1;
                while selecting
                    && failure.is_none()
                    && panic.is_none()
                    && waiting(&preparing, &queued) < max_ahead
                    && alive < max_alive
                {
                    // The step's first batch has nothing to hide behind.
                    let in_flight = (next_id > 0)
                        .then(|| capacity(&queued, &preparing, solving_since, closing));
                    match scheduler.next(books.model.model(), in_flight) {
                        Err(e) => failure = Some(e),
                        Ok(None) => selecting = false,
                        Ok(Some(pick)) => {
                            let id = next_id;
                            next_id += 1;
                            log::trace!(
                                "pick {id} at {} us: {} bins, prepare {:.2e} s, solve {:.2e} s, capacity {:?}",
                                us(t0, Instant::now()),
                                pick.bins.len(),
                                pick.prepare_estimate,
                                pick.solve_estimate,
                                in_flight
                            );
                            preparing.push(Ahead {
                                id,
                                prepare_estimate: pick.prepare_estimate,
                                solve_estimate: pick.solve_estimate,
                                close_estimate: pick.close_estimate,
                                started: Instant::now(),
                                queued: None,
                            });
                            alive += 1;
                            outstanding += 1;
                            let events = events.clone();
                            let to_solver = to_solver.clone();
                            tasks.spawn(move |_| {
                                let start = Instant::now();
                                let r = catch_unwind(AssertUnwindSafe(|| {
                                    stage(layout, h, olds, time, &pick, ring, stager)
                                }));
                                let end = Instant::now();
                                // `Queued` goes out before the solver can
                                // report the batch solved.
                                let _ = events.send(match r {
                                    Ok(Ok(staged)) => {
                                        let _ = events.send(Event::Queued { id });
                                        let flight = Flight {
                                            id,
                                            pick,
                                            staged,
                                            prepared: (start, end),
                                        };
                                        match to_solver.send(flight) {
                                            Ok(()) => return,
                                            Err(mpsc::SendError(flight)) => Event::Lost { flight },
                                        }
                                    }
                                    Ok(Err(error)) => Event::Unprepared { id, error },
                                    Err(p) => Event::Panicked(p),
                                });
                            });
                        }
                    }
                }
                books.stats.between += t.elapsed().as_secs_f64();
                if outstanding == 0 {
                    break;
                }
                let event = if polls {
                    loop {
                        match inbox.recv_timeout(Duration::from_micros(POLL_MICROS)) {
                            Ok(e) => break Some(e),
                            Err(RecvTimeoutError::Timeout) => {
                                if polled.is_ok()
                                    && let Some(r) = ranks.as_deref_mut()
                                {
                                    polled = r.poll();
                                }
                            }
                            Err(RecvTimeoutError::Disconnected) => break None,
                        }
                    }
                } else {
                    inbox.recv().ok()
                };
                // The loop holds a sender, so the channel stays open.
                let Some(event) = event else { break };
                outstanding -= 1;
                let t = Instant::now();
                match event {
                    Event::Queued { id } => {
                        // The solver's event follows.
                        outstanding += 1;
                        if let Some(i) = preparing.iter().position(|a| a.id == id) {
                            let mut a = preparing.remove(i);
                            a.queued = Some(Instant::now());
                            queued.push_back(a);
                        }
                    }
                    Event::Unprepared { id, error } => {
                        preparing.retain(|a| a.id != id);
                        alive -= 1;
                        failure.get_or_insert(error);
                    }
                    Event::Lost { flight } => {
                        queued.retain(|a| a.id != flight.id);
                        alive -= 1;
                        lock(ring).give(flight.staged.batch);
                        failure.get_or_insert(IntegratorError::Internal(
                            "the solver thread has stopped".into(),
                        ));
                    }
                    Event::Solved {
                        flight,
                        result,
                        span: (started, end),
                    } => {
                        queued.retain(|a| a.id != flight.id);
                        solving_since = end;
                        let secs = end.duration_since(started).as_secs_f64();
                        let (p0, p1) = flight.prepared;
                        log::trace!(
                            "batch {}: prepare {}..{} us, solve {}..{} us",
                            flight.id,
                            us(t0, p0),
                            us(t0, p1),
                            us(t0, started),
                            us(t0, end)
                        );
                        books.prepared(&flight.staged, p1.duration_since(p0).as_secs_f64());
                        let solved = match result {
                            Some(Ok(r)) if failure.is_none() && panic.is_none() => Ok(r),
                            Some(Err(e)) => Err(Some(fail(e))),
                            _ => Err(None),
                        };
                        let checked = solved.and_then(|r| {
                            books.solved(&flight.pick, &flight.staged, secs, &r);
                            stages::checkout(&flight.staged, news, fluxes).map_err(Some)
                        });
                        match checked {
                            Ok(mut work) => {
                                closing += flight.pick.close_estimate;
                                outstanding += 1;
                                let events = events.clone();
                                tasks.spawn(move |_| {
                                    let start = Instant::now();
                                    let r = catch_unwind(AssertUnwindSafe(|| {
                                        stages::close_checked_out(&flight.staged, &mut work)
                                    }));
                                    let span = (start, Instant::now());
                                    let _ = events.send(match r {
                                        Ok(close_secs) => Event::Closed {
                                            flight,
                                            work,
                                            close_secs,
                                            span,
                                        },
                                        Err(p) => Event::Panicked(p),
                                    });
                                });
                            }
                            Err(e) => {
                                alive -= 1;
                                lock(ring).give(flight.staged.batch);
                                if let Some(e) = e {
                                    failure.get_or_insert(e);
                                }
                            }
                        }
                    }
                    Event::Closed {
                        flight,
                        work,
                        close_secs,
                        span,
                    } => {
                        log::trace!(
                            "batch {}: close {}..{} us",
                            flight.id,
                            us(t0, span.0),
                            us(t0, span.1)
                        );
                        closing = (closing - flight.pick.close_estimate).max(0.0);
                        alive -= 1;
                        stages::checkin(&flight.staged, work, news, fluxes);
                        books.closed(
                            &flight.staged,
                            &close_secs,
                            span.1.duration_since(span.0).as_secs_f64(),
                        );
                        let sent = closed_hook(ranks.as_deref_mut(), &flight.staged, fluxes);
                        lock(ring).give(flight.staged.batch);
                        if let Err(e) = sent {
                            failure.get_or_insert(e);
                        }
                    }
                    Event::Panicked(p) => {
                        panic.get_or_insert(p);
                    }
                }
                if failure.is_some() || panic.is_some() {
                    stop.store(true, Ordering::Release);
                }
                books.stats.between += t.elapsed().as_secs_f64();
            }
            drop(to_solver);
            if let Some(p) = panic {
                resume_unwind(p);
            }
            match failure {
                Some(e) => Err(e),
                None => polled,
            }
        })
    })
}
