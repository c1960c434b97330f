//! Field data of one patch: structure of arrays over the ghost-grown box.
//!
//! # Layout
//! A [`PatchData`] holds `ncomp` components over its *data box*, the
//! interior grown by `ghost` cells on every side. Components are stored one
//! after another (structure of arrays, so a sweep over one variable walks
//! contiguous memory), and inside a component `x` is fastest, then `y`, then
//! `z`:
//!
//! ```text
//! offset(c, p) = c * comp_len + (p.x - lo.x) + sx * ((p.y - lo.y) + sy * (p.z - lo.z))
//! ```
//!
//! with `lo`, `sx`, `sy` the low corner and sizes of the data box. This is
//! the layout GPU batches are packed from, so an `x` row is one `memcpy`.
//!
//! [`PatchState`] pairs the data at time `n` (`old`, read by ghost fill and
//! by neighbours) with the data at `n + 1` (`new`, written by the step).

use crate::error::MeshError;
use crate::index::{IndexBox, IntVect, iv};
use crate::locked::PatchBuf;
use crate::real::Real;

/// Fields of one patch over its ghost-grown box (see the module docs).
#[derive(Debug, PartialEq)]
pub struct PatchData<T> {
    interior: IndexBox,
    ghost: i32,
    data_box: IndexBox,
    ncomp: usize,
    comp_len: usize,
    data: PatchBuf<T>,
}

impl<T: Clone> Clone for PatchData<T> {
    fn clone(&self) -> Self {
        Self {
            interior: self.interior,
            ghost: self.ghost,
            data_box: self.data_box,
            ncomp: self.ncomp,
            comp_len: self.comp_len,
            data: self.data.clone(),
        }
    }

    /// Reuses `self`'s allocation where it is large enough: copying into
    /// pages already mapped costs no page faults.
    fn clone_from(&mut self, source: &Self) {
        self.interior = source.interior;
        self.ghost = source.ghost;
        self.data_box = source.data_box;
        self.ncomp = source.ncomp;
        self.comp_len = source.comp_len;
        self.data.clone_from(&source.data);
    }
}

fn bad(field: impl Into<String>, why: impl Into<String>) -> MeshError {
    MeshError::BadAccess {
        field: field.into(),
        why: why.into(),
    }
}

impl<T: Real> PatchData<T> {
    /// Zero-filled data for `ncomp` components over `interior` grown by
    /// `ghost` cells.
    pub fn new(interior: IndexBox, ghost: i32, ncomp: usize) -> Result<Self, MeshError> {
        Self::filled(interior, ghost, ncomp, T::zero())
    }

    /// Data with every value (ghosts included) set to `value`.
    pub fn filled(
        interior: IndexBox,
        ghost: i32,
        ncomp: usize,
        value: T,
    ) -> Result<Self, MeshError> {
        let mut d = Self::shape(interior, ghost, ncomp)?;
        d.data = d.allocate(value)?.into();
        Ok(d)
    }

    /// A patch of this shape with no values yet (checked as by `new`).
    fn shape(interior: IndexBox, ghost: i32, ncomp: usize) -> Result<Self, MeshError> {
        if interior.is_empty() {
            return Err(bad(
                format!("interior {interior}"),
                "the interior box is empty",
            ));
        }
        if ghost < 0 {
            return Err(bad(
                format!("interior {interior}"),
                format!("ghost width {ghost} is negative"),
            ));
        }
        if ncomp == 0 {
            return Err(bad(
                format!("interior {interior}"),
                "a patch needs at least one component",
            ));
        }
        // Sizes in wide integers: a huge box must give an error, not overflow.
        let side =
            |d: usize| interior.hi[d] as i128 - interior.lo[d] as i128 + 1 + 2 * ghost as i128;
        let cells = side(0) * side(1) * side(2);
        let bytes = cells * ncomp as i128 * std::mem::size_of::<T>() as i128;
        let fits_index = (0..3).all(|d| {
            interior.lo[d] as i64 - (ghost as i64) > i32::MIN as i64 / 2
                && interior.hi[d] as i64 + (ghost as i64) < i32::MAX as i64 / 2
        });
        if !fits_index || bytes > (isize::MAX as i128) / 2 {
            return Err(bad(
                format!("interior {interior}"),
                format!(
                    "{ncomp} components with {ghost} ghost cells ({cells} cells each) do not fit in memory or in the index range"
                ),
            ));
        }
        let data_box = interior.grow(ghost);
        let comp_len = cells as usize;
        Ok(Self {
            interior,
            ghost,
            data_box,
            ncomp,
            comp_len,
            data: PatchBuf::default(),
        })
    }

