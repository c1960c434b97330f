//! Proper nesting: where the boxes of a new level may go.
//!
//! A new fine patch must lie inside the refinement of the next-coarser
//! level's patches shrunk by a nesting buffer (Berger & Colella 1989,
//! "proper nesting"), so that its ghost cells and the interpolation stencils
//! that fill them only read coarse cells that exist. The physical boundary
//! does not shrink the region: the buffer is only kept from coarse cells
//! that are inside the domain but not covered by a coarse patch.
//!
//! Along periodic axes the domain has no boundary: the cells across a
//! periodic face are the periodic images of the cells at the opposite face,
//! and they count as covered exactly when a coarse patch covers their
//! image (as in AMReX and SAMRAI). Patches themselves are never wrapped:
//! they stay inside the domain, and a region that straddles a periodic face
//! is two patches, one at each face. The hierarchy's nesting check
//! (`hierarchy::validate`) uses the same definition through
//! [`image_shifts`].
//!
//! [`Nesting`] holds that region in the coarse (tag) index space as a list
//! of disjoint boxes.

use rayon::prelude::*;

use crate::index::{BoxList, IndexBox, IntVect, iv};

use super::error::ClusterError;

/// The coarse cells under which new fine boxes may lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nesting {
    domain: IndexBox,
    periodic: [bool; 3],
    allowed: Vec<IndexBox>,
    bbox: IndexBox,
    whole: bool,
}

/// `domain` extended without bound along the `periodic` axes (the same
/// box as [`crate::geometry::LevelGeometry::periodic_domain`]).
pub(crate) fn extended_domain(domain: &IndexBox, periodic: [bool; 3]) -> IndexBox {
    let mut b = *domain;
    for (d, &p) in periodic.iter().enumerate() {
        if p {
            b.lo[d] = i32::MIN / 4;
            b.hi[d] = i32::MAX / 4;
        }
    }
    b
}

/// Every shift `s` (whole domain lengths along the `periodic` axes, zero
/// along the others) whose periodic image `domain + s` meets `region`; the
/// zero shift first when it qualifies. A cell `c` of `region` inside
/// `domain + s` is the periodic image of the domain cell `c - s`.
///
/// Unlike a fixed `-1..=1` set of shifts this is exact for regions that
/// reach more than one domain length past a face.
pub(crate) fn image_shifts(
    domain: &IndexBox,
    periodic: [bool; 3],
    region: &IndexBox,
) -> Vec<IntVect> {
    if domain.is_empty() || region.is_empty() {
        return Vec::new();
    }
    let mut range = [(0i64, 0i64); 3];
    for d in 0..3 {
        let (lo, hi) = (i64::from(domain.lo[d]), i64::from(domain.hi[d]));
        let (rlo, rhi) = (i64::from(region.lo[d]), i64::from(region.hi[d]));
        if periodic[d] {
            let n = hi - lo + 1;
            // domain + k n meets region iff lo + k n <= rhi and hi + k n >= rlo.
            range[d] = (-(hi - rlo).div_euclid(n), (rhi - lo).div_euclid(n));
        } else if rhi < lo || rlo > hi {
            return Vec::new();
        }
    }
    let n = domain.size();
    let mut out = vec![iv(0, 0, 0)];
    for k in range[2].0..=range[2].1 {
        for j in range[1].0..=range[1].1 {
            for i in range[0].0..=range[0].1 {
                let s = iv(i as i32 * n.x, j as i32 * n.y, k as i32 * n.z);
                if s != iv(0, 0, 0) {
                    out.push(s);
                }
            }
        }
    }
    if !(0..3).all(|d| range[d].0 <= 0 && 0 <= range[d].1) {
        out.remove(0);
    }
    out
}

