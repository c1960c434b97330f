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
//! injected ones, so a batch whose prepare started earlier tends to keep
//! the cores until it is done.
//!
//! An adaptive batch is sized by when the solver will need it: the
//! estimated solves queued ahead of it against the CPU work committed
//! before its prepare (see [`InFlight::capacity`]).

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use quilt_mesh::fill::OldData;
use quilt_sweep::{StepReport, SweepOrder};

use super::{Books, StageInputs, checkout_pick, closed_hook, lock, solve_batch, stage};
use crate::Real;
use crate::backend::{SolveBackend, SolveError};
use crate::error::IntegratorError;
use crate::plan::FluxStore;
use crate::ranks::Ranks;
use crate::schedule::{Pick, Scheduler};
use crate::stages::{self, Checked, CloseWork, NewState, StagedBatch};

/// Batches being prepared or prepared and not yet solving. A batch's
/// prepare on all cores takes about as long as its solve on a GPU, and
/// prepares vary: with two ahead the solver still waits between batches
/// whenever two slow prepares meet; since the solve's copies overlap,
/// prepare is the slower stage and a fourth absorbs more of that than a
/// third (see docs/performance.md).
const MAX_AHEAD: usize = 4;

/// Batches alive at once beyond those ahead (solving and closing): bounds
/// the ring's memory when closes fall behind.
const MAX_BEHIND: usize = 3;

/// Whether the backend's [`crate::LayoutStage`] builds layouts on the
/// preparing threads (`QUILT_LAYOUT_STAGE=0` leaves them to the solver,
/// to compare).
pub(super) fn stage_layouts() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("QUILT_LAYOUT_STAGE").map_or(true, |v| v != "0"))
}

/// The number in environment variable `name` if it lies in `range`,
/// else `default`: the knobs that compare settings of the loop.
fn env_knob<N: std::str::FromStr + PartialOrd>(
    name: &str,
    range: std::ops::RangeInclusive<N>,
    default: N,
) -> N {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| range.contains(n))
        .unwrap_or(default)
}

/// [`MAX_AHEAD`], or `QUILT_PIPELINE_AHEAD` (1 to 16) to compare depths.
fn max_ahead() -> usize {
    static AHEAD: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *AHEAD.get_or_init(|| env_knob("QUILT_PIPELINE_AHEAD", 1..=16, MAX_AHEAD))
}

/// Batches alive at once in the loop: those ahead of the solver and those
/// solving or closing (what the batch ring holds at most).
pub(crate) fn max_alive() -> usize {
    max_ahead() + MAX_BEHIND
}

/// Microseconds between two polls of the ranks' transport while the loop
/// waits, unless `QUILT_POLL_MICROS` says otherwise (1 to 10000, for
/// measuring what polling more often hides).
const POLL_MICROS: u64 = 200;

/// The polling interval (see [`POLL_MICROS`]).
fn poll_micros() -> u64 {
    static MICROS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MICROS.get_or_init(|| env_knob("QUILT_POLL_MICROS", 1..=10_000, POLL_MICROS))
}

/// The borrowed pieces of an integrator the pipelined loop works on.
pub(super) struct Flow<'a, 'b, 'd, T, B: ?Sized, D: ?Sized, F> {
    pub inputs: &'a StageInputs<'a, 'b, T, D>,
    pub dt: f64,
    pub order: SweepOrder,
    pub backend: &'a mut B,
    pub news: &'a mut Vec<Option<NewState<'d, T>>>,
    pub fluxes: &'a mut FluxStore<T>,
    pub scheduler: &'a mut Scheduler,
    pub ranks: Option<&'a mut Ranks>,
    pub books: &'a mut Books<'b, T>,
    pub fail: &'a F,
}

