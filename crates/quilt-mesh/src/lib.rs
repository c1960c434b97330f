//! # quilt-mesh
//!
//! Everything about quilt's patch hierarchy: the index space, patch data,
//! the hierarchy of non-uniform patches, ghost fill, restriction, flux
//! registers, tagging, Berger–Rigoutsos clustering, regrid and the synthetic
//! hierarchies of Raghavan & Vadhiyar (2015, section 4.1).
#![warn(missing_docs)]

pub mod index;
pub mod tag;

pub use index::{IndexBox, IntVect, Side, iv};
