//! The TVD scheme: two RK stages, each summing the flux differences of three
//! passes taken from the same stage state.

use std::marker::PhantomData;

use rayon::prelude::*;

use super::Workspace;
use super::block::{Block, LANES};
use super::column::{Column, ErrorSlot, FloorTally, non_finite};
use super::plan::{Pass, build_groups};
use super::shared::Shared;
use crate::batch::Batch;
use crate::error::SweepError;
use crate::physics::{Eos, FloorCounts, GasConsts};
use crate::physics::{NCOMP, NOT_FINITE};
use crate::real::Real;
use crate::scheme::scalar::{ScalarScratch, scalar_column};
use crate::scheme::tvd::{self, TvdScratch};
use crate::scheme::{SlopeLimiter, TvdFlux};

pub(crate) struct Tvd<T, E> {
    pub k: GasConsts<T>,
    pub slope: SlopeLimiter,
    pub flux: TvdFlux,
    pub eos: PhantomData<E>,
}

const AFTER_STAGE: [&str; 2] = ["after TVD stage 1", "after TVD stage 2"];

/// One SSP-RK2 step.
pub(crate) fn step<T: Real, E: Eos>(
    scheme: &Tvd<T, E>,
    batch: &mut Batch<T>,
    order: super::SweepOrder,
    ws: &mut Workspace<T>,
) -> Result<FloorCounts, SweepError> {
    let r = tvd::REACH as u32;
    let axes = order.axes();
    let tally = FloorTally::default();
    let (layout, data, flux) = batch.buffers_mut();
    let n = layout.data_len();
    ws.stage.resize(n, T::zero());
    ws.acc.resize(n, T::zero());
    let cap = layout.bin_edge() as usize;
    let scalars = layout.ncomp() as usize - NCOMP;
    let data = Shared::new(data);
    let flux = Shared::new(flux);
    let stage_buf = Shared::new(&mut ws.stage);
    let acc = Shared::new(&mut ws.acc);
    for (stage, after_stage) in AFTER_STAGE.iter().enumerate() {
        // Stage 1 reads U^n and produces U* on the interior plus r ghost
        // layers; stage 2 reads U* and produces U^{n+1} on the interior.
        let (read_halo, t_halo, src) = if stage == 0 {
            (2 * r, r, data)
        } else {
            (r, 0, stage_buf)
        };
        for (s, &axis) in axes.iter().enumerate() {
            let pass = Pass {
                axis,
                read_halo,
                t_halo: [t_halo; 3],
            };
            build_groups(layout, &pass, &mut ws.groups);
            let errors = ErrorSlot::default();
            let (dtdx, dt, pool) = (&ws.dtdx, &ws.dt, &ws.scratch);
            let max_lanes = if axis == 0 { 1 } else { LANES };
            let sc_cap = if scalars > 0 { cap } else { 0 };
            ws.groups.par_iter().enumerate().for_each_init(
                || {
                    pool.take((cap, sc_cap), || {
                        (
                            TvdScratch::new(cap),
                            Block::new(cap),
                            ScalarScratch::new(sc_cap),
                        )
                    })
                },
                |lease, (gi, g)| {
                    let (scr, block, sc) = &mut **lease;
                    let mut floors = FloorCounts::default();
                    let mut ta = g.ta_lo;
                    while ta < g.ta_hi {
                        let lanes = max_lanes.min((g.ta_hi - ta) as usize);
                        let col0 = Column::new(layout, &pass, g, ta);
                        let (lo, hi) = (tvd::REACH, col0.len - tvd::REACH);
                        block.load(&src, &col0, lanes);
                        for lane in 0..lanes {
                            let col = Column::new(layout, &pass, g, ta + lane as u32);
                            block.to_column(lane, col.len, &mut scr.u);
                            tvd::tvd_column::<E, T>(
                                &scheme.k,
                                scheme.slope,
                                scheme.flux,
                                dtdx[col.patch][axis],
                                col.len,
                                scr,
                            );
                            block.put_column(lane, lo, hi, &scr.du);
                            col.record(
                                &flux,
                                &scr.flux,
                                T::from_f64(0.5 * dt[col.patch]),
                                stage == 1,
                            );
                            for k in 0..scalars {
                                col.load_scalar(&src, k, &mut sc.s);
                                scalar_column(
                                    &scr.u.0[0],
                                    &scr.flux.0[0],
                                    dtdx[col.patch][axis],
                                    false,
                                    col.len,
                                    lo..hi,
                                    sc,
                                );
                                col.record_scalar(
                                    &flux,
                                    k,
                                    &sc.flux,
                                    T::from_f64(0.5 * dt[col.patch]),
                                    stage == 1,
                                );
                                if s < 2 {
                                    col.accumulate_scalar(&acc, k, lo, hi, &sc.du, s == 1);
                                    continue;
                                }
                                let done = col.combine_scalar(
                                    stage == 1,
                                    &data,
                                    &stage_buf,
                                    &acc,
                                    k,
                                    lo,
                                    hi,
                                    &sc.du,
                                );
                                if let Err(bad) = done {
                                    let err = col.bad_scalar(layout, axis, k, bad, after_stage);
                                    errors.offer((col.patch, gi, bad.0), err);
                                    return;
                                }
                            }
                        }
                        // Combine the differences of the lanes with the
                        // batch-sized arrays (x-contiguous runs of lanes).
                        if s < 2 {
                            for v in 0..5 {
                                for i in lo..hi {
                                    let (row, at) = (&block.row(v, i)[..lanes], col0.at(v, i));
                                    for (l, &du) in row.iter().enumerate() {
                                        // SAFETY: cell i of lane l's column is
                                        // accessed by that column only (see
                                        // `Shared`).
                                        unsafe {
                                            let x = if s == 0 { du } else { acc.get(at + l) + du };
                                            acc.set(at + l, x);
                                        }
                                    }
                                }
                            }
                            ta += lanes as u32;
                            continue;
                        }
                        for i in lo..hi {
                            for lane in 0..lanes {
                                let du = block.cell(lane, i);
                                let idx: [usize; 5] = std::array::from_fn(|v| col0.at(v, i) + lane);
                                // SAFETY (all accesses below): cell i of this
                                // lane's column is read and written by that
                                // column only during the pass (see `Shared`).
                                let load = |b: &Shared<'_, T>| idx.map(|j| unsafe { b.get(j) });
                                let (w, dst) = if stage == 0 {
                                    (
                                        tvd::stage_one::<E, T>(
                                            &scheme.k,
                                            &load(&data),
                                            &load(&acc),
                                            &du,
                                            &mut floors,
                                        ),
                                        &stage_buf,
                                    )
                                } else {
                                    (
                                        tvd::stage_two::<E, T>(
                                            &scheme.k,
                                            &load(&data),
                                            &load(&stage_buf),
                                            &load(&acc),
                                            &du,
                                            &mut floors,
                                        ),
                                        &data,
                                    )
                                };
                                if let Some((c, value)) = non_finite(&w, &col0.comps) {
                                    let col = Column::new(layout, &pass, g, ta + lane as u32);
                                    let err = SweepError::BadState {
                                        patch: layout.patches()[col.patch].id,
                                        cell: col.rel(layout, axis, i),
                                        what: NOT_FINITE[c],
                                        value,
                                        stage: after_stage,
                                    };
                                    errors.offer((col.patch, gi, i), err);
                                    return;
                                }
                                idx.iter()
                                    .zip(w)
                                    .for_each(|(&j, x)| unsafe { dst.set(j, x) });
                            }
                        }
                        ta += lanes as u32;
                    }
                    tally.add(&floors);
                },
            );
            errors.into_result()?;
        }
    }
    Ok(tally.get())
}
