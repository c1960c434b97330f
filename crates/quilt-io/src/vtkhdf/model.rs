//! The mesh-agnostic description of one ParaView output: an origin, and per
//! level a spacing, a list of patch boxes and cell arrays concatenated patch
//! by patch.

use quilt_mesh::IndexBox;

use crate::error::IoError;

/// The values of one cell array, in the element type stored in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum CellValues {
    /// 32-bit floats (state of an `f32` run).
    F32(Vec<f32>),
    /// 64-bit floats.
    F64(Vec<f64>),
    /// 32-bit integers (patch ids, levels, tags).
    I32(Vec<i32>),
}

impl CellValues {
    /// Number of stored values (cells × components).
    pub fn len(&self) -> usize {
        match self {
            CellValues::F32(v) => v.len(),
            CellValues::F64(v) => v.len(),
            CellValues::I32(v) => v.len(),
        }
    }

    /// Whether no value is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Name of the element type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            CellValues::F32(_) => "f32",
            CellValues::F64(_) => "f64",
            CellValues::I32(_) => "i32",
        }
    }

    /// Smallest and largest value widened to `f64`, ignoring NaN; `None`
    /// when empty or all NaN.
    pub fn range(&self) -> Option<(f64, f64)> {
        fn fold(it: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
            it.filter(|x| !x.is_nan()).fold(None, |acc, x| match acc {
                None => Some((x, x)),
                Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
            })
        }
        match self {
            CellValues::F32(v) => fold(v.iter().map(|&x| f64::from(x))),
            CellValues::F64(v) => fold(v.iter().copied()),
            CellValues::I32(v) => fold(v.iter().map(|&x| f64::from(x))),
        }
    }

    fn with_capacity_like(&self, n: usize) -> CellValues {
        match self {
            CellValues::F32(_) => CellValues::F32(Vec::with_capacity(n)),
            CellValues::F64(_) => CellValues::F64(Vec::with_capacity(n)),
            CellValues::I32(_) => CellValues::I32(Vec::with_capacity(n)),
        }
    }
}

impl From<Vec<f32>> for CellValues {
    fn from(v: Vec<f32>) -> Self {
        CellValues::F32(v)
    }
}

impl From<Vec<f64>> for CellValues {
    fn from(v: Vec<f64>) -> Self {
        CellValues::F64(v)
    }
}

impl From<Vec<i32>> for CellValues {
    fn from(v: Vec<i32>) -> Self {
        CellValues::I32(v)
    }
}

/// One named cell-centred array of a level.
///
/// Values run patch by patch (in the order of [`LevelOutput::boxes`]), and
/// within a patch over its cells with `x` fastest, then `y`, then `z`; the
/// components of a cell are adjacent (`[cells, components]` row-major, the
/// layout VTK reads as a multi-component array).
#[derive(Debug, Clone, PartialEq)]
pub struct CellArray {
    /// Array name shown in ParaView.
    pub name: String,
    /// Components per cell (1 for scalars, 3 for vectors).
    pub components: usize,
    /// The values, `cells × components` of them.
    pub values: CellValues,
}

impl CellArray {
    /// A one-component array.
    pub fn scalar(name: impl Into<String>, values: impl Into<CellValues>) -> Self {
        CellArray {
            name: name.into(),
            components: 1,
            values: values.into(),
        }
    }

    /// A three-component array (`x, y, z` of each cell adjacent).
    pub fn vector(name: impl Into<String>, values: impl Into<CellValues>) -> Self {
        CellArray {
            name: name.into(),
            components: 3,
            values: values.into(),
        }
    }

    /// An empty array of the same name, components and element type, with
    /// room for `cells` cells.
    pub fn empty_like(&self, cells: usize) -> Self {
        CellArray {
            name: self.name.clone(),
            components: self.components,
            values: self.values.with_capacity_like(cells * self.components),
        }
    }
}

/// One refinement level of an output.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelOutput {
    /// Cell size along `x, y, z`.
    pub spacing: [f64; 3],
    /// The patches of the level, as inclusive cell-index boxes of the
    /// level's index space (cell `p` spans `origin + p * spacing ..=
    /// origin + (p + 1) * spacing`).
    pub boxes: Vec<IndexBox>,
    /// The cell arrays, each holding every patch's cells in box order.
    pub cell_arrays: Vec<CellArray>,
}

impl LevelOutput {
    /// A level with no patch yet.
    pub fn new(spacing: [f64; 3]) -> Self {
        LevelOutput {
            spacing,
            boxes: Vec::new(),
            cell_arrays: Vec::new(),
        }
    }

