//! Which columns a pass processes.
//!
//! A pass sweeps along `axis`. Along the axis a column reads the interior
//! plus `read_halo` ghost cells on each side; across it, the columns cover the
//! interior plus `t_halo[a]` ghost rows of each transverse axis `a`. The
//! rules per scheme (with `r` the reach of the column function, `g` >= the
//! scheme's ghost width):
//!
//! * split schemes (RTVD `r = 3`, WAF `r = 2`), sweep `s` of the step:
//!   `read_halo = r`; `t_halo[a] = r` for an axis not yet swept in this step,
//!   `0` for one already swept. Sweep 1 thus also updates the ghost rows of
//!   the two other axes, sweep 2 those of the remaining axis, sweep 3 the
//!   interior only; each sweep consumes `r` ghost layers of its own axis.
//! * TVD (`r = 2` per stage): stage 1 has `read_halo = 2r`, `t_halo = r`
//!   (it produces `U*` on the interior plus `r` ghost layers), stage 2 has
//!   `read_halo = r`, `t_halo = 0`.

use crate::layout::{BatchLayout, PatchDesc};

/// The columns of one pass that share a patch and the outer transverse
/// coordinate `tb` (patch-local, ghosts included); `ta` runs over
/// `ta_lo .. ta_hi`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ColumnGroup {
    pub patch: u32,
    pub tb: u32,
    pub ta_lo: u32,
    pub ta_hi: u32,
}

/// Geometry of one pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pass {
    pub axis: usize,
    pub read_halo: u32,
    pub t_halo: [u32; 3],
}

impl Pass {
    /// Column length for patch `d`.
    pub fn len(&self, d: &PatchDesc) -> usize {
        (d.interior()[self.axis] + 2 * self.read_halo) as usize
    }

    /// Patch-local range of transverse axis `a` covered by the pass.
    pub fn range(&self, d: &PatchDesc, a: usize) -> (u32, u32) {
        let h = self.t_halo[a];
        (d.ghost - h, d.extent[a] - d.ghost + h)
    }
}

/// Fills `out` with the column groups of `pass` over every patch.
pub(crate) fn build_groups(layout: &BatchLayout, pass: &Pass, out: &mut Vec<ColumnGroup>) {
    let (a, b) = crate::layout::transverse_axes(pass.axis);
    out.clear();
    for (p, d) in layout.patches().iter().enumerate() {
        let (alo, ahi) = pass.range(d, a);
        let (blo, bhi) = pass.range(d, b);
        for tb in blo..bhi {
            out.push(ColumnGroup {
                patch: p as u32,
                tb,
                ta_lo: alo,
                ta_hi: ahi,
            });
        }
    }
}
