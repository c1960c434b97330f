//! From deck values to the configuration types of the other crates.

use quilt_mesh::cluster::ClusterOptions;
use quilt_mesh::{Geometry, IndexBox, MeshError, SizeLimits, iv};
use quilt_sweep::physics::{Gas, IdealGas, NCOMP};
use quilt_sweep::{ConfigError, Scheme, Solver};

use super::{Boundary, Deck};

/// Cuts `n` cells into `ceil(n / max)` near-equal pieces (the first
/// `n mod k` one cell longer), as `(start, len)`.
fn cut(n: i32, max: i32) -> Vec<(i32, i32)> {
    let max = max.max(1);
    let k = (n + max - 1) / max;
    let (q, r) = (n / k.max(1), n % k.max(1));
    let mut out = Vec::with_capacity(k as usize);
    let mut start = 0;
    for i in 0..k {
        let len = q + i32::from(i < r);
        out.push((start, len));
        start += len;
    }
    out
}

/// The level-0 patches: the base grid `base_cells` cut into near-equal
/// boxes of at most `base_patch` cells per side, x fastest.
pub fn base_patches(base_cells: [i32; 3], base_patch: i32) -> Vec<IndexBox> {
    let [cx, cy, cz] = base_cells.map(|n| cut(n, base_patch));
    let mut out = Vec::with_capacity(cx.len() * cy.len() * cz.len());
    for &(z0, nz) in &cz {
        for &(y0, ny) in &cy {
            for &(x0, nx) in &cx {
                out.push(IndexBox::new(
                    iv(x0, y0, z0),
                    iv(x0 + nx - 1, y0 + ny - 1, z0 + nz - 1),
                ));
            }
        }
    }
    out
}

impl Deck {
    /// The hydro scheme with its limiter.
    pub fn scheme(&self) -> Result<Scheme, ConfigError> {
        let limiter = (!self.hydro.limiter.is_empty()).then_some(self.hydro.limiter.as_str());
        Scheme::from_names(&self.hydro.scheme, limiter)
    }

    /// Components of the state: the Euler five, then one per passive
    /// scalar of `hydro.scalars`.
    pub fn ncomp(&self) -> usize {
        NCOMP + self.hydro.scalars.len()
    }

    /// The gas: the ideal gas of `hydro.gamma` and the floors.
    pub fn gas(&self) -> Gas {
        Gas {
            eos: IdealGas {
                gamma: self.hydro.gamma,
            },
            density_floor: self.hydro.density_floor,
            pressure_floor: self.hydro.pressure_floor,
        }
    }

    /// The CPU solver of the deck's scheme and gas.
    pub fn solver(&self) -> Result<Solver, ConfigError> {
        Solver::new(self.scheme()?, self.gas())
    }

    /// Ghost width of every patch: what the scheme consumes in one step.
    pub fn ghost(&self) -> Result<i32, ConfigError> {
        Ok(self.scheme()?.ghost_width() as i32)
    }

    /// The refinement ratio of each level above 0 (`max_levels - 1` values).
    pub fn fine_ratios(&self) -> Vec<i32> {
        let n = self.amr.max_levels.saturating_sub(1);
        match self.amr.ratios.as_slice() {
            [r] => vec![*r; n],
            rs => rs.iter().copied().take(n).collect(),
        }
    }

    /// Which axes are periodic (both faces `periodic`).
    pub fn periodic(&self) -> [bool; 3] {
        let f = self.boundary.faces();
        [0, 1, 2].map(|a| f[2 * a] == Boundary::Periodic && f[2 * a + 1] == Boundary::Periodic)
    }

    /// The geometry: physical box, base grid, every possible level, periodic axes.
    pub fn geometry(&self) -> Result<Geometry, MeshError> {
        let b = self.domain.base_cells;
        Ok(Geometry::new(
            self.domain.lo,
            self.domain.hi,
            iv(b[0], b[1], b[2]),
            &self.fine_ratios(),
        )?
        .with_periodic(self.periodic()))
    }

    /// Patch side limits, ghosts included.
    pub fn size_limits(&self) -> SizeLimits {
        SizeLimits {
            min: self.amr.min_patch,
            max: self.amr.max_patch,
        }
    }

    /// Clustering options for creating level `fine_level` (>= 1) from the
    /// tags of the level below.
    pub fn cluster_options(&self, fine_level: usize, ghost: i32) -> ClusterOptions {
        let ratios = self.fine_ratios();
        ClusterOptions {
            ratio: ratios
                .get(fine_level.saturating_sub(1))
                .copied()
                .unwrap_or(2),
            efficiency: self.amr.efficiency,
            combine_efficiency: self.amr.combine_efficiency,
            min_patch: self.amr.min_patch,
            max_patch: self.amr.max_patch,
            ghost,
            nesting_buffer: self.amr.nesting_buffer,
            undo_unprofitable_cuts: true,
            blocks: self.blocks(),
        }
    }

    /// `amr.blocks` as clustering takes it: `None` for Berger–Rigoutsos.
    pub fn blocks(&self) -> Option<i32> {
        (self.amr.blocks != 0).then_some(self.amr.blocks)
    }

    /// The level-0 patch boxes.
    pub fn base_boxes(&self) -> Vec<IndexBox> {
        base_patches(self.domain.base_cells, self.amr.base_patch)
    }

    /// Number of level-0 patches, computed without listing them (a deck
    /// may ask for more than fit in memory).
    pub fn base_patch_count(&self) -> u128 {
        let k = |n: i32| (n.max(0) as u128).div_ceil(self.amr.base_patch.max(1) as u128);
        self.domain.base_cells.iter().map(|&n| k(n)).product()
    }

    /// Bytes the state of level 0 takes: both time levels of every base
    /// patch with its ghost cells, plus per-patch bookkeeping. A lower
    /// bound of a run's memory, computed without allocating anything, so
    /// that a deck too large for the machine is refused before the run
    /// starts.
    pub fn level0_bytes(&self, ghost: i32) -> u128 {
        let b = self.amr.base_patch.max(1) as u128;
        // Each axis is cut into k near-equal pieces; every piece grows by
        // 2 ghost cells, so the ghost-grown cells are a product per axis.
        let cells: u128 = self
            .domain
            .base_cells
            .iter()
            .map(|&n| {
                let n = n.max(0) as u128;
                n + 2 * ghost.max(0) as u128 * n.div_ceil(b)
            })
            .product();
        let real = self.run.precision.bytes() as u128;
        cells * self.ncomp() as u128 * real * TIME_LEVELS
            + self.base_patch_count() * PATCH_OVERHEAD_BYTES
    }
}

/// Time levels of the state a step keeps (old and new).
const TIME_LEVELS: u128 = 2;

/// Host memory a patch takes besides its state (layout, fill plans, batch
/// records), on the high side.
const PATCH_OVERHEAD_BYTES: u128 = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_near_equal_and_cover() {
        assert_eq!(cut(32, 32), vec![(0, 32)]);
        assert_eq!(cut(33, 32), vec![(0, 17), (17, 16)]);
        assert_eq!(cut(10, 3), vec![(0, 3), (3, 3), (6, 2), (8, 2)]);
        let boxes = base_patches([40, 16, 8], 16);
        assert_eq!(boxes.len(), 3);
        assert_eq!(
            boxes.iter().map(|b| b.num_cells()).sum::<i64>(),
            40 * 16 * 8
        );
    }
}