    /// Data of this shape in `buf`'s memory when it holds enough values
    /// (page-locked memory stays page-locked), else in a fresh zeroed
    /// allocation, with its values **unspecified**:
    /// what `buf` held (zeros past its length). For a caller that writes
    /// every cell it will read, such as a regrid's transfer (every interior
    /// cell) or a step's new state (every interior cell, before anything
    /// reads it; no one reads a new state's ghost cells): zero-filling
    /// memory that is overwritten anyway costs a pass over gigabytes.
    pub fn reuse(
        interior: IndexBox,
        ghost: i32,
        ncomp: usize,
        buf: impl Into<PatchBuf<T>>,
    ) -> Result<Self, MeshError> {
        let mut d = Self::shape(interior, ghost, ncomp)?;
        let len = d.comp_len * ncomp;
        d.data = match buf.into().refit(len) {
            Some(b) => b,
            None => d.allocate(T::zero())?.into(),
        };
        Ok(d)
    }

    /// This shape's values, all `value`; a refused allocation is an error
    /// naming the patch box, not an abort.
    /// Zeros come from zeroed memory, which costs nothing until written.
    fn allocate(&self, value: T) -> Result<Vec<T>, MeshError> {
        let (len, what) = (
            self.comp_len * self.ncomp,
            format!("patch data over {}", self.data_box),
        );
        if bytemuck::bytes_of(&value).iter().all(|&b| b == 0) {
            crate::memory::try_zeroed_vec(len, &what)
        } else {
            crate::memory::try_filled_vec(len, value, &what)
        }
    }

    /// Values (`ncomp` times the data box's cells) that `interior` with
    /// `ghost` cells takes; `None` if [`PatchData::new`] would refuse it.
    pub fn len_for(interior: &IndexBox, ghost: i32, ncomp: usize) -> Option<usize> {
        Self::shape(*interior, ghost, ncomp)
            .ok()
            .map(|d| d.comp_len * ncomp)
    }

    /// The memory of the values, for reuse ([`PatchData::reuse`]).
    pub fn into_buffer(self) -> PatchBuf<T> {
        self.data
    }

    /// Whether the values live in page-locked memory a device reads and
    /// writes in place (see [`crate::locked`]).
    pub fn is_page_locked(&self) -> bool {
        self.data.is_page_locked()
    }

    /// Interior (valid) cells.
    #[inline]
    pub fn interior(&self) -> IndexBox {
        self.interior
    }

    /// Ghost width on every side.
    #[inline]
    pub fn ghost(&self) -> i32 {
        self.ghost
    }

    /// The box the arrays cover: the interior grown by the ghost width.
    #[inline]
    pub fn data_box(&self) -> IndexBox {
        self.data_box
    }

    /// Number of components.
    #[inline]
    pub fn ncomp(&self) -> usize {
        self.ncomp
    }

    /// Number of values per component (cells of the data box).
    #[inline]
    pub fn comp_len(&self) -> usize {
        self.comp_len
    }

    /// Offsets between neighbouring cells along `x`, `y`, `z` inside a
    /// component.
    #[inline]
    pub fn strides(&self) -> [usize; 3] {
        let s = self.data_box.size();
        [1, s.x as usize, s.x as usize * s.y as usize]
    }

