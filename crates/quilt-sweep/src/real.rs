//! The floating-point abstraction shared by every scheme: quilt-mesh's
//! [`Real`], re-exported so that the schemes and their users name one
//! trait (constants enter through [`Real::from_f64`]).

pub use quilt_mesh::Real;
