//! Stencil flags: which of its six neighbours each coarse cell has data
//! for, from the scratch's availability mask or precomputed by a plan.

use crate::error::MeshError;
use crate::index::{IndexBox, IntVect, iv};

/// Bits of a coarse cell's stencil flags: bit `2d` if the low neighbour
/// along `d` is available, bit `2d + 1` if the high one is; a cell with
/// every neighbour has all six.
pub(super) const ALL_NEIGHBOURS: u8 = 0x3F;

/// Stencil flags over a box of coarse cells (`x` fastest).
#[derive(Clone, Copy)]
pub(super) struct Flags<'a> {
    pub bx: IndexBox,
    pub flags: &'a [u8],
}

impl Flags<'_> {
    /// Flags of the `n` coarse cells from `start` along `x`.
    #[inline]
    pub fn row(&self, start: IntVect, n: usize) -> &[u8] {
        let o = self.bx.offset(&start);
        &self.flags[o..o + n]
    }
}

/// Stencil flags of the coarse cells `cg` from an availability mask over
/// `mask_box` (see [`ALL_NEIGHBOURS`]); the first cell of `cg` without data
/// is the error.
pub(crate) fn stencil_flags(
    mask: &[u8],
    mask_box: &IndexBox,
    cg: &IndexBox,
) -> Result<Vec<u8>, IntVect> {
    let mut out = Vec::new();
    stencil_flags_into(mask, mask_box, cg, &mut out)?;
    Ok(out)
}

/// [`stencil_flags`] into `out` (resized to the cells of `cg`).
pub(super) fn stencil_flags_into(
    mask: &[u8],
    mask_box: &IndexBox,
    cg: &IndexBox,
    out: &mut Vec<u8>,
) -> Result<(), IntVect> {
    out.clear();
    out.resize(cg.num_cells() as usize, 0);
    let n = cg.size().x as usize;
    let mut at = 0;
    for k in cg.lo.z..=cg.hi.z {
        for j in cg.lo.y..=cg.hi.y {
            row_flags(mask, mask_box, iv(cg.lo.x, j, k), &mut out[at..at + n])?;
            at += n;
        }
    }
    Ok(())
}

/// The error for a coarse cell under a fine box that holds no data.
pub(super) fn no_data(p: IntVect) -> MeshError {
    MeshError::BadAccess {
        field: format!("interpolation from coarse cell [{},{},{}]", p.x, p.y, p.z),
        why: "the cell holds no coarse data (coarse level does not cover it)".into(),
    }
}

/// Stencil flags of the `out.len()` coarse cells from `start` along `x`.
/// A neighbour outside `mbx` counts as missing, so a cell with a flag set
/// has that neighbour inside the box.
fn row_flags(mask: &[u8], mbx: &IndexBox, start: IntVect, out: &mut [u8]) -> Result<(), IntVect> {
    if !mbx.contains(&start) || !mbx.contains(&(start + iv(out.len() as i32 - 1, 0, 0))) {
        return Err(start);
    }
    let ss = mbx.size();
    let stride = [1usize, ss.x as usize, ss.x as usize * ss.y as usize];
    let o0 = mbx.offset(&start);
    for (q, f) in out.iter_mut().enumerate() {
        let o = o0 + q;
        let p = start + iv(q as i32, 0, 0);
        if mask[o] == 0 {
            return Err(p);
        }
        let mut fl = 0u8;
        for d in 0..3 {
            if p[d] > mbx.lo[d] && mask[o - stride[d]] != 0 {
                fl |= 1 << (2 * d);
            }
            if p[d] < mbx.hi[d] && mask[o + stride[d]] != 0 {
                fl |= 2 << (2 * d);
            }
        }
        *f = fl;
    }
    Ok(())
}

/// Positions in `flags` of the cells that lack a neighbour, into `out`;
/// eight flags at a time where all are complete (the common case).
#[inline]
pub(super) fn incomplete(flags: &[u8], out: &mut Vec<u32>) {
    const ALL8: u64 = u64::from_ne_bytes([ALL_NEIGHBOURS; 8]);
    out.clear();
    let mut chunks = flags.chunks_exact(8);
    let mut base = 0u32;
    for ch in &mut chunks {
        let w = u64::from_ne_bytes([ch[0], ch[1], ch[2], ch[3], ch[4], ch[5], ch[6], ch[7]]);
        if w != ALL8 {
            push_incomplete(ch, base, out);
        }
        base += 8;
    }
    push_incomplete(chunks.remainder(), base, out);
}

fn push_incomplete(flags: &[u8], base: u32, out: &mut Vec<u32>) {
    for (q, &f) in flags.iter().enumerate() {
        if f != ALL_NEIGHBOURS {
            out.push(base + q as u32);
        }
    }
}
