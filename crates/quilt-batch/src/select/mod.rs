//! Batch selection: which bins the CPU prepares next, and on which thread.
//!
//! - [`select_adaptive`] / [`Selector::adaptive`]: the paper's knapsack with
//!   `P` queues (section 3.2);
//! - [`select_first`] / [`Selector::first`]: the first batch, with nothing on
//!   the GPU to hide behind;
//! - [`select_static`] / [`Selector::fixed`]: the paper's default scheme, a
//!   fixed number of patches per batch (section 4.1).

mod adaptive;
mod fixed;
mod packing;
mod queues;
mod search;
mod selection;

pub use adaptive::{AdaptiveOptions, FirstBatch, select_adaptive, select_first};
pub use fixed::select_static;
pub use queues::Selector;
pub use selection::{PatchRef, Selection};
