//! # quilt-dist
//!
//! quilt across ranks. Every rank holds the whole patch hierarchy (boxes,
//! not data) and the same [`Distribution`] of its patches over the ranks;
//! a rank keeps the data of the patches it owns and exchanges with its
//! peers the cells their fills read.
//!
//! | module | holds |
//! |---|---|
//! | `transport` | [`Transport`] and its implementations: [`Solo`] (one process), [`ThreadRank`] (in-process ranks for tests), `MpiRanks` (feature `mpi`) |
//! | `morton` | Morton keys of patch centres |
//! | `distribution` | [`Distribution`]: Morton cut + knapsack refinement, inheritance across a regrid, [`Balancer`] |
//! | `halo` | [`HaloPlan`]: who sends which cells to whom; [`Shadows`] and [`WithShadows`], the fill's view on one rank |
//!
//! # Example
//! ```
//! use quilt_dist::{run_ranks, Transport};
//!
//! // Four in-process ranks agree on the smallest time step.
//! let dts = run_ranks(4, |mut t| {
//!     let mine = 1.0 + t.rank() as f64;
//!     t.all_min(mine).unwrap()
//! });
//! assert_eq!(dts, vec![1.0; 4]);
//! ```
#![warn(missing_docs)]

pub mod distribution;
pub mod error;
pub mod halo;
pub mod morton;
pub mod transport;

pub use distribution::{Balancer, Distribution, Rebalance, efficiency, inherited_costs};
pub use error::DistError;
pub use halo::{
    ExchangeCounts, HaloPlan, PatchesMut, Piece, Shadows, States, WithShadows, fill_message,
    piece_bytes, unpack,
};
pub use transport::{Solo, Tag, ThreadRank, Transport, run_ranks, thread_ranks};
