//! The Berger–Rigoutsos recursion.
//!
//! Berger, M. & Rigoutsos, I. (1991), "An algorithm for point clustering and
//! grid generation", IEEE Trans. Systems, Man and Cybernetics 21(5),
//! 1278–1286.
//!
//! Starting from the bounding box of the allowed region, each box is shrunk
//! to the bounding box of its tags and then
//! 1. if it holds cells outside the proper-nesting region it is cut
//!    ([`nesting_cut`], else any cut) — nesting is a hard constraint;
//! 2. else, if its efficiency (tagged / total cells) reaches the threshold
//!    and no side exceeds the maximum, it is accepted;
//! 3. else it is cut at a hole, else at the strongest inflection point,
//!    else in half along the longest side (only along over-long sides when
//!    the box is efficient but too big). Inflection and bisection cuts keep
//!    both parts at least the minimum side long; a box no cut can split
//!    that way is accepted as it is.
//!
//! **Unprofitable cuts.** When tags form a layer thinner than the minimum
//! side (a shock front), no box reaches the threshold and case 3 would
//! chop the layer into many minimum-size boxes that together cover no fewer
//! cells. With [`super::ClusterOptions::undo_unprofitable_cuts`], after the
//! boxes under an efficiency cut are found, they are compared with the cut
//! box by the cells of the patches they would become — fine cells, sides
//! padded to the minimum, ghost cells included — and replaced by the cut box
//! when they do not cost less.
//!
//! Every box also carries its *region*: the partition cell of the root box
//! that the cuts made so far leave it in. Regions are disjoint, so boxes
//! may later grow inside their region without overlapping (see `size.rs`).

use crate::index::IndexBox;
use crate::tag::TagBox;

use super::nesting::Nesting;
use super::options::CoarseLimits;
use super::signature::Signatures;
use super::split::{Cut, bisect_cut, hole_cut, inflection_cut, nesting_cut};

/// Boxes of at least this many cells recurse into their two sides in
/// parallel: below it a side's signature scans cost less than a task.
const PARALLEL_CELLS: i64 = 1 << 15;

/// A box found by the recursion, with its partition cell and tag count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) b: IndexBox,
    pub(crate) region: IndexBox,
    pub(crate) tags: u64,
}

/// Reused memory of the recursion.
#[derive(Debug, Clone, Default)]
pub(crate) struct BrScratch {
    /// Signature buffers not in use (one pair is live per recursion level).
    free: Vec<Signatures>,
    allowed: [Vec<u64>; 3],
    bad: [Vec<u64>; 3],
}

impl BrScratch {
    fn take(&mut self) -> Signatures {
        self.free.pop().unwrap_or_default()
    }
}

/// The parameters of one clustering.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BrParams {
    pub(crate) lim: CoarseLimits,
    pub(crate) efficiency: f64,
    pub(crate) ratio: i32,
    pub(crate) ghost: i32,
    pub(crate) undo_unprofitable: bool,
}

impl BrParams {
    /// Cells of the patch a coarse box becomes: fine cells, sides padded to
    /// the minimum, ghosts included.
    pub(crate) fn patch_cells(&self, b: &IndexBox) -> u64 {
        let s = b.size();
        (0..3)
            .map(|d| (self.ratio * s[d].max(self.lim.min) + 2 * self.ghost) as u64)
            .product()
    }
}

struct Recursion<'a> {
    fields: &'a [(&'a TagBox, &'a TagBox)],
    nesting: &'a Nesting,
    p: BrParams,
    scratch: &'a mut BrScratch,
    out: &'a mut Vec<Candidate>,
}

/// Why a box was cut.
#[derive(PartialEq, Eq)]
enum Reason {
    Nesting,
    Size,
    Efficiency,
}

