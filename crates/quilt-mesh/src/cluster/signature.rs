//! Signatures: tag counts per slab of a box along each axis.
//!
//! The signature of box `B` along axis `d` is `σ_d(i)` = number of tagged
//! cells of `B` in the slab `{p ∈ B : p_d = i}` (Berger & Rigoutsos 1991,
//! §3). All three come from word popcounts: the rows of the tag field (along
//! `x`) give `σ_y` and `σ_z`; the rows of its `x`–`y` transpose (along `y`)
//! give `σ_x`. The cost per box is its number of rows, not of tags.

use rayon::prelude::*;

use crate::index::{IndexBox, iv};
use crate::tag::TagBox;
use crate::tag::row_ones;

/// The signatures of one box, kept in scratch vectors that are reused.
#[derive(Debug, Clone)]
pub(crate) struct Signatures {
    /// The box the signatures were computed over.
    b: IndexBox,
    sig: [Vec<u64>; 3],
}

impl Default for Signatures {
    fn default() -> Self {
        Self {
            b: IndexBox::empty(),
            sig: Default::default(),
        }
    }
}

impl Signatures {
    /// Computes the signatures of `b` from the tag fields (disjoint
    /// regions), each given with its [`TagBox::transposed_xy`] copy.
    #[cfg(test)]
    pub(crate) fn compute(&mut self, fields: &[(&TagBox, &TagBox)], b: &IndexBox) {
        self.compute_over(fields.iter(), b);
    }

    /// [`Signatures::compute`] over the fields `ids` names (those that may
    /// intersect `b`; the others add nothing). Many fields are scanned in
    /// parallel, their counts summed: the sums of integers are the same in
    /// any order.
    pub(crate) fn compute_ids(&mut self, fields: &[(&TagBox, &TagBox)], ids: &[u32], b: &IndexBox) {
        if ids.len() < PARALLEL_FIELDS {
            self.compute_over(ids.iter().map(|&i| &fields[i as usize]), b);
            return;
        }
        let s = b.size();
        let zero = || [s.x, s.y, s.z].map(|n| vec![0u64; n as usize]);
        let sum = ids
            .par_chunks(PARALLEL_FIELDS / 2)
            .fold(zero, |mut sig, chunk| {
                for &i in chunk {
                    let (t, tt) = fields[i as usize];
                    add_field(&mut sig, b, t, tt);
                }
                sig
            })
            .reduce(zero, |mut a, o| {
                for (a, o) in a.iter_mut().zip(&o) {
                    a.iter_mut().zip(o).for_each(|(a, o)| *a += o);
                }
                a
            });
        self.b = *b;
        for (d, v) in sum.into_iter().enumerate() {
            self.sig[d].clear();
            self.sig[d].extend_from_slice(&v);
        }
    }

