//! Uniform blocks instead of Berger–Rigoutsos
//! ([`super::ClusterOptions::blocks`]): the new level is the set of aligned
//! blocks of one size that hold tags, as codes with uniform patches build
//! their levels (GAMER's, or an octree's blocks), for comparing such
//! hierarchies with quilt's non-uniform ones on the same problem (the
//! founding paper's Figure 9: uniform 16³ patches against non-uniform).
//!
//! A block wholly inside the nesting region is kept whole. One that crosses
//! the region's edge keeps its parts inside the region that hold tags, the
//! parts of one box joined, so that no tag inside the region is lost and
//! no box leaves it; such parts are the only blocks of another size.

use std::collections::BTreeMap;

use crate::index::{IndexBox, iv};
use crate::tag::TagBox;

use super::berger_rigoutsos::Candidate;
use super::nesting::Nesting;

/// The block of side `side` at block index `(x, y, z)`.
fn block(x: i32, y: i32, z: i32, side: i32) -> IndexBox {
    let lo = iv(x * side, y * side, z * side);
    IndexBox::new(lo, iv(lo.x + side - 1, lo.y + side - 1, lo.z + side - 1))
}

/// Tags of `fields` inside `b`.
fn tags_in(fields: &[&TagBox], b: &IndexBox) -> u64 {
    fields
        .iter()
        .filter(|t| t.region().intersects(b))
        .map(|t| t.count_in(b))
        .sum()
}

/// Joins boxes of `parts` whose union is a box, until none are left to
/// join.
fn join(parts: &mut Vec<IndexBox>) {
    'again: loop {
        for i in 0..parts.len() {
            for j in i + 1..parts.len() {
                let hull = parts[i].bounding(&parts[j]);
                if hull.num_cells() == parts[i].num_cells() + parts[j].num_cells() {
                    parts[i] = hull;
                    parts.swap_remove(j);
                    continue 'again;
                }
            }
        }
        return;
    }
}

/// Appends to `out` the blocks of side `side` (tag index space, aligned to
/// multiples of `side`) that hold tags of `fields`, in `(z, y, x)` order of
/// their blocks, each with itself as the region it may grow in; a block
/// the nesting region does not wholly contain gives its parts inside the
/// region that hold tags instead. The boxes are disjoint and inside the
/// nesting region, and cover every tag of `fields` inside it.
pub(crate) fn blocks(fields: &[&TagBox], nesting: &Nesting, side: i32, out: &mut Vec<Candidate>) {
    let mut tagged: BTreeMap<(i32, i32, i32), u64> = BTreeMap::new();
    for t in fields.iter().filter(|t| t.any()) {
        let r = t.region().coarsen(side);
        for q in r.iter() {
            let n = t.count_in(&block(q.x, q.y, q.z, side));
            if n > 0 {
                *tagged.entry((q.z, q.y, q.x)).or_default() += n;
            }
        }
    }
    let mut parts = Vec::new();
    for ((z, y, x), n) in tagged {
        let b = block(x, y, z, side);
        if nesting.contains_box(&b) {
            out.push(Candidate {
                b,
                region: b,
                tags: n,
            });
            continue;
        }
        parts.clear();
        parts.extend(
            nesting
                .allowed()
                .iter()
                .map(|a| a.intersect(&b))
                .filter(|p| !p.is_empty()),
        );
        join(&mut parts);
        for p in &parts {
            let tags = tags_in(fields, p);
            if tags > 0 {
                // Parts of one block may not grow into each other: each
                // is its own region (room outside it is searched later).
                out.push(Candidate {
                    b: *p,
                    region: *p,
                    tags,
                });
            }
        }
    }
}
