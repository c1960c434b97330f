//! A compact field of tagged cells over one index box.
//!
//! One bit per cell. Every row of constant `(y, z)` starts on a word
//! boundary, so row operations (counting over an `x` range, dilation along
//! `x`, copying boxes) work on whole 64-bit words, and the padding bits past
//! the end of a row are always zero (counts and equality rely on that).

use crate::index::{IndexBox, IntVect, coarsen_vect, iv};

use super::error::TagError;

/// The largest number of cells a [`TagBox`] may cover (`u32::MAX`): a field
/// that large already takes 512 MiB, and clustering counts tags in `u32`.
pub const MAX_TAG_CELLS: i64 = u32::MAX as i64;

/// Tagged cells over a rectangular region, one bit per cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagBox {
    region: IndexBox,
    nx: usize,
    ny: usize,
    nz: usize,
    /// Words per row.
    wpr: usize,
    words: Vec<u64>,
}

/// The words and bit masks covering bits `x0 ..= x1` of a row.
#[inline]
fn range_masks(x0: usize, x1: usize) -> impl Iterator<Item = (usize, u64)> {
    let (w0, w1) = (x0 >> 6, x1 >> 6);
    (w0..=w1).map(move |w| {
        let lo = if w == w0 { x0 & 63 } else { 0 };
        let hi = if w == w1 { x1 & 63 } else { 63 };
        (w, (u64::MAX >> (63 - hi)) & (u64::MAX << lo))
    })
}

/// Tagged bits `x0 ..= x1` of `row`.
#[inline]
pub(crate) fn row_ones(row: &[u64], x0: usize, x1: usize) -> u64 {
    range_masks(x0, x1)
        .map(|(w, m)| u64::from((row[w] & m).count_ones()))
        .sum()
}

impl TagBox {
    /// An untagged field over `region` (which may be empty).
    ///
    /// Fails if `region` has more than [`MAX_TAG_CELLS`] cells.
    pub fn new(region: IndexBox) -> Result<Self, TagError> {
        let cells = region.num_cells();
        if cells > MAX_TAG_CELLS {
            return Err(TagError::RegionTooLarge {
                region,
                cells,
                limit: MAX_TAG_CELLS,
            });
        }
        let s = region.size();
        let (nx, ny, nz) = (s.x as usize, s.y as usize, s.z as usize);
        let wpr = nx.div_ceil(64);
        Ok(Self {
            region,
            nx,
            ny,
            nz,
            wpr,
            words: vec![0; wpr * ny * nz],
        })
    }

    /// A field over `region` from its raw bits as 32-bit words: rows of
    /// `2·⌈nx / 64⌉` words (`y` then `z`), bit `x - region.lo.x` of a row
    /// is cell `x`, low word first (the layout of [`TagBox::to_words`]).
    /// Fails if the count is wrong or a bit past a row's end is set.
    pub fn from_words(region: IndexBox, words: &[u32]) -> Result<Self, TagError> {
        let mut t = Self::new(region)?;
        let expected = 2 * t.words.len();
        let bad = |padding| TagError::BadWords {
            region,
            words: words.len(),
            expected,
            padding,
        };
        if words.len() != 2 * t.words.len() {
            return Err(bad(false));
        }
        for (w, pair) in t.words.iter_mut().zip(words.chunks_exact(2)) {
            *w = u64::from(pair[0]) | u64::from(pair[1]) << 32;
        }
        let tail = t.nx % 64;
        if tail != 0 && t.wpr > 0 {
            let pad = u64::MAX << tail;
            if t.words
                .chunks_exact(t.wpr)
                .any(|row| row[t.wpr - 1] & pad != 0)
            {
                return Err(bad(true));
            }
        }
        Ok(t)
    }

    /// The raw bits as 32-bit words (see [`TagBox::from_words`]).
    pub fn to_words(&self, out: &mut [u32]) {
        for (pair, &w) in out.chunks_exact_mut(2).zip(&self.words) {
            pair[0] = w as u32;
            pair[1] = (w >> 32) as u32;
        }
    }

    /// The cells the field covers.
    #[inline]
    pub fn region(&self) -> IndexBox {
        self.region
    }

    /// Index of the first word of the row through `(y, z)`, relative to the region.
    #[inline]
    fn row_start(&self, ry: usize, rz: usize) -> usize {
        (rz * self.ny + ry) * self.wpr
    }

