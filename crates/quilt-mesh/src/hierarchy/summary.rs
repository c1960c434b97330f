//! A printable digest of a hierarchy: patches and cells per level, the
//! distribution of patch sides, ghost-cell work.

use std::fmt;

use super::layout::Hierarchy;
use super::patch::GhostCounts;

/// Counts for one level.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelSummary {
    /// The level.
    pub level: usize,
    /// Ratio to the level below (1 on level 0).
    pub ratio: i32,
    /// Number of patches.
    pub patches: usize,
    /// Interior cells.
    pub interior_cells: i64,
    /// Cells including ghosts (what a solver sweeps over).
    pub cells_with_ghosts: i64,
    /// Fraction of the domain the level covers.
    pub domain_fraction: f64,
}

/// A digest of a hierarchy; `Display` prints it as tables.
#[derive(Debug, Clone, PartialEq)]
pub struct HierarchySummary {
    /// Ghost width.
    pub ghost: i32,
    /// Per-level counts, coarsest first.
    pub levels: Vec<LevelSummary>,
    /// Histogram of patch sides including ghosts (three sides per patch):
    /// `(lo, hi, count)` for sides in `lo..=hi`, bins 8 wide.
    pub side_histogram: Vec<(i32, i32, usize)>,
    /// Ghost cells by how they are filled, summed over all patches.
    pub ghost_counts: GhostCounts,
}

impl Hierarchy {
    /// Patches and cells per level, side histogram, ghost counts.
    pub fn summary(&self) -> HierarchySummary {
        let levels = (0..self.num_levels())
            .map(|l| {
                let ps = self.level_patches(l);
                let lg = &self.levels[l];
                let interior_cells: i64 = ps.iter().map(|p| p.interior.num_cells()).sum();
                LevelSummary {
                    level: l,
                    ratio: lg.ratio,
                    patches: ps.len(),
                    interior_cells,
                    cells_with_ghosts: ps.iter().map(|p| p.ghost_box.num_cells()).sum(),
                    domain_fraction: interior_cells as f64
                        / lg.domain.size().iter().map(|&n| n as f64).product::<f64>(),
                }
            })
            .collect();
        let sides: Vec<i32> = self
            .patches
            .iter()
            .flat_map(|p| {
                let s = p.size_with_ghosts();
                [s.x, s.y, s.z]
            })
            .collect();
        let lo = sides.iter().copied().min().unwrap_or(0).div_euclid(8) * 8;
        let hi = sides.iter().copied().max().unwrap_or(0);
        let side_histogram = (lo..=hi)
            .step_by(8)
            .map(|b| {
                let n = sides.iter().filter(|&&s| b <= s && s < b + 8).count();
                (b, b + 7, n)
            })
            .collect();
        let mut ghost_counts = GhostCounts::default();
        for p in &self.patches {
            let g = p.ghost_counts();
            ghost_counts.copied += g.copied;
            ghost_counts.interpolated += g.interpolated;
            ghost_counts.physical += g.physical;
        }
        HierarchySummary {
            ghost: self.ghost,
            levels,
            side_histogram,
            ghost_counts,
        }
    }
}

impl fmt::Display for HierarchySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let patches: usize = self.levels.iter().map(|l| l.patches).sum();
        let cells: i64 = self.levels.iter().map(|l| l.interior_cells).sum();
        let with_ghosts: i64 = self.levels.iter().map(|l| l.cells_with_ghosts).sum();
        writeln!(
            f,
            "{patches} patches on {} levels, {cells} interior cells, {with_ghosts} with {} ghost cells per side",
            self.levels.len(),
            self.ghost
        )?;
        writeln!(
            f,
            "{:>5} {:>5} {:>8} {:>14} {:>14} {:>10}",
            "level", "ratio", "patches", "interior", "with ghosts", "coverage"
        )?;
        for l in &self.levels {
            writeln!(
                f,
                "{:>5} {:>5} {:>8} {:>14} {:>14} {:>9.4}%",
                l.level,
                l.ratio,
                l.patches,
                l.interior_cells,
                l.cells_with_ghosts,
                100.0 * l.domain_fraction
            )?;
        }
        writeln!(f, "patch sides including ghosts (3 per patch):")?;
        let most = self
            .side_histogram
            .iter()
            .map(|b| b.2)
            .max()
            .unwrap_or(0)
            .max(1);
        for (lo, hi, n) in &self.side_histogram {
            let bar = "#".repeat((40 * n).div_ceil(most));
            writeln!(f, "{lo:>4}..={hi:<4} {n:>6} {bar}")?;
        }
        let g = &self.ghost_counts;
        let t = g.total().max(1) as f64;
        write!(
            f,
            "ghost cells: {} copied from siblings ({:.1}%), {} interpolated ({:.1}%), {} physical ({:.1}%)",
            g.copied,
            100.0 * g.copied as f64 / t,
            g.interpolated,
            100.0 * g.interpolated as f64 / t,
            g.physical,
            100.0 * g.physical as f64 / t
        )
    }
}
