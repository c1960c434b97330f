//! New level boxes from tags, finest level first.
//!
//! Berger & Oliger's regrid keeps level 0 and rebuilds every finer level.
//! Tags on old level `k` (plus buffer cells) are clustered into the boxes of
//! new level `k + 1`, from the finest tagged level down. Proper nesting is
//! obtained by construction rather than by clipping: when level `k` is
//! clustered, the cells under every new level-`k + 2` box, grown by the
//! nesting buffer, are tagged too, so the new level `k + 1` covers them.
//! Level 0 covers the domain, so the region a level may occupy is never
//! smaller than its domain and clustering runs with
//! [`Nesting::whole_domain`]; every box it returns is therefore at least the
//! minimum size.
//!
//! Periodic axes: boxes stay inside the domain, but the nesting buffer of a
//! box at a periodic face, and the buffer cells of tags near one, reach
//! across the face. Those cells are folded back onto their periodic images
//! at the opposite face (`fold`), so the coarser level also covers the
//! images — the form of proper nesting `Hierarchy::new` checks, and a
//! feature about to cross the face is refined on both sides.

use rayon::prelude::*;

use crate::cluster::{ClusterOptions, Clusterer, Nesting, extended_domain, image_shifts};
use crate::hierarchy::{BoxBins, Hierarchy};
use crate::index::{BoxList, IndexBox, IntVect};
use crate::tag::TagBox;

use super::{RegridError, RegridOptions};

/// Disjoint boxes covering the union of the boxes added so far: each new
/// box adds the pieces of it that no earlier box covers.
struct DisjointUnion {
    /// An index over the pieces so far: a level has thousands of boxes.
    out: BoxBins,
    near: Vec<usize>,
}

impl DisjointUnion {
    /// An empty union indexed by bins of `bin` cells (best near the
    /// largest box to come; any size gives the same pieces).
    fn new(bin: i32) -> Self {
        Self {
            out: BoxBins::new(bin),
            near: Vec::new(),
        }
    }

    /// Adds `boxes` in turn: each adds the pieces of it that no box before
    /// covers. What each leaves of the pieces already there is found for
    /// all at once; then one after another each loses what the earlier
    /// ones added. The subtractions are those of adding them one by one,
    /// in the same order (queries return pieces in the order they were
    /// added), so the pieces are too.
    fn add_all(&mut self, boxes: &[IndexBox]) {
        let first_new = self.out.len();
        let before = &self.out;
        let rests: Vec<BoxList> = boxes
            .par_iter()
            .map_init(Vec::new, |near, b| {
                let mut rest = BoxList::from_box(*b);
                before.query_into(b, near);
                rest.subtract_all(near.iter().map(|&n| &before.boxes()[n]));
                rest
            })
            .collect();
        for (b, mut rest) in boxes.iter().zip(rests) {
            if rest.is_empty() {
                // Inside what was there: nothing to add, nothing to query.
                continue;
            }
            self.out.query_into(b, &mut self.near);
            let added = self.near.partition_point(|&n| n < first_new);
            rest.subtract_all(self.near[added..].iter().map(|&n| &self.out.boxes()[n]));
            for piece in rest.into_boxes() {
                self.out.push(piece);
            }
        }
    }

    fn boxes(&self) -> &[IndexBox] {
        self.out.boxes()
    }
}

/// Disjoint boxes covering the union of `boxes`.
#[cfg(test)]
fn disjoint_union(boxes: &[IndexBox]) -> Vec<IndexBox> {
    let mut u = DisjointUnion::new(boxes.iter().map(|b| b.size().max()).max().unwrap_or(1));
    u.add_all(boxes);
    u.boxes().to_vec()
}

/// What clustering level `k` needs that the new finer levels do not
/// decide, made for every level at once: the disjoint union of its
/// patches grown by the tag buffer (the tag fields before the cover
/// boxes of new level `k + 2` join them), and each tagged patch's tags
/// grown and buffered, indexed, with their periodic images.
struct LevelTags {
    union: DisjointUnion,
    grown: Vec<TagBox>,
    index: BoxBins,
    /// Tags across periodic faces: `(field, part, shift)`, the tags at
    /// `c + shift` of the field belonging to the domain cell `c`.
    images: Vec<(usize, IndexBox, IntVect)>,
    secs: [f64; 2],
}

