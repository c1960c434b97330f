//! Physical boundary conditions: outflow, reflecting, periodic, and
//! user-defined ones.
//!
//! Physical ghost cells (outside the domain along a non-periodic axis) are
//! set last, axis after axis, each slab reading cells that are already
//! valid: the slab of axis `d` spans the whole ghost box along the axes
//! before `d` (their physical cells are set by then) and only the inside of
//! the domain along the axes after `d`. So an edge or corner ghost outside
//! the domain along `x` and `y` is set by the `y` pass from the cells the
//! `x` pass set, and every corner gets the value a product of the two
//! one-dimensional conditions gives (the mirror image in both axes for
//! reflecting walls).

use std::fmt;
use std::sync::Arc;

use super::target::FillTarget;
use crate::error::MeshError;
use crate::geometry::{Geometry, LevelGeometry};
use crate::hierarchy::PatchId;
use crate::index::{IndexBox, Side, iv};
use crate::real::Real;

/// The ghost cells of one patch beyond one domain face, handed to a
/// [`UserBoundary`].
#[derive(Debug, Clone, Copy)]
pub struct BoundaryFace<'a> {
    /// Axis normal to the domain face.
    pub axis: usize,
    /// Which face of the domain along `axis`.
    pub side: Side,
    /// The ghost cells to set (outside the domain along `axis`), in the
    /// level's index space.
    pub region: IndexBox,
    /// The patch's level: domain box, cell size, cell centres.
    pub level: &'a LevelGeometry,
    /// The patch being filled.
    pub patch: PatchId,
    /// Time of the data being prepared (time `n` of the step).
    pub time: f64,
}

/// A boundary condition written by the user (inflow, a prescribed state,
/// a moving wall...).
///
/// `fill` must set every component of every cell of `face.region` in
/// `target`. It may read any cell of the target that is inside the domain
/// along `face.axis`: the interior and every sibling-copied, interpolated
/// or (for earlier axes) physical ghost cell is set by then.
pub trait UserBoundary<T: Real>: Send + Sync + fmt::Debug {
    /// Sets the ghost cells `face.region` of `target`.
    fn fill(&self, face: &BoundaryFace<'_>, target: &mut FillTarget<'_, T>);
}

/// The condition on one face of the domain.
#[derive(Debug, Clone)]
pub enum PhysicalBc<T> {
    /// Zero gradient: each ghost cell copies the nearest cell inside the
    /// domain along the face normal.
    Outflow,
    /// A wall: ghost cells mirror the cells inside across the face, with the
    /// normal component of every vector (see
    /// [`BoundaryConditions::with_vector`]) negated.
    Reflecting,
    /// The axis is periodic in the geometry: ghost cells are copied from the
    /// periodic image through the sibling copy tags, so this condition is
    /// never applied; it must be given exactly on the periodic axes.
    Periodic,
    /// A user condition.
    User(Arc<dyn UserBoundary<T>>),
}

impl<T> PhysicalBc<T> {
    fn name(&self) -> &'static str {
        match self {
            PhysicalBc::Outflow => "outflow",
            PhysicalBc::Reflecting => "reflecting",
            PhysicalBc::Periodic => "periodic",
            PhysicalBc::User(_) => "user",
        }
    }
}

/// Conditions on the six domain faces plus the components that form
/// vectors (negated by reflecting walls).
#[derive(Debug, Clone)]
pub struct BoundaryConditions<T> {
    faces: [[PhysicalBc<T>; 2]; 3],
    vectors: Vec<[usize; 3]>,
}

impl<T: Real> BoundaryConditions<T> {
    /// The same condition on all six faces, no vector components.
    pub fn uniform(bc: PhysicalBc<T>) -> Self {
        Self {
            faces: std::array::from_fn(|_| [bc.clone(), bc.clone()]),
            vectors: Vec::new(),
        }
    }

    /// Outflow on every face.
    pub fn outflow() -> Self {
        Self::uniform(PhysicalBc::Outflow)
    }

    /// `bc` on every face of a non-periodic axis of `geometry`, periodic on
    /// the others.
    pub fn for_geometry(geometry: &Geometry, bc: PhysicalBc<T>) -> Self {
        let mut s = Self::uniform(bc);
        for (d, &p) in geometry.periodic().iter().enumerate() {
            if p {
                s.faces[d] = [PhysicalBc::Periodic, PhysicalBc::Periodic];
            }
        }
        s
    }

    /// Replaces the condition on one face (errors if `axis > 2`).
    pub fn with_face(
        mut self,
        axis: usize,
        side: Side,
        bc: PhysicalBc<T>,
    ) -> Result<Self, MeshError> {
        if axis > 2 {
            return Err(MeshError::invalid(
                "boundary face",
                format!("axis {axis} does not exist (0, 1 or 2)"),
            ));
        }
        self.faces[axis][side.index()] = bc;
        Ok(self)
    }

    /// Declares components `[cx, cy, cz]` the `x`, `y`, `z` parts of a
    /// vector (momentum for Euler: `[1, 2, 3]`); a reflecting face normal
    /// to axis `d` negates component `cd`.
    pub fn with_vector(mut self, components: [usize; 3]) -> Self {
        self.vectors.push(components);
        self
    }