    /// [`Signatures::compute`] over the fields `fields` yields (those that
    /// may intersect `b`; the others add nothing).
    pub(crate) fn compute_over<'a, 'f: 'a>(
        &mut self,
        fields: impl Iterator<Item = &'a (&'f TagBox, &'f TagBox)>,
        b: &IndexBox,
    ) {
        self.b = *b;
        let s = b.size();
        for d in 0..3 {
            self.sig[d].clear();
            self.sig[d].resize(s[d] as usize, 0);
        }
        for (t, tt) in fields {
            add_field(&mut self.sig, b, t, tt);
        }
    }

    /// The signatures of `part`, one side of a cut of `pb` (the box
    /// `parent` was computed over, or one trimmed from it) along `axis`,
    /// from those of the parent and of the other side `other`: along `axis`
    /// a slice of the parent's, along the other axes the parent's minus the
    /// other side's. Only the smaller side of a cut needs a scan.
    pub(crate) fn derive(
        &mut self,
        parent: &Signatures,
        pb: &IndexBox,
        other: &Signatures,
        part: &IndexBox,
        axis: usize,
    ) {
        self.b = *part;
        for d in 0..3 {
            let ps = parent.along(d, pb);
            self.sig[d].clear();
            if d == axis {
                let a = (part.lo[d] - pb.lo[d]) as usize;
                let e = (part.hi[d] - pb.lo[d]) as usize;
                self.sig[d].extend_from_slice(&ps[a..=e]);
            } else {
                debug_assert_eq!(other.sig[d].len(), ps.len());
                self.sig[d].extend(ps.iter().zip(&other.sig[d]).map(|(p, o)| p - o));
            }
        }
    }

    /// The smallest box holding every tag counted, `None` if there is none.
    pub(crate) fn tight(&self) -> Option<IndexBox> {
        let mut lo = iv(0, 0, 0);
        let mut hi = iv(0, 0, 0);
        for d in 0..3 {
            let s = &self.sig[d];
            let first = s.iter().position(|&n| n > 0)?;
            let last = s.iter().rposition(|&n| n > 0)?;
            lo[d] = self.b.lo[d] + first as i32;
            hi[d] = self.b.lo[d] + last as i32;
        }
        Some(IndexBox::new(lo, hi))
    }

    /// The signature along `axis` of `t`, a box obtained from the computed
    /// one by trimming slabs without tags (see [`Signatures::tight`]):
    /// trimming empty slabs leaves the other signatures unchanged.
    pub(crate) fn along(&self, axis: usize, t: &IndexBox) -> &[u64] {
        debug_assert!(self.b.contains_box(t));
        let a = (t.lo[axis] - self.b.lo[axis]) as usize;
        let e = (t.hi[axis] - self.b.lo[axis]) as usize;
        &self.sig[axis][a..=e]
    }

    /// Total number of tags counted.
    pub(crate) fn total(&self) -> u64 {
        self.sig[2].iter().sum()
    }
}

/// Fields from which [`Signatures::compute_ids`] scans in parallel: a
/// level's tags come in thousands of fields, and the boxes near the root
/// of the recursion meet most of them, one scan after another on the
/// recursion's critical path.
const PARALLEL_FIELDS: usize = 256;

