//! Command-line overrides of the common deck keys.
//!
//! [`DeckArgs`] is a `clap::Args` group, so an application flattens it into
//! its own parser:
//!
//! ```
//! use clap::Parser;
//! use quilt_integrator::cli::DeckArgs;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     deck: DeckArgs,
//! }
//!
//! let cli = Cli::parse_from(["app", "--max-steps", "3", "--backend", "cpu"]);
//! let deck = cli.deck.load().unwrap();
//! assert_eq!(deck.run.max_steps, 3);
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::deck::{BackendChoice, Deck, DeckError, Residency};

/// `--config`, `--max-steps`, `--end-time`, `--out`, `--backend`,
/// `--residency`, `--levels`, `--output-interval`, `--checkpoint-interval`.
///
/// Numeric options take values that start with `-`, so that `--max-steps -1`
/// is reported as an invalid value of `--max-steps` rather than as an
/// unknown argument `-1`: integers through `allow_negative_numbers` (a
/// missing value before the next option is still reported as missing),
/// floats through `allow_hyphen_values`, since `-inf` and `-1e-3` are not
/// numbers to clap's lexer.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct DeckArgs {
    /// Input deck (TOML); without it every key takes its default.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Overrides `run.max_steps`.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_steps: Option<u64>,
    /// Overrides `run.end_time`.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub end_time: Option<f64>,
    /// Overrides `output.dir`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Overrides `run.backend`: auto, cpu or cuda.
    #[arg(long, value_name = "NAME", value_parser = parse_backend)]
    pub backend: Option<BackendChoice>,
    /// Overrides `run.residency`: auto, host or device.
    #[arg(long, value_name = "WHERE", value_parser = parse_residency)]
    pub residency: Option<Residency>,
    /// Overrides `amr.max_levels` (1 ..= 8).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub levels: Option<usize>,
    /// Overrides `output.interval` (coarse steps between field outputs).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub output_interval: Option<u64>,
    /// Overrides `output.checkpoint_interval`.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub checkpoint_interval: Option<u64>,
}

fn parse_backend(s: &str) -> Result<BackendChoice, String> {
    match s.to_ascii_lowercase().as_str() {
        "auto" => Ok(BackendChoice::Auto),
        "cpu" => Ok(BackendChoice::Cpu),
        "cuda" => Ok(BackendChoice::Cuda),
        _ => Err(format!(
            "unknown backend `{s}` (expected auto, cpu or cuda)"
        )),
    }
}

fn parse_residency(s: &str) -> Result<Residency, String> {
    match s.to_ascii_lowercase().as_str() {
        "auto" => Ok(Residency::Auto),
        "host" => Ok(Residency::Host),
        "device" => Ok(Residency::Device),
        _ => Err(format!(
            "unknown residency `{s}` (expected auto, host or device)"
        )),
    }
}

impl DeckArgs {
    /// Reads the deck (or starts from the defaults), applies the overrides
    /// and validates the result; an invalid override is reported as coming
    /// from its option.
    pub fn load(&self) -> Result<Deck, DeckError> {
        self.load_over(Deck::default_text_source())
    }

    /// As [`DeckArgs::load`], starting from `base` (deck text and its file
    /// name) when no `--config` is given: examples use it for their own
    /// defaults.
    pub fn load_over(&self, base: (String, String)) -> Result<Deck, DeckError> {
        let (text, file) = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| DeckError::Io {
                    path: path.clone(),
                    source,
                })?;
                (text, path.display().to_string())
            }
            None => base,
        };
        let mut deck = Deck::parse_unchecked(&text, &file)?;
        let overrides = self.apply(&mut deck);
        deck.validate_source(&text, &file, &overrides)?;
        Ok(deck)
    }

    /// Writes the given options into `deck`; returns `(key, option)` pairs.
    pub fn apply(&self, deck: &mut Deck) -> Vec<(String, String)> {
        let mut o = Vec::new();
        if let Some(n) = self.max_steps {
            deck.run.max_steps = n;
            o.push(("run.max_steps".into(), "--max-steps".into()));
        }
        if let Some(t) = self.end_time {
            deck.run.end_time = t;
            o.push(("run.end_time".into(), "--end-time".into()));
        }
        if let Some(dir) = &self.out {
            deck.output.dir = dir.clone();
            o.push(("output.dir".into(), "--out".into()));
        }
        if let Some(b) = self.backend {
            deck.run.backend = b;
            o.push(("run.backend".into(), "--backend".into()));
        }
        if let Some(r) = self.residency {
            deck.run.residency = r;
            o.push(("run.residency".into(), "--residency".into()));
        }
        if let Some(n) = self.levels {
            deck.amr.max_levels = n;
            o.push(("amr.max_levels".into(), "--levels".into()));
        }
        if let Some(n) = self.output_interval {
            deck.output.interval = n;
            o.push(("output.interval".into(), "--output-interval".into()));
        }
        if let Some(n) = self.checkpoint_interval {
            deck.output.checkpoint_interval = n;
            o.push((
                "output.checkpoint_interval".into(),
                "--checkpoint-interval".into(),
            ));
        }
        o
    }
}