    /// The words of the row at absolute `(y, z)`; bit `x - region.lo.x` is cell `x`.
    #[inline]
    pub(crate) fn row(&self, y: i32, z: i32) -> &[u64] {
        let s = self.row_start(
            (y - self.region.lo.y) as usize,
            (z - self.region.lo.z) as usize,
        );
        &self.words[s..s + self.wpr]
    }

    /// Word and bit of a cell known to be inside the region.
    #[inline]
    fn locate(&self, p: &IntVect) -> (usize, u64) {
        debug_assert!(self.region.contains(p), "{p:?} outside {}", self.region);
        let r = p - self.region.lo;
        let x = r.x as usize;
        (
            self.row_start(r.y as usize, r.z as usize) + (x >> 6),
            1u64 << (x & 63),
        )
    }

    /// Whether cell `p` is tagged (`false` outside the region).
    #[inline]
    pub fn get(&self, p: &IntVect) -> bool {
        if !self.region.contains(p) {
            return false;
        }
        let (w, m) = self.locate(p);
        self.words[w] & m != 0
    }

    /// Tags cell `p`. Fails if `p` is outside the region.
    pub fn set(&mut self, p: &IntVect) -> Result<(), TagError> {
        if !self.region.contains(p) {
            return Err(TagError::CellOutside {
                cell: *p,
                region: self.region,
            });
        }
        self.set_unchecked(p);
        Ok(())
    }

    /// Removes the tag of cell `p`. Fails if `p` is outside the region.
    pub fn unset(&mut self, p: &IntVect) -> Result<(), TagError> {
        if !self.region.contains(p) {
            return Err(TagError::CellOutside {
                cell: *p,
                region: self.region,
            });
        }
        let (w, m) = self.locate(p);
        self.words[w] &= !m;
        Ok(())
    }

    /// Tags a cell the caller has checked to lie in the region.
    #[inline]
    pub(crate) fn set_unchecked(&mut self, p: &IntVect) {
        let (w, m) = self.locate(p);
        self.words[w] |= m;
    }

    /// Applies `op(word, mask)` to the words covering `b ∩ region`.
    fn apply_box(&mut self, b: &IndexBox, op: impl Fn(&mut u64, u64)) {
        let c = b.intersect(&self.region);
        if c.is_empty() {
            return;
        }
        let lo = c.lo - self.region.lo;
        let hi = c.hi - self.region.lo;
        for rz in lo.z as usize..=hi.z as usize {
            for ry in lo.y as usize..=hi.y as usize {
                let s = self.row_start(ry, rz);
                for (w, m) in range_masks(lo.x as usize, hi.x as usize) {
                    op(&mut self.words[s + w], m);
                }
            }
        }
    }

    /// Tags every cell of `b` that lies in the region (the rest of `b` is ignored).
    pub fn set_box(&mut self, b: &IndexBox) {
        self.apply_box(b, |w, m| *w |= m);
    }

    /// Removes the tags of every cell of `b` that lies in the region.
    pub fn clear_box(&mut self, b: &IndexBox) {
        self.apply_box(b, |w, m| *w &= !m);
    }

    /// Copies the tags of `src` (a field over the same region) inside `b`.
    pub(crate) fn copy_box_from(&mut self, src: &TagBox, b: &IndexBox) {
        debug_assert_eq!(self.region, src.region);
        let c = b.intersect(&self.region);
        if c.is_empty() {
            return;
        }
        let lo = c.lo - self.region.lo;
        let hi = c.hi - self.region.lo;
        for rz in lo.z as usize..=hi.z as usize {
            for ry in lo.y as usize..=hi.y as usize {
                let s = self.row_start(ry, rz);
                for (w, m) in range_masks(lo.x as usize, hi.x as usize) {
                    self.words[s + w] = (self.words[s + w] & !m) | (src.words[s + w] & m);
                }
            }
        }
    }

    /// Removes every tag outside `b`.
    pub fn retain_box(&mut self, b: &IndexBox) {
        let c = b.intersect(&self.region);
        if c.is_empty() {
            self.clear();
            return;
        }
        let mut keep = self.clone();
        keep.clear();
        keep.apply_box(&c, |w, m| *w |= m);
        for (w, k) in self.words.iter_mut().zip(&keep.words) {
            *w &= k;
        }
    }

