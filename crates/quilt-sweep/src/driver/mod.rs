//! [`Solver`]: advances a [`Batch`] by one step on the CPU with rayon over
//! (patch, column) work items.
//!
//! Every step starts with one scan of the batch ([`SweepError::BadState`] for
//! NaN or non-positive density/pressure anywhere in a patch,
//! [`SweepError::Cfl`] for a time step above the scheme's limit), then runs
//! the passes of the scheme. Only the ghost layers filled before the step
//! are used: see [`plan`] for how many each pass consumes.

mod block;
mod check;
mod column;
mod plan;
mod pool;
mod shared;
mod split;
mod unsplit;

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::batch::Batch;
use crate::error::{ConfigError, SweepError};
use crate::layout::BatchLayout;
use crate::physics::{Eos, FloorCounts, Gas, IdealGas, NCOMP};
use crate::real::Real;
use crate::scheme::Scheme;

/// Order of the three directional sweeps within a step. Alternating
/// [`SweepOrder::Xyz`] and [`SweepOrder::Zyx`] between steps makes the
/// splitting second-order accurate (Strang 1968).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SweepOrder {
    /// x, then y, then z.
    Xyz,
    /// z, then y, then x.
    Zyx,
}

impl SweepOrder {
    /// The order of step number `n` (0-based): `Xyz` for even, `Zyx` for odd.
    pub const fn for_step(n: u64) -> Self {
        if n % 2 == 0 { Self::Xyz } else { Self::Zyx }
    }

    /// The axes in sweep order.
    pub const fn axes(self) -> [usize; 3] {
        match self {
            Self::Xyz => [0, 1, 2],
            Self::Zyx => [2, 1, 0],
        }
    }
}

/// What one step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// Floor applications during the step.
    pub floors: FloorCounts,
    /// Largest Courant number `dt (|v_d| + c_s) / dx_d` of the input state.
    pub courant: f64,
    /// Interior cells advanced (the "cell updates" of the performance tables).
    pub cells: u64,
    /// The time step taken (for [`Solver::advance_levels`], the largest).
    pub dt: f64,
}

/// How the time step of each patch is chosen.
#[derive(Clone, Copy)]
enum Dt<'a> {
    Fixed(f64),
    Levels(&'a [f64]),
    Cfl { cfl: f64, max: f64 },
}

/// Reusable buffers of a [`Solver`]: the TVD stage and accumulator arrays,
/// the per-pass column plans and the columns' scratch. Keep one per batch
/// size class and pass it to every step, so that steps allocate nothing
/// once warm.
#[derive(Clone, Debug, Default)]
pub struct Workspace<T> {
    stage: Vec<T>,
    acc: Vec<T>,
    groups: Vec<plan::ColumnGroup>,
    dtdx: Vec<[T; 3]>,
    dt: Vec<f64>,
    scratch: pool::ScratchPool,
}

impl<T: Real> Workspace<T> {
    /// An empty workspace; buffers grow on first use.
    pub fn new() -> Self {
        Self {
            stage: Vec::new(),
            acc: Vec::new(),
            groups: Vec::new(),
            dtdx: Vec::new(),
            dt: Vec::new(),
            scratch: pool::ScratchPool::default(),
        }
    }
}

/// A configured hydro solver: scheme plus gas, monomorphised for the
/// gas's equation of state (the ideal gas unless said otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Solver<E = IdealGas> {
    scheme: Scheme,
    gas: Gas<E>,
}

