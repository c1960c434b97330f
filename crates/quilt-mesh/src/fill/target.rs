//! Where a fill writes: a strided mutable window over one ghost-grown box.
//!
//! A [`FillTarget`] addresses component `c` of cell `p` of its box `bx` at
//!
//! ```text
//! base + (p.x - lo.x) + sy * (p.y - lo.y) + sz * (p.z - lo.z) + sc * c
//! ```
//!
//! in a slice it borrows mutably. `x` rows are contiguous (stride 1) in
//! every layout quilt uses, so every fill kernel works row by row. Two
//! layouts have constructors:
//!
//! - a patch's own arrays ([`FillTarget::patch`]): `sy = nx`, `sz = nx·ny`,
//!   `sc = comp_len`, `base = 0`;
//! - a bin of quilt-sweep's batch layout ([`FillTarget::bin`]): component
//!   after component, `x` fastest, bin edge `B`, so value
//!   `((b·ncomp + c)·B + z)·B² + y·B + x` of the batch buffer, with the
//!   patch's ghost-grown box placed at `offset` inside bin `b`. Filling a
//!   patch straight into its bin costs no copy beyond the fill itself.
//!
//! Several patches of one batch are prepared in parallel into the same
//! buffer: [`split_bins`] checks that their boxes fit their bins and do not
//! overlap, and hands out one target per patch.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::bins::BinGeometry;
use crate::error::MeshError;
use crate::index::{IndexBox, IntVect, iv};
use crate::patch_data::PatchData;

