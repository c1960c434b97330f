//! Shared generators for the integration tests.
#![allow(dead_code)]

use quilt_batch::{BinWork, PatchWork};
use rand::{Rng, RngExt};

/// Ghost width of the RTVD/TVD sweeps.
pub const GHOST: u32 = 3;
/// Five f64 components.
pub const BYTES_PER_CELL: u32 = 40;

/// A random patch: interior `lo..=hi` per axis, a random split of its ghost
/// cells into interpolated (fine patches next to coarse ones), copied and
/// boundary ghosts, and a random share of flux-register faces.
pub fn random_patch(rng: &mut impl Rng, lo: u32, hi: u32) -> PatchWork {
    let extent = [0; 3].map(|_: u32| rng.random_range(lo..=hi) + 2 * GHOST);
    let p = PatchWork::new(extent, GHOST);
    let g = p.ghost_cells();
    let interp = rng.random_range(0..=g);
    let copied = rng.random_range(0..=g - interp);
    let flux = rng.random_range(0..=p.interior_faces());
    p.with_ghost_fill(interp, copied).with_flux_faces(flux)
}

/// A bin of 1..=max_patches random patches whose packed volume stays below a
/// 64³ bin (what quilt-pack produces), at least one patch.
pub fn random_bin(rng: &mut impl Rng, max_patches: usize) -> BinWork {
    let n = rng.random_range(1..=max_patches);
    let mut patches = Vec::with_capacity(n);
    let mut volume = 0u64;
    for _ in 0..n {
        let p = random_patch(rng, 8, 40);
        if !patches.is_empty() && volume + p.cells() > 64 * 64 * 64 {
            break;
        }
        volume += p.cells();
        patches.push(p);
    }
    BinWork::new(patches, BYTES_PER_CELL).expect("generated bins are valid")
}

/// `n` random bins.
pub fn random_bins(rng: &mut impl Rng, n: usize, max_patches: usize) -> Vec<BinWork> {
    (0..n).map(|_| random_bin(rng, max_patches)).collect()
}