impl LevelTags {
    fn new(
        h: &Hierarchy,
        tags: &[TagBox],
        o: &RegridOptions,
        k: usize,
    ) -> Result<Self, RegridError> {
        let t0 = std::time::Instant::now();
        let g = h.geometry();
        let domain = g.level(k)?.domain;
        let periodic = g.level(k)?.periodic;
        let extended = extended_domain(&domain, periodic);
        let patches = h.level_patches(k);
        let mut regions: Vec<IndexBox> = Vec::with_capacity(patches.len());
        for p in patches {
            let grown = p.interior().grow(o.tag_buffer).intersect(&extended);
            regions.extend(
                fold(&domain, periodic, &grown)
                    .into_iter()
                    .map(|(part, _)| part),
            );
        }
        let mut union =
            DisjointUnion::new(regions.iter().map(|b| b.size().max()).max().unwrap_or(1));
        union.add_all(&regions);
        let t_regions = t0.elapsed().as_secs_f64();
        // Each patch's tags over its interior grown by the tag buffer,
        // then buffered (the dilation is the work: patches in parallel).
        let start = h.level_range(k).start;
        let grown: Vec<Option<TagBox>> = patches
            .par_iter()
            .enumerate()
            .map(|(n, p)| -> Result<Option<TagBox>, RegridError> {
                let user = &tags[start + n];
                if !user.any() {
                    return Ok(None);
                }
                let region = p.interior().grow(o.tag_buffer).intersect(&extended);
                let mut t = TagBox::new(region)?;
                t.union_with(user);
                t.buffer(o.tag_buffer, &extended)?;
                Ok(Some(t))
            })
            .collect::<Result<_, _>>()?;
        let grown: Vec<TagBox> = grown.into_iter().flatten().collect();
        let index = BoxBins::from_boxes(&grown.iter().map(TagBox::region).collect::<Vec<_>>());
        let images: Vec<(usize, IndexBox, IntVect)> = grown
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                fold(&domain, periodic, &t.region())
                    .into_iter()
                    .filter(|(_, shift)| *shift != IntVect::zeros())
                    .map(move |(part, shift)| (i, part, shift))
            })
            .collect();
        Ok(Self {
            union,
            grown,
            index,
            images,
            secs: [t_regions, t0.elapsed().as_secs_f64() - t_regions],
        })
    }
}

/// The parts of `b` (a box of the periodically extended domain) mapped onto
/// the domain cells they are images of: `(part, shift)` with `part` inside
/// the domain and `part + shift` a piece of `b`. Clips along non-periodic
/// axes.
fn fold(domain: &IndexBox, periodic: [bool; 3], b: &IndexBox) -> Vec<(IndexBox, IntVect)> {
    image_shifts(domain, periodic, b)
        .into_iter()
        .map(|s| (b.shift(&-s).intersect(domain), s))
        .filter(|(part, _)| !part.is_empty())
        .collect()
}

/// The clustering options for level `k + 1` of `h` at ratio `ratio`.
pub(crate) fn cluster_options(h: &Hierarchy, ratio: i32, o: &RegridOptions) -> ClusterOptions {
    ClusterOptions {
        ratio,
        efficiency: o.efficiency,
        combine_efficiency: o.combine_efficiency,
        min_patch: h.limits().min,
        max_patch: h.limits().max,
        ghost: h.ghost(),
        nesting_buffer: o.nesting_buffer,
        undo_unprofitable_cuts: o.undo_unprofitable_cuts,
        blocks: o.blocks,
    }
}

