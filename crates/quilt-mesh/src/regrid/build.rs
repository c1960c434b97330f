//! The new hierarchy layout from the new level boxes.

use std::collections::HashMap;

use crate::hierarchy::{Hierarchy, PatchId, PatchSpec};
use crate::index::IndexBox;

use super::RegridError;

/// Builds the hierarchy with `levels[l]` as the interiors of level `l`
/// (level 0 must be `old`'s level 0). A patch whose level and interior are
/// unchanged keeps its id; new patches get ids above every old one.
/// Parents are left for [`Hierarchy::new`] to find (the coarse patch each
/// overlaps most).
pub fn build_hierarchy(
    old: &Hierarchy,
    levels: &[Vec<IndexBox>],
) -> Result<Hierarchy, RegridError> {
    let mut known: HashMap<(usize, IndexBox), PatchId> = HashMap::new();
    let mut next = 0u32;
    for p in old.patches() {
        known.insert((p.level(), p.interior()), p.id());
        next = next.max(p.id().0.saturating_add(1));
    }
    let mut specs = Vec::with_capacity(levels.len());
    for (l, boxes) in levels.iter().enumerate() {
        let mut level = Vec::with_capacity(boxes.len());
        for b in boxes {
            let id = match known.get(&(l, *b)) {
                Some(&id) => id,
                None => {
                    let id = PatchId(next);
                    next = next.checked_add(1).ok_or(RegridError::IdsExhausted)?;
                    id
                }
            };
            level.push(PatchSpec {
                id,
                interior: *b,
                parent: None,
            });
        }
        specs.push(level);
    }
    Ok(Hierarchy::new(
        old.geometry().clone(),
        old.ghost(),
        old.limits(),
        specs,
    )?)
}
