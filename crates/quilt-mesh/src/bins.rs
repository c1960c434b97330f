//! The index arithmetic of quilt's bins, the one statement of it.
//!
//! A bin is a cube of `edge³` cells holding `ncomp` components one after
//! another; bins follow one another in a buffer. Inside a component `x` is
//! fastest, then `y`, then `z`:
//!
//! ```text
//! index(bin, comp, (x, y, z)) = ((bin * ncomp + comp) * edge + z) * edge² + y * edge + x
//! ```
//!
//! This is the layout of quilt-sweep's batches (`quilt_sweep::layout`), of
//! the ghost fill's bin targets, of the resident state's places and of the
//! CUDA kernels (which compute it in 64 bits); they all take their strides
//! from [`BinGeometry`].

/// The shape of the bins of one buffer: cells per edge and components.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BinGeometry {
    edge: usize,
    ncomp: usize,
}

impl BinGeometry {
    /// Bins of `edge³` cells with `ncomp` components.
    #[inline(always)]
    pub const fn new(edge: usize, ncomp: usize) -> Self {
        Self { edge, ncomp }
    }

    /// Cells per bin edge.
    #[inline(always)]
    pub const fn edge(self) -> usize {
        self.edge
    }

    /// Components per cell.
    #[inline(always)]
    pub const fn ncomp(self) -> usize {
        self.ncomp
    }

    /// Values between neighbouring rows (`y`).
    #[inline(always)]
    pub const fn row(self) -> usize {
        self.edge
    }

    /// Values between neighbouring planes (`z`): also the values of one
    /// component over one face of a bin.
    #[inline(always)]
    pub const fn plane(self) -> usize {
        self.edge * self.edge
    }

    /// Values between components of a cell: a bin's cells.
    #[inline(always)]
    pub const fn component(self) -> usize {
        self.edge * self.edge * self.edge
    }

    /// Values of one bin, every component.
    #[inline(always)]
    pub const fn bin(self) -> usize {
        self.ncomp * self.component()
    }

    /// The row, plane and component strides.
    #[inline(always)]
    pub const fn strides(self) -> [usize; 3] {
        [self.row(), self.plane(), self.component()]
    }

    /// Index of component `comp` of cell `cell = (x, y, z)` of bin `bin`.
    #[inline(always)]
    pub const fn index(self, bin: usize, comp: usize, cell: [usize; 3]) -> usize {
        ((bin * self.ncomp + comp) * self.edge + cell[2]) * self.plane()
            + cell[1] * self.edge
            + cell[0]
    }

    /// Values of `nbins` bins, `None` if that overflows.
    pub fn checked_len(self, nbins: usize) -> Option<usize> {
        self.edge
            .checked_mul(self.edge)
            .and_then(|v| v.checked_mul(self.edge))
            .and_then(|v| v.checked_mul(self.ncomp))
            .and_then(|v| v.checked_mul(nbins))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_and_index_agree() {
        let g = BinGeometry::new(4, 3);
        assert_eq!(g.strides(), [4, 16, 64]);
        assert_eq!(g.bin(), 192);
        let base = g.index(2, 1, [1, 2, 3]);
        assert_eq!(base, 2 * 192 + 64 + 3 * 16 + 2 * 4 + 1);
        assert_eq!(g.index(2, 1, [2, 2, 3]), base + 1);
        assert_eq!(g.index(2, 1, [1, 3, 3]), base + g.row());
        assert_eq!(g.index(2, 2, [1, 2, 3]), base + g.component());
        assert_eq!(g.checked_len(5), Some(960));
        assert_eq!(BinGeometry::new(1 << 40, 5).checked_len(2), None);
    }
}