/// The interiors of every level of the new hierarchy (level 0 as in `h`),
/// from `tags[i]`, the tags of patch `i` of `h` in its level's index space.
/// Trailing levels without boxes are left out.
pub fn new_level_boxes(
    h: &Hierarchy,
    tags: &[TagBox],
    o: &RegridOptions,
) -> Result<Vec<Vec<IndexBox>>, RegridError> {
    o.validate()?;
    if tags.len() != h.num_patches() {
        return Err(RegridError::TagCount {
            tags: tags.len(),
            patches: h.num_patches(),
        });
    }
    let g = h.geometry();
    let max_levels = o.max_levels.min(g.num_levels());
    // Tags on level k make level k + 1.
    let tag_levels = h.num_levels().min(max_levels.saturating_sub(1));
    let mut levels: Vec<Vec<IndexBox>> = vec![Vec::new(); tag_levels + 1];
    levels[0] = h.level_patches(0).iter().map(|p| p.interior()).collect();
    let ratios = g.ratios();
    // Levels wait for the new level two finer (its boxes join the tag
    // fields); what they do not take from it is made beforehand, side by
    // side.
    let mut prepared: Vec<LevelTags> = (0..tag_levels)
        .into_par_iter()
        .map(|k| LevelTags::new(h, tags, o, k))
        .collect::<Result<_, _>>()?;
    for k in (0..tag_levels).rev() {
        let t0 = std::time::Instant::now();
        let domain = g.level(k)?.domain;
        let ratio = ratios[k + 1];
        let copts = cluster_options(h, ratio, o);
        let mut clusterer = Clusterer::new(copts)?;
        let periodic = g.level(k)?.periodic;
        let LevelTags {
            mut union,
            grown,
            index,
            images,
            secs: [t_union, t_grown],
        } = prepared.pop().expect("one prepared level per tagged level");

        // Cells under the new level k + 2, grown by its nesting buffer and
        // folded across periodic faces, join the tag fields (made disjoint).
        let mut cover = Vec::new();
        if k + 2 <= tag_levels {
            let fine_domain = g.level(k + 1)?.domain;
            let fine_extended = extended_domain(&fine_domain, periodic);
            let r2 = ratios[k + 2];
            let buf = cluster_options(h, r2, o).effective_nesting_buffer();
            for b in &levels[k + 2] {
                let grown = b.coarsen(r2).grow(buf).intersect(&fine_extended);
                for (part, _) in fold(&fine_domain, periodic, &grown) {
                    cover.push(part.coarsen(ratio));
                }
            }
        }
        union.add_all(&cover);
        let mut fields: Vec<TagBox> = union
            .boxes()
            .par_iter()
            .map(|&b| TagBox::new(b))
            .collect::<Result<_, _>>()?;

        let t_regions = t0.elapsed().as_secs_f64();
        // Fields lie inside the domain and are disjoint: each gathers the
        // tags that fall in it (a union, in any order), in parallel.
        fields.par_iter_mut().for_each_init(Vec::new, |near, f| {
            let r = f.region();
            index.query_into(&r, near);
            for &i in near.iter() {
                f.union_with(&grown[i]);
            }
            for (i, part, shift) in &images {
                let q = part.intersect(&r);
                if !q.is_empty() {
                    grown[*i].for_each_in(&q.shift(shift), |c| f.set_unchecked(&(c - shift)));
                }
            }
            for c in cover.iter().filter(|c| c.intersects(&r)) {
                f.set_box(c);
            }
        });

        let t_fields = t0.elapsed().as_secs_f64() - t_regions;
        let out = clusterer.cluster(&fields, &Nesting::whole_domain(domain)?)?;
        log::debug!(
            "regrid: level {k} tags {} (+{} cover boxes) -> {} level-{} boxes, efficiency {:.3}; beforehand: patch regions {t_union:.3} s, tags grown {t_grown:.3} s; {} tag fields {t_regions:.3} s, tags into them {t_fields:.3} s, clustering {:.3} s",
            out.tagged,
            cover.len(),
            out.fine_boxes.len(),
            k + 1,
            out.efficiency(),
            fields.len(),
            t0.elapsed().as_secs_f64() - t_regions - t_fields
        );
        levels[k + 1] = out.fine_boxes;
    }
    while levels.len() > 1 && levels.last().is_some_and(Vec::is_empty) {
        levels.pop();
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::iv;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Boxes added in two batches give the pieces of adding them one
        /// by one, in the same order.
        #[test]
        fn batches_add_the_pieces_of_one_by_one(
            boxes in proptest::collection::vec(
                (proptest::array::uniform3(0i32..24), proptest::array::uniform3(1i32..9)),
                1..40,
            ),
            split in 0usize..40,
        ) {
            let boxes: Vec<IndexBox> = boxes
                .iter()
                .map(|(lo, s)| IndexBox::from_lo_size(iv(lo[0], lo[1], lo[2]), iv(s[0], s[1], s[2])))
                .collect();
            let mut want = BoxBins::new(3);
            let mut near = Vec::new();
            for b in &boxes {
                let mut rest = BoxList::from_box(*b);
                want.query_into(b, &mut near);
                rest.subtract_all(near.iter().map(|&n| &want.boxes()[n]));
                for piece in rest.into_boxes() {
                    want.push(piece);
                }
            }
            let split = split.min(boxes.len());
            let mut got = DisjointUnion::new(5);
            got.add_all(&boxes[..split]);
            got.add_all(&boxes[split..]);
            proptest::prop_assert_eq!(got.boxes(), want.boxes());
        }
    }

    #[test]
    fn disjoint_union_covers_exactly() {
        let a = IndexBox::new(iv(0, 0, 0), iv(5, 5, 5));
        let b = IndexBox::new(iv(3, 3, 3), iv(9, 9, 9));
        let c = IndexBox::new(iv(20, 0, 0), iv(21, 1, 1));
        let u = disjoint_union(&[a, b, c]);
        let total: i64 = u.iter().map(IndexBox::num_cells).sum();
        assert_eq!(
            total,
            a.num_cells() + b.num_cells() - a.intersect(&b).num_cells() + c.num_cells()
        );
        for (i, x) in u.iter().enumerate() {
            for y in &u[i + 1..] {
                assert!(!x.intersects(y));
            }
        }
    }
}
