//! The directionally split schemes (RTVD, WAF): three passes, each advancing
//! columns in place.

use std::marker::PhantomData;

use rayon::prelude::*;

use super::Workspace;
use super::block::{Block, LANES};
use super::column::{Column, ErrorSlot, FloorTally};
use super::plan::{Pass, build_groups};
use super::shared::Shared;
use crate::batch::Batch;
use crate::error::SweepError;
use crate::physics::{Eos, FloorCounts, GasConsts, NCOMP};
use crate::real::Real;
use crate::scheme::rtvd::{self, RtvdScratch};
use crate::scheme::scalar::{ScalarScratch, scalar_column};
use crate::scheme::waf::{self, WafScratch};
use crate::scheme::{ColumnBuf, RtvdLimiter, WafLimiter};

/// A split scheme's column function with its scratch.
pub(crate) trait SplitKernel<T: Real>: Sync {
    type Scratch: Send + 'static;
    const REACH: usize;
    fn scratch(&self, cap: usize) -> Self::Scratch;
    fn state(s: &mut Self::Scratch) -> &mut ColumnBuf<T>;
    /// The column state the sweep started from (unchanged by `run`).
    fn input(s: &Self::Scratch) -> &ColumnBuf<T>;
    fn output(s: &Self::Scratch) -> &ColumnBuf<T>;
    fn flux(s: &Self::Scratch) -> &ColumnBuf<T>;
    fn run(&self, dtdx: T, len: usize, s: &mut Self::Scratch, floors: &mut FloorCounts);
}

pub(crate) struct Rtvd<T, E> {
    pub k: GasConsts<T>,
    pub limiter: RtvdLimiter,
    pub eos: PhantomData<E>,
}

impl<T: Real, E: Eos> SplitKernel<T> for Rtvd<T, E> {
    type Scratch = RtvdScratch<T>;
    const REACH: usize = rtvd::REACH;
    fn scratch(&self, cap: usize) -> Self::Scratch {
        RtvdScratch::new(cap)
    }
    fn state(s: &mut Self::Scratch) -> &mut ColumnBuf<T> {
        &mut s.u
    }
    fn input(s: &Self::Scratch) -> &ColumnBuf<T> {
        &s.u
    }
    fn output(s: &Self::Scratch) -> &ColumnBuf<T> {
        &s.next
    }
    fn flux(s: &Self::Scratch) -> &ColumnBuf<T> {
        &s.flux
    }
    fn run(&self, dtdx: T, len: usize, s: &mut Self::Scratch, floors: &mut FloorCounts) {
        rtvd::rtvd_column::<E, T>(&self.k, self.limiter, dtdx, len, s, floors);
    }
}

pub(crate) struct Waf<T, E> {
    pub k: GasConsts<T>,
    pub limiter: WafLimiter,
    pub eos: PhantomData<E>,
}

impl<T: Real, E: Eos> SplitKernel<T> for Waf<T, E> {
    type Scratch = WafScratch<T>;
    const REACH: usize = waf::REACH;
    fn scratch(&self, cap: usize) -> Self::Scratch {
        WafScratch::new(cap)
    }
    fn state(s: &mut Self::Scratch) -> &mut ColumnBuf<T> {
        &mut s.u
    }
    fn input(s: &Self::Scratch) -> &ColumnBuf<T> {
        &s.u
    }
    fn output(s: &Self::Scratch) -> &ColumnBuf<T> {
        &s.next
    }
    fn flux(s: &Self::Scratch) -> &ColumnBuf<T> {
        &s.flux
    }
    fn run(&self, dtdx: T, len: usize, s: &mut Self::Scratch, floors: &mut FloorCounts) {
        waf::waf_column::<E, T>(&self.k, self.limiter, dtdx, len, s, floors);
    }
}

pub(crate) const AFTER_SWEEP: [&str; 3] = [
    "after the x sweep",
    "after the y sweep",
    "after the z sweep",
];

