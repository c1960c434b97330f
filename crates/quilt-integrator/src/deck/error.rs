//! Deck errors: every one names the key and where its value came from.

use std::path::PathBuf;

use thiserror::Error;

use super::locate::Location;

/// A deck that cannot be read, parsed or accepted.
#[derive(Debug, Error)]
pub enum DeckError {
    /// The deck file could not be read.
    #[error("cannot read deck {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// TOML syntax error, unknown key or a value of the wrong type.
    #[error("{location}: {}{message}", key.as_ref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
    Parse {
        /// Where.
        location: Location,
        /// The dotted key concerned, when known.
        key: Option<String>,
        /// The parser's message.
        message: String,
    },
    /// A value outside its allowed range, or keys that contradict each other.
    #[error("{location}: key `{key}`: {message}")]
    Invalid {
        /// Where the value came from.
        location: Location,
        /// The dotted key (`hydro.cfl`, `tagging[1].tol`).
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

impl DeckError {
    /// The dotted key the error is about, if known.
    pub fn key(&self) -> Option<&str> {
        match self {
            DeckError::Io { .. } => None,
            DeckError::Parse { key, .. } => key.as_deref(),
            DeckError::Invalid { key, .. } => Some(key),
        }
    }

    /// The line in the deck file, when the error points at one.
    pub fn line(&self) -> Option<usize> {
        match self {
            DeckError::Parse { location, .. } | DeckError::Invalid { location, .. } => {
                match location {
                    Location::Line { line, .. } => Some(*line),
                    _ => None,
                }
            }
            DeckError::Io { .. } => None,
        }
    }
}
