//! Proper nesting: where the boxes of a new level may go.
//!
//! A new fine patch must lie inside the refinement of the next-coarser
//! level's patches shrunk by a nesting buffer (Berger & Colella 1989,
//! "proper nesting"), so that its ghost cells and the interpolation stencils
//! that fill them only read coarse cells that exist. The physical boundary
//! does not shrink the region: the buffer is only kept from coarse cells
//! that are inside the domain but not covered by a coarse patch.
//!
//! [`Nesting`] holds that region in the coarse (tag) index space as a list
//! of disjoint boxes.

use crate::index::{BoxList, IndexBox};

use super::error::ClusterError;

/// The coarse cells under which new fine boxes may lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nesting {
    domain: IndexBox,
    allowed: Vec<IndexBox>,
    bbox: IndexBox,
    whole: bool,
}

/// The first pair `(a, b)`, `a < b`, of boxes that share a cell, with the
/// shared cells (sweep over boxes sorted by `lo.x`).
pub(crate) fn first_overlap(boxes: &[IndexBox]) -> Option<(usize, usize, IndexBox)> {
    let mut order: Vec<usize> = (0..boxes.len()).filter(|&i| !boxes[i].is_empty()).collect();
    order.sort_by_key(|&i| (boxes[i].lo.x, i));
    let mut best: Option<(usize, usize, IndexBox)> = None;
    for (k, &i) in order.iter().enumerate() {
        for &j in &order[k + 1..] {
            if boxes[j].lo.x > boxes[i].hi.x {
                break;
            }
            let c = boxes[i].intersect(&boxes[j]);
            if !c.is_empty() {
                let pair = (i.min(j), i.max(j), c);
                if best.is_none_or(|b| (pair.0, pair.1) < (b.0, b.1)) {
                    best = Some(pair);
                }
            }
        }
    }
    best
}

impl Nesting {
    /// Everything inside `domain` is allowed: the tagged level covers its
    /// whole domain (always so for level 0).
    pub fn whole_domain(domain: IndexBox) -> Result<Self, ClusterError> {
        if domain.is_empty() {
            return Err(ClusterError::EmptyDomain(domain));
        }
        Ok(Self {
            domain,
            allowed: vec![domain],
            bbox: domain,
            whole: true,
        })
    }

    /// The cells of the disjoint coarse `patches` (inside `domain`) that are
    /// at least `buffer` cells (along axes and diagonals) from any domain
    /// cell no patch covers.
    pub fn from_patches(
        domain: IndexBox,
        patches: &[IndexBox],
        buffer: i32,
    ) -> Result<Self, ClusterError> {
        if domain.is_empty() {
            return Err(ClusterError::EmptyDomain(domain));
        }
        if buffer < 0 {
            return Err(ClusterError::BadOption {
                option: "nesting_buffer",
                value: buffer as f64,
                why: "must be >= 0",
            });
        }
        for (index, p) in patches.iter().enumerate() {
            if p.is_empty() || !domain.contains_box(p) {
                return Err(ClusterError::PatchOutsideDomain {
                    index,
                    patch: *p,
                    domain,
                });
            }
        }
        if let Some((a, b, region)) = first_overlap(patches) {
            return Err(ClusterError::OverlappingPatches { a, b, region });
        }
        let covered: i64 = patches.iter().map(IndexBox::num_cells).sum();
        if covered == domain.num_cells() {
            return Self::whole_domain(domain);
        }
        let mut allowed = Vec::new();
        if buffer == 0 {
            allowed.extend_from_slice(patches);
        } else {
            // Patches sorted by lo.x; a neighbour of P within the buffer has
            // lo.x in [P.lo.x - buffer - widest + 1, P.hi.x + buffer].
            let mut order: Vec<usize> = (0..patches.len()).collect();
            order.sort_by_key(|&i| (patches[i].lo.x, i));
            let widest = patches.iter().map(|p| p.size().x).max().unwrap_or(0);
            for p in patches {
                let halo = p.grow(buffer).intersect(&domain);
                let first = order.partition_point(|&i| patches[i].lo.x < halo.lo.x - widest + 1);
                let mut uncovered = BoxList::from_box(halo);
                for &j in &order[first..] {
                    if patches[j].lo.x > halo.hi.x {
                        break;
                    }
                    if patches[j].intersects(&halo) {
                        uncovered.subtract(&patches[j]);
                    }
                }
                let mut mine = BoxList::from_box(*p);
                for u in uncovered.boxes() {
                    mine.subtract(&u.grow(buffer));
                }
                allowed.extend(mine.into_boxes());
            }
        }
        let bbox = allowed.iter().fold(IndexBox::empty(), |b, a| b.bounding(a));
        Ok(Self {
            domain,
            allowed,
            bbox,
            whole: false,
        })
    }