    /// Offset of cell `p` inside a component.
    ///
    /// # Panics
    /// If `p` is outside the data box (a programming error; use
    /// [`PatchData::try_index`] to test).
    #[inline]
    pub fn index(&self, p: &IntVect) -> usize {
        assert!(
            self.data_box.contains(p),
            "cell {p:?} outside patch data box {}",
            self.data_box
        );
        self.data_box.offset(p)
    }

    /// Offset of cell `p` inside a component, or `None` outside the data box.
    #[inline]
    pub fn try_index(&self, p: &IntVect) -> Option<usize> {
        self.data_box.contains(p).then(|| self.data_box.offset(p))
    }

    /// One component's values over the data box.
    ///
    /// # Panics
    /// If `c >= ncomp()`.
    #[inline]
    pub fn comp(&self, c: usize) -> &[T] {
        assert!(c < self.ncomp, "component {c} of {}", self.ncomp);
        &self.data[c * self.comp_len..(c + 1) * self.comp_len]
    }

    /// `n` values of component `c` from offset `o` inside it (a row of
    /// cells along `x`), read without borrowing the rest of the state: a
    /// ghost fill may write the state's ghost cells meanwhile
    /// ([`crate::fill::FillTarget::shared_ghosts`]) while others read its
    /// interior rows.
    ///
    /// # Panics
    /// If `c >= ncomp()` or the row runs past the component.
    #[inline]
    pub fn row(&self, c: usize, o: usize, n: usize) -> &[T] {
        assert!(
            c < self.ncomp && o.checked_add(n).is_some_and(|e| e <= self.comp_len),
            "row of {n} values at {o} of component {c}: {} components of {}",
            self.ncomp,
            self.comp_len
        );
        // SAFETY: inside the buffer (checked above: `ncomp · comp_len`
        // values); the values are initialised, and no `&mut` to them can
        // coexist with `&self` except the disjoint ghost writes above.
        unsafe { std::slice::from_raw_parts(self.data.base_ptr().add(c * self.comp_len + o), n) }
    }

    /// The address of value `o` of component `c`, for prefetch hints only
    /// (never dereferenced; any `o` gives an address).
    #[inline]
    pub fn row_hint(&self, c: usize, o: usize) -> *const T {
        self.data.base_ptr().wrapping_add(c * self.comp_len + o)
    }

    /// The values' memory, for writes through a shared reference when it
    /// is page-locked (see [`PatchBuf`]).
    pub(crate) fn shared_mut_ptr(&self) -> Option<std::ptr::NonNull<T>> {
        self.data.shared_mut_ptr()
    }

    /// One component's values over the data box, mutably.
    ///
    /// # Panics
    /// If `c >= ncomp()`.
    #[inline]
    pub fn comp_mut(&mut self, c: usize) -> &mut [T] {
        assert!(c < self.ncomp, "component {c} of {}", self.ncomp);
        &mut self.data[c * self.comp_len..(c + 1) * self.comp_len]
    }

    /// Every component's slice at once (mutably), so that a kernel can
    /// read some components while writing others.
    pub fn comps_mut(&mut self) -> impl Iterator<Item = &mut [T]> {
        self.data.chunks_exact_mut(self.comp_len)
    }

    /// Value of component `c` at cell `p`.
    ///
    /// # Panics
    /// If `c` or `p` is out of range (see [`PatchData::try_get`]).
    #[inline]
    pub fn get(&self, c: usize, p: &IntVect) -> T {
        self.comp(c)[self.index(p)]
    }

    /// Value of component `c` at cell `p`, or `None` if out of range.
    #[inline]
    pub fn try_get(&self, c: usize, p: &IntVect) -> Option<T> {
        if c >= self.ncomp {
            return None;
        }
        self.try_index(p).map(|i| self.data[c * self.comp_len + i])
    }

    /// Sets component `c` at cell `p`.
    ///
    /// # Panics
    /// If `c` or `p` is out of range.
    #[inline]
    pub fn set(&mut self, c: usize, p: &IntVect, value: T) {
        let i = self.index(p);
        self.comp_mut(c)[i] = value;
    }

