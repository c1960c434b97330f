//! Index space: integer vectors, cell-centred boxes, box lists.
//!
//! Nothing here knows about field data; patch data and the hierarchy build
//! on these types.

mod box_list;
mod index_box;
mod int_vect;

pub use box_list::{BoxList, box_difference};
pub use index_box::{BoxIter, IndexBox, Side};
pub use int_vect::{IntVect, argmax_axis, coarsen_index, coarsen_vect, iv};