impl Recursion<'_> {
    /// Given the signatures of the tight box `b` of a part, its tag count
    /// and, unless it is accepted as it is, the cut to make and why.
    fn decide(
        &mut self,
        region: &IndexBox,
        b: &IndexBox,
        sigs: &Signatures,
    ) -> (u64, Option<(Cut, Reason)>) {
        let BrScratch { allowed, bad, .. } = &mut *self.scratch;
        let n = sigs.total();
        let vol = b.num_cells() as u64;
        let s = [sigs.along(0, b), sigs.along(1, b), sigs.along(2, b)];
        let lim = self.p.lim;
        if !self.nesting.is_whole_domain() && (self.nesting.covered_cells(b) as u64) < vol {
            self.nesting.allowed_signatures(b, allowed);
            let size = b.size();
            for d in 0..3 {
                let area = size[(d + 1) % 3] as u64 * size[(d + 2) % 3] as u64;
                bad[d].clear();
                bad[d].extend(allowed[d].iter().map(|&a| area - a));
            }
            let cut = nesting_cut(b, s, [&bad[0], &bad[1], &bad[2]])
                .or_else(|| hole_cut(b, region, s, [true; 3], 1))
                .or_else(|| inflection_cut(b, s, [true; 3], 1))
                .or_else(|| bisect_cut(b, [true; 3], 1, lim.max));
            debug_assert!(cut.is_some(), "a box with a forbidden cell has two cells");
            return (n, cut.map(|c| (c, Reason::Nesting)));
        }
        let efficient = n as f64 >= self.p.efficiency * vol as f64;
        let size = b.size();
        let over = [size.x > lim.max, size.y > lim.max, size.z > lim.max];
        let oversize = over.iter().any(|&o| o);
        if efficient && !oversize {
            return (n, None);
        }
        let axes = if efficient { over } else { [true; 3] };
        let cut = hole_cut(b, region, s, axes, lim.min)
            .or_else(|| inflection_cut(b, s, axes, lim.min))
            .or_else(|| bisect_cut(b, axes, lim.min, lim.max));
        debug_assert!(
            cut.is_some() || !oversize,
            "a side over the maximum can be bisected"
        );
        let reason = if oversize {
            Reason::Size
        } else {
            Reason::Efficiency
        };
        (n, cut.map(|c| (c, reason)))
    }

    /// Processes the part of `region` whose signatures are `sigs`; `near`
    /// lists the fields that intersect `region` (a level's tags come in
    /// thousands of fields, and a box meets few of them).
    fn run(&mut self, region: IndexBox, sigs: Signatures, near: Vec<u32>) {
        let Some(b) = sigs.tight() else {
            self.scratch.free.push(sigs);
            return;
        };
        let (tags, cut) = self.decide(&region, &b, &sigs);
        let Some((Cut { axis, at }, reason)) = cut else {
            self.scratch.free.push(sigs);
            self.out.push(Candidate { b, region, tags });
            return;
        };
        let (b1, b2) = b.chop(axis, at);
        let (r1, r2) = region.chop(axis, at);
        let fields = self.fields;
        let (near1, near2) = (
            meeting(fields, near.iter().copied(), &r1),
            meeting(fields, near.iter().copied(), &r2),
        );
        // Scan the smaller side, derive the larger from the parent.
        let mut s1 = self.scratch.take();
        let mut s2 = self.scratch.take();
        if b1.num_cells() <= b2.num_cells() {
            s1.compute_ids(fields, &near1, &b1);
            s2.derive(&sigs, &b, &s1, &b2, axis);
        } else {
            s2.compute_ids(fields, &near2, &b2);
            s1.derive(&sigs, &b, &s2, &b1, axis);
        }
        self.scratch.free.push(sigs);
        let start = self.out.len();
        if b.num_cells() >= PARALLEL_CELLS {
            // The two sides are independent: each recursion gets its own
            // scratch and output, appended in the serial order, so the
            // boxes are the same whatever the threads.
            let (fields, nesting, p) = (self.fields, self.nesting, self.p);
            let side = |region: IndexBox, sigs: Signatures, near: Vec<u32>| {
                let mut scratch = BrScratch::default();
                let mut out = Vec::new();
                Recursion {
                    fields,
                    nesting,
                    p,
                    scratch: &mut scratch,
                    out: &mut out,
                }
                .run(region, sigs, near);
                out
            };
            let (o1, o2) = rayon::join(|| side(r1, s1, near1), || side(r2, s2, near2));
            self.out.extend(o1);
            self.out.extend(o2);
        } else {
            self.run(r1, s1, near1);
            self.run(r2, s2, near2);
        }
        if reason == Reason::Efficiency && self.p.undo_unprofitable {
            let parts: u64 = self.out[start..]
                .iter()
                .map(|c| self.p.patch_cells(&c.b))
                .sum();
            if parts >= self.p.patch_cells(&b) {
                self.out.truncate(start);
                self.out.push(Candidate { b, region, tags });
            }
        }
    }
}