    /// Removes every tag.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Whether any cell is tagged.
    pub fn any(&self) -> bool {
        self.words.iter().any(|&w| w != 0)
    }

    /// Number of tagged cells.
    pub fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Number of tagged cells inside `b`.
    pub fn count_in(&self, b: &IndexBox) -> u64 {
        let c = b.intersect(&self.region);
        if c.is_empty() {
            return 0;
        }
        if c == self.region {
            return self.count();
        }
        let (x0, x1) = (
            (c.lo.x - self.region.lo.x) as usize,
            (c.hi.x - self.region.lo.x) as usize,
        );
        let mut n = 0u64;
        for z in c.lo.z..=c.hi.z {
            for y in c.lo.y..=c.hi.y {
                n += row_ones(self.row(y, z), x0, x1);
            }
        }
        n
    }

    /// Calls `f` on every tagged cell of `b ∩ region`, `x` fastest.
    pub fn for_each_in(&self, b: &IndexBox, mut f: impl FnMut(IntVect)) {
        let c = b.intersect(&self.region);
        if c.is_empty() {
            return;
        }
        let (x0, x1) = (
            (c.lo.x - self.region.lo.x) as usize,
            (c.hi.x - self.region.lo.x) as usize,
        );
        for z in c.lo.z..=c.hi.z {
            for y in c.lo.y..=c.hi.y {
                let row = self.row(y, z);
                for (w, m) in range_masks(x0, x1) {
                    let mut bits = row[w] & m;
                    while bits != 0 {
                        let x = (w << 6) as i32 + bits.trailing_zeros() as i32;
                        f(iv(self.region.lo.x + x, y, z));
                        bits &= bits - 1;
                    }
                }
            }
        }
    }

    /// Iterates over the tagged cells, `x` fastest.
    pub fn iter(&self) -> TagIter<'_> {
        TagIter::new(self, &self.region)
    }

    /// Iterates over the tagged cells inside `b`, `x` fastest.
    pub fn iter_in(&self, b: &IndexBox) -> TagIter<'_> {
        TagIter::new(self, b)
    }

    /// The smallest box holding every tagged cell, `None` if there is none.
    pub fn bounding_box(&self) -> Option<IndexBox> {
        let mut lo = iv(i32::MAX, i32::MAX, i32::MAX);
        let mut hi = iv(i32::MIN, i32::MIN, i32::MIN);
        let mut found = false;
        for rz in 0..self.nz {
            for ry in 0..self.ny {
                let s = self.row_start(ry, rz);
                let row = &self.words[s..s + self.wpr];
                let Some(first) = row.iter().position(|&w| w != 0) else {
                    continue;
                };
                let last = row.iter().rposition(|&w| w != 0).unwrap_or(first);
                let x0 = (first << 6) as i32 + row[first].trailing_zeros() as i32;
                let x1 = (last << 6) as i32 + 63 - row[last].leading_zeros() as i32;
                let (y, z) = (ry as i32, rz as i32);
                lo = lo.inf(&iv(x0, y, z));
                hi = hi.sup(&iv(x1, y, z));
                found = true;
            }
        }
        found.then(|| IndexBox::new(lo + self.region.lo, hi + self.region.lo))
    }

    /// Tags every cell tagged in `other` that lies in this field's region.
    pub fn union_with(&mut self, other: &TagBox) {
        if other.region == self.region {
            for (a, b) in self.words.iter_mut().zip(&other.words) {
                *a |= b;
            }
            return;
        }
        let c = self.region.intersect(&other.region);
        other.for_each_in(&c, |p| self.set_unchecked(&p));
    }

    /// Keeps only the tags also set in `other` (cells outside `other`'s
    /// region lose their tags).
    pub fn intersect_with(&mut self, other: &TagBox) {
        if other.region == self.region {
            for (a, b) in self.words.iter_mut().zip(&other.words) {
                *a &= b;
            }
            return;
        }
        let mut kept = TagBox {
            words: vec![0; self.words.len()],
            ..*self
        };
        let c = self.region.intersect(&other.region);
        self.for_each_in(&c, |p| {
            if other.get(&p) {
                kept.set_unchecked(&p);
            }
        });
        *self = kept;
    }

    /// The field one level coarser for refinement ratio `ratio` (2 or 4):
    /// a coarse cell is tagged when any of its fine cells is. The coarse
    /// region is `region.coarsen(ratio)`.
    pub fn coarsen(&self, ratio: i32) -> Result<TagBox, TagError> {
        if ratio != 2 && ratio != 4 {
            return Err(TagError::BadRatio(ratio));
        }
        let mut out = TagBox::new(self.region.coarsen(ratio))?;
        self.for_each_in(&self.region, |p| {
            out.set_unchecked(&coarsen_vect(&p, ratio))
        });
        Ok(out)
    }

    /// The same tags with the `x` and `y` axes swapped: cell `(x, y, z)`
    /// becomes `(y, x, z)`. Rows of the result run along the original `y`,
    /// which lets clustering count tags per `x` slab by row popcounts.
    pub(crate) fn transposed_xy(&self) -> TagBox {
        let r = self.region;
        let region = IndexBox::new(iv(r.lo.y, r.lo.x, r.lo.z), iv(r.hi.y, r.hi.x, r.hi.z));
        let mut out = TagBox::new(region).expect("same number of cells as a valid field");
        self.for_each_in(&r, |p| out.set_unchecked(&iv(p.y, p.x, p.z)));
        out
    }

    /// Extents of the region in cells along x, y, z.
    #[inline]
    pub(crate) fn dims(&self) -> (usize, usize, usize) {
        (self.nx, self.ny, self.nz)
    }

    /// Words per row.
    #[inline]
    pub(crate) fn words_per_row(&self) -> usize {
        self.wpr
    }

    /// The raw words (rows of `words_per_row` words, `y` then `z`).
    #[inline]
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    /// The raw words, mutable. Callers keep the padding bits zero.
    #[inline]
    pub(crate) fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// The mask of valid bits in the last word of each row.
    #[inline]
    pub(crate) fn last_word_mask(&self) -> u64 {
        match self.nx & 63 {
            0 => u64::MAX,
            r => (1u64 << r) - 1,
        }
    }
}

