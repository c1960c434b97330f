//! Clustering options and the box-size limits they imply.

use super::error::ClusterError;

/// Settings of [`super::Clusterer`]: a plain struct, start from
/// `ClusterOptions::default()` and change fields.
///
/// Sizes are those of the *new fine* patches, ghost cells included, as in
/// the hierarchy's size limits: with `ghost = g` a patch interior has
/// between `min_patch - 2g` and `max_patch - 2g` fine cells per side.
/// Clustering works in the tag (coarse) index space, so those become
/// [`CoarseLimits`] of `ceil((min_patch - 2g) / ratio) ..=
/// floor((max_patch - 2g) / ratio)` coarse cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterOptions {
    /// Refinement ratio from the tagged level to the new level (2 or 4).
    pub ratio: i32,
    /// Berger–Rigoutsos acceptance threshold: a box is kept when
    /// tagged / total cells reaches it (default 0.7).
    pub efficiency: f64,
    /// Two boxes are merged when their bounding box reaches this
    /// efficiency (default 0.85).
    pub combine_efficiency: f64,
    /// Fewest fine cells per patch side, ghosts included (default 16).
    pub min_patch: i32,
    /// Most fine cells per patch side, ghosts included (default 64).
    pub max_patch: i32,
    /// Ghost width of the new patches (default 2).
    pub ghost: i32,
    /// Proper-nesting buffer in coarse cells: new boxes keep this distance
    /// from the edge of the coarse level's patches (default 1). At least
    /// `ceil(ghost / ratio)` is used, so that a new patch's ghost cells lie
    /// over coarse patches too.
    pub nesting_buffer: i32,
    /// Undo a Berger–Rigoutsos cut made for efficiency when the boxes found
    /// under it would make patches with no fewer cells (fine cells, sides
    /// padded to the minimum, ghosts included) than the box they came from
    /// (default `true`). Without this, a layer of tags thinner than the
    /// minimum side is chopped into many minimum-size patches, none
    /// efficient, each paying for its own ghost cells.
    pub undo_unprofitable_cuts: bool,
    /// Uniform blocks instead of Berger–Rigoutsos: the new level is made
    /// of the blocks of this many fine interior cells per side, aligned to
    /// multiples of it, that hold tags (a block crossing the nesting
    /// region's edge is cut to its parts inside that hold tags); a multiple
    /// of `ratio` whose patches (ghosts included) lie within the size
    /// limits. `None` (the default): Berger–Rigoutsos, growing and merging.
    pub blocks: Option<i32>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            ratio: 2,
            efficiency: 0.7,
            combine_efficiency: 0.85,
            min_patch: 16,
            max_patch: 64,
            ghost: 2,
            nesting_buffer: 1,
            undo_unprofitable_cuts: true,
            blocks: None,
        }
    }
}

/// Box side limits in the tag (coarse) index space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoarseLimits {
    /// Fewest coarse cells per side.
    pub min: i32,
    /// Most coarse cells per side.
    pub max: i32,
}

fn fraction(option: &'static str, value: f64) -> Result<(), ClusterError> {
    if value.is_finite() && value > 0.0 && value <= 1.0 {
        Ok(())
    } else {
        Err(ClusterError::BadOption {
            option,
            value,
            why: "must lie in (0, 1]",
        })
    }
}

impl ClusterOptions {
    /// Checks every field and derives the coarse box limits.
    pub fn validate(&self) -> Result<CoarseLimits, ClusterError> {
        if self.ratio != 2 && self.ratio != 4 {
            return Err(ClusterError::BadRatio(self.ratio));
        }
        fraction("efficiency", self.efficiency)?;
        fraction("combine_efficiency", self.combine_efficiency)?;
        if self.ghost < 0 {
            return Err(ClusterError::BadOption {
                option: "ghost",
                value: self.ghost as f64,
                why: "must be >= 0",
            });
        }
        if self.nesting_buffer < 0 {
            return Err(ClusterError::BadOption {
                option: "nesting_buffer",
                value: self.nesting_buffer as f64,
                why: "must be >= 0",
            });
        }
        if self.min_patch < 1 || self.min_patch > self.max_patch {
            return Err(ClusterError::BadOption {
                option: "min_patch",
                value: self.min_patch as f64,
                why: "must be >= 1 and <= max_patch",
            });
        }
        let g2 = 2 * self.ghost;
        let min_coarse = ((self.min_patch - g2).max(1) + self.ratio - 1) / self.ratio;
        let max_coarse = (self.max_patch - g2).max(0) / self.ratio;
        if max_coarse < 1 || max_coarse < 2 * min_coarse - 1 {
            return Err(ClusterError::SizeRange {
                min: self.min_patch,
                max: self.max_patch,
                ghost: self.ghost,
                ratio: self.ratio,
                min_coarse,
                max_coarse,
            });
        }
        if let Some(n) = self.blocks {
            let patch = n + g2;
            if n < 1 || n % self.ratio != 0 || patch < self.min_patch || patch > self.max_patch {
                return Err(ClusterError::BadOption {
                    option: "blocks",
                    value: f64::from(n),
                    why: "must be a positive multiple of the ratio whose patches, ghosts included, lie within min_patch..=max_patch",
                });
            }
        }
        Ok(CoarseLimits {
            min: min_coarse,
            max: max_coarse,
        })
    }

    /// The nesting buffer actually used: `max(nesting_buffer, ceil(ghost / ratio))`.
    pub fn effective_nesting_buffer(&self) -> i32 {
        let r = self.ratio.max(1);
        self.nesting_buffer.max((self.ghost.max(0) + r - 1) / r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_limits() {
        let o = ClusterOptions::default();
        assert_eq!(o.validate().unwrap(), CoarseLimits { min: 6, max: 30 });
        let o = ClusterOptions {
            ratio: 4,
            ghost: 3,
            ..Default::default()
        };
        // interiors 10..=58 fine cells: 3..=14 coarse cells (12..=56 fine)
        assert_eq!(o.validate().unwrap(), CoarseLimits { min: 3, max: 14 });
        assert_eq!(o.effective_nesting_buffer(), 1);
        let o = ClusterOptions {
            ghost: 4,
            ..Default::default()
        };
        assert_eq!(o.effective_nesting_buffer(), 2);
    }

    #[test]
    fn bad_options() {
        let bad = |o: ClusterOptions| o.validate().unwrap_err();
        let d = ClusterOptions::default();
        assert_eq!(
            bad(ClusterOptions { ratio: 3, ..d }),
            ClusterError::BadRatio(3)
        );
        assert!(matches!(
            bad(ClusterOptions {
                efficiency: 0.0,
                ..d
            }),
            ClusterError::BadOption {
                option: "efficiency",
                ..
            }
        ));
        assert!(matches!(
            bad(ClusterOptions {
                combine_efficiency: f64::NAN,
                ..d
            }),
            ClusterError::BadOption {
                option: "combine_efficiency",
                ..
            }
        ));
        assert!(matches!(
            bad(ClusterOptions { ghost: -1, ..d }),
            ClusterError::BadOption { .. }
        ));
        assert!(matches!(
            bad(ClusterOptions { min_patch: 70, ..d }),
            ClusterError::BadOption {
                option: "min_patch",
                ..
            }
        ));
        assert!(matches!(
            bad(ClusterOptions {
                min_patch: 40,
                max_patch: 48,
                ..d
            }),
            ClusterError::SizeRange { .. }
        ));
        assert!(matches!(
            bad(ClusterOptions { ghost: 32, ..d }),
            ClusterError::SizeRange { .. }
        ));
    }
}