    /// Every value, component after component.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// Every value, component after component, mutably.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// Sets every value (ghosts included) of every component.
    pub fn fill(&mut self, value: T) {
        self.data.fill(value);
    }

    /// Sets every value of component `c`.
    ///
    /// # Panics
    /// If `c >= ncomp()`.
    pub fn fill_comp(&mut self, c: usize, value: T) {
        self.comp_mut(c).fill(value);
    }

    /// Sets component `c` on the cells of `region` that lie in the data box.
    ///
    /// # Panics
    /// If `c >= ncomp()`.
    pub fn fill_region(&mut self, c: usize, region: &IndexBox, value: T) {
        let r = region.intersect(&self.data_box);
        if r.is_empty() {
            return;
        }
        let db = self.data_box;
        let nx = r.size().x as usize;
        let comp = self.comp_mut(c);
        for k in r.lo.z..=r.hi.z {
            for j in r.lo.y..=r.hi.y {
                let o = db.offset(&iv(r.lo.x, j, k));
                comp[o..o + nx].fill(value);
            }
        }
    }

    /// Sets component `c` on the whole data box from a function of the cell.
    ///
    /// # Panics
    /// If `c >= ncomp()`.
    pub fn fill_with(&mut self, c: usize, mut f: impl FnMut(&IntVect) -> T) {
        let db = self.data_box;
        let comp = self.comp_mut(c);
        for (v, p) in comp.iter_mut().zip(db.iter()) {
            *v = f(&p);
        }
    }

    /// Sets every component on the whole data box: `f(p, values)` writes
    /// the `ncomp` values of cell `p`.
    pub fn fill_cells_with(&mut self, mut f: impl FnMut(&IntVect, &mut [T])) {
        let mut vals = vec![T::zero(); self.ncomp];
        for (n, p) in self.data_box.iter().enumerate() {
            f(&p, &mut vals);
            for (c, v) in vals.iter().enumerate() {
                self.data[c * self.comp_len + n] = *v;
            }
        }
    }

    /// Sum of component `c` over `region ∩ data box`, accumulated in `f64`.
    ///
    /// # Panics
    /// If `c >= ncomp()`.
    pub fn region_sum(&self, c: usize, region: &IndexBox) -> f64 {
        let r = region.intersect(&self.data_box);
        if r.is_empty() {
            return 0.0;
        }
        let nx = r.size().x as usize;
        let comp = self.comp(c);
        let mut sum = 0.0;
        for k in r.lo.z..=r.hi.z {
            for j in r.lo.y..=r.hi.y {
                let o = self.data_box.offset(&iv(r.lo.x, j, k));
                sum += comp[o..o + nx].iter().map(|v| v.as_f64()).sum::<f64>();
            }
        }
        sum
    }

    /// Sum of component `c` over the interior, accumulated in `f64`.
    ///
    /// # Panics
    /// If `c >= ncomp()`.
    pub fn interior_sum(&self, c: usize) -> f64 {
        self.region_sum(c, &self.interior)
    }

    /// Interior sums of every component.
    pub fn interior_sums(&self) -> Vec<f64> {
        (0..self.ncomp).map(|c| self.interior_sum(c)).collect()
    }

