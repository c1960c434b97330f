//! The TOML input deck.
//!
//! Every key is optional and has a documented default ([`DEFAULT_DECK`] is
//! a complete, commented deck that parses to [`Deck::default`]). Unknown
//! keys, values of the wrong type and values outside their range are
//! errors ([`DeckError`]) naming the dotted key and the line it sits on —
//! or the command-line option that set it.
//!
//! ```
//! use quilt_integrator::deck::Deck;
//!
//! let deck = Deck::parse("[hydro]\ncfl = 0.5\n[run]\nend_time = 0.1\n").unwrap();
//! assert_eq!(deck.hydro.cfl, 0.5);
//! let err = Deck::parse("[hydro]\ncfl = 0.5\nlimitr = \"minmod\"\n").unwrap_err();
//! assert_eq!(err.line(), Some(3));
//! ```

mod error;
mod locate;
mod resolve;
mod sections;
mod validate;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use error::DeckError;
pub use locate::Location;
pub use resolve::base_patches;
pub use sections::{
    AmrSection, Axis, BackendChoice, BatchLayoutKind, BatchMode, BatchingSection, Boundary,
    BoundarySection, Detector, DomainSection, FloorAction, HydroSection, InitialKind,
    InitialSection, Interpolation, OutputSection, Precision, Residency, RiemannIc, RunSection,
    SedovIc, SphereIc, TagField, TagSection, UniformIc, default_tagging,
};

use locate::Locator;

/// A complete deck with every default written out and explained; parses to
/// [`Deck::default`].
pub const DEFAULT_DECK: &str = include_str!("default.toml");

/// Most passive scalars a deck may name (`hydro.scalars`).
pub const MAX_SCALARS: usize = 8;

/// Whether `name` may name a cell array of the output (a passive scalar,
/// a problem's output field): non-empty, of ASCII letters, digits and `_`.
pub(crate) fn is_array_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// The input deck of a run (see the module docs and [`DEFAULT_DECK`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Deck {
    /// Physical box and base grid.
    pub domain: DomainSection,
    /// Levels, patch sizes, clustering, regrid cadence.
    pub amr: AmrSection,
    /// Refinement criteria (`[[tagging]]` entries); default: pressure
    /// gradient and pressure shock.
    #[serde(default = "default_tagging")]
    pub tagging: Vec<TagSection>,
    /// Scheme, limiter, CFL, gas.
    pub hydro: HydroSection,
    /// Boundary condition per face.
    pub boundary: BoundarySection,
    /// Initial condition.
    pub initial: InitialSection,
    /// Stop criteria, precision, backend, threads.
    pub run: RunSection,
    /// Output and checkpoint cadence and directory.
    pub output: OutputSection,
    /// Batch selection and pipelining.
    pub batching: BatchingSection,
}

impl Default for Deck {
    fn default() -> Self {
        Self {
            domain: DomainSection::default(),
            amr: AmrSection::default(),
            tagging: default_tagging(),
            hydro: HydroSection::default(),
            boundary: BoundarySection::default(),
            initial: InitialSection::default(),
            run: RunSection::default(),
            output: OutputSection::default(),
            batching: BatchingSection::default(),
        }
    }
}

impl Deck {
    /// Parses and validates deck text (errors name the file `<deck>`).
    pub fn parse(text: &str) -> Result<Self, DeckError> {
        Self::parse_named(text, "<deck>")
    }

    /// Parses and validates deck text read from `file` (used in errors).
    pub fn parse_named(text: &str, file: &str) -> Result<Self, DeckError> {
        let deck = Self::parse_unchecked(text, file)?;
        deck.validate_source(text, file, &[])?;
        Ok(deck)
    }

    /// Reads, parses and validates a deck file.
    pub fn from_file(path: &Path) -> Result<Self, DeckError> {
        let text = std::fs::read_to_string(path).map_err(|source| DeckError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_named(&text, &path.display().to_string())
    }

    /// Parses without range checks (syntax, unknown keys and types only).
    pub(crate) fn parse_unchecked(text: &str, file: &str) -> Result<Self, DeckError> {
        toml::from_str::<Deck>(text).map_err(|e| {
            let loc = Locator::new(file, text, &[]);
            let (location, key) = match e.span() {
                Some(span) => {
                    let key = loc.key_at(span.start).or_else(|| {
                        (e.message().trim() == "duplicate key")
                            .then(|| locate::duplicate_key(text, span.clone()))
                            .flatten()
                    });
                    (loc.location_at(span.start), key)
                }
                None => (Location::Default { file: file.into() }, None),
            };
            DeckError::Parse {
                location,
                key,
                message: e.message().trim().to_string(),
            }
        })
    }

    /// Valid values that are probably not what the user meant (e.g. a
    /// blast centred outside the domain), one sentence each naming the key.
    pub fn warnings(&self) -> Vec<String> {
        validate::warnings(self)
    }

    /// Validates the values; errors point at defaults (no deck text known).
    pub fn validate(&self) -> Result<(), DeckError> {
        self.validate_source("", "<deck>", &[])
    }

    /// Validates the values against the deck `text` they were parsed from,
    /// `overrides` listing `(dotted key, command-line flag)` pairs that
    /// replaced deck values after parsing.
    pub fn validate_source(
        &self,
        text: &str,
        file: &str,
        overrides: &[(String, String)],
    ) -> Result<(), DeckError> {
        let loc = Locator::new(file, text, overrides);
        validate::validate(self, &loc)
    }

    /// The deck as TOML text (every key written out, the parameters of the
    /// chosen initial condition only); parses back to an equal deck.
    /// Checkpoints store it.
    pub fn to_toml(&self) -> String {
        // Every field is a plain number, string, boolean or array of them,
        // so conversion to a table cannot fail.
        let Ok(mut table) = toml::Table::try_from(self) else {
            return String::new();
        };
        let kind = match self.initial.kind {
            InitialKind::Sphere => "sphere",
            InitialKind::Sedov => "sedov",
            InitialKind::Riemann => "riemann",
            InitialKind::Uniform => "uniform",
        };
        if let Some(toml::Value::Table(init)) = table.get_mut("initial") {
            init.retain(|k, _| k == "kind" || k == kind);
        }
        toml::to_string(&table).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
