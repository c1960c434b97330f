//! Hierarchy files: a hierarchy's layout as JSON, so that hierarchies from
//! real runs (or the synthetic generator) can be replayed by benchmarks.
//!
//! # Schema
//! ```json
//! {"domain_cells": [nx, ny, nz], "ghost": g,
//!  "levels": [{"ratio": r, "patches": [{"id": i, "lo": [x, y, z], "hi": [x, y, z], "parent": p}]}]}
//! ```
//! `lo`/`hi` are the inclusive interior cells in that level's index space,
//! `ratio` refines the level below (level 0 has ratio 1), `parent` is the
//! id of a patch on the level below (`-1` on level 0). Ids are unique over
//! the whole file. Unknown keys are rejected, so typos do not pass
//! silently.
//!
//! Files carry no physical extent: a hierarchy read from one gets
//! [`Geometry::with_cubic_cells`] (longest side 1, cubic cells) and no
//! periodic axis.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::MeshError;
use crate::geometry::Geometry;
use crate::hierarchy::{Hierarchy, PatchId, PatchSpec, SizeLimits};
use crate::index::{IndexBox, iv};

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HierarchyFile {
    /// Level-0 cells along x, y, z.
    pub domain_cells: [i32; 3],
    /// Ghost width of every patch.
    pub ghost: i32,
    /// Levels, coarsest first.
    pub levels: Vec<LevelRecord>,
}

/// One level of a [`HierarchyFile`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelRecord {
    /// Refinement ratio relative to the level below (1 on level 0).
    pub ratio: i32,
    /// The level's patches.
    pub patches: Vec<PatchRecord>,
}

/// One patch of a [`LevelRecord`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchRecord {
    /// Stable id, unique in the file.
    pub id: u32,
    /// Lowest interior cell (inclusive).
    pub lo: [i32; 3],
    /// Highest interior cell (inclusive).
    pub hi: [i32; 3],
    /// Id of the parent on the level below, `-1` on level 0.
    pub parent: i64,
}

impl HierarchyFile {
    /// The file contents describing `h`.
    pub fn from_hierarchy(h: &Hierarchy) -> Self {
        let levels = (0..h.num_levels())
            .map(|l| LevelRecord {
                ratio: h.level_geometry(l).map_or(1, |g| g.ratio),
                patches: h
                    .level_patches(l)
                    .iter()
                    .map(|p| {
                        let b = p.interior();
                        PatchRecord {
                            id: p.id().0,
                            lo: [b.lo.x, b.lo.y, b.lo.z],
                            hi: [b.hi.x, b.hi.y, b.hi.z],
                            parent: p.parent().map_or(-1, |i| h.patches()[i].id().0 as i64),
                        }
                    })
                    .collect(),
            })
            .collect();
        let n = h.geometry().base_cells();
        Self {
            domain_cells: [n.x, n.y, n.z],
            ghost: h.ghost(),
            levels,
        }
    }