/// The first pair `(a, b)`, `a < b`, of boxes that share a cell, with the
/// shared cells (sweep over boxes sorted by `lo.x`).
pub(crate) fn first_overlap(boxes: &[IndexBox]) -> Option<(usize, usize, IndexBox)> {
    let mut order: Vec<usize> = (0..boxes.len()).filter(|&i| !boxes[i].is_empty()).collect();
    order.sort_by_key(|&i| (boxes[i].lo.x, i));
    // Each box against those after it in `x`, boxes side by side (a fine
    // level's regrid checks thousands); the lowest pair wins, as in one
    // sequential scan.
    let order = &order;
    (0..order.len())
        .into_par_iter()
        .with_min_len(64)
        .filter_map(|k| {
            let i = order[k];
            let mut best: Option<(usize, usize, IndexBox)> = None;
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
            best
        })
        .min_by_key(|&(a, b, _)| (a, b))
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
            periodic: [false; 3],
            allowed: vec![domain],
            bbox: domain,
            whole: true,
        })
    }

    /// The cells of the disjoint coarse `patches` (inside `domain`) that are
    /// at least `buffer` cells (along axes and diagonals) from any domain
    /// cell no patch covers. No axis is periodic: see
    /// [`Nesting::from_patches_periodic`].
    pub fn from_patches(
        domain: IndexBox,
        patches: &[IndexBox],
        buffer: i32,
    ) -> Result<Self, ClusterError> {
        Self::from_patches_periodic(domain, [false; 3], patches, buffer)
    }

    /// The cells of the disjoint coarse `patches` (inside `domain`) that are
    /// at least `buffer` cells (along axes and diagonals) from any cell no
    /// patch covers, where along the `periodic` axes a cell across a face
    /// is covered when a patch covers its periodic image. Along the other
    /// axes the domain boundary does not shrink the region.
    ///
    /// With `buffer = ClusterOptions::effective_nesting_buffer()` and the
    /// level's periodicity, every box inside this region refines to a patch
    /// that passes [`crate::hierarchy::Hierarchy::new`]'s nesting check.
    pub fn from_patches_periodic(
        domain: IndexBox,
        periodic: [bool; 3],
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
            return Ok(Self {
                periodic,
                ..Self::whole_domain(domain)?
            });
        }
        let mut allowed = Vec::new();
        if buffer == 0 {
            allowed.extend_from_slice(patches);
        } else {
            // Patches sorted by lo.x; a neighbour of P within the buffer has
            // lo.x in [P.lo.x - buffer - widest + 1, P.hi.x + buffer] (in the
            // frame of the periodic image that holds it).
            let mut order: Vec<usize> = (0..patches.len()).collect();
            order.sort_by_key(|&i| (patches[i].lo.x, i));
            let widest = patches.iter().map(|p| p.size().x).max().unwrap_or(0);
            let extended = extended_domain(&domain, periodic);
            for p in patches {
                let halo = p.grow(buffer).intersect(&extended);
                let mut uncovered = BoxList::from_box(halo);
                for shift in image_shifts(&domain, periodic, &halo) {
                    // Patches whose image under `shift` meets the halo.
                    let q = halo.shift(&-shift);
                    let first = order.partition_point(|&i| patches[i].lo.x < q.lo.x - widest + 1);
                    for &j in &order[first..] {
                        if patches[j].lo.x > q.hi.x {
                            break;
                        }
                        if patches[j].intersects(&q) {
                            uncovered.subtract(&patches[j].shift(&shift));
                        }
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
            periodic,
            allowed,
            bbox,
            whole: false,
        })
    }

    /// The level domain (tag index space).
    pub fn domain(&self) -> IndexBox {
        self.domain
    }

    /// The axes along which the domain was taken as periodic.
    pub fn periodic(&self) -> [bool; 3] {
        self.periodic
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

/// `c` mapped into `domain` along periodic axes; `None` when it lies
/// outside along a non-periodic one (the brute-force reference of the
/// periodic tests).
#[cfg(test)]
pub(crate) fn wrap_cell(domain: &IndexBox, periodic: [bool; 3], c: IntVect) -> Option<IntVect> {
    let mut w = c;
    for d in 0..3 {
        if periodic[d] {
            w[d] = domain.lo[d] + (c[d] - domain.lo[d]).rem_euclid(domain.size()[d]);
        } else if !(domain.lo[d]..=domain.hi[d]).contains(&c[d]) {
            return None;
        }
    }
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// The image shifts are exactly the domain-length multiples whose
        /// image meets the region, zero first.
        #[test]
        fn image_shifts_are_exact(
            lo in prop::array::uniform3(-5i32..5),
            size in prop::array::uniform3(1i32..6),
            rlo in prop::array::uniform3(-14i32..14),
            rsize in prop::array::uniform3(0i32..12),
            periodic in prop::array::uniform3(any::<bool>()),
        ) {
            let domain = IndexBox::from_lo_size(iv(lo[0], lo[1], lo[2]), iv(size[0], size[1], size[2]));
            let region = IndexBox::from_lo_size(iv(rlo[0], rlo[1], rlo[2]), iv(rsize[0], rsize[1], rsize[2]));
            let got = image_shifts(&domain, periodic, &region);
            let mut want = Vec::new();
            let k = |d: usize| if periodic[d] { -30..=30 } else { 0..=0 };
            for z in k(2) {
                for y in k(1) {
                    for x in k(0) {
                        let s = iv(x * size[0], y * size[1], z * size[2]);
                        if domain.shift(&s).intersects(&region) {
                            want.push(s);
                        }
                    }
                }
            }
            if want.contains(&iv(0, 0, 0)) {
                prop_assert_eq!(got.first(), Some(&iv(0, 0, 0)));
            }
            let mut g = got.clone();
            g.sort_by_key(|s| (s.z, s.y, s.x));
            want.sort_by_key(|s| (s.z, s.y, s.x));
            prop_assert_eq!(g, want);
        }

        /// The nesting region equals its cell-by-cell definition: cells of a
        /// patch whose every neighbour within the buffer is covered after
        /// wrapping across periodic faces (or lies outside across another
        /// face). Small domains and large buffers reach several periods.
        #[test]
        fn periodic_region_is_the_definition(
            size in prop::array::uniform3(2i32..9),
            cuts in prop::array::uniform3(0.2f64..0.8),
            keep in prop::collection::vec(any::<bool>(), 8),
            periodic in prop::array::uniform3(any::<bool>()),
            buffer in 0i32..4,
        ) {
            let domain = IndexBox::from_lo_size(iv(-2, 1, 0), iv(size[0], size[1], size[2]));
            let mut patches = Vec::new();
            let halves = |d: usize| {
                let m = domain.lo[d] + ((cuts[d] * size[d] as f64) as i32).max(1);
                [(domain.lo[d], m - 1), (m, domain.hi[d])]
            };
            let mut k = 0;
            for z in halves(2) {
                for y in halves(1) {
                    for x in halves(0) {
                        let b = IndexBox::new(iv(x.0, y.0, z.0), iv(x.1, y.1, z.1));
                        if keep[k] && !b.is_empty() {
                            patches.push(b);
                        }
                        k += 1;
                    }
                }
            }
            let n = Nesting::from_patches_periodic(domain, periodic, &patches, buffer).unwrap();
            prop_assert!(first_overlap(n.allowed()).is_none());
            let covered = |c: &IntVect| patches.iter().any(|p| p.contains(c));
            for c in domain.iter() {
                let expect = covered(&c)
                    && IndexBox::new(c, c).grow(buffer).iter().all(|q| {
                        wrap_cell(&domain, periodic, q).is_none_or(|w| covered(&w))
                    });
                prop_assert_eq!(n.covered_cells(&IndexBox::new(c, c)), expect as i64, "cell {:?}", c);
            }
        }
    }

    #[test]
    fn periodic_faces_count_images() {
        // Periodic in x: a patch at the low x face is nested there only when
        // the high x face is covered too.
        let domain = IndexBox::new(iv(0, 0, 0), iv(15, 15, 15));
        let low = IndexBox::new(iv(0, 0, 0), iv(7, 15, 15));
        let high = IndexBox::new(iv(14, 0, 0), iv(15, 15, 15));
        let x0 = IndexBox::new(iv(0, 4, 4), iv(1, 11, 11));
        let n = Nesting::from_patches_periodic(domain, [true, false, false], &[low], 2).unwrap();
        assert_eq!(n.periodic(), [true, false, false]);
        assert_eq!(n.covered_cells(&x0), 0);
        let n =
            Nesting::from_patches_periodic(domain, [true, false, false], &[low, high], 2).unwrap();
        assert!(n.contains_box(&x0));
        // Across a physical face nothing is needed.
        let n = Nesting::from_patches(domain, &[low], 2).unwrap();
        assert!(n.contains_box(&x0));
        assert!(!n.contains_box(&x0.shift(&iv(5, 0, 0))));
    }

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
