//! Buffer cells around tags: dilation of a [`TagBox`].
//!
//! A buffer of `n` cells tags every cell within Chebyshev distance `n` of a
//! tagged cell (the tagged cell's box grown by `n`, edge and corner
//! neighbours included), so that a feature moving up to `n` cells before the
//! next regrid stays inside refined patches (Berger & Oliger 1984, §4).
//! Dilation by a cube is separable: one pass of width `2n + 1` per axis.

use super::error::TagError;
use super::tag_box::TagBox;
use crate::index::IndexBox;

impl TagBox {
    /// Tags every cell within `n` cells (along axes and diagonals) of a
    /// tagged cell, then removes every tag outside `clip` (usually the level
    /// domain, so that buffers never reach past a physical boundary).
    ///
    /// The result stays inside this field's region: give the field a region
    /// at least `n` cells larger than the tags if buffers must not be cut.
    pub fn buffer(&mut self, n: i32, clip: &IndexBox) -> Result<(), TagError> {
        if n < 0 {
            return Err(TagError::NegativeBuffer(n));
        }
        let mut scratch = Vec::new();
        for _ in 0..n {
            self.dilate_x_once();
            self.dilate_rows_once(&mut scratch);
        }
        self.retain_box(clip);
        Ok(())
    }

    /// Dilates every row by one cell along `x`, carrying bits across words.
    fn dilate_x_once(&mut self) {
        let wpr = self.words_per_row();
        let last = self.last_word_mask();
        if wpr == 0 {
            return;
        }
        for row in self.words_mut().chunks_exact_mut(wpr) {
            let mut prev_hi = 0u64; // bit 63 of the previous original word
            for w in 0..wpr {
                let cur = row[w];
                let next_lo = if w + 1 < wpr { row[w + 1] & 1 } else { 0 };
                row[w] = cur | (cur << 1) | (cur >> 1) | prev_hi | (next_lo << 63);
                prev_hi = cur >> 63;
            }
            row[wpr - 1] &= last;
        }
    }

    /// Dilates by one cell along `y` and then along `z` (whole-word ORs of
    /// neighbouring rows and planes).
    fn dilate_rows_once(&mut self, scratch: &mut Vec<u64>) {
        let (_, ny, nz) = self.dims();
        let wpr = self.words_per_row();
        let plane = wpr * ny;
        scratch.clear();
        scratch.extend_from_slice(self.words());
        let words = self.words_mut();
        // y
        for z in 0..nz {
            for y in 0..ny {
                let s = z * plane + y * wpr;
                for w in 0..wpr {
                    let mut v = scratch[s + w];
                    if y > 0 {
                        v |= scratch[s - wpr + w];
                    }
                    if y + 1 < ny {
                        v |= scratch[s + wpr + w];
                    }
                    words[s + w] = v;
                }
            }
        }
        // z
        scratch.clear();
        scratch.extend_from_slice(words);
        for z in 0..nz {
            for i in 0..plane {
                let s = z * plane + i;
                let mut v = scratch[s];
                if z > 0 {
                    v |= scratch[s - plane];
                }
                if z + 1 < nz {
                    v |= scratch[s + plane];
                }
                words[s] = v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{IntVect, iv};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Dilation equals the brute-force definition: a cell is tagged iff
        /// some tag lies within Chebyshev distance `n`, and it lies in the clip box.
        #[test]
        fn buffer_is_chebyshev_dilation(
            size in prop::array::uniform3(1i32..70),
            cells in prop::collection::vec(prop::array::uniform3(0i32..70), 0..12),
            n in 0i32..4,
            clip_lo in prop::array::uniform3(-2i32..10),
        ) {
            let region = IndexBox::from_lo_size(iv(-3, 1, 2), iv(size[0], size[1].min(8), size[2].min(6)));
            let mut t = TagBox::new(region).unwrap();
            let mut tagged: Vec<IntVect> = Vec::new();
            for c in &cells {
                let p = region.lo + iv(c[0] % region.size().x, c[1] % region.size().y, c[2] % region.size().z);
                t.set(&p).unwrap();
                tagged.push(p);
            }
            let clip = IndexBox::new(region.lo + iv(clip_lo[0], clip_lo[1], clip_lo[2]), region.hi);
            let mut d = t.clone();
            d.buffer(n, &clip).unwrap();
            for p in region.iter() {
                let near = tagged.iter().any(|q| (0..3).all(|k| (p[k] - q[k]).abs() <= n));
                prop_assert_eq!(d.get(&p), near && clip.contains(&p), "cell {:?}", p);
            }
        }
    }

    #[test]
    fn negative_width_is_an_error() {
        let mut t = TagBox::new(IndexBox::new(iv(0, 0, 0), iv(3, 3, 3))).unwrap();
        assert_eq!(t.buffer(-1, &t.region()), Err(TagError::NegativeBuffer(-1)));
    }
}
