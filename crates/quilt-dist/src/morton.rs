//! Morton (Z-order) keys of patch positions, the curve the distribution
//! cuts into pieces.

use quilt_mesh::Hierarchy;

/// Bits per axis of a key (three axes fill 63 bits of a `u64`).
const BITS: u32 = 21;

/// Interleaves the low 21 bits of `x`, `y`, `z` (x lowest).
pub fn interleave(x: u64, y: u64, z: u64) -> u64 {
    fn spread(v: u64) -> u64 {
        let mut v = v & 0x1F_FFFF;
        v = (v | (v << 32)) & 0x1F_0000_0000_FFFF;
        v = (v | (v << 16)) & 0x1F_0000_FF00_00FF;
        v = (v | (v << 8)) & 0x100F_00F0_0F00_F00F;
        v = (v | (v << 4)) & 0x10C3_0C30_C30C_30C3;
        v = (v | (v << 2)) & 0x1249_2492_4924_9249;
        v
    }
    spread(x) | (spread(y) << 1) | (spread(z) << 2)
}

/// The Morton key of every patch's centre, in the finest level's index
/// space (doubled, so that centres are integers), by patch index. Keys of
/// finer hierarchies than 2²⁰ cells per axis drop their low bits, which
/// keeps the order of patches apart by more than the dropped resolution.
pub fn patch_keys(h: &Hierarchy) -> Vec<u64> {
    let finest = h.num_levels().saturating_sub(1);
    let fine_ratio = h.level_geometry(finest).map_or(1, |g| g.cumulative_ratio);
    let base = h.level_geometry(0).map(|g| g.domain);
    // Doubled finest-level coordinates of the domain's far corner.
    let extent = base.map_or(1, |d| {
        let s = d.size();
        i64::from(s.x.max(s.y).max(s.z)) * i64::from(fine_ratio) * 2
    });
    let needed = 64 - (extent.max(1) as u64).leading_zeros();
    let drop = needed.saturating_sub(BITS);
    h.patches()
        .iter()
        .map(|p| {
            let scale = h
                .level_geometry(p.level())
                .map_or(1, |g| i64::from(fine_ratio / g.cumulative_ratio.max(1)));
            let b = p.interior();
            // Centre × 2 in finest cells: (lo + hi + 1) × scale.
            let c = |lo: i32, hi: i32| -> u64 {
                let v = (i64::from(lo) + i64::from(hi) + 1) * scale;
                (v.max(0) as u64) >> drop
            };
            interleave(c(b.lo.x, b.hi.x), c(b.lo.y, b.hi.y), c(b.lo.z, b.hi.z))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_orders_octants() {
        assert_eq!(interleave(1, 0, 0), 1);
        assert_eq!(interleave(0, 1, 0), 2);
        assert_eq!(interleave(0, 0, 1), 4);
        assert_eq!(interleave(2, 0, 0), 8);
        assert_eq!(interleave(0x1F_FFFF, 0x1F_FFFF, 0x1F_FFFF), (1 << 63) - 1);
        // Every cell of the 2×2×2 block precedes every cell of the next.
        let a: Vec<u64> = (0..8)
            .map(|i| interleave(i & 1, (i >> 1) & 1, i >> 2))
            .collect();
        assert_eq!(a, (0..8).collect::<Vec<_>>());
        assert!(interleave(1, 1, 1) < interleave(2, 0, 0));
    }
}
