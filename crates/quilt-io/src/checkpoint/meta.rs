//! The run-level part of a checkpoint (time, step, counters, deck) and the
//! rules every stored scalar follows, checked alike by the writer and the
//! readers.

use std::collections::BTreeMap;
use std::fmt::Display;

use super::format::MAX_LEVELS;

/// Everything about a run, besides the hierarchy and its data, that a
/// restart needs to continue exactly where the run stopped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunState {
    /// Simulation time; finite and not negative.
    pub time: f64,
    /// Coarse steps taken.
    pub step: u64,
    /// Named integer counters (regrids done, outputs written, cells
    /// updated, next patch id, ...).
    pub counters: BTreeMap<String, u64>,
    /// Named real values (last time step, cost-model state, ...), stored
    /// bit-exactly; each finite.
    pub values: BTreeMap<String, f64>,
    /// The input deck the run was started with, verbatim.
    pub deck: String,
}

impl RunState {
    /// Checks every scalar against the rules of the checkpoint format:
    /// the time is finite and not negative, every value is finite, and
    /// every counter and value has a name HDF5 can store (not empty, no
    /// NUL). Returns the first field that breaks its rule.
    ///
    /// [`super::write_checkpoint`] refuses a run state that fails this, and
    /// the readers report a stored one that fails it as a damaged file, so
    /// a file the writer accepts is one the readers accept, and a damaged
    /// time or value is caught when the checkpoint is read rather than
    /// when the restarted run next writes one.
    ///
    /// The counters and the step carry no rule: any `u64` is a possible
    /// count, and what each counter means belongs to the caller. The deck
    /// is opaque here (any text, also empty); valid UTF-8 is guaranteed by
    /// its type and checked by the reader.
    pub fn validate(&self) -> Result<(), InvalidField> {
        if !(self.time.is_finite() && self.time >= 0.0) {
            return Err(InvalidField::new(
                "/run@time",
                self.time,
                "the simulation time must be finite and not negative",
            ));
        }
        for name in self.counters.keys() {
            check_name("/run/counters", name)?;
        }
        for (name, v) in &self.values {
            check_name("/run/values", name)?;
            if !v.is_finite() {
                return Err(InvalidField::new(
                    format!("/run/values@{name}"),
                    v,
                    "values must be finite",
                ));
            }
        }
        Ok(())
    }
}

fn check_name(group: &str, name: &str) -> Result<(), InvalidField> {
    if name.is_empty() || name.contains('\0') {
        return Err(InvalidField::new(
            format!("{group} name"),
            format!("{name:?}"),
            "names must be non-empty and free of NUL characters",
        ));
    }
    Ok(())
}

/// Checks the stored number of levels: at least 1, at most
/// [`MAX_LEVELS`].
pub(crate) fn check_num_levels(n: u64) -> Result<usize, InvalidField> {
    match usize::try_from(n) {
        Ok(n) if (1..=MAX_LEVELS).contains(&n) => Ok(n),
        _ => Err(InvalidField::new(
            "/hierarchy@num_levels",
            n,
            format!("a hierarchy has 1 to {MAX_LEVELS} levels"),
        )),
    }
}

/// Checks the stored number of components per cell: at least 1.
pub(crate) fn check_ncomp(n: u64) -> Result<usize, InvalidField> {
    match usize::try_from(n) {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(InvalidField::new(
            "/state@ncomp",
            n,
            "every cell has at least one component",
        )),
    }
}

/// Checks that `/state/offsets` has one entry per patch plus one.
pub(crate) fn check_offsets_len(offsets: usize, patches: usize) -> Result<(), InvalidField> {
    if offsets != patches + 1 {
        return Err(InvalidField::new(
            "/state/offsets",
            format!("{offsets} entries"),
            format!(
                "the hierarchy stores {patches} patches, so it needs {}",
                patches + 1
            ),
        ));
    }
    Ok(())
}

/// A stored field that breaks its rule: where it is in the file, its
/// value, and the rule. Displays as `/run@time = NaN: the simulation time
/// must be finite and not negative`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value}: {rule}")]
pub struct InvalidField {
    /// The field's place in the checkpoint file, e.g. `/run@time` or
    /// `/run/values@dt`.
    pub field: String,
    /// The offending value, as text.
    pub value: String,
    /// The rule it breaks.
    pub rule: String,
}

impl InvalidField {
    fn new(field: impl Into<String>, value: impl Display, rule: impl Into<String>) -> Self {
        InvalidField {
            field: field.into(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }
}

/// What [`super::read_checkpoint_info`] reports without loading the state.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointInfo {
    /// Format version of the file.
    pub version: u32,
    /// Element type of the state: `"f32"` or `"f64"`.
    pub real_type: String,
    /// The run state.
    pub run: RunState,
    /// Number of levels.
    pub num_levels: usize,
    /// Number of patches on all levels.
    pub num_patches: usize,
    /// Components per cell.
    pub ncomp: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(run: &RunState) -> String {
        run.validate().unwrap_err().field
    }

    #[test]
    fn every_scalar_of_the_run_state_is_checked() {
        let good = RunState {
            time: 0.5,
            step: u64::MAX,
            counters: BTreeMap::from([("regrids".into(), u64::MAX)]),
            values: BTreeMap::from([("dt".into(), 1e-3), ("zero".into(), -0.0)]),
            deck: String::new(),
        };
        good.validate().unwrap();
        RunState::default().validate().unwrap();
        // -0.0 is a start time like 0.
        RunState {
            time: -0.0,
            ..good.clone()
        }
        .validate()
        .unwrap();

        for t in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -5.0,
            -f64::MIN_POSITIVE,
        ] {
            let run = RunState {
                time: t,
                ..good.clone()
            };
            let e = run.validate().unwrap_err();
            assert_eq!(e.field, "/run@time");
            assert_eq!(e.value, t.to_string());
        }
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut run = good.clone();
            run.values.insert("dt".into(), v);
            assert_eq!(field(&run), "/run/values@dt");
        }
        let mut run = good.clone();
        run.counters.insert(String::new(), 1);
        assert_eq!(field(&run), "/run/counters name");
        let mut run = good;
        run.values.insert("a\0b".into(), 1.0);
        let e = run.validate().unwrap_err();
        assert_eq!(e.field, "/run/values name");
        assert!(e.to_string().contains("\"a\\0b\""), "{e}");
    }

    #[test]
    fn sizes_are_checked() {
        assert_eq!(check_num_levels(1), Ok(1));
        assert_eq!(check_num_levels(MAX_LEVELS as u64), Ok(MAX_LEVELS));
        for n in [0, MAX_LEVELS as u64 + 1, u64::from(u32::MAX)] {
            let e = check_num_levels(n).unwrap_err();
            assert_eq!(e.field, "/hierarchy@num_levels");
            assert_eq!(e.value, n.to_string());
        }
        assert_eq!(check_ncomp(5), Ok(5));
        assert_eq!(check_ncomp(0).unwrap_err().field, "/state@ncomp");
        check_offsets_len(6, 5).unwrap();
        let e = check_offsets_len(5, 5).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/state/offsets = 5 entries: the hierarchy stores 5 patches, so it needs 6"
        );
    }
}