/// The exit status of an application whose work returned `result`: the
/// code on success; on error the message with its causes on one line
/// (`error: reading x: y`) to stderr and status 1. Returning the error
/// from `main` instead would print its `Debug` form, and a backtrace
/// whenever `RUST_BACKTRACE` is set.
pub fn exit_status<E: std::fmt::Display>(result: Result<ExitCode, E>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            // `{:#}` joins an anyhow chain with ": "; other errors print as usual.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

impl Deck {
    /// Empty deck text named `<defaults>`: every key takes its default.
    pub fn default_text_source() -> (String, String) {
        (String::new(), "<defaults>".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deck::Location;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        deck: DeckArgs,
    }

    #[test]
    fn overrides_apply_and_bad_ones_name_the_option() {
        let cli = Cli::try_parse_from(["x", "--end-time", "0.5", "--out", "/tmp/q"]).unwrap();
        let d = cli.deck.load().unwrap();
        assert_eq!(d.run.end_time, 0.5);
        assert_eq!(d.output.dir, PathBuf::from("/tmp/q"));

        let cli = Cli::try_parse_from(["x", "--end-time", "-1"]).unwrap();
        let e = cli.deck.load().unwrap_err();
        match &e {
            DeckError::Invalid { key, location, .. } => {
                assert_eq!(key, "run.end_time");
                assert_eq!(location, &Location::CommandLine("--end-time".into()));
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("--end-time"), "{e}");
    }

    #[test]
    fn bad_arguments_are_clap_errors() {
        use clap::error::ErrorKind;
        assert!(Cli::try_parse_from(["x", "--backend", "gpu"]).is_err());
        assert!(Cli::try_parse_from(["x", "--bogus"]).is_err());
        // A negative count is an invalid value of its option, not an
        // unknown argument `-3` that leaves the user guessing which option.
        for flag in [
            "--max-steps",
            "--levels",
            "--output-interval",
            "--checkpoint-interval",
        ] {
            let e = Cli::try_parse_from(["x", flag, "-3"]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ValueValidation, "{flag}: {e}");
            assert!(e.to_string().contains(&format!("'{flag} <N>'")), "{e}");
        }
        // An option followed by another option still lacks its value.
        let e = Cli::try_parse_from(["x", "--max-steps", "--levels", "2"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidValue, "{e}");
        assert!(e.to_string().contains("--max-steps"), "{e}");
    }

    #[test]
    fn float_values_may_start_with_a_hyphen() {
        for value in ["-inf", "-1e-3", "-.5"] {
            let cli = Cli::try_parse_from(["x", "--end-time", value]).unwrap();
            let e = cli.deck.load().unwrap_err();
            assert_eq!(e.key(), Some("run.end_time"), "{value}: {e}");
            assert!(e.to_string().contains("--end-time"), "{e}");
        }
    }

    #[test]
    fn levels_and_intervals_are_blamed_on_their_options() {
        let cli = Cli::try_parse_from([
            "x",
            "--levels",
            "1",
            "--output-interval",
            "7",
            "--checkpoint-interval",
            "9",
        ])
        .unwrap();
        let d = cli.deck.load().unwrap();
        assert_eq!(d.amr.max_levels, 1);
        assert_eq!((d.output.interval, d.output.checkpoint_interval), (7, 9));

        for levels in ["0", "9"] {
            let cli = Cli::try_parse_from(["x", "--levels", levels]).unwrap();
            let e = cli.deck.load().unwrap_err();
            match &e {
                DeckError::Invalid { key, location, .. } => {
                    assert_eq!(key, "amr.max_levels");
                    assert_eq!(location, &Location::CommandLine("--levels".into()));
                }
                other => panic!("{other}"),
            }
        }
    }

    #[test]
    fn missing_config_file_is_an_io_error() {
        let cli = Cli::try_parse_from(["x", "--config", "/nonexistent/deck.toml"]).unwrap();
        let e = cli.deck.load().unwrap_err();
        assert!(matches!(e, DeckError::Io { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/deck.toml"));
    }

    #[test]
    fn config_file_values_and_lines() {
        let dir = std::env::temp_dir().join(format!("quilt-deck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.toml");
        std::fs::write(&path, "[run]\nend_time = 0.3\n\n[hydro]\ncfl = 1.5\n").unwrap();
        let cli = Cli::try_parse_from(["x", "--config", path.to_str().unwrap()]).unwrap();
        let e = cli.deck.load().unwrap_err();
        assert_eq!(e.key(), Some("hydro.cfl"));
        assert_eq!(e.line(), Some(5));
        assert!(
            e.to_string()
                .starts_with(&format!("{}:5:1", path.display())),
            "{e}"
        );
        let cli =
            Cli::try_parse_from(["x", "--config", path.to_str().unwrap(), "--max-steps", "2"])
                .unwrap();
        assert!(cli.deck.load().is_err());
        std::fs::write(&path, "[run]\nend_time = 0.3\n").unwrap();
        let d = cli.deck.load().unwrap();
        assert_eq!((d.run.end_time, d.run.max_steps), (0.3, 2));
        std::fs::remove_dir_all(&dir).ok();
    }
}