    /// The condition on one face.
    ///
    /// # Panics
    /// If `axis > 2`.
    pub fn face(&self, axis: usize, side: Side) -> &PhysicalBc<T> {
        &self.faces[axis][side.index()]
    }

    /// The vectors declared with [`BoundaryConditions::with_vector`].
    pub fn vectors(&self) -> &[[usize; 3]] {
        &self.vectors
    }

    /// Checks the conditions against a geometry: [`PhysicalBc::Periodic`]
    /// on both faces of exactly the periodic axes; vector components
    /// distinct, and each in at most one vector.
    pub fn check(&self, geometry: &Geometry) -> Result<(), MeshError> {
        for (d, &periodic) in geometry.periodic().iter().enumerate() {
            for side in Side::BOTH {
                let bc = self.face(d, side);
                let is_periodic = matches!(bc, PhysicalBc::Periodic);
                if periodic != is_periodic {
                    return Err(MeshError::invalid(
                        format!("boundary condition on axis {d}, {side:?} face"),
                        if periodic {
                            format!(
                                "the axis is periodic in the geometry but the condition is {}",
                                bc.name()
                            )
                        } else {
                            "the condition is periodic but the axis is not periodic in the geometry"
                                .to_string()
                        },
                    ));
                }
            }
        }
        let mut seen: Vec<usize> = Vec::new();
        for v in &self.vectors {
            for &c in v {
                if seen.contains(&c) {
                    return Err(MeshError::invalid(
                        format!("boundary vector components {v:?}"),
                        format!("component {c} appears twice"),
                    ));
                }
                seen.push(c);
            }
        }
        Ok(())
    }

    /// Checks that every vector component exists among `ncomp`.
    pub(crate) fn check_ncomp(&self, ncomp: usize) -> Result<(), MeshError> {
        for v in &self.vectors {
            if let Some(&c) = v.iter().find(|&&c| c >= ncomp) {
                return Err(MeshError::invalid(
                    format!("boundary vector components {v:?}"),
                    format!("component {c} does not exist in data with {ncomp} components"),
                ));
            }
        }
        Ok(())
    }
}

/// One slab of physical ghost cells, from the layout: cells `region`
/// beyond face `(axis, side)` whose inside neighbour along the normal is
/// the domain's edge cell `edge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PhysicalSlab {
    pub axis: usize,
    pub side: Side,
    pub region: IndexBox,
    pub edge: i32,
}

impl PhysicalSlab {
    /// Mirror of cell coordinate `x` (along the normal) across the face.
    #[inline]
    fn mirror(&self, x: i32) -> i32 {
        match self.side {
            Side::Lo => 2 * self.edge - 1 - x,
            Side::Hi => 2 * self.edge + 1 - x,
        }
    }
}

/// Sets the cells of one slab.
pub(crate) fn apply<T: Real>(
    bcs: &BoundaryConditions<T>,
    slab: &PhysicalSlab,
    level: &LevelGeometry,
    patch: PatchId,
    time: f64,
    t: &mut FillTarget<'_, T>,
) {
    let r = slab.region;
    let d = slab.axis;
    let nx = r.size().x as usize;
    match bcs.face(d, slab.side) {
        // No slab exists on a periodic axis (the plan checks the geometry).
        PhysicalBc::Periodic => debug_assert!(false, "physical slab on a periodic axis"),
        PhysicalBc::Outflow => {
            for c in 0..t.ncomp() {
                for k in r.lo.z..=r.hi.z {
                    for j in r.lo.y..=r.hi.y {
                        if d == 0 {
                            let v = t.row(c, slab.edge, j, k, 1)[0];
                            t.row_mut(c, r.lo.x, j, k, nx).fill(v);
                        } else {
                            let mut src = iv(r.lo.x, j, k);
                            src[d] = slab.edge;
                            t.copy_row_within(c, src, iv(r.lo.x, j, k), nx);
                        }
                    }
                }
            }
        }
        PhysicalBc::Reflecting => {
            for c in 0..t.ncomp() {
                let negate = bcs.vectors().iter().any(|v| v[d] == c);
                for k in r.lo.z..=r.hi.z {
                    for j in r.lo.y..=r.hi.y {
                        if d == 0 {
                            for i in r.lo.x..=r.hi.x {
                                let v = t.row(c, slab.mirror(i), j, k, 1)[0];
                                t.row_mut(c, i, j, k, 1)[0] = if negate { -v } else { v };
                            }
                        } else {
                            let mut src = iv(r.lo.x, j, k);
                            src[d] = slab.mirror(src[d]);
                            t.copy_row_within(c, src, iv(r.lo.x, j, k), nx);
                            if negate {
                                for v in t.row_mut(c, r.lo.x, j, k, nx) {
                                    *v = -*v;
                                }
                            }
                        }
                    }
                }
            }
        }
        PhysicalBc::User(u) => u.fill(
            &BoundaryFace {
                axis: d,
                side: slab.side,
                region: r,
                level,
                patch,
                time,
            },
            t,
        ),
    }
}
