//! `#[repr(C)]` twins of the structures the kernels read (see
//! `kernels/common.cuh`); field order and types must match the C side.

use bytemuck::{Pod, Zeroable};
use cudarc::driver::DeviceRepr;

use crate::real::GpuReal;

/// `ColItem`: one column (or the first column of a 32-column segment).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct ColItem {
    pub patch: u32,
    pub ta: u16,
    pub tb: u16,
}

/// `ScanItem`: [`SCAN_CELLS`](crate::plan::SCAN_CELLS) consecutive cells
/// of one patch for one block of the input scan.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct ScanItem {
    /// Patch position.
    pub q: u32,
    /// First cell, counted x fastest over the patch with its ghosts.
    pub first: u32,
}

/// `TableArgs`: one pass table of a large layout for the `layout_table`
/// kernel, which writes the items of [`crate::plan::HostPlan::table`] from
/// the table's `pstart`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct TableArgs {
    /// `const PatchDesc*`.
    pub descs: u64,
    /// `const u32*`: patch index of each position.
    pub order: u64,
    /// `const u32*`: first item of each position, `n + 1` entries.
    pub pstart: u64,
    /// `ColItem*`: the table, `total` items.
    pub items: u64,
    pub n: u32,
    pub total: u32,
    /// 0 columns, 1 rows, 2 flat segments.
    pub kind: u32,
    pub axis: u32,
    pub read_halo: u32,
    pub t_halo: [u32; 3],
}

// SAFETY: plain old data laid out as the kernels' `TableArgs`.
unsafe impl DeviceRepr for TableArgs {}

const _: () = assert!(std::mem::size_of::<TableArgs>() == 64);

/// `PassInfo`: one pass of a step.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct PassInfo {
    pub items: u64,
    pub pstart: u64,
    pub axis: i32,
    pub read_halo: i32,
    pub t_halo: [i32; 3],
    pub slot: i32,
    pub stage: i32,
    pub sub: i32,
    pub march: i32,
    pub rows: i32,
}

const _: () = assert!(std::mem::size_of::<PassInfo>() == 56);
const _: () = assert!(std::mem::size_of::<ColItem>() == 8);
const _: () = assert!(std::mem::size_of::<ScanItem>() == 8);

/// `GasK<T>`: [`quilt_sweep::physics::GasConsts`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct GasK<T> {
    pub eos: [T; 4],
    pub rho_floor: T,
    pub p_floor: T,
}

/// `EosArgs`: the equation of state's parameters in `f64` and its minimum
/// pressure, passed by value to the scans.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct EosArgs {
    pub k: [f64; 4],
    pub p_min: f64,
}

// SAFETY: `#[repr(C)]` plain data matching `EosArgs` in the kernels.
unsafe impl DeviceRepr for EosArgs {}

impl EosArgs {
    /// The arguments of `eos`.
    pub fn of<E: quilt_sweep::physics::Eos>(eos: &E) -> Self {
        Self {
            k: eos.params(),
            p_min: eos.min_pressure(),
        }
    }
}

/// `StepArgs<T>`, passed by value to every sweep kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct StepArgs<T> {
    pub data: u64,
    pub flux: u64,
    pub stage: u64,
    pub acc: u64,
    pub descs: u64,
    pub step: u64,
    pub counters: u64,
    pub errors: u64,
    pub barrier: u64,
    pub queue: u64,
    pub passes: u64,
    pub q0: u32,
    pub q1: u32,
    pub use_const: i32,
    pub bin_edge: i32,
    pub opt0: i32,
    pub opt1: i32,
    pub pass0: i32,
    pub npasses: i32,
    pub k: GasK<T>,
}

// SAFETY: plain `#[repr(C)]` data matching the kernels' `StepArgs<T>`.
unsafe impl<T: GpuReal> DeviceRepr for StepArgs<T> {}

/// Passes of one step at most (`QUILT_MAX_PASSES`): TVD's two stages of
/// three sweeps.
pub(crate) const MAX_PASSES: usize = 6;

/// Values per patch in the per-step table `PatchStep<T>`: `dt/dx` along x,
/// y, z and the flux-buffer weight.
pub(crate) const STEP_WORDS: usize = 4;

/// Shared-memory values per column slot of each scheme (`S::SLOT_WORDS`).
pub(crate) fn slot_words(file: crate::source::KernelFile) -> usize {
    use crate::source::KernelFile::*;
    let e = crate::plan::MAX_EDGE as usize;
    match file {
        Rtvd | Tvd => 15 * e,
        Waf => 13 * e,
        Amr => 0,
    }
}

/// Cells of a marching thread's ring (`QUILT_RING_CELLS`).
pub(crate) const RING_CELLS: usize = 8;

/// Shared-memory values of a block's march rings (`Ring<T>`: five values
/// per cell and thread).
pub(crate) const RING_WORDS: usize = RING_CELLS * 5 * crate::solver::BLOCK as usize;

/// Shared-memory values of a fused block: four rows-kernel slots, or the
/// march rings, which use the same memory in other passes.
pub(crate) fn fused_words(file: crate::source::KernelFile) -> usize {
    (4 * slot_words(file)).max(RING_WORDS)
}

/// Values in `c_descs` (`QUILT_CONST_DESCS`).
pub(crate) const CONST_DESCS: usize = 768;

/// Words of the per-chunk results block: floor counters (2) and the first
/// bad cell of each error slot (6).
pub(crate) const RESULT_WORDS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `#define name <int>` in the embedded `common.cuh`.
    fn define(name: &str) -> usize {
        let line = crate::source::COMMON_CUH
            .lines()
            .find_map(|l| {
                l.strip_prefix("#define ")?
                    .strip_prefix(name)?
                    .strip_prefix(' ')
            })
            .unwrap_or_else(|| panic!("common.cuh defines no {name}"));
        line.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name} = {line:?}: {e}"))
    }

    #[test]
    fn host_twins_match_the_kernel_defines() {
        assert_eq!(define("QUILT_MAX_PASSES"), MAX_PASSES);
        assert_eq!(define("QUILT_CONST_DESCS"), CONST_DESCS);
        assert_eq!(define("QUILT_RING_CELLS"), RING_CELLS);
        assert_eq!(define("QUILT_MARCH_BLOCK"), crate::solver::BLOCK as usize);
        assert_eq!(define("QUILT_MAX_EDGE"), crate::plan::MAX_EDGE as usize);
    }
}
