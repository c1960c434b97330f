//! [`UniformGrid`]: global state, ghost fill with boundary conditions, and
//! the time loop.

use thiserror::Error;

use super::tiling::{Tile, tiles_from_cuts};
use crate::batch::Batch;
use crate::driver::{Solver, SweepOrder, Workspace};
use crate::error::{LayoutError, SweepError};
use crate::layout::{BatchLayout, PatchShape, data_index};
use crate::physics::{FloorCounts, NCOMP};
use crate::real::Real;

/// Boundary condition of one axis (both ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// Wrap around.
    Periodic,
    /// Zero gradient: ghost cells copy the nearest interior cell.
    Outflow,
    /// Mirror: ghost cells copy the mirrored interior cell with the normal
    /// momentum negated.
    Reflecting,
}

/// Invalid grid construction or use.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GridError {
    /// An axis has no cell.
    #[error("grid axis {axis} has no cells")]
    Empty {
        /// Axis.
        axis: usize,
    },
    /// The tile cuts of an axis do not add up to its cells.
    #[error("tile sizes along axis {axis} sum to {sum}, the grid has {cells} cells")]
    Cuts {
        /// Axis.
        axis: usize,
        /// Sum of the cuts.
        sum: u64,
        /// Cells of the axis.
        cells: u32,
    },
    /// The cell size must be finite and positive.
    #[error("cell size {0:?} must be finite and > 0")]
    Spacing([f64; 3]),
    /// The batch does not belong to this grid.
    #[error(
        "batch has {found} patches / components, grid needs {tiles} tiles and {NCOMP} components"
    )]
    Batch {
        /// Tiles of the grid.
        tiles: usize,
        /// What the batch has.
        found: String,
    },
    /// `t_end` must be finite and non-negative.
    #[error("end time {0} must be finite and >= 0")]
    EndTime(f64),
    /// The layout could not be built.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A step failed.
    #[error(transparent)]
    Sweep(#[from] SweepError),
}

/// Result of [`UniformGrid::run`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunSummary {
    /// Steps taken.
    pub steps: u64,
    /// Time reached.
    pub time: f64,
    /// Floor applications, summed over steps.
    pub floors: FloorCounts,
    /// Interior cell updates, summed over steps.
    pub cell_updates: u64,
}

/// A uniform grid of `cells` cells of size `dx`, cut into tiles, with its
/// conserved state stored globally (component-major, x fastest).
#[derive(Clone, Debug)]
pub struct UniformGrid<T> {
    cells: [u32; 3],
    dx: [f64; 3],
    boundary: [Boundary; 3],
    ghost: u32,
    tiles: Vec<Tile>,
    state: Vec<T>,
}

impl<T: Real> UniformGrid<T> {
    /// A zero-state grid whose axes are cut into the tile sizes `cuts`
    /// (each must sum to the axis' cells).
    pub fn new(
        cells: [u32; 3],
        dx: [f64; 3],
        boundary: [Boundary; 3],
        ghost: u32,
        cuts: [Vec<u32>; 3],
    ) -> Result<Self, GridError> {
        for a in 0..3 {
            if cells[a] == 0 {
                return Err(GridError::Empty { axis: a });
            }
            let sum: u64 = cuts[a].iter().map(|&c| u64::from(c)).sum();
            if sum != u64::from(cells[a]) || cuts[a].contains(&0) {
                return Err(GridError::Cuts {
                    axis: a,
                    sum,
                    cells: cells[a],
                });
            }
        }
        if dx.iter().any(|&h| !(h.is_finite() && h > 0.0)) {
            return Err(GridError::Spacing(dx));
        }
        let tiles = tiles_from_cuts(&cuts);
        let n = cells.iter().map(|&c| c as usize).product::<usize>() * NCOMP;
        Ok(Self {
            cells,
            dx,
            boundary,
            ghost,
            tiles,
            state: vec![T::zero(); n],
        })
    }

    /// Cells per axis.
    pub fn cells(&self) -> [u32; 3] {
        self.cells
    }

    /// Cell size.
    pub fn dx(&self) -> [f64; 3] {
        self.dx
    }