    /// The level domain (tag index space).
    pub fn domain(&self) -> IndexBox {
        self.domain
    }

    /// The allowed cells as disjoint boxes.
    pub fn allowed(&self) -> &[IndexBox] {
        &self.allowed
    }

    /// The smallest box holding every allowed cell (empty if none is).
    pub fn bounding_box(&self) -> IndexBox {
        self.bbox
    }

    /// Whether the whole domain is allowed.
    pub fn is_whole_domain(&self) -> bool {
        self.whole
    }

    /// Number of allowed cells in `b`.
    pub fn covered_cells(&self, b: &IndexBox) -> i64 {
        if self.whole {
            return b.intersect(&self.domain).num_cells();
        }
        if !b.intersects(&self.bbox) {
            return 0;
        }
        self.allowed
            .iter()
            .map(|a| a.intersect(b).num_cells())
            .sum()
    }

    /// Whether every cell of `b` is allowed.
    pub fn contains_box(&self, b: &IndexBox) -> bool {
        self.covered_cells(b) == b.num_cells()
    }

    /// Number of allowed cells in each slab of `b` along each axis
    /// (`out[d][i]` for the slab at `b.lo[d] + i`).
    pub(crate) fn allowed_signatures(&self, b: &IndexBox, out: &mut [Vec<u64>; 3]) {
        let s = b.size();
        for d in 0..3 {
            out[d].clear();
            out[d].resize(s[d] as usize, 0);
        }
        for a in &self.allowed {
            let c = a.intersect(b);
            if c.is_empty() {
                continue;
            }
            let cs = c.size();
            for d in 0..3 {
                let area = (cs[(d + 1) % 3] as u64) * (cs[(d + 2) % 3] as u64);
                for i in c.lo[d]..=c.hi[d] {
                    out[d][(i - b.lo[d]) as usize] += area;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::iv;

    #[test]
    fn buffer_keeps_away_from_uncovered_cells_only() {
        let domain = IndexBox::new(iv(0, 0, 0), iv(15, 15, 15));
        // Two patches covering x < 8 and the block x >= 8, y < 8: the
        // region x >= 8, y >= 8 is uncovered.
        let p = [
            IndexBox::new(iv(0, 0, 0), iv(7, 15, 15)),
            IndexBox::new(iv(8, 0, 0), iv(15, 7, 15)),
        ];
        let n = Nesting::from_patches(domain, &p, 2).unwrap();
        assert!(!n.is_whole_domain());
        for c in domain.iter() {
            let near_uncovered = (-2..=2).any(|dx| {
                (-2..=2).any(|dy| {
                    let q = iv(c.x + dx, c.y + dy, c.z);
                    domain.contains(&q) && q.x >= 8 && q.y >= 8
                })
            });
            let uncovered = c.x >= 8 && c.y >= 8;
            let expect = !(uncovered || near_uncovered);
            assert_eq!(
                n.covered_cells(&IndexBox::new(c, c)),
                expect as i64,
                "{c:?}"
            );
        }
        // Domain boundaries do not shrink the region.
        assert!(n.contains_box(&IndexBox::new(iv(0, 0, 0), iv(5, 15, 15))));
        let total: i64 = n.allowed().iter().map(IndexBox::num_cells).sum();
        assert_eq!(total, n.covered_cells(&domain));
        assert!(first_overlap(n.allowed()).is_none());
    }

    #[test]
    fn covering_patches_allow_everything() {
        let domain = IndexBox::new(iv(0, 0, 0), iv(7, 7, 7));
        let p = [
            IndexBox::new(iv(0, 0, 0), iv(3, 7, 7)),
            IndexBox::new(iv(4, 0, 0), iv(7, 7, 7)),
        ];
        assert!(
            Nesting::from_patches(domain, &p, 3)
                .unwrap()
                .is_whole_domain()
        );
    }

    #[test]
    fn bad_patches_are_reported() {
        let domain = IndexBox::new(iv(0, 0, 0), iv(7, 7, 7));
        let a = IndexBox::new(iv(0, 0, 0), iv(3, 3, 3));
        let b = IndexBox::new(iv(3, 3, 3), iv(5, 5, 5));
        assert!(matches!(
            Nesting::from_patches(domain, &[a, b], 1),
            Err(ClusterError::OverlappingPatches { a: 0, b: 1, .. })
        ));
        assert!(matches!(
            Nesting::from_patches(domain, &[a.shift(&iv(6, 0, 0))], 1),
            Err(ClusterError::PatchOutsideDomain { index: 0, .. })
        ));
        assert!(matches!(
            Nesting::whole_domain(IndexBox::empty()),
            Err(ClusterError::EmptyDomain(_))
        ));
        assert!(Nesting::from_patches(domain, &[a], -1).is_err());
    }
}