    /// Parses JSON text; `path` only names the source in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<Self, MeshError> {
        serde_json::from_str(text).map_err(|e| parse_error(path, &e))
    }

    /// Builds and validates the hierarchy the file describes. Errors name
    /// the level and patch; [`read_hierarchy`] adds the file name.
    pub fn to_hierarchy(&self, limits: SizeLimits) -> Result<Hierarchy, MeshError> {
        if self.levels.is_empty() {
            return Err(MeshError::EmptyLevel { level: 0 });
        }
        let mut ratios = Vec::with_capacity(self.levels.len().saturating_sub(1));
        let mut specs = Vec::with_capacity(self.levels.len());
        for (l, level) in self.levels.iter().enumerate() {
            if l == 0 {
                if level.ratio != 1 {
                    return Err(MeshError::invalid(
                        "level 0 ratio",
                        format!("must be 1, got {}", level.ratio),
                    ));
                }
            } else {
                ratios.push(level.ratio);
            }
            let mut lspecs = Vec::with_capacity(level.patches.len());
            for p in &level.patches {
                let id = PatchId(p.id);
                let parent = match (l, p.parent) {
                    (0, -1) => None,
                    (0, q) => {
                        return Err(MeshError::BadParent {
                            level: 0,
                            id,
                            parent: q,
                            why: "level 0 patches must have parent -1".into(),
                        });
                    }
                    (_, q) if (0..=u32::MAX as i64).contains(&q) => Some(PatchId(q as u32)),
                    (_, q) => {
                        return Err(MeshError::BadParent {
                            level: l,
                            id,
                            parent: q,
                            why: "a patch above level 0 needs the id of a patch on the level below"
                                .into(),
                        });
                    }
                };
                lspecs.push(PatchSpec {
                    id,
                    interior: IndexBox::new(
                        iv(p.lo[0], p.lo[1], p.lo[2]),
                        iv(p.hi[0], p.hi[1], p.hi[2]),
                    ),
                    parent,
                });
            }
            specs.push(lspecs);
        }
        let [nx, ny, nz] = self.domain_cells;
        let geometry = Geometry::with_cubic_cells(iv(nx, ny, nz), &ratios)?;
        Hierarchy::new(geometry, self.ghost, limits, specs)
    }

    /// The file as JSON text: one patch per line, so files diff well.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        let [nx, ny, nz] = self.domain_cells;
        s.push_str(&format!(
            "{{\n  \"domain_cells\": [{nx}, {ny}, {nz}],\n  \"ghost\": {},\n  \"levels\": [",
            self.ghost
        ));
        for (l, level) in self.levels.iter().enumerate() {
            s.push_str(if l == 0 { "\n" } else { ",\n" });
            s.push_str(&format!(
                "    {{\n      \"ratio\": {},\n      \"patches\": [",
                level.ratio
            ));
            for (n, p) in level.patches.iter().enumerate() {
                s.push_str(if n == 0 { "\n" } else { ",\n" });
                s.push_str(&format!(
                    "        {{\"id\": {}, \"lo\": [{}, {}, {}], \"hi\": [{}, {}, {}], \"parent\": {}}}",
                    p.id, p.lo[0], p.lo[1], p.lo[2], p.hi[0], p.hi[1], p.hi[2], p.parent
                ));
            }
            s.push_str("\n      ]\n    }");
        }
        s.push_str("\n  ]\n}\n");
        s
    }
}