    /// The tiles, in patch order.
    pub fn tiles(&self) -> &[Tile] {
        &self.tiles
    }

    /// Patch shapes of the tiles (id = tile index), the input of bin packing
    /// and of the [`BatchLayout`] constructors.
    pub fn shapes(&self) -> Vec<PatchShape> {
        self.tiles
            .iter()
            .enumerate()
            .map(|(i, t)| PatchShape::new(i as u64, t.size, self.ghost, self.dx))
            .collect()
    }

    /// A batch with every tile in its own bin of edge `bin_edge`.
    pub fn one_per_slot_batch(&self, bin_edge: u32) -> Result<Batch<T>, GridError> {
        Ok(Batch::new(BatchLayout::one_per_slot(
            bin_edge,
            NCOMP as u32,
            &self.shapes(),
        )?))
    }

    /// A batch with tile `i` at `placements[i] = (bin, offset)`.
    pub fn packed_batch(
        &self,
        bin_edge: u32,
        placements: &[(u32, [u32; 3])],
    ) -> Result<Batch<T>, GridError> {
        Ok(Batch::new(BatchLayout::packed(
            bin_edge,
            NCOMP as u32,
            &self.shapes(),
            placements,
        )?))
    }

    /// Global state index of component `c` at cell `i`.
    #[inline(always)]
    fn index(&self, c: usize, i: [usize; 3]) -> usize {
        let [nx, ny, nz] = self.cells.map(|n| n as usize);
        ((c * nz + i[2]) * ny + i[1]) * nx + i[0]
    }

