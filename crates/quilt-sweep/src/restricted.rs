//! What a step derives from a patch's new interior while it still holds
//! it: the coarse means restriction writes onto the level below, and the
//! next step's CFL rate ([`Restricted`]).
//!
//! Nothing changes the finest level of a hierarchy between its solve and
//! the next step, so both can be computed where the solve leaves the new
//! interior (on a GPU, in device memory) instead of in another pass over
//! host memory after the step. The results are bit for bit those of the
//! host's restriction (quilt-mesh's `restrict_patch`) and of
//! [`Gas::max_signal_rate`] over the interior's rows.

use crate::error::LayoutError;
use crate::layout::PatchDesc;
use crate::physics::{Eos, Gas};
use crate::real::Real;

/// The largest CFL signal rate over a patch's new interior, as a backend
/// found it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum BoxRate {
    /// Not computed (the caller scans the patch itself).
    #[default]
    Unset,
    /// The largest [`Gas::signal_rate`] over the interior cells.
    Max(f64),
    /// Some cell is refused by [`Gas::signal_rate`]: the caller scans the
    /// patch to name it.
    Bad,
}

/// The outputs of [`Restricted::fill_from_box`] for one patch of a step:
/// the means of its new interior over coarse cells of `ratio`³ fine cells
/// (`means`, component-major, `x` fastest, the coarse cells its interior
/// covers) and the interior's [`BoxRate`].
#[derive(Debug)]
pub struct Restricted<'a, T> {
    /// Refinement ratio over the coarser level (2 or 4).
    pub ratio: u32,
    /// `ncomp` times the coarse cells' count values.
    pub means: &'a mut [T],
    /// The new interior's rate.
    pub rate: &'a mut BoxRate,
}

impl<T> Restricted<'_, T> {
    /// The same outputs, borrowed for a shorter time (to hand them on
    /// while keeping them).
    pub fn reborrow(&mut self) -> Restricted<'_, T> {
        Restricted {
            ratio: self.ratio,
            means: &mut *self.means,
            rate: &mut *self.rate,
        }
    }
}

