//! Physical domain, refinement ratios and per-level cell sizes.
//!
//! Level 0 divides the physical box `prob_lo ..= prob_hi` into
//! `base_cells` cells; level `l` refines level `l - 1` by `ratio(l)` (2 or 4)
//! along every axis, so its domain box is `0 ..= base_cells * R_l - 1` with
//! `R_l` the product of the ratios up to `l`. Cell `p` of level `l` spans
//! `prob_lo + p * dx_l ..= prob_lo + (p + 1) * dx_l`.

use nalgebra::Vector3;

use crate::error::MeshError;
use crate::index::{IndexBox, IntVect, iv};

/// A point or extent in physical space.
pub type RealVect = Vector3<f64>;

/// The largest number of cells along an axis of any level: keeps every
/// index (grown by ghosts, refined once more) far from `i32` overflow.
pub const MAX_CELLS_PER_AXIS: i64 = 1 << 30;

/// Validates a refinement ratio: only 2 and 4 are supported.
pub fn check_ratio(level: usize, ratio: i32) -> Result<i32, MeshError> {
    match ratio {
        2 | 4 => Ok(ratio),
        _ => Err(MeshError::BadRatio { level, ratio }),
    }
}

/// The physical domain and the index spaces of every level.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    prob_lo: RealVect,
    prob_hi: RealVect,
    base_cells: IntVect,
    /// `ratios[l]` refines level `l - 1` into level `l`; `ratios[0] == 1`.
    ratios: Vec<i32>,
    periodic: [bool; 3],
}

impl Geometry {
    /// A geometry over the physical box `prob_lo ..= prob_hi` with
    /// `base_cells` level-0 cells. `fine_ratios[k]` is the refinement ratio
    /// from level `k` to level `k + 1` (2 or 4), so there are
    /// `fine_ratios.len() + 1` levels. No axis is periodic.
    pub fn new(
        prob_lo: [f64; 3],
        prob_hi: [f64; 3],
        base_cells: IntVect,
        fine_ratios: &[i32],
    ) -> Result<Self, MeshError> {
        for d in 0..3 {
            if !(prob_lo[d].is_finite() && prob_hi[d].is_finite() && prob_hi[d] > prob_lo[d]) {
                return Err(MeshError::invalid(
                    "geometry physical domain",
                    format!(
                        "axis {d}: need finite prob_lo < prob_hi, got {} and {}",
                        prob_lo[d], prob_hi[d]
                    ),
                ));
            }
            if base_cells[d] < 1 {
                return Err(MeshError::invalid(
                    "geometry base cells",
                    format!("axis {d}: need at least 1 cell, got {}", base_cells[d]),
                ));
            }
        }
        let mut g = Geometry {
            prob_lo: RealVect::from(prob_lo),
            prob_hi: RealVect::from(prob_hi),
            base_cells,
            ratios: vec![1],
            periodic: [false; 3],
        };
        g.check_extent(0)?;
        for &r in fine_ratios {
            g.push_level(r)?;
        }
        Ok(g)
    }

    /// A geometry whose cells are cubes, with the longest side of the
    /// domain of length 1 and the low corner at the origin. This is what
    /// hierarchy files (which carry no physical extent) get.
    pub fn with_cubic_cells(base_cells: IntVect, fine_ratios: &[i32]) -> Result<Self, MeshError> {
        let longest = base_cells.max().max(1) as f64;
        let hi = [
            base_cells.x as f64 / longest,
            base_cells.y as f64 / longest,
            base_cells.z as f64 / longest,
        ];
        Self::new([0.0; 3], hi, base_cells, fine_ratios)
    }

    /// The same geometry with the given axes periodic.
    pub fn with_periodic(mut self, periodic: [bool; 3]) -> Self {
        self.periodic = periodic;
        self
    }

    /// Adds a finer level refining the current finest by `ratio` (2 or 4).
    pub fn push_level(&mut self, ratio: i32) -> Result<(), MeshError> {
        let level = self.ratios.len();
        check_ratio(level, ratio)?;
        self.ratios.push(ratio);
        if let Err(e) = self.check_extent(level) {
            self.ratios.pop();
            return Err(e);
        }
        Ok(())
    }

    /// Drops levels so that at most `num_levels` remain (at least one).
    pub fn truncate_levels(&mut self, num_levels: usize) {
        self.ratios.truncate(num_levels.max(1));
    }

