//! Indexing of the per-batch flux buffer.
//!
//! For every patch the buffer holds one block of [`flux_len`] values starting
//! at [`PatchDesc::flux_offset`]. The block lists the six faces of the
//! patch's *interior* box in the order x-low, x-high, y-low, y-high, z-low,
//! z-high. Face `(axis, side)` covers the interior cells of the two other
//! axes `(a, b)`, taken in increasing axis order (x-faces: `(y, z)`,
//! y-faces: `(x, z)`, z-faces: `(x, y)`), component-major:
//!
//! ```text
//! flux_index = flux_offset + face_offset(axis, side) + (c * n_b + t_b) * n_a + t_a
//! face_offset(axis, side) = ncomp * (2 * sum_{d < axis} A_d + side * A_axis)
//! A_x = n_y n_z,  A_y = n_x n_z,  A_z = n_x n_y     (interior sizes)
//! ```
//!
//! Each value is the **time-integrated flux density through the face in the
//! `+axis` direction**, `sum over sub-steps of w_s * dt * F_axis` (per unit
//! area, *not* divided by the cell size): for the split schemes the weight is
//! 1 and `F` is the flux of that face's sweep; for TVD the two RK stages have
//! weight 1/2 each. Hence the interior cell next to the low face changed by
//! `+value / dx_axis` through that face and the one next to the high face by
//! `-value / dx_axis`. A flux register corrects a coarse cell next to a fine
//! patch by `(mean of the fine values over the r^2 fine faces and r fine
//! steps, summed) - coarse value`, divided by the coarse `dx` and with the
//! side's sign.

use super::PatchDesc;

/// Number of flux values of one patch: `ncomp * 2 * (A_x + A_y + A_z)`.
pub fn flux_len(desc: &PatchDesc, ncomp: u32) -> u64 {
    let [nx, ny, nz] = desc.interior().map(u64::from);
    u64::from(ncomp) * 2 * (ny * nz + nx * nz + nx * ny)
}

/// Offset of face `(axis, side)` (side 0 = low, 1 = high) inside the patch's
/// flux block.
pub fn face_offset(desc: &PatchDesc, ncomp: u32, axis: usize, side: usize) -> u64 {
    let n = desc.interior().map(u64::from);
    let area = [n[1] * n[2], n[0] * n[2], n[0] * n[1]];
    let before: u64 = area[..axis].iter().sum();
    u64::from(ncomp) * (2 * before + side as u64 * area[axis])
}

/// Index into the flux buffer of component `comp` of face `(axis, side)` at
/// interior transverse cell `(t_a, t_b)` (increasing axis order). `None` if
/// any argument is out of range.
pub fn flux_index(
    desc: &PatchDesc,
    ncomp: u32,
    axis: usize,
    side: usize,
    comp: u32,
    t_a: u32,
    t_b: u32,
) -> Option<usize> {
    if axis > 2 || side > 1 || comp >= ncomp {
        return None;
    }
    let n = desc.interior();
    let (a, b) = transverse_axes(axis);
    if t_a >= n[a] || t_b >= n[b] {
        return None;
    }
    let within =
        (u64::from(comp) * u64::from(n[b]) + u64::from(t_b)) * u64::from(n[a]) + u64::from(t_a);
    usize::try_from(desc.flux_offset + face_offset(desc, ncomp, axis, side) + within).ok()
}

/// The two axes transverse to `axis`, in increasing order.
pub(crate) const fn transverse_axes(axis: usize) -> (usize, usize) {
    match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    }
}