fn parse_error(path: &Path, e: &serde_json::Error) -> MeshError {
    // serde_json appends " at line L column C"; the error variant carries
    // those as fields.
    let mut message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    if let Some(stripped) = message.strip_suffix(&suffix) {
        message = stripped.to_string();
    }
    MeshError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// Reads and validates a hierarchy file with the default size limits
/// (16..=64 cells per side, ghosts included).
pub fn read_hierarchy(path: impl AsRef<Path>) -> Result<Hierarchy, MeshError> {
    read_hierarchy_with(path, SizeLimits::default())
}

/// Reads and validates a hierarchy file with the given size limits.
/// Errors name the file, and the level and patch (or line and column for
/// malformed JSON).
pub fn read_hierarchy_with(
    path: impl AsRef<Path>,
    limits: SizeLimits,
) -> Result<Hierarchy, MeshError> {
    let path = path.as_ref();
    let text = fs::read_to_string(path).map_err(|source| MeshError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let file = HierarchyFile::from_json(&text, path)?;
    file.to_hierarchy(limits).map_err(|e| MeshError::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// Writes `h` to `path` atomically: the text goes to a temporary file in
/// the same directory, is flushed to disk, then renamed over `path`, so a
/// reader never sees a half-written file.
pub fn write_hierarchy(h: &Hierarchy, path: impl AsRef<Path>) -> Result<(), MeshError> {
    let path = path.as_ref();
    let text = HierarchyFile::from_hierarchy(h).to_json();
    write_atomically(path, text.as_bytes())
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), MeshError> {
    if path.file_name().is_none() {
        return Err(MeshError::invalid(
            "hierarchy file path",
            format!("{} names no file", path.display()),
        ));
    }
    crate::atomic_file::write_bytes(path, bytes)
        .map_err(|(path, source)| MeshError::Io { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{SyntheticSpec, generate};
    use proptest::prelude::*;
    use std::path::PathBuf;

    fn tmp_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("quilt-mesh-file-tests-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        d
    }

    const SMALL: &str = r#"{"domain_cells": [32, 32, 16], "ghost": 2,
      "levels": [
        {"ratio": 1, "patches": [
          {"id": 0, "lo": [0, 0, 0], "hi": [15, 31, 15], "parent": -1},
          {"id": 1, "lo": [16, 0, 0], "hi": [31, 31, 15], "parent": -1}]},
        {"ratio": 2, "patches": [
          {"id": 7, "lo": [8, 8, 8], "hi": [27, 27, 23], "parent": 0},
          {"id": 8, "lo": [28, 8, 8], "hi": [47, 27, 23], "parent": 1}]}]}"#;

    fn parse(text: &str) -> Result<Hierarchy, MeshError> {
        HierarchyFile::from_json(text, Path::new("t.json"))?.to_hierarchy(SizeLimits::default())
    }

    #[test]
    fn reads_the_schema() {
        let h = parse(SMALL).unwrap();
        assert_eq!(h.num_levels(), 2);
        assert_eq!(h.ghost(), 2);
        let i = h.index_of(PatchId(8)).unwrap();
        assert_eq!(h.patches()[i].parent(), h.index_of(PatchId(1)));
        assert_eq!(h.level_geometry(1).unwrap().ratio, 2);
        // 7 and 8 touch along x: each copies from the other.
        assert_eq!(h.patches()[i].sibling_overlaps().len(), 1);
    }

    #[test]
    fn write_then_read_round_trips() {
        let h = generate(&SyntheticSpec {
            patches: 300,
            seed: 5,
            ..Default::default()
        })
        .unwrap();
        let path = tmp_dir().join("round-trip.json");
        write_hierarchy(&h, &path).unwrap();
        let back = read_hierarchy(&path).unwrap();
        assert_eq!(back.specs(), h.specs());
        assert_eq!(back.ghost(), h.ghost());
        assert_eq!(back.geometry(), h.geometry());
        // The hand-formatted text is what serde would parse into the same record.
        let text = fs::read_to_string(&path).unwrap();
        let direct: HierarchyFile = serde_json::from_str(&text).unwrap();
        assert_eq!(direct, HierarchyFile::from_hierarchy(&h));
        // No temporary file is left behind.
        let leftovers = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".tmp-")
            })
            .count();
        assert_eq!(leftovers, 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        #[test]
        fn round_trip_through_text(seed in any::<u64>(), patches in 64usize..400, ratio in prop::sample::select(vec![2, 4])) {
            let h = generate(&SyntheticSpec { patches, seed, ratio, ..Default::default() }).unwrap();
            let text = HierarchyFile::from_hierarchy(&h).to_json();
            let back = parse(&text).unwrap();
            prop_assert_eq!(back.specs(), h.specs());
            prop_assert_eq!(HierarchyFile::from_hierarchy(&back), HierarchyFile::from_hierarchy(&h));
        }
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn malformed_json_names_line_and_column() {
        let truncated = &SMALL[..SMALL.len() / 2];
        let e = HierarchyFile::from_json(truncated, Path::new("cut.json")).unwrap_err();
        match &e {
            MeshError::Parse { line, column, .. } => {
                assert!(*line >= 1 && *column >= 1);
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().starts_with("cut.json:"), "{e}");
        let e = err(r#"{"domain_cells": [8, 8, 8], "ghost": 1, "levels": [], "colour": 3}"#);
        assert!(e.contains("colour") && e.contains(":1:"), "{e}");
        let e = err(r#"{"domain_cells": [8, 8], "ghost": 1, "levels": []}"#);
        assert!(e.contains("t.json:1:"), "{e}");
        let e = err(r#"{"domain_cells": [8, 8, 8], "levels": []}"#);
        assert!(e.contains("ghost"), "{e}");
        let e = err(
            r#"{"domain_cells": [8, 8, 8], "ghost": 1, "levels": [{"ratio": 1, "patches": [{"id": -3, "lo": [0,0,0], "hi": [7,7,7], "parent": -1}]}]}"#,
        );
        assert!(e.contains("-3"), "{e}");
    }

    #[test]
    fn bad_values_name_level_and_patch() {
        let lim = |t: &str| {
            HierarchyFile::from_json(t, Path::new("t.json"))
                .unwrap()
                .to_hierarchy(SizeLimits { min: 1, max: 64 })
                .unwrap_err()
                .to_string()
        };
        // Ratio 3.
        let e = err(&SMALL.replace("\"ratio\": 2", "\"ratio\": 3"));
        assert!(e.contains("level 1") && e.contains("ratio 3"), "{e}");
        // Level 0 ratio.
        let e = err(&SMALL.replace("\"ratio\": 1", "\"ratio\": 2"));
        assert!(e.contains("level 0 ratio"), "{e}");
        // Unknown parent.
        let e = err(&SMALL.replace("\"parent\": 1}", "\"parent\": 42}"));
        assert!(e.contains("patch 8") && e.contains("bad parent 42"), "{e}");
        // Parent on the wrong level.
        let e = err(&SMALL.replace("\"parent\": 1}", "\"parent\": 7}"));
        assert!(e.contains("patch 8") && e.contains("level 1"), "{e}");
        // Missing parent above level 0.
        let e = err(&SMALL.replace("\"parent\": 1}", "\"parent\": -1}"));
        assert!(e.contains("patch 8"), "{e}");
        // Parent on level 0.
        let e = err(&SMALL.replace(
            "\"hi\": [15, 31, 15], \"parent\": -1",
            "\"hi\": [15, 31, 15], \"parent\": 1",
        ));
        assert!(e.contains("patch 0"), "{e}");
        // A box outside the domain.
        let e = err(&SMALL.replace("[47, 27, 23]", "[47, 27, 33]"));
        assert!(
            e.contains("patch 8") && e.contains("not inside the level domain"),
            "{e}"
        );
        // Over the size limit: 64 cells along y plus 2 x 2 ghosts.
        let e = err(&SMALL.replace(
            "\"lo\": [8, 8, 8], \"hi\": [27, 27, 23]",
            "\"lo\": [8, 0, 8], \"hi\": [27, 63, 23]",
        ));
        assert!(
            e.contains("patch 7") && e.contains("24x68x20") && e.contains("outside the limits"),
            "{e}"
        );
        // Overlapping siblings.
        let e = err(&SMALL.replace("\"lo\": [28, 8, 8]", "\"lo\": [26, 8, 8]"));
        assert!(e.contains("patches 7 and 8 overlap"), "{e}");
        // Not aligned to the ratio.
        let e = err(&SMALL.replace("\"lo\": [28, 8, 8]", "\"lo\": [29, 8, 8]"));
        assert!(e.contains("patch 8") && e.contains("aligned"), "{e}");
        // Level 0 not covering the domain (with small patches allowed).
        let e = lim(&SMALL.replace("\"lo\": [16, 0, 0]", "\"lo\": [20, 0, 0]"));
        assert!(e.contains("level 0 does not cover"), "{e}");
        // Duplicate id.
        let e = err(&SMALL.replace("\"id\": 8", "\"id\": 7"));
        assert!(e.contains("patch id 7 is used twice"), "{e}");
        // Not nested: a fine patch whose ghost cells leave the domain's
        // interior coverage cannot happen on level 1 of a covered level 0,
        // so use a third level sticking out of its parent.
        let three = SMALL.replace(
            "\"parent\": 1}]}]}",
            "\"parent\": 1}]}, {\"ratio\": 2, \"patches\": [{\"id\": 9, \"lo\": [16, 16, 16], \"hi\": [31, 31, 31], \"parent\": 7}]}]}",
        );
        let e = err(&three);
        assert!(
            e.contains("patch 9") && e.contains("not properly nested"),
            "{e}"
        );
    }

    #[test]
    fn file_errors_name_the_file() {
        let dir = tmp_dir();
        let path = dir.join("bad-ratio.json");
        fs::write(&path, SMALL.replace("\"ratio\": 2", "\"ratio\": 3")).unwrap();
        let e = read_hierarchy(&path).unwrap_err();
        assert!(matches!(e, MeshError::InFile { .. }));
        let s = e.to_string();
        assert!(s.contains("bad-ratio.json") && s.contains("level 1"), "{s}");
        let e = read_hierarchy(dir.join("missing.json")).unwrap_err();
        assert!(matches!(e, MeshError::Io { .. }) && e.to_string().contains("missing.json"));
        let h = parse(SMALL).unwrap();
        assert!(write_hierarchy(&h, dir.join("no-such-dir").join("x.json")).is_err());
        assert!(write_hierarchy(&h, Path::new("/")).is_err());
    }
}