    fn check_extent(&self, level: usize) -> Result<(), MeshError> {
        let r: i64 = self.ratios[..=level].iter().map(|&r| r as i64).product();
        for d in 0..3 {
            let n = self.base_cells[d] as i64 * r;
            if n > MAX_CELLS_PER_AXIS {
                return Err(MeshError::invalid(
                    format!("geometry level {level}"),
                    format!(
                        "axis {d} would have {n} cells, more than the supported {MAX_CELLS_PER_AXIS}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Number of levels the geometry defines.
    pub fn num_levels(&self) -> usize {
        self.ratios.len()
    }

    /// Low corner of the physical domain.
    pub fn prob_lo(&self) -> RealVect {
        self.prob_lo
    }

    /// High corner of the physical domain.
    pub fn prob_hi(&self) -> RealVect {
        self.prob_hi
    }

    /// Level-0 cells along each axis.
    pub fn base_cells(&self) -> IntVect {
        self.base_cells
    }

    /// Which axes are periodic.
    pub fn periodic(&self) -> [bool; 3] {
        self.periodic
    }

    /// Whether any axis is periodic.
    pub fn is_any_periodic(&self) -> bool {
        self.periodic.iter().any(|&p| p)
    }

    /// The refinement ratios of every level relative to the level below
    /// (`1` for level 0).
    pub fn ratios(&self) -> &[i32] {
        &self.ratios
    }

    /// The index space and cell size of one level.
    pub fn level(&self, level: usize) -> Result<LevelGeometry, MeshError> {
        if level >= self.ratios.len() {
            return Err(MeshError::NoSuchLevel {
                level,
                num_levels: self.ratios.len(),
            });
        }
        let cum: i32 = self.ratios[..=level].iter().product();
        let cells = self.base_cells * cum;
        let extent = self.prob_hi - self.prob_lo;
        let dx = RealVect::new(
            extent.x / cells.x as f64,
            extent.y / cells.y as f64,
            extent.z / cells.z as f64,
        );
        Ok(LevelGeometry {
            level,
            ratio: self.ratios[level],
            cumulative_ratio: cum,
            domain: IndexBox::from_lo_size(iv(0, 0, 0), cells),
            prob_lo: self.prob_lo,
            dx,
            periodic: self.periodic,
        })
    }

    /// Every level's geometry, coarsest first.
    pub fn levels(&self) -> impl Iterator<Item = LevelGeometry> + '_ {
        (0..self.num_levels()).filter_map(|l| self.level(l).ok())
    }
}

/// Index space and cell size of one level (cheap to copy; all methods are
/// infallible once obtained from [`Geometry::level`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelGeometry {
    /// The level.
    pub level: usize,
    /// Ratio to the level below (`1` for level 0).
    pub ratio: i32,
    /// Product of the ratios of levels `1..=level`.
    pub cumulative_ratio: i32,
    /// Cells of the level: `0 ..= base_cells * cumulative_ratio - 1`.
    pub domain: IndexBox,
    /// Low corner of the physical domain.
    pub prob_lo: RealVect,
    /// Cell size along each axis.
    pub dx: RealVect,
    /// Which axes are periodic.
    pub periodic: [bool; 3],
}

impl LevelGeometry {
    /// Physical coordinates of the centre of cell `p`.
    #[inline]
    pub fn cell_center(&self, p: &IntVect) -> RealVect {
        RealVect::new(
            self.prob_lo.x + (p.x as f64 + 0.5) * self.dx.x,
            self.prob_lo.y + (p.y as f64 + 0.5) * self.dx.y,
            self.prob_lo.z + (p.z as f64 + 0.5) * self.dx.z,
        )
    }

    /// Physical coordinates of the low corner of cell `p`.
    #[inline]
    pub fn cell_lo_corner(&self, p: &IntVect) -> RealVect {
        RealVect::new(
            self.prob_lo.x + p.x as f64 * self.dx.x,
            self.prob_lo.y + p.y as f64 * self.dx.y,
            self.prob_lo.z + p.z as f64 * self.dx.z,
        )
    }

    /// Volume of one cell.
    #[inline]
    pub fn cell_volume(&self) -> f64 {
        self.dx.x * self.dx.y * self.dx.z
    }

    /// The cell that holds physical point `x`, if it lies in the domain.
    pub fn cell_at(&self, x: &RealVect) -> Option<IntVect> {
        let mut p = iv(0, 0, 0);
        for d in 0..3 {
            let f = ((x[d] - self.prob_lo[d]) / self.dx[d]).floor();
            if !f.is_finite() || f < self.domain.lo[d] as f64 || f > self.domain.hi[d] as f64 {
                return None;
            }
            p[d] = f as i32;
        }
        Some(p)
    }

    /// The domain extended without bound along periodic axes: the cells a
    /// patch may read without applying a physical boundary condition.
    pub fn periodic_domain(&self) -> IndexBox {
        let mut b = self.domain;
        for d in 0..3 {
            if self.periodic[d] {
                b.lo[d] = i32::MIN / 4;
                b.hi[d] = i32::MAX / 4;
            }
        }
        b
    }

    /// The shifts that map the domain onto its periodic images next to it:
    /// `-1, 0, +1` domain lengths along periodic axes, zero along the
    /// others, the zero shift first. Enough for any ghost width smaller
    /// than the domain.
    pub fn periodic_shifts(&self) -> Vec<IntVect> {
        let n = self.domain.size();
        let mut out = vec![iv(0, 0, 0)];
        let range = |d: usize| if self.periodic[d] { -1..=1 } else { 0..=0 };
        for k in range(2) {
            for j in range(1) {
                for i in range(0) {
                    let s = iv(i * n.x, j * n.y, k * n.z);
                    if s != iv(0, 0, 0) {
                        out.push(s);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_cells() {
        let g = Geometry::new([0.0, 0.0, 0.0], [2.0, 1.0, 1.0], iv(32, 16, 16), &[2, 4]).unwrap();
        assert_eq!(g.num_levels(), 3);
        let l0 = g.level(0).unwrap();
        let l2 = g.level(2).unwrap();
        assert_eq!(l0.ratio, 1);
        assert_eq!(l2.ratio, 4);
        assert_eq!(l2.cumulative_ratio, 8);
        assert_eq!(l2.domain, IndexBox::new(iv(0, 0, 0), iv(255, 127, 127)));
        assert!((l0.dx.x - 2.0 / 32.0).abs() < 1e-15);
        assert!((l2.dx.y - 1.0 / 128.0).abs() < 1e-15);
        let c = l0.cell_center(&iv(0, 15, 3));
        assert!((c.x - 1.0 / 32.0).abs() < 1e-15);
        assert!((c.y - 15.5 / 16.0).abs() < 1e-15);
        assert_eq!(
            l2.cell_at(&l2.cell_center(&iv(17, 3, 99))),
            Some(iv(17, 3, 99))
        );
        assert_eq!(l0.cell_at(&RealVect::new(2.5, 0.0, 0.0)), None);
        // The volume of the domain is the sum of its cells'.
        let vol = l2.cell_volume() * l2.domain.num_cells() as f64;
        assert!((vol - 2.0).abs() < 1e-12);
    }

    #[test]
    fn rejects_bad_input() {
        let e = Geometry::new([0.0; 3], [1.0; 3], iv(8, 8, 8), &[2, 3]).unwrap_err();
        assert!(
            matches!(e, MeshError::BadRatio { level: 2, ratio: 3 }),
            "{e}"
        );
        assert!(e.to_string().contains("level 2"));
        assert!(Geometry::new([0.0; 3], [1.0, 0.0, 1.0], iv(8, 8, 8), &[]).is_err());
        assert!(Geometry::new([0.0; 3], [1.0; 3], iv(8, 0, 8), &[]).is_err());
        assert!(Geometry::new([0.0; 3], [f64::NAN, 1.0, 1.0], iv(8, 8, 8), &[]).is_err());
        // 128 * 4^12 cells overflow the index space.
        let e = Geometry::new([0.0; 3], [1.0; 3], iv(128, 128, 128), &[4; 12]).unwrap_err();
        assert!(e.to_string().contains("level 12"), "{e}");
        assert!(Geometry::new([0.0; 3], [1.0; 3], iv(128, 128, 128), &[4; 11]).is_ok());
        let g = Geometry::with_cubic_cells(iv(4, 4, 4), &[]).unwrap();
        assert!(matches!(
            g.level(1),
            Err(MeshError::NoSuchLevel { level: 1, .. })
        ));
    }

    #[test]
    fn periodic_shifts() {
        let g = Geometry::with_cubic_cells(iv(8, 4, 4), &[2])
            .unwrap()
            .with_periodic([true, false, true]);
        let l1 = g.level(1).unwrap();
        let s = l1.periodic_shifts();
        assert_eq!(s.len(), 9);
        assert_eq!(s[0], iv(0, 0, 0));
        assert!(s.contains(&iv(16, 0, -8)));
        assert_eq!(l1.periodic_domain().lo.y, 0);
        let g = Geometry::with_cubic_cells(iv(8, 4, 4), &[]).unwrap();
        assert_eq!(g.level(0).unwrap().periodic_shifts(), vec![iv(0, 0, 0)]);
        assert!((g.prob_hi().y - 0.5).abs() < 1e-15);
    }
}