/// Adds the tags of field `t` (with its transpose `tt`) inside `b` to the
/// signatures `sig` of `b`.
fn add_field(sig: &mut [Vec<u64>; 3], b: &IndexBox, t: &TagBox, tt: &TagBox) {
    let [sx, sy, sz] = sig;
    let region = t.region();
    let c = region.intersect(b);
    if c.is_empty() {
        return;
    }
    // σ_y and σ_z: popcounts of the rows along x.
    let (x0, x1) = (
        (c.lo.x - region.lo.x) as usize,
        (c.hi.x - region.lo.x) as usize,
    );
    for z in c.lo.z..=c.hi.z {
        let mut zsum = 0u64;
        for y in c.lo.y..=c.hi.y {
            let n = row_ones(t.row(y, z), x0, x1);
            sy[(y - b.lo.y) as usize] += n;
            zsum += n;
        }
        sz[(z - b.lo.z) as usize] += zsum;
    }
    // σ_x: popcounts of the transposed rows, which run along y.
    let (y0, y1) = (
        (c.lo.y - region.lo.y) as usize,
        (c.hi.y - region.lo.y) as usize,
    );
    for z in c.lo.z..=c.hi.z {
        for x in c.lo.x..=c.hi.x {
            sx[(x - b.lo.x) as usize] += row_ones(tt.row(x, z), y0, y1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Enough fields for the parallel scan give the serial scan's counts.
    #[test]
    fn parallel_scan_matches_the_serial_one() {
        // 20 × 20 fields of 4 × 5 × 6 cells side by side, tagged on a
        // pattern, and a box cutting through many of them.
        let mut fields = Vec::new();
        for j in 0..20 {
            for i in 0..20 {
                let r = IndexBox::from_lo_size(iv(4 * i, 5 * j, 0), iv(4, 5, 6));
                let mut t = TagBox::new(r).unwrap();
                for p in r.iter() {
                    if (p.x * 7 + p.y * 3 + p.z * 5) % 11 < 4 {
                        t.set(&p).unwrap();
                    }
                }
                let tt = t.transposed_xy();
                fields.push((t, tt));
            }
        }
        let pairs: Vec<(&TagBox, &TagBox)> = fields.iter().map(|(t, tt)| (t, tt)).collect();
        let ids: Vec<u32> = (0..pairs.len() as u32).collect();
        assert!(ids.len() >= PARALLEL_FIELDS);
        let b = IndexBox::new(iv(3, 2, 1), iv(70, 93, 4));
        let mut par = Signatures::default();
        par.compute_ids(&pairs, &ids, &b);
        let mut serial = Signatures::default();
        serial.compute(&pairs, &b);
        assert!(serial.total() > 0);
        for d in 0..3 {
            assert_eq!(par.along(d, &b), serial.along(d, &b));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signatures_count_slabs(
            cells in prop::collection::vec(prop::array::uniform3(0i32..90), 0..80),
            lo in prop::array::uniform3(-5i32..40),
            size in prop::array::uniform3(1i32..80),
        ) {
            // Two disjoint tag fields side by side along x.
            let r1 = IndexBox::new(iv(0, 0, 0), iv(69, 19, 14));
            let r2 = IndexBox::new(iv(70, 0, 0), iv(89, 19, 14));
            let mut t1 = TagBox::new(r1).unwrap();
            let mut t2 = TagBox::new(r2).unwrap();
            let mut pts = Vec::new();
            for c in &cells {
                let p = iv(c[0], c[1] % 20, c[2] % 15);
                if r1.contains(&p) { t1.set(&p).unwrap(); } else { t2.set(&p).unwrap(); }
                pts.push(p);
            }
            pts.sort_by_key(|p| (p.x, p.y, p.z));
            pts.dedup();
            let b = IndexBox::from_lo_size(iv(lo[0], lo[1] % 20, lo[2] % 15), iv(size[0], size[1] % 20 + 1, size[2] % 15 + 1));
            let mut s = Signatures::default();
            let (tt1, tt2) = (t1.transposed_xy(), t2.transposed_xy());
            s.compute(&[(&t1, &tt1), (&t2, &tt2)], &b);
            let inside: Vec<_> = pts.iter().filter(|p| b.contains(p)).collect();
            prop_assert_eq!(s.total(), inside.len() as u64);
            for d in 0..3 {
                let sig = s.along(d, &b);
                for (i, &n) in sig.iter().enumerate() {
                    let expect = inside.iter().filter(|p| p[d] == b.lo[d] + i as i32).count() as u64;
                    prop_assert_eq!(n, expect);
                }
            }
            let bb = inside.iter().fold(IndexBox::empty(), |a, p| a.bounding(&IndexBox::new(**p, **p)));
            prop_assert_eq!(s.tight(), (!inside.is_empty()).then_some(bb));

            // Deriving one side of a cut from the other matches a direct scan.
            if let Some(tb) = s.tight() {
                for axis in 0..3 {
                    if tb.size()[axis] < 2 {
                        continue;
                    }
                    let at = tb.lo[axis] + tb.size()[axis] / 2;
                    let (p1, p2) = tb.chop(axis, at);
                    let mut small = Signatures::default();
                    small.compute(&[(&t1, &tt1), (&t2, &tt2)], &p1);
                    let mut derived = Signatures::default();
                    derived.derive(&s, &tb, &small, &p2, axis);
                    let mut direct = Signatures::default();
                    direct.compute(&[(&t1, &tt1), (&t2, &tt2)], &p2);
                    for d in 0..3 {
                        prop_assert_eq!(derived.along(d, &p2), direct.along(d, &p2));
                    }
                }
            }
        }
    }
}