/// A mutable strided window over the cells of one box (see the module
/// docs). Distinct cells and components always map to distinct values of
/// the underlying buffer, which constructors check.
#[derive(Debug)]
pub struct FillTarget<'a, T> {
    ptr: NonNull<T>,
    bx: IndexBox,
    sy: usize,
    sz: usize,
    sc: usize,
    ncomp: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a target is an exclusive borrow of the values it addresses (no
// two targets handed out by this module share a value), exactly like
// `&mut [T]`, which is `Send`/`Sync` for `T: Send`/`Sync`.
unsafe impl<T: Send> Send for FillTarget<'_, T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: Sync> Sync for FillTarget<'_, T> {}

fn bad(what: impl Into<String>, why: impl Into<String>) -> MeshError {
    MeshError::BadAccess {
        field: what.into(),
        why: why.into(),
    }
}

impl<'a, T: Copy> FillTarget<'a, T> {
    /// A target over all of `data` (its data box, every component).
    pub fn patch(data: &'a mut PatchData<T>) -> Self
    where
        T: crate::real::Real,
    {
        let bx = data.data_box();
        let [_, sy, sz] = data.strides();
        let sc = data.comp_len();
        let ncomp = data.ncomp();
        let slice = data.as_mut_slice();
        Self {
            ptr: NonNull::from(slice).cast(),
            bx,
            sy,
            sz,
            sc,
            ncomp,
            _borrow: PhantomData,
        }
    }

    /// A target over all of `data` reached through a shared reference,
    /// for filling the ghost cells of a state in place while other fills
    /// read its interior (the old state of a step, whose ghosts each
    /// patch's own task fills: [`super::GhostFill::fill_ghosts`]). Only a
    /// page-locked state (an arena block, see [`crate::locked`]) can be
    /// written this way; a state in a vector is refused.
    ///
    /// # Safety
    /// While the target lives: it is written only at ghost cells (what
    /// `fill_ghosts` writes); nothing else writes any value of `data`;
    /// nothing else reads its ghost cells; and every other read of `data`
    /// goes through [`PatchData::row`] (what the fills use), never through
    /// a reference to a whole component or to the buffer
    /// ([`PatchData::comp`], [`PatchData::as_slice`]).
    pub unsafe fn shared_ghosts(data: &'a PatchData<T>) -> Result<Self, MeshError>
    where
        T: crate::real::Real,
    {
        let ptr = data.shared_mut_ptr().ok_or_else(|| {
            bad(
                format!("state over {}", data.data_box()),
                "only a page-locked state can be filled through a shared reference",
            )
        })?;
        let [_, sy, sz] = data.strides();
        Ok(Self {
            ptr,
            bx: data.data_box(),
            sy,
            sz,
            sc: data.comp_len(),
            ncomp: data.ncomp(),
            _borrow: PhantomData,
        })
    }

    /// A target over `bx` inside `buf`: cell `p`, component `c` at
    /// `base + (p.x - lo.x) + sy·(p.y - lo.y) + sz·(p.z - lo.z) + sc·c`.
    ///
    /// Errors unless rows, planes and components nest without overlapping
    /// (`sy >= nx`, `sz >= sy·ny`, `sc >= sz·nz` when `ncomp > 1`) and every
    /// addressed value lies in `buf`.
    pub fn strided(
        buf: &'a mut [T],
        base: usize,
        bx: IndexBox,
        strides: [usize; 3],
        ncomp: usize,
    ) -> Result<Self, MeshError> {
        let [sy, sz, sc] = strides;
        let what = || format!("fill target over {bx}");
        if bx.is_empty() || ncomp == 0 {
            return Err(bad(what(), "the box is empty or there are no components"));
        }
        let n = bx.size();
        let (nx, ny, nz) = (n.x as usize, n.y as usize, n.z as usize);
        let nested = sy >= nx
            && sy.checked_mul(ny).is_some_and(|v| sz >= v)
            && (ncomp == 1 || sz.checked_mul(nz).is_some_and(|v| sc >= v));
        if !nested {
            return Err(bad(
                what(),
                format!(
                    "strides (y {sy}, z {sz}, component {sc}) overlap for a box of {nx}x{ny}x{nz} cells"
                ),
            ));
        }
        let last = sy
            .checked_mul(ny - 1)
            .and_then(|v| v.checked_add(nx - 1))
            .and_then(|v| v.checked_add(sz.checked_mul(nz - 1)?))
            .and_then(|v| v.checked_add(sc.checked_mul(ncomp - 1)?))
            .and_then(|v| v.checked_add(base));
        match last {
            Some(l) if l < buf.len() => {}
            _ => {
                return Err(bad(
                    what(),
                    format!(
                        "{ncomp} components from offset {base} do not fit in a buffer of {} values",
                        buf.len()
                    ),
                ));
            }
        }
        // SAFETY: `base < buf.len()` (checked through `last`).
        let ptr = unsafe { NonNull::from(buf).cast::<T>().add(base) };
        Ok(Self {
            ptr,
            bx,
            sy,
            sz,
            sc,
            ncomp,
            _borrow: PhantomData,
        })
    }

    /// A target over bin `bin` of a batch buffer in quilt-sweep's layout
    /// (bin edge `bin_edge`, `ncomp` components per bin), for a patch whose
    /// ghost-grown box `bx` sits at cell `offset` of the bin.
    pub fn bin(
        buf: &'a mut [T],
        bin_edge: usize,
        ncomp: usize,
        bin: usize,
        offset: [usize; 3],
        bx: IndexBox,
    ) -> Result<Self, MeshError> {
        let base = bin_base(buf.len(), bin_edge, ncomp, bin, offset, &bx)?;
        let strides = BinGeometry::new(bin_edge, ncomp).strides();
        Self::strided(buf, base, bx, strides, ncomp)
    }

    /// The box the target covers.
    #[inline]
    pub fn bx(&self) -> IndexBox {
        self.bx
    }

    /// Number of components.
    #[inline]
    pub fn ncomp(&self) -> usize {
        self.ncomp
    }

    #[inline(always)]
    fn offset(&self, i: i32, j: i32, k: i32, c: usize) -> usize {
        debug_assert!(self.bx.contains(&iv(i, j, k)) && c < self.ncomp);
        (i - self.bx.lo.x) as usize
            + self.sy * (j - self.bx.lo.y) as usize
            + self.sz * (k - self.bx.lo.z) as usize
            + self.sc * c
    }

    /// Address of cell `(i, j, k)` of component `c` (which must lie in
    /// the box) and the distance between rows, in values, for prefetches.
    pub(crate) fn row_address(&self, c: usize, i: i32, j: i32, k: i32) -> (*const T, usize) {
        (
            self.ptr.as_ptr().wrapping_add(self.offset(i, j, k, c)) as *const T,
            self.sy,
        )
    }

    /// Value of component `c` at cell `p`, or `None` outside the target.
    pub fn get(&self, c: usize, p: &IntVect) -> Option<T> {
        if c >= self.ncomp || !self.bx.contains(p) {
            return None;
        }
        // SAFETY: in range by the check above and the constructor's checks.
        Some(unsafe { *self.ptr.as_ptr().add(self.offset(p.x, p.y, p.z, c)) })
    }

    /// Sets component `c` at cell `p`; errors outside the target.
    pub fn set(&mut self, c: usize, p: &IntVect, v: T) -> Result<(), MeshError> {
        if c >= self.ncomp || !self.bx.contains(p) {
            return Err(bad(
                format!("fill target over {}", self.bx),
                format!(
                    "component {c} of cell {:?} is outside ({} components)",
                    p.as_slice(),
                    self.ncomp
                ),
            ));
        }
        // SAFETY: in range by the check above.
        unsafe { *self.ptr.as_ptr().add(self.offset(p.x, p.y, p.z, c)) = v };
        Ok(())
    }

    /// The `n` values of component `c` starting at cell `(i, j, k)` along
    /// `x`. The row must lie in the box (internal callers clip first).
    #[inline(always)]
    pub(crate) fn row_mut(&mut self, c: usize, i: i32, j: i32, k: i32, n: usize) -> &mut [T] {
        debug_assert!(n == 0 || self.bx.contains(&iv(i + n as i32 - 1, j, k)));
        let o = self.offset(i, j, k, c);
        // SAFETY: the row lies in the box (caller's contract, checked in
        // debug builds), so it addresses values the target borrows
        // exclusively; the returned borrow ties up `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(o), n) }
    }

    /// `count` consecutive rows along `y` of `n` values of component `c`,
    /// the first starting at cell `(i, j, k)`: the same as
    /// [`FillTarget::row_mut`] for `j, j + 1, …` without recomputing the
    /// offset. The rows must lie in the box (internal callers clip first).
    #[inline(always)]
    pub(crate) fn rows_mut(
        &mut self,
        c: usize,
        i: i32,
        j: i32,
        k: i32,
        n: usize,
        count: usize,
    ) -> impl Iterator<Item = &mut [T]> + '_ {
        debug_assert!(
            n == 0
                || count == 0
                || self
                    .bx
                    .contains(&iv(i + n as i32 - 1, j + count as i32 - 1, k))
        );
        let o = if count == 0 {
            0
        } else {
            self.offset(i, j, k, c)
        };
        let (ptr, sy) = (self.ptr.as_ptr(), self.sy);
        // SAFETY: every row lies in the box (caller's contract, checked in
        // debug builds); rows are `sy >= nx >= n` apart (checked by the
        // constructors), so the slices handed out are disjoint, and they
        // borrow `self` mutably for as long as they live.
        (0..count).map(move |r| unsafe { std::slice::from_raw_parts_mut(ptr.add(o + r * sy), n) })
    }

    /// Read-only counterpart of [`FillTarget::row_mut`].
    #[inline(always)]
    pub(crate) fn row(&self, c: usize, i: i32, j: i32, k: i32, n: usize) -> &[T] {
        debug_assert!(n == 0 || self.bx.contains(&iv(i + n as i32 - 1, j, k)));
        let o = self.offset(i, j, k, c);
        // SAFETY: as for `row_mut`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(o), n) }
    }

    /// Copies every component of the cells of `region` from `src` into
    /// this target (same index space): how a filled patch hands a part of
    /// its box to another target, e.g. a flux probe, while its rows are
    /// still in cache. Errors unless `region` lies in both boxes and the
    /// component counts agree.
    pub fn copy_from(
        &mut self,
        src: &FillTarget<'_, T>,
        region: &IndexBox,
    ) -> Result<(), MeshError> {
        if region.is_empty() {
            return Ok(());
        }
        if !self.bx.contains_box(region) || !src.bx.contains_box(region) || src.ncomp != self.ncomp
        {
            return Err(bad(
                format!("copy of {region} into the fill target over {}", self.bx),
                format!(
                    "the source covers {} with {} components, the target has {}",
                    src.bx, src.ncomp, self.ncomp
                ),
            ));
        }
        let n = region.size();
        let (nx, ny) = (n.x as usize, n.y as usize);
        for c in 0..self.ncomp {
            for k in region.lo.z..=region.hi.z {
                let rows = self.rows_mut(c, region.lo.x, region.lo.y, k, nx, ny);
                for (j, dst) in (region.lo.y..).zip(rows) {
                    dst.copy_from_slice(src.row(c, region.lo.x, j, k, nx));
                }
            }
        }
        Ok(())
    }

    /// Copies `n` values of component `c` from the row at `src` to the row
    /// at `dst`, both in the box and not overlapping.
    #[inline(always)]
    pub(crate) fn copy_row_within(&mut self, c: usize, src: IntVect, dst: IntVect, n: usize) {
        let os = self.offset(src.x, src.y, src.z, c);
        let od = self.offset(dst.x, dst.y, dst.z, c);
        debug_assert!(os + n <= od || od + n <= os);
        // SAFETY: both rows lie in the box and do not overlap.
        unsafe {
            let p = self.ptr.as_ptr();
            std::ptr::copy_nonoverlapping(p.add(os), p.add(od), n);
        }
    }
}

fn bin_base(
    len: usize,
    bin_edge: usize,
    ncomp: usize,
    bin: usize,
    offset: [usize; 3],
    bx: &IndexBox,
) -> Result<usize, MeshError> {
    let what = || format!("bin {bin} at offset {offset:?} for box {bx}");
    if bin_edge == 0 || ncomp == 0 || bx.is_empty() {
        return Err(bad(
            what(),
            "bin edge, component count and box must be non-zero",
        ));
    }
    let s = bx.size();
    for d in 0..3 {
        if offset[d] + s[d] as usize > bin_edge {
            return Err(bad(
                what(),
                format!(
                    "axis {d}: offset {} + extent {} exceeds the bin edge {bin_edge}",
                    offset[d], s[d]
                ),
            ));
        }
    }
    let g = BinGeometry::new(bin_edge, ncomp);
    let end = bin.checked_add(1).and_then(|n| g.checked_len(n));
    match end {
        Some(end) if end <= len => Ok(g.index(bin, 0, offset)),
        _ => Err(bad(
            what(),
            format!("bin {bin} lies beyond a buffer of {len} values"),
        )),
    }
}

/// One patch's place in a batch buffer: bin, cell offset inside the bin,
/// and the patch's ghost-grown box (what [`FillTarget::bin`] takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinPlacement {
    /// Bin index.
    pub bin: usize,
    /// Lowest cell of the box inside the bin.
    pub offset: [usize; 3],
    /// The patch's ghost-grown box (index space of its level).
    pub bx: IndexBox,
}

/// One target per placement over a batch buffer in quilt-sweep's layout,
/// for preparing several patches of one batch in parallel. Errors if a
/// box does not fit its bin or two boxes of one bin overlap.
pub fn split_bins<'a, T: Copy>(
    buf: &'a mut [T],
    bin_edge: usize,
    ncomp: usize,
    placements: &[BinPlacement],
) -> Result<Vec<FillTarget<'a, T>>, MeshError> {
    let mut order: Vec<usize> = (0..placements.len()).collect();
    order.sort_by_key(|&n| placements[n].bin);
    let local = |p: &BinPlacement| {
        let lo = iv(p.offset[0] as i32, p.offset[1] as i32, p.offset[2] as i32);
        IndexBox::from_lo_size(lo, p.bx.size())
    };
    for (a, &n) in order.iter().enumerate() {
        let p = &placements[n];
        bin_base(buf.len(), bin_edge, ncomp, p.bin, p.offset, &p.bx)?;
        for &m in order[a + 1..]
            .iter()
            .take_while(|&&m| placements[m].bin == p.bin)
        {
            if local(p).intersects(&local(&placements[m])) {
                return Err(bad(
                    format!("placements {n} and {m} in bin {}", p.bin),
                    format!(
                        "their boxes overlap in the bin ({} and {})",
                        local(p),
                        local(&placements[m])
                    ),
                ));
            }
        }
    }
    let len = buf.len();
    let root = NonNull::from(buf).cast::<T>();
    let [sy, sz, sc] = BinGeometry::new(bin_edge, ncomp).strides();
    placements
        .iter()
        .map(|p| {
            let base = bin_base(len, bin_edge, ncomp, p.bin, p.offset, &p.bx)?;
            // SAFETY: `base` is in the buffer (checked by `bin_base`); the
            // boxes of distinct placements are disjoint cells of the batch
            // layout (checked above), so the targets never share a value.
            Ok(FillTarget {
                ptr: unsafe { root.add(base) },
                bx: p.bx,
                sy,
                sz,
                sc,
                ncomp,
                _borrow: PhantomData,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_addressing_matches_the_batch_layout() {
        let (b, nc) = (8usize, 2usize);
        let mut buf = vec![0.0f64; 3 * nc * b * b * b];
        let bx = IndexBox::new(iv(10, 20, 30), iv(12, 23, 30));
        let mut t = FillTarget::bin(&mut buf, b, nc, 2, [1, 2, 3], bx).unwrap();
        t.set(1, &iv(11, 22, 30), 5.0).unwrap();
        assert!(t.set(2, &iv(11, 22, 30), 5.0).is_err());
        assert!(t.set(0, &iv(13, 22, 30), 5.0).is_err());
        let (x, y, z) = (1 + 1, 2 + 2, 3);
        assert_eq!(buf[((2 * nc + 1) * b + z) * b * b + y * b + x], 5.0);
        assert_eq!(buf.iter().filter(|&&v| v != 0.0).count(), 1);
    }

    #[test]
    fn bad_targets_are_errors() {
        let mut buf = vec![0.0f32; 100];
        let bx = IndexBox::new(iv(0, 0, 0), iv(3, 3, 3));
        assert!(FillTarget::strided(&mut buf, 0, bx, [4, 16, 64], 1).is_ok());
        assert!(FillTarget::strided(&mut buf, 0, bx, [4, 16, 64], 2).is_err());
        assert!(FillTarget::strided(&mut buf, 0, bx, [3, 16, 64], 1).is_err());
        assert!(FillTarget::bin(&mut buf, 4, 1, 0, [1, 0, 0], bx).is_err());
        assert!(FillTarget::bin(&mut buf, 4, 1, 1, [0, 0, 0], bx).is_err());
        let pl = |bin, x| BinPlacement {
            bin,
            offset: [x, 0, 0],
            bx: IndexBox::new(iv(0, 0, 0), iv(1, 1, 1)),
        };
        let mut big = vec![0.0f32; 2 * 64];
        assert!(split_bins(&mut big, 4, 1, &[pl(0, 0), pl(1, 0), pl(0, 2)]).is_ok());
        let e = split_bins(&mut big, 4, 1, &[pl(0, 0), pl(1, 0), pl(0, 1)]).unwrap_err();
        assert!(e.to_string().contains("overlap"), "{e}");
        assert!(split_bins(&mut big, 4, 1, &[pl(2, 0)]).is_err());
    }

    #[test]
    fn copy_from_moves_a_region_between_targets() {
        let (b, nc) = (8usize, 2usize);
        let mut buf = vec![0.0f64; 2 * nc * b * b * b];
        let big = IndexBox::new(iv(4, 4, 4), iv(9, 8, 7));
        let small = IndexBox::new(iv(5, 6, 5), iv(8, 7, 7));
        let place = |bin, offset, bx| BinPlacement { bin, offset, bx };
        let mut ts = split_bins(
            &mut buf,
            b,
            nc,
            &[place(0, [1, 0, 2], big), place(1, [0, 3, 1], small)],
        )
        .unwrap();
        let (left, right) = ts.split_at_mut(1);
        let (src, dst) = (&mut left[0], &mut right[0]);
        let value =
            |c: usize, p: IntVect| (c * 1000 + (p.x * 100 + p.y * 10 + p.z) as usize) as f64;
        for c in 0..nc {
            for p in big.iter() {
                src.set(c, &p, value(c, p)).unwrap();
            }
        }
        dst.copy_from(src, &small).unwrap();
        for c in 0..nc {
            for p in small.iter() {
                assert_eq!(dst.get(c, &p), Some(value(c, p)));
            }
        }
        // Only the small box's values were written in bin 1.
        let written = buf[nc * b * b * b..].iter().filter(|&&v| v != 0.0).count();
        assert_eq!(written, nc * small.num_cells() as usize);
        let mut ts = split_bins(
            &mut buf,
            b,
            nc,
            &[place(0, [0, 0, 0], small), place(1, [0, 0, 0], small)],
        )
        .unwrap();
        let (left, right) = ts.split_at_mut(1);
        let outside = IndexBox::new(iv(5, 6, 5), iv(9, 7, 7));
        assert!(right[0].copy_from(&left[0], &outside).is_err());
    }
}
