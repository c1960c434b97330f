//! [`LayoutStager`]: device states of batch layouts built ahead of their
//! solves, on the threads that prepare the batches.
//!
//! An integrator's adaptive batches are each a new layout, and building a
//! layout's state (host plan, tables, some thirty small device and
//! page-locked allocations, uploads, events) costs a third of a batch's
//! solve. Built by the stager while the solver runs earlier batches, it
//! leaves the solver only the large arrays, taken from its spares, and the
//! constant descriptors to bind. The states the solver is done with come
//! back here as shells whose small buffers and events the next layouts
//! refit, so that a run allocates them only in its first batches.

use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, CudaFunction, CudaStream};
use quilt_sweep::{BatchLayout, Scheme};

use super::state::{LayoutState, Shell};
use crate::error::{CudaError, DriverContext};
use crate::plan::{Chunking, TableKind};
use crate::real::GpuReal;

/// Shells kept: the batches alive in a pipelined loop, and a few more.
const MAX_SHELLS: usize = 8;

/// Builds device states of layouts for a [`super::CudaSolver`] on any
/// thread (see [`super::CudaSolver::stager`]).
pub struct LayoutStager<T: GpuReal> {
    ctx: Arc<CudaContext>,
    /// The uploads' own stream: the solver's streams stay its own.
    stream: Arc<CudaStream>,
    scheme: Scheme,
    chunking: Chunking,
    kinds: [TableKind; 3],
    const_descs: bool,
    /// The solver's `layout_table`, for large layouts.
    table: CudaFunction,
    /// Shells of states the solver gave up, for the next layouts.
    shells: Mutex<Vec<Shell<T>>>,
}

/// The device state of one batch layout, built by a [`LayoutStager`] for
/// [`super::CudaSolver::advance_staged`].
pub struct StagedLayout<T: GpuReal>(pub(super) LayoutState<T>);

impl<T: GpuReal> LayoutStager<T> {
    pub(super) fn new(
        ctx: Arc<CudaContext>,
        scheme: Scheme,
        chunking: Chunking,
        kinds: [TableKind; 3],
        const_descs: bool,
        table: CudaFunction,
    ) -> Result<Self, CudaError> {
        let stream = ctx.new_stream().call("cuStreamCreate")?;
        Ok(Self {
            ctx,
            stream,
            scheme,
            chunking,
            kinds,
            const_descs,
            table,
            shells: Mutex::new(Vec::new()),
        })
    }

    /// The device state of `layout`, but for the large arrays the solver
    /// adds from its spares. Safe to call from several threads at once and
    /// while the solver runs.
    pub fn stage(&self, layout: &BatchLayout) -> Result<StagedLayout<T>, CudaError> {
        let shell = self
            .shells
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        LayoutState::tables(
            &self.ctx,
            &self.stream,
            layout,
            &self.scheme,
            self.chunking,
            self.kinds,
            self.const_descs,
            Some(&self.table),
            shell,
        )
        .map(StagedLayout)
    }

    /// Takes a state the solver no longer needs (its large arrays already
    /// recycled) as a shell for a later [`LayoutStager::stage`]; beyond
    /// [`MAX_SHELLS`] it is dropped.
    pub(super) fn retire(&self, st: LayoutState<T>) {
        let mut shells = self.shells.lock().unwrap_or_else(PoisonError::into_inner);
        if shells.len() < MAX_SHELLS {
            shells.push(Shell::from(st));
        }
    }
}