impl<T: Real> Restricted<'_, T> {
    /// The coarse cells per axis of descriptor `d`'s interior, if the
    /// outputs fit it: an interior that is whole coarse cells along every
    /// axis, and `ncomp` values per coarse cell in `means`.
    pub fn coarse_cells(&self, d: &PatchDesc, ncomp: usize) -> Result<[u32; 3], LayoutError> {
        let n = d.interior();
        let r = self.ratio;
        let coarse = n.map(|v| v / r.max(1));
        let cells = coarse.iter().map(|&v| v as usize).product::<usize>();
        if !(2..=16).contains(&r)
            || n.iter().any(|&v| v % r != 0)
            || self.means.len() != cells * ncomp
        {
            return Err(LayoutError::Access(format!(
                "patch {}: restriction of an interior of {n:?} cells at ratio {r} into {} values ({ncomp} components)",
                d.id,
                self.means.len()
            )));
        }
        Ok(coarse)
    }

    /// Computes both outputs from `new`, the patch's dense ghost box
    /// (descriptor `d`'s extent, `ncomp` components, in
    /// [`Batch::load_patch`](crate::Batch::load_patch)'s order) whose
    /// interior holds the new state. Each mean adds its fine cells in one
    /// order (`dz`, then `dy`, then `x`), starting from zero, and is then
    /// multiplied by `1 / ratio³` rounded to `T`, as the host's
    /// restriction does; the rate is the largest of
    /// [`Gas::max_signal_rate`] over the interior's rows.
    pub fn fill_from_box<E: Eos>(
        &mut self,
        d: &PatchDesc,
        ncomp: usize,
        new: &[T],
        gas: &Gas<E>,
    ) -> Result<(), LayoutError> {
        let [cx, cy, cz] = self.coarse_cells(d, ncomp)?.map(|v| v as usize);
        let [ex, ey, ez] = d.extent.map(|v| v as usize);
        let g = d.ghost as usize;
        let cells = ex * ey * ez;
        if new.len() != ncomp * cells || ncomp < 5 {
            return Err(LayoutError::Access(format!(
                "patch {}: a box of {} values for {ncomp} components of {:?} cells",
                d.id,
                new.len(),
                d.extent
            )));
        }
        let at = |c: usize, i: usize, j: usize, k: usize| {
            c * cells + ((k + g) * ey + j + g) * ex + i + g
        };
        let r = self.ratio as usize;
        let inv = T::from_f64(1.0 / (r * r * r) as f64);
        let coarse = cx * cy * cz;
        for c in 0..ncomp {
            for kc in 0..cz {
                for jc in 0..cy {
                    for ic in 0..cx {
                        let mut a = T::zero();
                        for dz in 0..r {
                            for dy in 0..r {
                                let row = at(c, ic * r, jc * r + dy, kc * r + dz);
                                for &v in &new[row..row + r] {
                                    a = a + v;
                                }
                            }
                        }
                        self.means[c * coarse + (kc * cy + jc) * cx + ic] = a * inv;
                    }
                }
            }
        }
        let n = d.interior().map(|v| v as usize);
        let mut best = 0.0f64;
        for k in 0..n[2] {
            for j in 0..n[1] {
                let rows: [&[T]; 5] = std::array::from_fn(|c| {
                    let o = at(c, 0, j, k);
                    &new[o..o + n[0]]
                });
                match gas.max_signal_rate(rows, d.dx) {
                    Some(rate) => best = best.max(rate),
                    None => {
                        *self.rate = BoxRate::Bad;
                        return Ok(());
                    }
                }
            }
        }
        *self.rate = BoxRate::Max(best);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::PatchShape;

    fn desc(interior: [u32; 3]) -> PatchDesc {
        let l =
            crate::BatchLayout::one_per_slot(16, 5, &[PatchShape::new(3, interior, 2, [0.5; 3])])
                .unwrap();
        l.patches()[0]
    }

    /// A ghost box whose interior cell values are known functions of the
    /// cell, ghosts NaN (which neither output may read).
    fn filled(d: &PatchDesc) -> Vec<f64> {
        let [ex, ey, ez] = d.extent.map(|v| v as usize);
        let g = d.ghost as usize;
        let mut v = vec![f64::NAN; 5 * ex * ey * ez];
        for k in g..ez - g {
            for j in g..ey - g {
                for i in g..ex - g {
                    let t = (i + 3 * j + 7 * k) as f64;
                    let u = [
                        1.0 + 0.01 * t,
                        0.1 * t.sin(),
                        -0.2,
                        0.05 * t,
                        10.0 + 0.1 * t,
                    ];
                    for (c, x) in u.into_iter().enumerate() {
                        v[((c * ez + k) * ey + j) * ex + i] = x;
                    }
                }
            }
        }
        v
    }

    #[test]
    fn means_and_rate_of_a_box() {
        let d = desc([4, 6, 2]);
        let b = filled(&d);
        let gas = Gas::default();
        let mut means = vec![0.0; 5 * 2 * 3];
        let mut rate = BoxRate::Unset;
        Restricted {
            ratio: 2,
            means: &mut means,
            rate: &mut rate,
        }
        .fill_from_box(&d, 5, &b, &gas)
        .unwrap();
        let [ex, ey, ez] = d.extent.map(|v| v as usize);
        let cell = |c: usize, i: usize, j: usize, k: usize| {
            b[((c * ez + k + 2) * ey + j + 2) * ex + i + 2]
        };
        // Coarse cell (1, 2, 0) of component 3: its eight fine cells in
        // dz, dy, x order.
        let mut a = 0.0;
        for (dz, dy, dx) in
            (0..2).flat_map(|z| (0..2).flat_map(move |y| (0..2).map(move |x| (z, y, x))))
        {
            a += cell(3, 2 + dx, 4 + dy, dz);
        }
        assert_eq!(means[3 * 6 + 2 * 2 + 1].to_bits(), (a * 0.125).to_bits());
        let mut best = 0.0f64;
        for k in 0..2 {
            for j in 0..6 {
                for i in 0..4 {
                    let u = std::array::from_fn(|c| cell(c, i, j, k));
                    best = best.max(gas.signal_rate(u, d.dx).unwrap());
                }
            }
        }
        assert_eq!(rate, BoxRate::Max(best));
    }

    #[test]
    fn a_bad_cell_and_a_bad_fit_are_reported() {
        let d = desc([4, 4, 4]);
        let mut b = filled(&d);
        let gas = Gas::default();
        let mut means = vec![0.0; 5 * 8];
        let mut rate = BoxRate::Unset;
        // Negative density in an interior cell.
        let [ex, ey, _] = d.extent.map(|v| v as usize);
        b[(3 * ey + 4) * ex + 5] = -1.0;
        Restricted {
            ratio: 2,
            means: &mut means,
            rate: &mut rate,
        }
        .fill_from_box(&d, 5, &b, &gas)
        .unwrap();
        assert_eq!(rate, BoxRate::Bad);
        let e = Restricted {
            ratio: 4,
            means: &mut means,
            rate: &mut rate,
        }
        .fill_from_box(&d, 5, &b, &gas)
        .unwrap_err()
        .to_string();
        assert!(e.contains("ratio 4"), "{e}");
        let odd = desc([4, 3, 4]);
        let e = Restricted {
            ratio: 2,
            means: &mut means,
            rate: &mut rate,
        }
        .coarse_cells(&odd, 5)
        .unwrap_err()
        .to_string();
        assert!(e.contains("[4, 3, 4]"), "{e}");
    }
}