    /// Copies every component on `region` from `src`: destination cell `p`
    /// receives source cell `p - shift` (`shift` is non-zero only across a
    /// periodic boundary). `region` must lie in this data box and
    /// `region - shift` in the source's; both must have the same `ncomp`.
    pub fn copy_region(
        &mut self,
        src: &PatchData<T>,
        region: &IndexBox,
        shift: &IntVect,
    ) -> Result<(), MeshError> {
        if region.is_empty() {
            return Ok(());
        }
        let src_region = region.shift(&-shift);
        if !self.data_box.contains_box(region) || !src.data_box.contains_box(&src_region) {
            return Err(bad(
                format!("copy of {region} (shift {:?})", shift.as_slice()),
                format!(
                    "destination box {} or source box {} does not hold it",
                    self.data_box, src.data_box
                ),
            ));
        }
        if src.ncomp != self.ncomp {
            return Err(bad(
                format!("copy of {region}"),
                format!(
                    "source has {} components, destination {}",
                    src.ncomp, self.ncomp
                ),
            ));
        }
        let nx = region.size().x as usize;
        for c in 0..self.ncomp {
            let s = src.comp(c);
            let db = self.data_box;
            let d = self.comp_mut(c);
            for k in region.lo.z..=region.hi.z {
                for j in region.lo.y..=region.hi.y {
                    let p = iv(region.lo.x, j, k);
                    let od = db.offset(&p);
                    let os = src.data_box.offset(&(p - shift));
                    d[od..od + nx].copy_from_slice(&s[os..os + nx]);
                }
            }
        }
        Ok(())
    }
}

/// The two time levels of one patch: `old` holds time `n` (what ghost fill
/// and neighbours read), `new` receives time `n + 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchState<T> {
    /// State at time `n`.
    pub old: PatchData<T>,
    /// State at time `n + 1`.
    pub new: PatchData<T>,
}

impl<T: Real> PatchState<T> {
    /// Two zero-filled time levels.
    pub fn new(interior: IndexBox, ghost: i32, ncomp: usize) -> Result<Self, MeshError> {
        // Two allocations rather than a clone: a clone reads the fresh
        // zeroed pages of `old`, which maps them to the shared zero page,
        // and the first write then costs a copy-on-write fault and a TLB
        // flush on every core per page.
        Ok(Self {
            old: PatchData::new(interior, ghost, ncomp)?,
            new: PatchData::new(interior, ghost, ncomp)?,
        })
    }

    /// Makes `new` the `old` state (ends a step); cheap, no copy.
    #[inline]
    pub fn swap(&mut self) {
        std::mem::swap(&mut self.old, &mut self.new);
    }

