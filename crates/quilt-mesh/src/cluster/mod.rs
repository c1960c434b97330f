//! Berger–Rigoutsos clustering: from tagged cells to the boxes of a new level.
//!
//! Tags live in the index space of the level that was tagged (the *coarse*
//! level); the result is a set of disjoint boxes in the index space of the
//! new *fine* level, each the refinement of a coarse box (so every fine box
//! covers whole coarse cells and is coarsenable).
//!
//! The phases, each in its own file:
//! 1. **nesting** ([`Nesting`]): the coarse cells new boxes may cover —
//!    the coarse level's patches shrunk by the nesting buffer, where cells
//!    outside the domain count as covered across physical faces and as
//!    their periodic images across periodic faces; tags outside are
//!    dropped and counted;
//! 2. **Berger–Rigoutsos** (`berger_rigoutsos.rs`, `signature.rs`,
//!    `split.rs`): recursive cuts at holes, inflection points or midpoints
//!    until every box reaches the efficiency threshold, fits the maximum
//!    size and lies in the nesting region;
//! 3. **minimum size** (`size.rs`): narrow boxes grow to the minimum inside
//!    the room the recursion left them;
//! 4. **merging** (`merge.rs`): neighbours whose bounding box reaches the
//!    combine efficiency are merged.
//!
//! With [`ClusterOptions::blocks`] phases 2 and 4 give way to uniform
//! blocks (`blocks.rs`): the aligned blocks of one size that hold tags.
//!
//! # Guarantees
//! For tags `T` restricted to the nesting region, the output coarse boxes
//! are pairwise disjoint, lie in the nesting region, cover every cell of
//! `T`, have no side over [`CoarseLimits::max`], and:
//! * sides are at least [`CoarseLimits::min`] except for the
//!   [`Clustering::undersized`] boxes, which can occur only when the
//!   nesting region is not a single box;
//! * with `core(B)` the bounding box of the tags in `B`, either
//!   `tags(B) / |core(B)| >= min(efficiency, combine_efficiency)`, or every
//!   side of `core(B)` is shorter than `2 * min` (a box that cannot be cut
//!   into two parts of the minimum size is accepted as it is), or — only
//!   with [`ClusterOptions::undo_unprofitable_cuts`] — cutting `core(B)`
//!   further did not reduce the cells of the resulting patches (fine cells,
//!   sides padded to the minimum, ghosts included). Growth to the minimum
//!   size lowers `tags(B) / |B|`, never the efficiency of the core.
//!
//! The result depends only on the input: no hashing, and the phases that
//! run on several threads (signatures over many fields, the two sides of
//! a large cut, the search for mergeable pairs) give what one thread gives.

mod berger_rigoutsos;
mod blocks;
mod error;
mod merge;
pub(crate) mod nesting;
mod options;
mod signature;
mod size;
mod split;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

use rayon::prelude::*;

use crate::index::IndexBox;
use crate::tag::TagBox;

use berger_rigoutsos::{BrParams, BrScratch, berger_rigoutsos};
pub use error::ClusterError;
pub use nesting::Nesting;
pub(crate) use nesting::{extended_domain, image_shifts};
pub use options::{ClusterOptions, CoarseLimits};

/// The boxes of a new level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clustering {
    /// The boxes in the tagged (coarse) level's index space, sorted by
    /// `(lo.z, lo.y, lo.x)`.
    pub coarse_boxes: Vec<IndexBox>,
    /// The same boxes refined by the ratio: interiors of the new patches.
    pub fine_boxes: Vec<IndexBox>,
    /// Tags covered (those inside the nesting region).
    pub tagged: u64,
    /// Tags dropped because they lie outside the nesting region.
    pub dropped: u64,
    /// Boxes left narrower than the minimum (no room to grow).
    pub undersized: usize,
}

impl Clustering {
    /// Tagged cells over cells covered, in the coarse index space (1 when empty).
    pub fn efficiency(&self) -> f64 {
        let cells: i64 = self.coarse_boxes.iter().map(IndexBox::num_cells).sum();
        if cells == 0 {
            1.0
        } else {
            self.tagged as f64 / cells as f64
        }
    }
}

/// Clusters tags into patch boxes; keeps its scratch memory between calls.
///
/// # Example
/// ```
/// use quilt_mesh::cluster::{ClusterOptions, Clusterer, Nesting};
/// use quilt_mesh::tag::TagBox;
/// use quilt_mesh::{IndexBox, iv};
///
/// let domain = IndexBox::new(iv(0, 0, 0), iv(63, 63, 63));
/// let mut tags = TagBox::new(domain).unwrap();
/// tags.set_box(&IndexBox::new(iv(10, 10, 10), iv(29, 19, 14)));
/// let mut c = Clusterer::new(ClusterOptions::default()).unwrap();
/// let out = c.cluster(&[tags], &Nesting::whole_domain(domain).unwrap()).unwrap();
/// assert_eq!(out.tagged, 20 * 10 * 5);
/// assert!(out.fine_boxes.iter().all(|b| b.is_coarsenable(2)));
/// ```
#[derive(Debug, Clone)]
pub struct Clusterer {
    options: ClusterOptions,
    limits: CoarseLimits,
    scratch: BrScratch,
}