/// Iterator over the tagged cells of a [`TagBox`] inside a box, `x` fastest.
#[derive(Debug, Clone)]
pub struct TagIter<'a> {
    tags: &'a TagBox,
    c: IndexBox,
    y: i32,
    z: i32,
    /// Word index within the current row and the last word of the range.
    w: usize,
    w_end: usize,
    x0: usize,
    x1: usize,
    bits: u64,
    done: bool,
}

impl<'a> TagIter<'a> {
    fn new(tags: &'a TagBox, b: &IndexBox) -> Self {
        let c = b.intersect(&tags.region);
        let done = c.is_empty();
        let (x0, x1) = if done {
            (0, 0)
        } else {
            (
                (c.lo.x - tags.region.lo.x) as usize,
                (c.hi.x - tags.region.lo.x) as usize,
            )
        };
        let mut it = Self {
            tags,
            c,
            y: c.lo.y,
            z: c.lo.z,
            w: x0 >> 6,
            w_end: x1 >> 6,
            x0,
            x1,
            bits: 0,
            done,
        };
        if !done {
            it.load();
        }
        it
    }

    /// Loads the masked bits of word `w` of the current row.
    #[inline]
    fn load(&mut self) {
        let row = self.tags.row(self.y, self.z);
        let lo = if self.w == self.x0 >> 6 {
            self.x0 & 63
        } else {
            0
        };
        let hi = if self.w == self.w_end {
            self.x1 & 63
        } else {
            63
        };
        self.bits = row[self.w] & (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
    }
}

impl Iterator for TagIter<'_> {
    type Item = IntVect;