/// Clusters the tag fields (each with its transpose, already restricted to
/// the nesting region) into boxes appended to `out`.
pub(crate) fn berger_rigoutsos(
    fields: &[(&TagBox, &TagBox)],
    nesting: &Nesting,
    p: BrParams,
    scratch: &mut BrScratch,
    out: &mut Vec<Candidate>,
) {
    let root = nesting.bounding_box();
    let mut sigs = scratch.take();
    let near = meeting(fields, 0..fields.len() as u32, &root);
    sigs.compute_ids(fields, &near, &root);
    Recursion {
        fields,
        nesting,
        p,
        scratch,
        out,
    }
    .run(root, sigs, near);
}

/// The fields among `ids` whose regions intersect `b`.
fn meeting(
    fields: &[(&TagBox, &TagBox)],
    ids: impl IntoIterator<Item = u32>,
    b: &IndexBox,
) -> Vec<u32> {
    ids.into_iter()
        .filter(|&i| fields[i as usize].0.region().intersects(b))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::iv;
    use proptest::prelude::*;

    fn run(tags: &TagBox, p: BrParams) -> Vec<Candidate> {
        let nesting = Nesting::whole_domain(tags.region()).unwrap();
        let tt = tags.transposed_xy();
        let mut out = Vec::new();
        berger_rigoutsos(
            &[(tags, &tt)],
            &nesting,
            p,
            &mut BrScratch::default(),
            &mut out,
        );
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Undoing a cut keeps the cheaper of the box and its subdivision at
        /// every node, so the total can only go down.
        #[test]
        fn undoing_cuts_never_costs_more(
            blobs in prop::collection::vec((prop::array::uniform3(0i32..48), prop::array::uniform3(0i32..6)), 1..6),
            min in 2i32..6,
            ghost in 0i32..4,
        ) {
            let domain = IndexBox::new(iv(0, 0, 0), iv(47, 47, 47));
            let mut t = TagBox::new(domain).unwrap();
            for (c, h) in &blobs {
                let c = iv(c[0], c[1], c[2]);
                // Thin plates: one half-size forced to zero.
                t.set_box(&IndexBox::new(c - iv(h[0], h[1], 0), c + iv(h[0], h[1], h[2] % 2)));
            }
            let mut p = BrParams {
                lim: CoarseLimits { min, max: 4 * min },
                efficiency: 0.8,
                ratio: 2,
                ghost,
                undo_unprofitable: false,
            };
            let plain = run(&t, p);
            p.undo_unprofitable = true;
            let undone = run(&t, p);
            let cost = |v: &[Candidate]| v.iter().map(|c| p.patch_cells(&c.b)).sum::<u64>();
            prop_assert!(cost(&undone) <= cost(&plain));
            prop_assert!(undone.len() <= plain.len());
            let tags = |v: &[Candidate]| v.iter().map(|c| c.tags).sum::<u64>();
            prop_assert_eq!(tags(&undone), t.count());
            prop_assert_eq!(tags(&plain), t.count());
        }
    }

    #[test]
    fn a_tilted_layer_is_not_chopped_into_minimum_boxes() {
        // A layer 3 cells thick rising one cell in z per 4 in x: a tight box
        // spanning L cells in x is 3 + L/4 thick, efficient only for L < 6,
        // so plain Berger–Rigoutsos cuts down to the minimum size.
        let domain = IndexBox::new(iv(0, 0, 0), iv(63, 63, 63));
        let mut t = TagBox::new(domain).unwrap();
        for x in 2..62 {
            t.set_box(&IndexBox::new(iv(x, 2, 10 + x / 4), iv(x, 61, 12 + x / 4)));
        }
        let mut p = BrParams {
            lim: CoarseLimits { min: 6, max: 30 },
            efficiency: 0.7,
            ratio: 2,
            ghost: 2,
            undo_unprofitable: false,
        };
        let plain = run(&t, p);
        p.undo_unprofitable = true;
        let undone = run(&t, p);
        let cost = |v: &[Candidate]| v.iter().map(|c| p.patch_cells(&c.b)).sum::<u64>();
        assert!(
            plain.len() >= 5 * undone.len(),
            "{} vs {}",
            plain.len(),
            undone.len()
        );
        assert!(cost(&undone) < cost(&plain));
    }
}