impl Clusterer {
    /// Validates the options.
    pub fn new(options: ClusterOptions) -> Result<Self, ClusterError> {
        let limits = options.validate()?;
        Ok(Self {
            options,
            limits,
            scratch: BrScratch::default(),
        })
    }

    /// The options.
    pub fn options(&self) -> &ClusterOptions {
        &self.options
    }

    /// Box side limits in the coarse index space.
    pub fn limits(&self) -> CoarseLimits {
        self.limits
    }

    /// Clusters the tags of `tags` (fields over disjoint regions of the
    /// coarse index space, e.g. one per coarse patch or one over the whole
    /// level) into boxes inside `nesting` (build it with
    /// [`ClusterOptions::effective_nesting_buffer`] so that the new patches
    /// pass the hierarchy's nesting check).
    pub fn cluster(
        &mut self,
        tags: &[TagBox],
        nesting: &Nesting,
    ) -> Result<Clustering, ClusterError> {
        let t0 = std::time::Instant::now();
        let regions: Vec<IndexBox> = tags.iter().map(TagBox::region).collect();
        if let Some((a, b, region)) = nesting::first_overlap(&regions) {
            return Err(ClusterError::OverlappingTags { a, b, region });
        }
        let mut total = 0;
        let mut masked: Vec<Cow<'_, TagBox>> = Vec::with_capacity(tags.len());
        for t in tags {
            total += t.count();
            if nesting.is_whole_domain() && nesting.domain().contains_box(&t.region()) {
                masked.push(Cow::Borrowed(t));
            } else {
                let mut m = TagBox::new(t.region())?;
                for a in nesting.allowed() {
                    m.copy_box_from(t, a);
                }
                masked.push(Cow::Owned(m));
            }
        }
        let refs: Vec<&TagBox> = masked.iter().map(|c| c.as_ref()).collect();
        let tagged: u64 = refs.iter().map(|t| t.count()).sum();

        let t_masks = t0.elapsed().as_secs_f64();
        let mut cands = Vec::new();
        let blocks = self.options.blocks.map(|n| n / self.options.ratio);
        if let (true, Some(side)) = (tagged > 0, blocks) {
            blocks::blocks(&refs, nesting, side, &mut cands);
        } else if tagged > 0 {
            // Thousands of fields on a fine level: transposed side by side.
            let transposed: Vec<TagBox> = refs.par_iter().map(|t| t.transposed_xy()).collect();
            let fields: Vec<(&TagBox, &TagBox)> =
                refs.iter().copied().zip(transposed.iter()).collect();
            let params = BrParams {
                lim: self.limits,
                efficiency: self.options.efficiency,
                ratio: self.options.ratio,
                ghost: self.options.ghost,
                undo_unprofitable: self.options.undo_unprofitable_cuts,
            };
            berger_rigoutsos(&fields, nesting, params, &mut self.scratch, &mut cands);
        }
        let found = cands.len();
        let t_br = t0.elapsed().as_secs_f64() - t_masks;
        let undersized = size::grow_to_min(&mut cands, nesting, self.limits.min);
        let boxes: Vec<(IndexBox, u64)> = cands.iter().map(|c| (c.b, c.tags)).collect();
        // Uniform blocks are never merged.
        let merged = match blocks {
            Some(_) => boxes,
            None => merge::merge(
                boxes,
                nesting,
                self.limits.max,
                self.options.combine_efficiency,
            ),
        };
        let mut coarse_boxes: Vec<IndexBox> = merged.into_iter().map(|(b, _)| b).collect();
        coarse_boxes.sort_by_key(|b| (b.lo.z, b.lo.y, b.lo.x));
        let undersized = if undersized == 0 {
            0
        } else {
            let min = self.limits.min;
            coarse_boxes
                .iter()
                .filter(|b| (0..3).any(|d| b.size()[d] < min))
                .count()
        };
        let fine_boxes = coarse_boxes
            .iter()
            .map(|b| b.refine(self.options.ratio))
            .collect();
        let out = Clustering {
            coarse_boxes,
            fine_boxes,
            tagged,
            dropped: total - tagged,
            undersized,
        };
        log::debug!(
            "cluster: {} tags ({} dropped outside nesting) -> {} boxes ({} before merging, {} undersized), efficiency {:.3}; overlap check and masks {t_masks:.3} s, Berger-Rigoutsos {t_br:.3} s, growing and merging {:.3} s",
            out.tagged,
            out.dropped,
            out.coarse_boxes.len(),
            found,
            out.undersized,
            out.efficiency(),
            t0.elapsed().as_secs_f64() - t_masks - t_br
        );
        Ok(out)
    }
}

/// One-shot [`Clusterer::cluster`].
pub fn cluster(
    tags: &[TagBox],
    nesting: &Nesting,
    options: ClusterOptions,
) -> Result<Clustering, ClusterError> {
    Clusterer::new(options)?.cluster(tags, nesting)
}