    /// Sets every cell from `f(index, centre)` returning conserved values;
    /// cell centres are `(i + 1/2) dx`.
    pub fn init(&mut self, mut f: impl FnMut([u32; 3], [f64; 3]) -> [f64; NCOMP]) {
        let [nx, ny, nz] = self.cells;
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let x = [i, j, k].map(|v| f64::from(v) + 0.5);
                    let u = f([i, j, k], [0, 1, 2].map(|a| x[a] * self.dx[a]));
                    for (c, v) in u.into_iter().enumerate() {
                        let at = self.index(c, [i as usize, j as usize, k as usize]);
                        self.state[at] = T::from_f64(v);
                    }
                }
            }
        }
    }

    /// Conserved state of cell `i`.
    pub fn get(&self, i: [u32; 3]) -> Option<[T; NCOMP]> {
        if (0..3).any(|a| i[a] >= self.cells[a]) {
            return None;
        }
        let i = i.map(|v| v as usize);
        Some(std::array::from_fn(|c| self.state[self.index(c, i)]))
    }

    /// Sum over cells of each conserved component times the cell volume.
    pub fn totals(&self) -> [f64; NCOMP] {
        let vol = self.dx.iter().product::<f64>();
        let n = self.state.len() / NCOMP;
        std::array::from_fn(|c| {
            self.state[c * n..(c + 1) * n]
                .iter()
                .map(|v| v.as_f64())
                .sum::<f64>()
                * vol
        })
    }

    /// Maps a (possibly ghost) global index along `axis` to a cell and
    /// whether the normal momentum flips sign.
    #[inline(always)]
    fn map(&self, axis: usize, i: i64) -> (usize, bool) {
        let n = i64::from(self.cells[axis]);
        if (0..n).contains(&i) {
            return (i as usize, false);
        }
        match self.boundary[axis] {
            Boundary::Periodic => (i.rem_euclid(n) as usize, false),
            Boundary::Outflow => (i.clamp(0, n - 1) as usize, false),
            Boundary::Reflecting => {
                let m = if i < 0 { -1 - i } else { 2 * n - 1 - i };
                (m.clamp(0, n - 1) as usize, true)
            }
        }
    }

    fn check_batch(&self, batch: &Batch<T>) -> Result<(), GridError> {
        let l = batch.layout();
        let ok = l.patches().len() == self.tiles.len()
            && l.ncomp() as usize == NCOMP
            && l.patches()
                .iter()
                .zip(&self.tiles)
                .all(|(d, t)| d.ghost == self.ghost && d.interior() == t.size);
        if ok {
            Ok(())
        } else {
            Err(GridError::Batch {
                tiles: self.tiles.len(),
                found: format!("{} / {}", l.patches().len(), l.ncomp()),
            })
        }
    }

    /// Copies every tile with its ghost cells (boundary conditions applied,
    /// edges and corners included) into `batch`.
    pub fn fill(&self, batch: &mut Batch<T>) -> Result<(), GridError> {
        self.check_batch(batch)?;
        let (layout, data, _) = batch.buffers_mut();
        let (b, nc) = (layout.bin_edge() as usize, layout.ncomp() as usize);
        let g = i64::from(self.ghost);
        let mut xs = Vec::new();
        for (d, t) in layout.patches().iter().zip(&self.tiles) {
            xs.clear();
            xs.extend((0..d.extent[0]).map(|i| self.map(0, i64::from(t.lo[0]) + i64::from(i) - g)));
            for c in 0..NCOMP {
                for k in 0..d.extent[2] {
                    let (gk, fk) = self.map(2, i64::from(t.lo[2]) + i64::from(k) - g);
                    for j in 0..d.extent[1] {
                        let (gj, fj) = self.map(1, i64::from(t.lo[1]) + i64::from(j) - g);
                        let src = self.index(c, [0, gj, gk]);
                        let cell =
                            [d.offset[0], d.offset[1] + j, d.offset[2] + k].map(|v| v as usize);
                        let dst = data_index(b, nc, d.bin as usize, c, cell);
                        let row = &mut data[dst..dst + xs.len()];
                        let flip_row = (c == 2 && fj) || (c == 3 && fk);
                        for (out, &(gi, fi)) in row.iter_mut().zip(&xs) {
                            let v = self.state[src + gi];
                            *out = if flip_row || (c == 1 && fi) { -v } else { v };
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Copies the interiors of `batch` back into the grid.
    pub fn gather(&mut self, batch: &Batch<T>) -> Result<(), GridError> {
        self.check_batch(batch)?;
        let l = batch.layout();
        let (b, nc) = (l.bin_edge() as usize, l.ncomp() as usize);
        let data = batch.data();
        let g = self.ghost;
        for (d, t) in l.patches().iter().zip(&self.tiles) {
            for c in 0..NCOMP {
                for k in 0..t.size[2] {
                    for j in 0..t.size[1] {
                        let cell = [d.offset[0] + g, d.offset[1] + g + j, d.offset[2] + g + k]
                            .map(|v| v as usize);
                        let src = data_index(b, nc, d.bin as usize, c, cell);
                        let dst =
                            self.index(c, [t.lo[0], t.lo[1] + j, t.lo[2] + k].map(|v| v as usize));
                        let n = t.size[0] as usize;
                        self.state[dst..dst + n].copy_from_slice(&data[src..src + n]);
                    }
                }
            }
        }
        Ok(())
    }

    /// Advances the grid to `t_end` with time steps `min(solver.max_dt(cfl),
    /// t_end - t)` and sweep orders alternating from [`SweepOrder::Xyz`].
    pub fn run(
        &mut self,
        solver: &Solver,
        batch: &mut Batch<T>,
        ws: &mut Workspace<T>,
        t_end: f64,
        cfl: f64,
    ) -> Result<RunSummary, GridError> {
        if !(t_end.is_finite() && t_end >= 0.0) {
            return Err(GridError::EndTime(t_end));
        }
        let mut sum = RunSummary::default();
        while sum.time < t_end {
            self.fill(batch)?;
            let left = t_end - sum.time;
            let r = solver.advance_cfl(batch, cfl, left, SweepOrder::for_step(sum.steps), ws)?;
            self.gather(batch)?;
            sum.steps += 1;
            // The step that reaches t_end lands on it exactly.
            sum.time = if r.dt >= left * (1.0 - 1e-14) {
                t_end
            } else {
                sum.time + r.dt
            };
            sum.floors += r.floors;
            sum.cell_updates += r.cells;
        }
        Ok(sum)
    }
}