impl<E: Eos> Solver<E> {
    /// A solver for `scheme` and `gas` (validated).
    pub fn new(scheme: Scheme, gas: Gas<E>) -> Result<Self, ConfigError> {
        gas.validate()?;
        Ok(Self { scheme, gas })
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The gas.
    pub fn gas(&self) -> Gas<E> {
        self.gas
    }

    /// Minimum ghost width of every patch (see [`Scheme::ghost_width`]).
    pub fn ghost_width(&self) -> u32 {
        self.scheme.ghost_width()
    }

    /// The scheme's CFL limit (see [`Scheme::cfl_limit`]).
    pub fn cfl_limit(&self) -> f64 {
        self.scheme.cfl_limit()
    }

    /// Checks that a layout suits this solver: the Euler components (any
    /// further components are passive scalars, see [`crate::scheme::scalar`])
    /// and enough ghost layers in every patch.
    pub fn check_layout(&self, layout: &BatchLayout) -> Result<(), SweepError> {
        if (layout.ncomp() as usize) < NCOMP {
            return Err(SweepError::Components {
                found: layout.ncomp(),
                required: NCOMP as u32,
            });
        }
        let need = self.ghost_width();
        if let Some(d) = layout.patches().iter().find(|d| d.ghost < need) {
            return Err(SweepError::GhostWidth {
                patch: d.id,
                ghost: d.ghost,
                required: need,
                scheme: self.scheme.name(),
            });
        }
        Ok(())
    }

    /// The largest time step `cfl / max_{cells, d} ((|v_d| + c_s) / dx_d)` over
    /// the interior cells of every patch. `cfl` must lie in
    /// `(0, cfl_limit]`; the batch state is checked as in [`Solver::advance`].
    pub fn max_dt<T: Real>(&self, batch: &Batch<T>, cfl: f64) -> Result<f64, SweepError> {
        let limit = self.cfl_limit();
        if !(cfl > 0.0 && cfl <= limit) {
            return Err(ConfigError::Cfl {
                cfl,
                limit,
                scheme: self.scheme.name(),
            }
            .into());
        }
        self.check_layout(batch.layout())?;
        let rates = check::scan(batch, &self.gas)?;
        let rate = rates.iter().map(|r| r.rate).fold(0.0, f64::max);
        Ok(cfl / rate)
    }

    /// Advances every patch of `batch` by `dt` with the sweeps in `order`,
    /// writing the new interior state (ghost cells are left stale) and the
    /// time-integrated interface fluxes.
    ///
    /// The ghost cells must hold valid data at the start of the step. After
    /// an error the batch contents are unspecified.
    pub fn advance<T: Real>(
        &self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
        ws: &mut Workspace<T>,
    ) -> Result<StepReport, SweepError> {
        self.advance_with(batch, Dt::Fixed(dt), order, ws)
    }

    /// As [`Solver::advance`], with the time step of each patch taken from
    /// `dt_by_level[patch.level]` (subcycled AMR levels in one batch).
    pub fn advance_levels<T: Real>(
        &self,
        batch: &mut Batch<T>,
        dt_by_level: &[f64],
        order: SweepOrder,
        ws: &mut Workspace<T>,
    ) -> Result<StepReport, SweepError> {
        self.advance_with(batch, Dt::Levels(dt_by_level), order, ws)
    }

    /// As [`Solver::advance`] with `dt = min(max_dt(batch, cfl), dt_max)`,
    /// scanning the batch once instead of twice; the step taken is in
    /// [`StepReport::dt`].
    pub fn advance_cfl<T: Real>(
        &self,
        batch: &mut Batch<T>,
        cfl: f64,
        dt_max: f64,
        order: SweepOrder,
        ws: &mut Workspace<T>,
    ) -> Result<StepReport, SweepError> {
        let limit = self.cfl_limit();
        if !(cfl > 0.0 && cfl <= limit) {
            return Err(ConfigError::Cfl {
                cfl,
                limit,
                scheme: self.scheme.name(),
            }
            .into());
        }
        self.advance_with(batch, Dt::Cfl { cfl, max: dt_max }, order, ws)
    }

    fn advance_with<T: Real>(
        &self,
        batch: &mut Batch<T>,
        mode: Dt<'_>,
        order: SweepOrder,
        ws: &mut Workspace<T>,
    ) -> Result<StepReport, SweepError> {
        self.check_layout(batch.layout())?;
        let rates = check::scan(batch, &self.gas)?;
        let patches = batch.layout().patches();
        let cfl_dt = match mode {
            Dt::Cfl { cfl, max } => {
                (cfl / rates.iter().map(|r| r.rate).fold(0.0, f64::max)).min(max)
            }
            _ => 0.0,
        };
        ws.dt.clear();
        ws.dtdx.clear();
        for d in patches {
            let dt = match mode {
                Dt::Fixed(dt) => dt,
                Dt::Cfl { .. } => cfl_dt,
                Dt::Levels(table) => {
                    table
                        .get(d.level as usize)
                        .copied()
                        .ok_or(SweepError::MissingLevel {
                            patch: d.id,
                            level: d.level,
                            levels: table.len(),
                        })?
                }
            };
            if !(dt.is_finite() && dt > 0.0) {
                return Err(SweepError::TimeStep(dt));
            }
            ws.dt.push(dt);
            ws.dtdx.push([0, 1, 2].map(|a| T::from_f64(dt / d.dx[a])));
        }
        let mut courant = 0.0;
        let mut worst = None;
        for (p, r) in rates.iter().enumerate() {
            let c = ws.dt[p] * r.rate;
            if c > courant {
                courant = c;
                worst = Some((p, r.cell));
            }
        }
        let limit = self.cfl_limit();
        if courant > limit * (1.0 + 1e-12)
            && let Some((p, cell)) = worst
        {
            return Err(SweepError::Cfl {
                dt: ws.dt[p],
                courant,
                limit,
                scheme: self.scheme.name(),
                patch: patches[p].id,
                cell,
            });
        }
        let dt = ws.dt.iter().copied().fold(0.0, f64::max);
        let cells = batch.layout().interior_cells();
        let k = self.gas.consts::<T>();
        let floors = match self.scheme {
            Scheme::Rtvd { limiter } => {
                let kernel = split::Rtvd::<T, E> {
                    k,
                    limiter,
                    eos: PhantomData,
                };
                split::step(&kernel, batch, order, ws)?
            }
            Scheme::Waf { limiter } => {
                let kernel = split::Waf::<T, E> {
                    k,
                    limiter,
                    eos: PhantomData,
                };
                split::step(&kernel, batch, order, ws)?
            }
            Scheme::Tvd { slope, flux } => {
                let scheme = unsplit::Tvd::<T, E> {
                    k,
                    slope,
                    flux,
                    eos: PhantomData,
                };
                unsplit::step(&scheme, batch, order, ws)?
            }
        };
        if floors.total() > 0 {
            log::warn!(
                "{} step: floors applied {} times (density {}, pressure {})",
                self.scheme.name(),
                floors.total(),
                floors.density,
                floors.pressure
            );
        }
        log::trace!(
            "{} step: {} cells, Courant {courant:.3}",
            self.scheme.name(),
            cells
        );
        Ok(StepReport {
            floors,
            courant,
            cells,
            dt,
        })
    }
}
