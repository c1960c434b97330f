//! THE batch layout of quilt: bins, patch descriptors, cell and flux-buffer
//! indexing. No other crate defines a second layout; see
//! `docs/quilt-sweep.md` for the figure.
//!
//! * A batch is `nbins` cubic bins of edge `B` ([`BatchLayout::bin_edge`]).
//!   Bin `b` holds `ncomp` blocks of `B^3` values, one component after the
//!   other, x fastest: component `c` of bin cell `(x, y, z)` lives at
//!   `((b * ncomp + c) * B + z) * B * B + y * B + x` ([`data_index`]).
//! * Each patch, ghosts included, occupies the box
//!   `offset .. offset + extent` of one bin ([`PatchDesc`]). Cells of a bin
//!   not covered by a patch are never read or written by a sweep.
//! * The flux buffer holds, per patch, the time-integrated fluxes through the
//!   six faces of its interior box ([`flux_index`]).

mod batch_layout;
mod desc;
mod flux;

pub use batch_layout::{BatchLayout, DEFAULT_BIN_EDGE, LARGE_LAYOUT, data_index};
pub use desc::{PatchDesc, PatchShape};
pub(crate) use flux::transverse_axes;
pub use flux::{face_offset, flux_index, flux_len};
