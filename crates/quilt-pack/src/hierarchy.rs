//! Packing the patches of a `quilt-mesh` hierarchy: each patch's
//! ghost-inclusive box is one item (Raghavan & Vadhiyar 2015, section 3.1).
//!
//! With uniform time stepping every level advances together, so
//! [`pack_hierarchy`] packs the patches of all levels into shared bins.
//! With subcycling (levels advanced level by level) pack each level on its
//! own with [`pack_patches`] over [`Hierarchy::level_range`].

use quilt_mesh::{Hierarchy, PatchId};
use serde::{Deserialize, Serialize};

use crate::{Extent, PackError, PackOptions, PackWorkspace, Packing, Placement, pack_with};

/// The patch an item of a [`HierarchyPacking`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PatchRef {
    /// Index of the patch in [`Hierarchy::patches`].
    pub index: usize,
    /// The patch's stable id.
    pub id: PatchId,
    /// The patch's level.
    pub level: usize,
}

/// Patches of a hierarchy packed into bins: item `i` of `packing` is patch
/// `patches[i]`, placed with its ghost cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HierarchyPacking {
    /// The packing of the ghost-inclusive patch boxes.
    pub packing: Packing,
    /// The patch of each item.
    pub patches: Vec<PatchRef>,
}

impl HierarchyPacking {
    /// The patches of each bin with their placements, by bin index and, in
    /// a bin, by item order: the form a batch layout is built from.
    pub fn bins(&self) -> Vec<Vec<(PatchRef, Placement)>> {
        let mut bins = vec![Vec::new(); self.packing.bins_used];
        for (patch, place) in self.patches.iter().zip(&self.packing.placements) {
            if let Some(bin) = bins.get_mut(place.bin) {
                bin.push((*patch, *place));
            }
        }
        bins
    }

    /// The placement of the patch with hierarchy index `index`, if packed.
    pub fn placement_of(&self, index: usize) -> Option<&Placement> {
        self.patches
            .iter()
            .position(|p| p.index == index)
            .map(|i| &self.packing.placements[i])
    }
}

/// The ghost-inclusive extents of the given patches, as items.
///
/// # Errors
/// [`PackError::UnknownPatch`] for an index past the hierarchy's patches;
/// [`PackError::EmptyItem`] for a patch with an empty box (which a
/// validated hierarchy does not have).
pub fn patch_extents(hierarchy: &Hierarchy, patches: &[usize]) -> Result<Vec<Extent>, PackError> {
    patches
        .iter()
        .enumerate()
        .map(|(item, &index)| {
            let patch = hierarchy.patch(index).ok_or(PackError::UnknownPatch {
                item,
                index,
                patches: hierarchy.num_patches(),
            })?;
            let size = patch.size_with_ghosts();
            let side = |a: usize| u32::try_from(size[a]).unwrap_or(0);
            let extent = [side(0), side(1), side(2)];
            if extent.contains(&0) {
                return Err(PackError::EmptyItem { item, extent });
            }
            Ok(extent)
        })
        .collect()
}

/// Packs the given patches (indices into [`Hierarchy::patches`]) of
/// `hierarchy` into bins of extent `bin`.
///
/// # Errors
/// As [`patch_extents`] and [`crate::pack`]; item indices in errors are
/// positions in `patches`.
pub fn pack_patches(
    hierarchy: &Hierarchy,
    patches: &[usize],
    bin: Extent,
    opts: &PackOptions,
    workspace: &mut PackWorkspace,
) -> Result<HierarchyPacking, PackError> {
    let items = patch_extents(hierarchy, patches)?;
    let packing = pack_with(workspace, &items, bin, opts)?;
    let patches = patches
        .iter()
        .map(|&index| {
            let p = &hierarchy.patches()[index];
            PatchRef {
                index,
                id: p.id(),
                level: p.level(),
            }
        })
        .collect();
    Ok(HierarchyPacking { packing, patches })
}

/// Packs every patch of `hierarchy`, all levels sharing bins (uniform time
/// stepping). Item `i` is patch `i` of [`Hierarchy::patches`].
///
/// # Errors
/// As [`crate::pack`]: a patch larger than the bin (named by its index).
///
/// # Example
/// ```
/// use quilt_mesh::{SyntheticSpec, generate};
/// use quilt_pack::{PackOptions, pack_hierarchy};
///
/// let h = generate(&SyntheticSpec { patches: 120, seed: 3, ..Default::default() }).unwrap();
/// let packed = pack_hierarchy(&h, [64, 64, 64], &PackOptions::default()).unwrap();
/// assert_eq!(packed.patches.len(), 120);
/// assert!(packed.packing.bins_used >= packed.packing.lower_bound());
/// ```
pub fn pack_hierarchy(
    hierarchy: &Hierarchy,
    bin: Extent,
    opts: &PackOptions,
) -> Result<HierarchyPacking, PackError> {
    let all: Vec<usize> = (0..hierarchy.num_patches()).collect();
    pack_patches(hierarchy, &all, bin, opts, &mut PackWorkspace::new())
}