/// One step of a split scheme.
pub(crate) fn step<T: Real, K: SplitKernel<T>>(
    kernel: &K,
    batch: &mut Batch<T>,
    order: super::SweepOrder,
    ws: &mut Workspace<T>,
) -> Result<FloorCounts, SweepError> {
    let r = K::REACH as u32;
    let axes = order.axes();
    let tally = FloorTally::default();
    let (layout, data, flux) = batch.buffers_mut();
    let cap = layout.bin_edge() as usize;
    let scalars = layout.ncomp() as usize - NCOMP;
    let data = Shared::new(data);
    let flux = Shared::new(flux);
    for s in 0..3 {
        let axis = axes[s];
        let mut t_halo = [r; 3];
        for &done in &axes[..s] {
            t_halo[done] = 0;
        }
        let pass = Pass {
            axis,
            read_halo: r,
            t_halo,
        };
        build_groups(layout, &pass, &mut ws.groups);
        let errors = ErrorSlot::default();
        let (dtdx, dt, pool) = (&ws.dtdx, &ws.dt, &ws.scratch);
        // x columns are contiguous: they go straight to the scratch.
        let along_x = axis == 0;
        let max_lanes = if along_x { 1 } else { LANES };
        let sc_cap = if scalars > 0 { cap } else { 0 };
        ws.groups.par_iter().enumerate().for_each_init(
            || {
                pool.take((cap, sc_cap), || {
                    (
                        kernel.scratch(cap),
                        Block::new(cap),
                        ScalarScratch::new(sc_cap),
                    )
                })
            },
            |lease, (gi, g)| {
                let (scratch, block, sc) = &mut **lease;
                let mut floors = FloorCounts::default();
                let mut ta = g.ta_lo;
                while ta < g.ta_hi {
                    let lanes = max_lanes.min((g.ta_hi - ta) as usize);
                    let col0 = Column::new(layout, &pass, g, ta);
                    let (lo, hi) = (K::REACH, col0.len - K::REACH);
                    if !along_x {
                        block.load(&data, &col0, lanes);
                    }
                    for lane in 0..lanes {
                        let col = Column::new(layout, &pass, g, ta + lane as u32);
                        if !along_x {
                            block.to_column(lane, col.len, K::state(scratch));
                        } else {
                            col.load_x(&data, K::state(scratch));
                        }
                        kernel.run(dtdx[col.patch][axis], col.len, scratch, &mut floors);
                        let out = K::output(scratch);
                        let finite = if !along_x {
                            block.put_column(lane, lo, hi, out)
                        } else {
                            col.store_x(&data, lo, hi, out)
                        };
                        if !finite {
                            if let Some((i, err)) =
                                col.first_bad(layout, axis, out, lo, hi, AFTER_SWEEP[axis])
                            {
                                errors.offer((col.patch, gi, i), err);
                            }
                            return;
                        }
                        col.record(&flux, K::flux(scratch), T::from_f64(dt[col.patch]), false);
                        for k in 0..scalars {
                            col.load_scalar(&data, k, &mut sc.s);
                            scalar_column(
                                &K::input(scratch).0[0],
                                &K::flux(scratch).0[0],
                                dtdx[col.patch][axis],
                                true,
                                col.len,
                                lo..hi,
                                sc,
                            );
                            if let Err(bad) = col.store_scalar(&data, k, lo, hi, &sc.s, &sc.du) {
                                let err = col.bad_scalar(layout, axis, k, bad, AFTER_SWEEP[axis]);
                                errors.offer((col.patch, gi, bad.0), err);
                                return;
                            }
                            col.record_scalar(
                                &flux,
                                k,
                                &sc.flux,
                                T::from_f64(dt[col.patch]),
                                false,
                            );
                        }
                    }
                    if !along_x {
                        block.store(&data, &col0, lanes, lo, hi);
                    }
                    ta += lanes as u32;
                }
                tally.add(&floors);
            },
        );
        errors.into_result()?;
    }
    Ok(tally.get())
}
