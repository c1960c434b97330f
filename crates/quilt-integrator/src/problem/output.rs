//! Cell arrays beyond the Euler ones: the settings' derived fields
//! (`output.derived`) and a problem's own ([`OutputField`]).

use std::fmt;
use std::sync::Arc;

use quilt_sweep::physics::{Derived, Thermo};

use crate::deck::{Deck, is_array_name};

/// The function of an [`OutputField`]: a cell's conserved values and the
/// fluid to the field's value.
pub type CellFunction = dyn Fn(&[f64], &dyn Thermo) -> f64 + Send + Sync;

/// A cell array a problem adds to every output, computed from each cell's
/// state (see [`Problem::output_fields`](super::Problem::output_fields)).
#[derive(Clone)]
pub struct OutputField {
    /// The cell array's name (letters, digits and `_`).
    pub name: String,
    /// Its value from a cell's conserved values (every component, passive
    /// scalars included, in `f64`) and the fluid the backend solves.
    pub value: Arc<CellFunction>,
}

impl OutputField {
    /// The field `name` of values `value`.
    pub fn new(
        name: impl Into<String>,
        value: impl Fn(&[f64], &dyn Thermo) -> f64 + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            value: Arc::new(value),
        }
    }
}

impl fmt::Debug for OutputField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputField")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// One cell array after the Euler arrays and the passive scalars'
/// fractions.
#[derive(Clone, Debug)]
pub(crate) enum Column {
    /// A field of the physics, named in `output.derived`.
    Derived(Derived),
    /// A field of the problem.
    Problem(OutputField),
}

impl Column {
    pub(crate) fn name(&self) -> &str {
        match self {
            Column::Derived(d) => d.name(),
            Column::Problem(f) => &f.name,
        }
    }

    /// Its value for a cell's conserved values `u`.
    pub(crate) fn value(&self, u: &[f64], gas: &dyn Thermo) -> f64 {
        match self {
            Column::Derived(d) => d.value(gas, std::array::from_fn(|c| u[c])),
            Column::Problem(f) => (f.value)(u, gas),
        }
    }
}

/// The columns of `deck`'s `output.derived` and of `fields` (a problem's),
/// refused when a name is not one of letters, digits and `_`, or is
/// already an output array's.
pub(crate) fn columns(deck: &Deck, fields: Vec<OutputField>) -> Result<Vec<Column>, String> {
    let mut out = Vec::new();
    for name in &deck.output.derived {
        let d = Derived::from_name(name)
            .ok_or_else(|| format!("output.derived: {name:?} is not a derived field"))?;
        out.push(Column::Derived(d));
    }
    for f in fields {
        let n = &f.name;
        if !is_array_name(n) {
            return Err(format!(
                "the output field {n:?} needs a name of letters, digits and '_'"
            ));
        }
        let taken = quilt_io::vtkhdf::EULER_ARRAYS.contains(&n.as_str())
            || deck.hydro.scalars.contains(n)
            || out.iter().any(|c| c.name() == n);
        if taken {
            return Err(format!(
                "the output field {n:?} has the name of another cell array of the output"
            ));
        }
        out.push(Column::Problem(f));
    }
    Ok(out)
}