    /// Interior cells.
    #[inline]
    pub fn interior(&self) -> IndexBox {
        self.old.interior()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(lo: [i32; 3], hi: [i32; 3]) -> IndexBox {
        IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2]))
    }

    #[test]
    fn layout_is_soa_x_fastest() {
        let mut d = PatchData::<f64>::new(b([0, 0, 0], [3, 2, 1]), 1, 2).unwrap();
        assert_eq!(d.data_box(), b([-1, -1, -1], [4, 3, 2]));
        assert_eq!(d.comp_len(), 6 * 5 * 4);
        assert_eq!(d.strides(), [1, 6, 30]);
        assert_eq!(d.as_slice().len(), 240);
        d.set(1, &iv(-1, -1, -1), 7.0);
        assert_eq!(d.as_slice()[120], 7.0);
        d.set(0, &iv(0, 0, 0), 3.0);
        assert_eq!(d.as_slice()[1 + 6 + 30], 3.0);
        assert_eq!(d.index(&iv(1, 0, 0)) - d.index(&iv(0, 0, 0)), 1);
        assert_eq!(d.index(&iv(0, 1, 0)) - d.index(&iv(0, 0, 0)), 6);
        assert_eq!(d.try_get(2, &iv(0, 0, 0)), None);
        assert_eq!(d.try_get(0, &iv(5, 0, 0)), None);
        assert_eq!(d.try_get(0, &iv(0, 0, 0)), Some(3.0));
        d.set(1, &iv(4, 3, 2), 9.0);
        assert_eq!(*d.as_slice().last().unwrap(), 9.0);
    }

    #[test]
    fn sums_and_fills() {
        let mut d = PatchData::<f32>::filled(b([2, 2, 2], [5, 5, 5]), 2, 3, 1.0).unwrap();
        assert_eq!(d.interior_sum(0), 64.0);
        d.fill_region(1, &b([0, 0, 0], [2, 2, 2]), 5.0);
        // Only cell (2,2,2) of that region is interior.
        assert_eq!(d.interior_sum(1), 63.0 + 5.0);
        d.fill_with(2, |p| (p.x + 10 * p.y + 100 * p.z) as f32);
        assert_eq!(d.get(2, &iv(3, 4, 5)), 543.0);
        let exact: f64 = d
            .interior()
            .iter()
            .map(|p| (p.x + 10 * p.y + 100 * p.z) as f64)
            .sum();
        assert_eq!(d.interior_sum(2), exact);
        d.fill_cells_with(|p, v| {
            v[0] = p.x as f32;
            v[1] = 0.0;
            v[2] = -1.0;
        });
        // Every x in 2..=5 appears on 16 interior cells.
        assert_eq!(d.interior_sums(), vec![16.0 * 14.0, 0.0, -64.0]);
        d.fill(0.5);
        d.fill_comp(0, 2.0);
        assert_eq!(d.region_sum(0, &d.data_box()), 2.0 * d.comp_len() as f64);
        assert_eq!(d.region_sum(1, &b([100, 0, 0], [101, 0, 0])), 0.0);
    }

    #[test]
    fn copy_region_with_shift() {
        let mut a = PatchData::<f64>::new(b([0, 0, 0], [3, 3, 3]), 2, 2).unwrap();
        let mut s = PatchData::<f64>::new(b([4, 0, 0], [7, 3, 3]), 2, 2).unwrap();
        s.fill_with(0, |p| p.x as f64);
        s.fill_with(1, |p| -(p.y as f64));
        // Ghost cells x = 4..=5 of `a` come from the interior of `s`.
        let region = b([4, 0, 0], [5, 3, 3]);
        a.copy_region(&s, &region, &iv(0, 0, 0)).unwrap();
        assert_eq!(a.get(0, &iv(5, 2, 1)), 5.0);
        assert_eq!(a.get(1, &iv(5, 2, 1)), -2.0);
        // A periodic image: destination x = -2..=-1 reads source x = 6..=7.
        let region = b([-2, 0, 0], [-1, 3, 3]);
        a.copy_region(&s, &region, &iv(-8, 0, 0)).unwrap();
        assert_eq!(a.get(0, &iv(-2, 1, 1)), 6.0);
        assert_eq!(a.get(0, &iv(-1, 1, 1)), 7.0);
        // Out of either box, or a component mismatch: an error, no panic.
        assert!(
            a.copy_region(&s, &b([6, 0, 0], [6, 0, 0]), &iv(0, 0, 0))
                .is_err()
        );
        assert!(
            a.copy_region(&s, &b([0, 0, 0], [0, 0, 0]), &iv(0, 0, 0))
                .is_err()
        );
        let one = PatchData::<f64>::new(b([4, 0, 0], [7, 3, 3]), 2, 1).unwrap();
        let e = a
            .copy_region(&one, &b([4, 0, 0], [4, 0, 0]), &iv(0, 0, 0))
            .unwrap_err();
        assert!(e.to_string().contains("components"), "{e}");
    }

    #[test]
    fn bad_construction_and_swap() {
        assert!(PatchData::<f64>::new(IndexBox::empty(), 1, 1).is_err());
        assert!(PatchData::<f64>::new(b([0, 0, 0], [1, 1, 1]), -1, 1).is_err());
        assert!(PatchData::<f64>::new(b([0, 0, 0], [1, 1, 1]), 1, 0).is_err());
        let e = PatchData::<f64>::new(b([0, 0, 0], [1 << 29, 1 << 29, 1 << 29]), 0, 5).unwrap_err();
        assert!(e.to_string().contains("memory"), "{e}");
        let mut s = PatchState::<f64>::new(b([0, 0, 0], [1, 1, 1]), 1, 1).unwrap();
        s.new.fill(3.0);
        s.swap();
        assert_eq!(s.old.interior_sum(0), 24.0);
        assert_eq!(s.new.interior_sum(0), 0.0);
        assert_eq!(s.interior(), b([0, 0, 0], [1, 1, 1]));
    }
}
