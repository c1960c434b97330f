//! # quilt-mesh
//!
//! Everything about quilt's patch hierarchy: the index space, patch data,
//! the hierarchy of non-uniform patches, ghost fill, restriction, flux
//! registers, tagging, Berger–Rigoutsos clustering, regrid and, with the
//! `synthetic` feature (tests, benchmarks, the evaluation's examples), the
//! synthetic hierarchies of Raghavan & Vadhiyar (2015, section 4.1).
#![warn(missing_docs)]

pub mod atomic_file;
pub mod bins;
pub mod cluster;
pub mod error;
pub mod fill;
pub mod flat;
pub mod flux_register;
pub mod geometry;
pub mod hierarchy;
pub mod hierarchy_file;
pub mod index;
pub mod interp;
pub mod locked;
pub mod memory;
pub mod patch_data;
pub mod prefetch;
pub mod real;
pub mod regrid;
pub mod restrict;
#[cfg(any(test, feature = "synthetic"))]
pub mod synthetic;
pub mod tag;

pub use bins::BinGeometry;
pub use error::MeshError;
pub use fill::{BoundaryConditions, FillTarget, GhostFill, PhysicalBc};
pub use flux_register::FluxRegister;
pub use geometry::{Geometry, LevelGeometry, RealVect};
pub use hierarchy::{
    BufferPool, Hierarchy, HierarchyData, Overlap, Patch, PatchId, PatchSpec, SizeLimits,
};
pub use hierarchy_file::{read_hierarchy, read_hierarchy_with, write_hierarchy};
pub use index::{IndexBox, IntVect, Side, iv};
pub use interp::Limiter;
pub use patch_data::{PatchData, PatchState};
pub use real::Real;
pub use restrict::{TimeLevel, restrict_hierarchy};
#[cfg(any(test, feature = "synthetic"))]
pub use synthetic::{SyntheticSpec, generate};