/// A selected batch on its way through the stages, with the patches it
/// checked out.
struct Flight<'d, T> {
    id: u64,
    pick: Pick,
    staged: StagedBatch<T>,
    work: CloseWork<'d, T>,
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
        flight: Flight<'d, T>,
        result: Option<Result<StepReport, SolveError>>,
        span: (Instant, Instant),
    },
    /// A prepared batch could not reach the solver (its thread is gone).
    Lost {
        flight: Flight<'d, T>,
    },
    Closed {
        flight: Flight<'d, T>,
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

/// What the coordinator knows of the batches in flight.
#[derive(Default)]
struct InFlight {
    preparing: Vec<Ahead>,
    /// In the order they were queued; the first is on the solver.
    queued: VecDeque<Ahead>,
    /// When the solver last finished a batch.
    solving_since: Option<Instant>,
    /// Close estimates of the closes under way.
    closing: f64,
    /// Batches holding a buffer of the ring.
    alive: usize,
    /// Events still to come.
    outstanding: usize,
    failure: Option<IntegratorError>,
    panic: Option<Box<dyn Any + Send>>,
}

impl InFlight {
    /// Whether the loop only waits for its events now.
    fn stopping(&self) -> bool {
        self.failure.is_some() || self.panic.is_some()
    }

    /// Keeps the first error.
    fn fail(&mut self, e: IntegratorError) {
        self.failure.get_or_insert(e);
    }

    /// Batches not yet on the solver (the first queued one is).
    fn waiting(&self) -> usize {
        self.preparing.len() + self.queued.len().max(1) - 1
    }

    /// A batch was selected and its prepare started.
    fn picked(&mut self, id: u64, pick: &Pick) {
        self.preparing.push(Ahead {
            id,
            prepare_estimate: pick.prepare_estimate,
            solve_estimate: pick.solve_estimate,
            close_estimate: pick.close_estimate,
            started: Instant::now(),
            queued: None,
        });
        self.alive += 1;
        self.outstanding += 1;
    }

    /// A batch went to the solver's queue; the solver's event follows.
    fn queued(&mut self, id: u64) {
        self.outstanding += 1;
        if let Some(i) = self.preparing.iter().position(|a| a.id == id) {
            let mut a = self.preparing.remove(i);
            a.queued = Some(Instant::now());
            self.queued.push_back(a);
        }
    }

    /// A batch left the solver at `end`.
    fn solved(&mut self, id: u64, end: Instant) {
        self.queued.retain(|a| a.id != id);
        self.solving_since = Some(end);
    }

    /// A batch's close started.
    fn closing(&mut self, close_estimate: f64) {
        self.closing += close_estimate;
        self.outstanding += 1;
    }

    /// A batch's close ended and its buffer went back to the ring.
    fn closed(&mut self, close_estimate: f64) {
        self.closing = (self.closing - close_estimate).max(0.0);
        self.alive -= 1;
    }

    /// Seconds the prepare of a batch selected now may take before the
    /// solver waits for it: the solver's queue (the batch it solves,
    /// counted from when it started at the latest, then the queued ones,
    /// then those being prepared, each starting when its prepare is
    /// estimated done) against the CPU work committed before the new
    /// prepare (the prepares under way, the closes running and the close
    /// of the batch on the solver). Estimates are the cost model's, in
    /// seconds of a batch's most loaded queue.
    fn capacity(&self) -> f64 {
        let mut cpu = self.closing;
        let mut gpu = 0.0_f64;
        for (k, a) in self.queued.iter().enumerate() {
            if k == 0 {
                let since = match (a.queued, self.solving_since) {
                    (Some(q), Some(s)) => q.max(s),
                    (q, s) => q.or(s).unwrap_or(a.started),
                };
                gpu = (a.solve_estimate - since.elapsed().as_secs_f64()).max(0.0);
                cpu += a.close_estimate;
            } else {
                gpu += a.solve_estimate;
            }
        }
        for a in &self.preparing {
            cpu += (a.prepare_estimate - a.started.elapsed().as_secs_f64()).max(0.0);
            gpu = gpu.max(cpu) + a.solve_estimate;
        }
        gpu - cpu
    }
}

/// Starts the prepare of `pick` as a task: it sends [`Event::Queued`] and
/// then the batch to the solver, or the reason it could not.
fn spawn_prepare<'s, 'd: 's, T, D>(
    tasks: &rayon::Scope<'s>,
    inp: &'s StageInputs<'_, '_, T, D>,
    events: mpsc::Sender<Event<'d, T>>,
    to_solver: mpsc::Sender<Flight<'d, T>>,
    id: u64,
    pick: Pick,
    checked: Vec<Checked<'d, T>>,
) where
    T: Real,
    D: OldData<T> + Sync + ?Sized,
{
    tasks.spawn(move |_| {
        let start = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| stage(inp, &pick, checked)));
        let end = Instant::now();
        let _ = events.send(match r {
            Ok(Ok((staged, work))) => {
                // `Queued` goes out before the solver can report the
                // batch solved.
                let _ = events.send(Event::Queued { id });
                let flight = Flight {
                    id,
                    pick,
                    staged,
                    work,
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

/// Starts the close of a solved batch as a task.
fn spawn_close<'s, 'd: 's, T: Real>(
    tasks: &rayon::Scope<'s>,
    events: mpsc::Sender<Event<'d, T>>,
    mut flight: Flight<'d, T>,
) {
    tasks.spawn(move |_| {
        let start = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| {
            stages::close_checked_out(&flight.staged, &mut flight.work)
        }));
        let span = (start, Instant::now());
        let _ = events.send(match r {
            Ok(close_secs) => Event::Closed {
                flight,
                close_secs,
                span,
            },
            Err(p) => Event::Panicked(p),
        });
    });
}

/// The next event, polling the ranks' transport while none comes if
/// `ranks` wants polls (the first polling error is kept in `polled`).
fn next_event<'d, T>(
    inbox: &mpsc::Receiver<Event<'d, T>>,
    ranks: Option<&mut Ranks>,
    polled: &mut Result<(), IntegratorError>,
) -> Option<Event<'d, T>> {
    let Some(ranks) = ranks.filter(|r| r.polls()) else {
        return inbox.recv().ok();
    };
    loop {
        match inbox.recv_timeout(Duration::from_micros(poll_micros())) {
            Ok(e) => return Some(e),
            Err(RecvTimeoutError::Timeout) => {
                if polled.is_ok() {
                    *polled = ranks.poll();
                }
            }
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
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
        inputs,
        dt,
        order,
        backend,
        news,
        fluxes,
        scheduler,
        mut ranks,
        books,
        fail,
    } = flow;
    let t0 = Instant::now();
    let ring = inputs.ring;
    let olds = inputs.olds;
    let (events, inbox) = mpsc::channel::<Event<'_, T>>();
    let (to_solver, solver_inbox) = mpsc::channel::<Flight<'_, T>>();
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
                    let Flight { staged, work, .. } = &mut flight;
                    match catch_unwind(AssertUnwindSafe(|| {
                        solve_batch(backend, staged, work, olds, dt, order)
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
            let mut f = InFlight::default();
            let mut polled = Ok(());
            let mut selecting = true;
            let mut next_id = 0_u64;
            let (max_ahead, max_alive) = (max_ahead(), max_alive());
            loop {
                let t = Instant::now();
                while selecting && !f.stopping() && f.waiting() < max_ahead && f.alive < max_alive {
                    // The step's first batch has nothing to hide behind.
                    let in_flight = (next_id > 0).then(|| f.capacity());
                    match scheduler.next(books.model.model(), in_flight) {
                        Err(e) => f.fail(e),
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
                            match checkout_pick(inputs.layout, &pick, news, fluxes) {
                                Err(e) => f.fail(e),
                                Ok(checked) => {
                                    f.picked(id, &pick);
                                    let (e, s) = (events.clone(), to_solver.clone());
                                    spawn_prepare(tasks, inputs, e, s, id, pick, checked);
                                }
                            }
                        }
                    }
                }
                books.stats.between += t.elapsed().as_secs_f64();
                if f.outstanding == 0 {
                    break;
                }
                // The loop holds a sender, so the channel stays open.
                let Some(event) = next_event(&inbox, ranks.as_deref_mut(), &mut polled) else {
                    break;
                };
                f.outstanding -= 1;
                let t = Instant::now();
                match event {
                    Event::Queued { id } => f.queued(id),
                    Event::Unprepared { id, error } => {
                        f.preparing.retain(|a| a.id != id);
                        f.alive -= 1;
                        f.fail(error);
                    }
                    Event::Lost { flight } => {
                        f.queued.retain(|a| a.id != flight.id);
                        f.alive -= 1;
                        lock(ring).give(flight.staged.batch);
                        f.fail(IntegratorError::Internal(
                            "the solver thread has stopped".into(),
                        ));
                    }
                    Event::Solved {
                        flight,
                        result,
                        span: (started, end),
                    } => {
                        f.solved(flight.id, end);
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
                        log::trace!(
                            "batch {}: slowest prepare queue {:.4e} s",
                            flight.id,
                            flight
                                .staged
                                .prepare_secs
                                .iter()
                                .copied()
                                .fold(0.0, f64::max)
                        );
                        let solved = match result {
                            Some(Ok(r)) if !f.stopping() => Ok(r),
                            Some(Err(e)) => Err(Some(fail(e))),
                            _ => Err(None),
                        };
                        let checked = solved.map(|r| {
                            let secs = end.duration_since(started).as_secs_f64();
                            books.solved(&flight.pick, &flight.staged, secs, &r);
                        });
                        match checked {
                            Ok(()) => {
                                f.closing(flight.pick.close_estimate);
                                spawn_close(tasks, events.clone(), flight);
                            }
                            Err(e) => {
                                f.alive -= 1;
                                lock(ring).give(flight.staged.batch);
                                if let Some(e) = e {
                                    f.fail(e);
                                }
                            }
                        }
                    }
                    Event::Closed {
                        flight,
                        close_secs,
                        span: (start, end),
                    } => {
                        log::trace!(
                            "batch {}: close {}..{} us",
                            flight.id,
                            us(t0, start),
                            us(t0, end)
                        );
                        f.closed(flight.pick.close_estimate);
                        let Flight { staged, work, .. } = flight;
                        stages::checkin(work, news, fluxes);
                        let wall = end.duration_since(start).as_secs_f64();
                        books.closed(&staged, &close_secs, wall);
                        let sent = closed_hook(ranks.as_deref_mut(), &staged, fluxes);
                        lock(ring).give(staged.batch);
                        if let Err(e) = sent {
                            f.fail(e);
                        }
                    }
                    Event::Panicked(p) => {
                        f.panic.get_or_insert(p);
                    }
                }
                if f.stopping() {
                    stop.store(true, Ordering::Release);
                }
                books.stats.between += t.elapsed().as_secs_f64();
            }
            drop(to_solver);
            if let Some(p) = f.panic {
                resume_unwind(p);
            }
            match f.failure {
                Some(e) => Err(e),
                None => polled,
            }
        })
    })
}
