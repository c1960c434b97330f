//! Field data over a whole hierarchy, aligned with its patch indices.

use rayon::prelude::*;

use super::layout::Hierarchy;
use super::pool::BufferPool;
use crate::error::MeshError;
use crate::geometry::LevelGeometry;
use crate::index::IndexBox;
use crate::locked::PatchBuf;
use crate::patch_data::{PatchData, PatchState};
use crate::real::Real;

/// One [`PatchState`] (old and new time level) per patch of a
/// [`Hierarchy`]: entry `i` belongs to `hierarchy.patches()[i]`.
///
/// The data does not hold the layout; functions that need both take both,
/// and [`HierarchyData::check_layout`] tells whether they belong together.
#[derive(Debug, Clone, PartialEq)]
pub struct HierarchyData<T> {
    ncomp: usize,
    ghost: i32,
    states: Vec<PatchState<T>>,
}

impl<T: Real> HierarchyData<T> {
    /// Zero-filled data with `ncomp` components on every patch of `h`.
    ///
    /// Patches are allocated in parallel: the first touch of fresh pages
    /// (the kernel zeroing them) is most of the cost of a large hierarchy,
    /// and it scales with the cores that take the faults.
    pub fn new(h: &Hierarchy, ncomp: usize) -> Result<Self, MeshError> {
        let states = h
            .patches()
            .par_iter()
            .map(|p| PatchState::new(p.interior(), h.ghost(), ncomp))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            ncomp,
            ghost: h.ghost(),
            states,
        })
    }

    /// Data of the shapes [`HierarchyData::new`] gives, each time level in
    /// the memory of a buffer from `pool` where one is large enough, with
    /// **unspecified values** there (what the buffer held; see
    /// [`PatchData::reuse`]) and zeros in fresh memory: for a caller that
    /// sets every cell it reads, as an initial condition does.
    pub fn new_in(
        h: &Hierarchy,
        ncomp: usize,
        pool: &mut BufferPool<T>,
    ) -> Result<Self, MeshError> {
        let mut d = Self::with_old_in(h, ncomp, pool, None)?;
        d.renew_in(h, pool)?;
        Ok(d)
    }

    /// Old states from `pool` as [`HierarchyData::new_in`] (values
    /// unspecified where a buffer is reused), and
    /// one-cell placeholders for the new states: what a transfer fills
    /// before [`HierarchyData::renew_in`] gives the new states their
    /// memory (which the replaced hierarchy frees only then).
    /// With `only`, the patches it does not mark get fresh zeroed memory
    /// instead (a rank's copies of other ranks' patches, mostly never
    /// written).
    pub(crate) fn with_old_in(
        h: &Hierarchy,
        ncomp: usize,
        pool: &mut BufferPool<T>,
        only: Option<&[bool]>,
    ) -> Result<Self, MeshError> {
        let ghost = h.ghost();
        let bufs: Vec<PatchBuf<T>> = h
            .patches()
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if only.is_some_and(|o| !o[i]) {
                    return PatchBuf::default();
                }
                pool.take(PatchData::<T>::len_for(&p.interior(), ghost, ncomp).unwrap_or(0))
            })
            .collect();
        let states = h
            .patches()
            .par_iter()
            .zip(bufs)
            .map(|(p, buf)| {
                Ok(PatchState {
                    old: PatchData::reuse(p.interior(), ghost, ncomp, buf)?,
                    new: placeholder(p.interior(), ncomp)?,
                })
            })
            .collect::<Result<_, MeshError>>()?;
        Ok(Self {
            ncomp,
            ghost,
            states,
        })
    }

    /// Gives every patch whose new state does not have its shape one of
    /// that shape, from `pool` where a buffer is large enough: its values
    /// are unspecified there ([`PatchData::reuse`]), since a step writes
    /// every interior cell of a new state before anything reads it and no
    /// one reads its ghost cells.
    pub fn renew_in(&mut self, h: &Hierarchy, pool: &mut BufferPool<T>) -> Result<(), MeshError> {
        self.renew_in_where(h, pool, None)
    }

    /// [`HierarchyData::renew_in`] taking pool memory only for the patches
    /// `only` marks (all without it); the others get fresh zeroed memory.
    pub fn renew_in_where(
        &mut self,
        h: &Hierarchy,
        pool: &mut BufferPool<T>,
        only: Option<&[bool]>,
    ) -> Result<(), MeshError> {
        self.check_layout(h)?;
        h.check_mask(only, "new states' mask")?;
        let (ghost, ncomp) = (self.ghost, self.ncomp);
        let bufs: Vec<Option<PatchBuf<T>>> = self
            .states
            .iter()
            .zip(h.patches())
            .enumerate()
            .map(|(i, (s, p))| {
                let fits = s.new.interior() == p.interior() && s.new.ghost() == ghost;
                (!fits).then(|| {
                    if only.is_some_and(|o| !o[i]) {
                        return PatchBuf::default();
                    }
                    pool.take(PatchData::<T>::len_for(&p.interior(), ghost, ncomp).unwrap_or(0))
                })
            })
            .collect();
        self.states
            .par_iter_mut()
            .zip(h.patches().par_iter())
            .zip(bufs)
            .try_for_each(|((s, p), buf)| -> Result<(), MeshError> {
                if let Some(buf) = buf {
                    s.new = PatchData::reuse(p.interior(), ghost, ncomp, buf)?;
                }
                Ok(())
            })
    }

    /// Replaces patch `i`'s new state by a one-cell placeholder and
    /// returns the memory of its values (for a [`BufferPool`]).
    pub(crate) fn release_new(&mut self, i: usize) -> Result<PatchBuf<T>, MeshError> {
        let s = &mut self.states[i];
        let dead = std::mem::replace(&mut s.new, placeholder(s.old.interior(), self.ncomp)?);
        Ok(dead.into_buffer())
    }

    /// The patch states, in patch order.
    pub fn into_states(self) -> Vec<PatchState<T>> {
        self.states
    }

    /// Number of components.
    #[inline]
    pub fn ncomp(&self) -> usize {
        self.ncomp
    }

    /// Ghost width of every patch.
    #[inline]
    pub fn ghost(&self) -> i32 {
        self.ghost
    }

    /// Number of patches.
    #[inline]
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether there is no patch.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Both time levels of patch `i`, if it exists.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&PatchState<T>> {
        self.states.get(i)
    }

    /// Both time levels of patch `i`, mutably, if it exists.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut PatchState<T>> {
        self.states.get_mut(i)
    }

    /// Every patch's states, by patch index.
    #[inline]
    pub fn states(&self) -> &[PatchState<T>] {
        &self.states
    }

    /// Every patch's states, mutably (e.g. for `par_iter_mut`).
    #[inline]
    pub fn states_mut(&mut self) -> &mut [PatchState<T>] {
        &mut self.states
    }

    /// Time-`n` data of patch `i`.
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline]
    pub fn old(&self, i: usize) -> &PatchData<T> {
        &self.states[i].old
    }

    /// Time-`n+1` data of patch `i`, mutably.
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline]
    pub fn new_mut(&mut self, i: usize) -> &mut PatchData<T> {
        &mut self.states[i].new
    }

    /// Every old state shared, every new state exclusive: lets patches be
    /// prepared in parallel, each writing its own `new` while reading any
    /// neighbour's `old`.
    pub fn split_old_new(&mut self) -> (Vec<&PatchData<T>>, Vec<&mut PatchData<T>>) {
        self.states.iter_mut().map(|s| (&s.old, &mut s.new)).unzip()
    }

    /// Ends a step on every patch: `new` becomes `old`.
    pub fn swap_all(&mut self) {
        for s in &mut self.states {
            s.swap();
        }
    }

    /// Sets both time levels of every patch, ghost cells included, from a
    /// function of the level geometry and the cell: `f(level, p, values)`
    /// writes the `ncomp` values of cell `p`. Runs in parallel over patches.
    pub fn init_with<F>(&mut self, h: &Hierarchy, f: F) -> Result<(), MeshError>
    where
        F: Fn(&LevelGeometry, &crate::index::IntVect, &mut [T]) + Sync,
    {
        self.init_old_with(h, f)?;
        self.copy_old_to_new();
        Ok(())
    }

    /// As [`Self::init_with`], for the old time level only (the new one is
    /// left as it is): for callers that change the old state further (e.g.
    /// restrict it) before [`Self::copy_old_to_new`].
    pub fn init_old_with<F>(&mut self, h: &Hierarchy, f: F) -> Result<(), MeshError>
    where
        F: Fn(&LevelGeometry, &crate::index::IntVect, &mut [T]) + Sync,
    {
        self.init_old_patches_with(h, |lg, d| d.fill_cells_with(|c, v| f(lg, c, v)))
    }

    /// Sets the old time level patch by patch: `f(level, data)` writes the
    /// whole data box of one patch (ghost cells included). Runs in parallel
    /// over patches.
    pub fn init_old_patches_with<F>(&mut self, h: &Hierarchy, f: F) -> Result<(), MeshError>
    where
        F: Fn(&LevelGeometry, &mut PatchData<T>) + Sync,
    {
        self.check_layout(h)?;
        self.states
            .par_iter_mut()
            .zip(h.patches().par_iter())
            .for_each(|(s, p)| {
                // Levels of a validated hierarchy always exist.
                if let Some(lg) = h.level_geometry(p.level()) {
                    f(lg, &mut s.old);
                }
            });
        Ok(())
    }

    /// Makes every patch's new state a copy of its old one, in parallel
    /// over patches (a new state of another shape is reallocated).
    pub fn copy_old_to_new(&mut self) {
        self.states
            .par_iter_mut()
            .for_each(|s| s.new.clone_from(&s.old));
    }

    /// Sum of component `c` of the old state over the interiors of one
    /// level's patches, weighted by cell volume (so levels compare).
    pub fn level_integral(&self, h: &Hierarchy, level: usize, c: usize) -> Result<f64, MeshError> {
        self.check_layout(h)?;
        if c >= self.ncomp {
            return Err(MeshError::BadAccess {
                field: format!("component {c}"),
                why: format!("the data has {} components", self.ncomp),
            });
        }
        let lg = h.level_geometry(level).ok_or(MeshError::NoSuchLevel {
            level,
            num_levels: h.num_levels(),
        })?;
        let sum: f64 = h
            .level_range(level)
            .map(|i| self.states[i].old.interior_sum(c))
            .sum();
        Ok(sum * lg.cell_volume())
    }

    /// Checks that this data was built for `h`: same patch count, interiors,
    /// ghost width.
    pub fn check_layout(&self, h: &Hierarchy) -> Result<(), MeshError> {
        if self.states.len() != h.num_patches() {
            return Err(MeshError::LayoutMismatch {
                why: format!(
                    "{} patches of data, {} in the hierarchy",
                    self.states.len(),
                    h.num_patches()
                ),
            });
        }
        if self.ghost != h.ghost() {
            return Err(MeshError::LayoutMismatch {
                why: format!(
                    "ghost width {} in the data, {} in the hierarchy",
                    self.ghost,
                    h.ghost()
                ),
            });
        }
        for (i, (s, p)) in self.states.iter().zip(h.patches()).enumerate() {
            if s.interior() != p.interior() {
                return Err(MeshError::LayoutMismatch {
                    why: format!(
                        "patch index {i} (id {}): data interior {}, hierarchy interior {}",
                        p.id(),
                        s.interior(),
                        p.interior()
                    ),
                });
            }
        }
        Ok(())
    }
}

/// A one-cell state standing in for one not allocated yet.
fn placeholder<T: Real>(interior: IndexBox, ncomp: usize) -> Result<PatchData<T>, MeshError> {
    PatchData::new(IndexBox::new(interior.lo, interior.lo), 0, ncomp)
}