    fn next(&mut self) -> Option<IntVect> {
        while !self.done {
            if self.bits != 0 {
                let x = (self.w << 6) as i32 + self.bits.trailing_zeros() as i32;
                self.bits &= self.bits - 1;
                return Some(iv(self.tags.region.lo.x + x, self.y, self.z));
            }
            if self.w < self.w_end {
                self.w += 1;
            } else {
                self.w = self.x0 >> 6;
                self.y += 1;
                if self.y > self.c.hi.y {
                    self.y = self.c.lo.y;
                    self.z += 1;
                    if self.z > self.c.hi.z {
                        self.done = true;
                        break;
                    }
                }
            }
            self.load();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_region() -> impl Strategy<Value = IndexBox> {
        (
            prop::array::uniform3(-5i32..5),
            prop::array::uniform3(1i32..80),
        )
            .prop_map(|(lo, s)| {
                IndexBox::from_lo_size(iv(lo[0], lo[1], lo[2]), iv(s[0], s[1].min(9), s[2].min(7)))
            })
    }

    fn arb_tags() -> impl Strategy<Value = (IndexBox, Vec<IntVect>)> {
        arb_region().prop_flat_map(|r| {
            let cell = (r.lo.x..=r.hi.x, r.lo.y..=r.hi.y, r.lo.z..=r.hi.z)
                .prop_map(|(x, y, z)| iv(x, y, z));
            (Just(r), prop::collection::vec(cell, 0..60))
        })
    }

    #[test]
    fn set_get_outside() {
        let mut t = TagBox::new(IndexBox::new(iv(0, 0, 0), iv(99, 2, 1))).unwrap();
        assert!(t.set(&iv(70, 1, 1)).is_ok());
        assert!(t.get(&iv(70, 1, 1)));
        assert!(!t.get(&iv(71, 1, 1)));
        assert!(!t.get(&iv(100, 1, 1)));
        assert!(matches!(
            t.set(&iv(100, 0, 0)),
            Err(TagError::CellOutside { .. })
        ));
        assert_eq!(t.count(), 1);
        t.unset(&iv(70, 1, 1)).unwrap();
        assert!(!t.any());
        let big = IndexBox::new(iv(0, 0, 0), iv(4095, 4095, 4095));
        assert!(matches!(
            TagBox::new(big),
            Err(TagError::RegionTooLarge { .. })
        ));
        let e = TagBox::new(IndexBox::empty()).unwrap();
        assert_eq!(e.count(), 0);
        assert_eq!(e.bounding_box(), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn matches_a_set_of_cells((region, cells) in arb_tags(), sub in arb_region()) {
            let mut t = TagBox::new(region).unwrap();
            for p in &cells {
                t.set(p).unwrap();
            }
            let mut uniq = cells.clone();
            uniq.sort_by_key(|p| (p.z, p.y, p.x));
            uniq.dedup();
            prop_assert_eq!(t.count(), uniq.len() as u64);
            let listed: Vec<_> = t.iter().collect();
            prop_assert_eq!(&listed, &uniq);
            let inside: Vec<_> = uniq.iter().copied().filter(|p| sub.contains(p)).collect();
            prop_assert_eq!(t.iter_in(&sub).collect::<Vec<_>>(), inside.clone());
            prop_assert_eq!(t.count_in(&sub), inside.len() as u64);
            let mut each = Vec::new();
            t.for_each_in(&sub, |p| each.push(p));
            prop_assert_eq!(each, inside);
            let bb = uniq.iter().fold(IndexBox::empty(), |b, p| b.bounding(&IndexBox::new(*p, *p)));
            prop_assert_eq!(t.bounding_box(), (!uniq.is_empty()).then_some(bb));

            let mut u = t.clone();
            u.set_box(&sub);
            for p in region.iter() {
                prop_assert_eq!(u.get(&p), t.get(&p) || sub.contains(&p));
            }
            let mut c = u.clone();
            c.clear_box(&sub);
            let mut r = u.clone();
            r.retain_box(&sub);
            for p in region.iter() {
                prop_assert_eq!(c.get(&p), t.get(&p) && !sub.contains(&p));
                prop_assert_eq!(r.get(&p), sub.contains(&p));
            }
        }

        #[test]
        fn union_intersect_coarsen((region, cells) in arb_tags(), (region2, cells2) in arb_tags(), r in prop::sample::select(vec![2, 4])) {
            let mut a = TagBox::new(region).unwrap();
            let mut b = TagBox::new(region2).unwrap();
            for p in &cells { a.set(p).unwrap(); }
            for p in &cells2 { b.set(p).unwrap(); }
            let mut u = a.clone();
            u.union_with(&b);
            let mut i = a.clone();
            i.intersect_with(&b);
            for p in region.iter() {
                prop_assert_eq!(u.get(&p), a.get(&p) || b.get(&p));
                prop_assert_eq!(i.get(&p), a.get(&p) && b.get(&p));
            }
            let c = a.coarsen(r).unwrap();
            prop_assert_eq!(c.region(), region.coarsen(r));
            for q in c.region().iter() {
                let fine = IndexBox::new(q, q).refine(r);
                prop_assert_eq!(c.get(&q), a.count_in(&fine) > 0);
            }
        }
    }
}
