//! Cutting the grid into tiles (the patches of the batch).

/// One tile: its first global cell and its interior size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Global index of the first interior cell.
    pub lo: [u32; 3],
    /// Interior size.
    pub size: [u32; 3],
}

/// Splits `n` cells into `ceil(n / max)` nearly equal parts (the first
/// `n mod parts` one cell larger); empty if `max == 0`.
pub fn even_cuts(n: u32, max: u32) -> Vec<u32> {
    if max == 0 || n == 0 {
        return Vec::new();
    }
    let parts = n.div_ceil(max);
    let (base, extra) = (n / parts, n % parts);
    (0..parts).map(|i| base + u32::from(i < extra)).collect()
}

/// Tiles of the Cartesian product of the per-axis cuts, x fastest.
pub(crate) fn tiles_from_cuts(cuts: &[Vec<u32>; 3]) -> Vec<Tile> {
    let starts = |c: &Vec<u32>| {
        c.iter()
            .scan(0u32, |s, &n| {
                let lo = *s;
                *s += n;
                Some((lo, n))
            })
            .collect::<Vec<_>>()
    };
    let [sx, sy, sz] = [starts(&cuts[0]), starts(&cuts[1]), starts(&cuts[2])];
    let mut out = Vec::with_capacity(sx.len() * sy.len() * sz.len());
    for &(z, nz) in &sz {
        for &(y, ny) in &sy {
            for &(x, nx) in &sx {
                out.push(Tile {
                    lo: [x, y, z],
                    size: [nx, ny, nz],
                });
            }
        }
    }
    out
}