    /// Total number of cells over the level's boxes.
    pub fn num_cells(&self) -> usize {
        self.boxes
            .iter()
            .map(|b| b.num_cells().max(0) as usize)
            .sum()
    }

    /// The array called `name`, if any.
    pub fn array(&self, name: &str) -> Option<&CellArray> {
        self.cell_arrays.iter().find(|a| a.name == name)
    }
}

/// Everything one ParaView output file holds: all levels of the hierarchy
/// at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct AmrOutput {
    /// Physical position of the low corner of cell `(0, 0, 0)` (of every
    /// level: all index spaces share it).
    pub origin: [f64; 3],
    /// Simulation time of the output (also written to the time series).
    pub time: f64,
    /// Coarse step number of the output.
    pub step: u64,
    /// Levels, coarsest first.
    pub levels: Vec<LevelOutput>,
}

/// Relative tolerance on the spacing ratio of consecutive levels.
const RATIO_TOLERANCE: f64 = 1e-9;

impl AmrOutput {
    /// Checks everything ParaView's reader relies on, so that a bad
    /// description is reported here, naming the level and array, rather
    /// than as an unreadable file:
    /// - at least one level, every level with at least one non-empty box;
    /// - finite origin and time; finite positive spacings, each level's an
    ///   integer refinement (the same on every axis) of the previous one;
    /// - every level has the same arrays (name, components, element type) in
    ///   the same order, with unique names usable as HDF5 link names;
    /// - every array holds exactly `cells × components` values.
    pub fn validate(&self) -> Result<(), IoError> {
        if self.levels.is_empty() {
            return Err(IoError::invalid("AMR output", "no level"));
        }
        if !self.origin.iter().all(|x| x.is_finite()) {
            return Err(IoError::invalid(
                "AMR output origin",
                format!("{:?} is not finite", self.origin),
            ));
        }
        if !self.time.is_finite() {
            return Err(IoError::invalid(
                "AMR output time",
                format!("{} is not finite", self.time),
            ));
        }
        let reference = &self.levels[0].cell_arrays;
        for (l, level) in self.levels.iter().enumerate() {
            let what = format!("level {l}");
            if !level.spacing.iter().all(|h| h.is_finite() && *h > 0.0) {
                return Err(IoError::invalid(
                    format!("{what} spacing"),
                    format!("{:?} must be finite and positive", level.spacing),
                ));
            }
            if l > 0 {
                check_ratio(l, &self.levels[l - 1].spacing, &level.spacing)?;
            }
            if level.boxes.is_empty() {
                return Err(IoError::invalid(
                    what,
                    "no patch (ParaView cannot show a level without blocks)",
                ));
            }
            if let Some((i, b)) = level.boxes.iter().enumerate().find(|(_, b)| b.is_empty()) {
                return Err(IoError::invalid(
                    format!("{what} box {i}"),
                    format!("{b} is empty"),
                ));
            }
            let cells = level.num_cells();
            if level.cell_arrays.len() != reference.len() {
                return Err(IoError::invalid(
                    what,
                    format!(
                        "{} cell arrays, but level 0 has {} (every level needs the same arrays)",
                        level.cell_arrays.len(),
                        reference.len()
                    ),
                ));
            }
            for (k, (a, r)) in level.cell_arrays.iter().zip(reference).enumerate() {
                check_name(l, &a.name)?;
                if level.cell_arrays[..k].iter().any(|b| b.name == a.name) {
                    return Err(IoError::invalid(
                        format!("{what} cell array `{}`", a.name),
                        "name used twice",
                    ));
                }
                if a.name != r.name
                    || a.components != r.components
                    || a.values.type_name() != r.values.type_name()
                {
                    return Err(IoError::invalid(
                        format!("{what} cell array {k}"),
                        format!(
                            "`{}` ({} components, {}) differs from level 0's `{}` ({} components, {})",
                            a.name,
                            a.components,
                            a.values.type_name(),
                            r.name,
                            r.components,
                            r.values.type_name()
                        ),
                    ));
                }
                if a.components == 0 {
                    return Err(IoError::invalid(
                        format!("{what} cell array `{}`", a.name),
                        "zero components",
                    ));
                }
                let expected = cells.checked_mul(a.components).ok_or_else(|| {
                    IoError::invalid(format!("{what} cell array `{}`", a.name), "size overflows")
                })?;
                if a.values.len() != expected {
                    return Err(IoError::invalid(
                        format!("{what} cell array `{}`", a.name),
                        format!(
                            "{} values, expected {expected} ({cells} cells x {} components)",
                            a.values.len(),
                            a.components
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Smallest and largest value of component 0 of array `name` over all
    /// levels (covered coarse cells included), or `None` if no level has it.
    pub fn range(&self, name: &str) -> Option<(f64, f64)> {
        self.levels
            .iter()
            .filter_map(|l| l.array(name).and_then(|a| a.values.range()))
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
    }
}

fn check_ratio(level: usize, coarse: &[f64; 3], fine: &[f64; 3]) -> Result<(), IoError> {
    let r0 = coarse[0] / fine[0];
    let ratio = r0.round();
    let ok = ratio >= 1.0
        && (0..3).all(|d| {
            let r = coarse[d] / fine[d];
            (r - ratio).abs() <= RATIO_TOLERANCE * ratio
        });
    if ok {
        Ok(())
    } else {
        Err(IoError::invalid(
            format!("level {level} spacing"),
            format!(
                "{fine:?} is not an integer refinement (equal on every axis) of level {}'s {coarse:?}",
                level - 1
            ),
        ))
    }
}

fn check_name(level: usize, name: &str) -> Result<(), IoError> {
    // HDF5 link names cannot hold '/', and "." names the group itself.
    if name.is_empty() || name == "." || name.contains('/') || name.contains('\0') {
        return Err(IoError::invalid(
            format!("level {level} cell array name"),
            format!("{name:?} is not a valid HDF5 dataset name"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_mesh::iv;

    fn two_levels() -> AmrOutput {
        let b0 = IndexBox::new(iv(0, 0, 0), iv(3, 3, 3));
        let b1 = IndexBox::new(iv(2, 2, 2), iv(5, 5, 5));
        let level = |h: f64, b: IndexBox| LevelOutput {
            spacing: [h; 3],
            boxes: vec![b],
            cell_arrays: vec![
                CellArray::scalar("density", vec![1.0f64; b.num_cells() as usize]),
                CellArray::vector("velocity", vec![0.0f64; 3 * b.num_cells() as usize]),
            ],
        };
        AmrOutput {
            origin: [0.0; 3],
            time: 0.0,
            step: 0,
            levels: vec![level(0.25, b0), level(0.125, b1)],
        }
    }

    #[test]
    fn valid_output_passes() {
        two_levels().validate().unwrap();
    }

    #[test]
    fn wrong_length_names_level_and_array() {
        let mut o = two_levels();
        o.levels[1].cell_arrays[1].values = CellValues::F64(vec![0.0; 5]);
        let e = o.validate().unwrap_err().to_string();
        assert!(
            e.contains("level 1") && e.contains("velocity") && e.contains("192"),
            "{e}"
        );
    }

    #[test]
    fn non_integer_ratio_rejected() {
        let mut o = two_levels();
        o.levels[1].spacing = [0.1; 3];
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("integer refinement"), "{e}");
        let mut o = two_levels();
        o.levels[1].spacing = [0.125, 0.0625, 0.125];
        assert!(o.validate().is_err());
    }

    #[test]
    fn mismatched_arrays_across_levels_rejected() {
        let mut o = two_levels();
        o.levels[1].cell_arrays[0].name = "rho".into();
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("rho") && e.contains("density"), "{e}");
        let mut o = two_levels();
        o.levels[1].cell_arrays.pop();
        assert!(o.validate().is_err());
    }

    #[test]
    fn bad_names_and_geometry_rejected() {
        let mut o = two_levels();
        o.levels[0].cell_arrays[0].name = "a/b".into();
        o.levels[1].cell_arrays[0].name = "a/b".into();
        assert!(o.validate().is_err());
        let mut o = two_levels();
        o.origin[1] = f64::NAN;
        assert!(o.validate().is_err());
        let mut o = two_levels();
        o.levels[0].spacing[2] = 0.0;
        assert!(o.validate().is_err());
        let mut o = two_levels();
        o.levels[1].boxes.clear();
        o.levels[1]
            .cell_arrays
            .iter_mut()
            .for_each(|a| a.values = CellValues::F64(vec![]));
        assert!(o.validate().is_err());
        let o = AmrOutput {
            levels: vec![],
            ..two_levels()
        };
        assert!(o.validate().is_err());
    }

    #[test]
    fn range_ignores_nan_and_spans_levels() {
        let mut o = two_levels();
        if let CellValues::F64(v) = &mut o.levels[1].cell_arrays[0].values {
            v[3] = 7.0;
            v[4] = f64::NAN;
        }
        assert_eq!(o.range("density"), Some((1.0, 7.0)));
        assert_eq!(o.range("nothing"), None);
    }
}
