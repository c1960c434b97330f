//! Fuzzing the input deck: the default deck and small valid decks, mutated
//! (values of another type, huge, negative, NaN, infinite, empty or very
//! long; lines deleted or duplicated; junk inserted; text truncated;
//! section headers swapped; unknown keys), must each be accepted as a
//! valid deck that survives a round trip through [`Deck::to_toml`], or be
//! refused with an error naming the file, the line and the key, quickly
//! and without a panic. A hand-written corpus of known-bad decks pins the
//! key each one must name.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed};
use quilt_integrator::deck::{DEFAULT_DECK, Deck, DeckError, Location};
use quilt_mesh::memory::MEMORY_LIMIT_VAR;

/// The file name errors must carry.
const FILE: &str = "fuzz.toml";

/// Far more than parsing and validating a deck takes on a loaded machine;
/// a deck that takes longer hangs.
const TIME_LIMIT: Duration = Duration::from_secs(5);

/// Small valid decks beside the default one, one per initial condition and
/// the array-of-tables, inline-array and dotted-key forms.
const SMALL_DECKS: [&str; 5] = [
    "[domain]\nbase_cells = [16, 16, 16]\n\n[amr]\nmax_levels = 2\nratios = [4]\n\n\
     [hydro]\nscheme = \"waf\"\nlimiter = \"superbee\"\ncfl = 0.9\n\n\
     [initial]\nkind = \"sedov\"\n\n[initial.sedov]\ncenter = [0.0, 0.0, 0.0]\nenergy = 1.0\nradius = 0.1\n\n\
     [run]\nend_time = 0.05\nmax_steps = 10\nprecision = \"f32\"\n",
    "[[tagging]]\nfield = \"density\"\ndetector = \"shock\"\ntol = 0.5\nonset = 0.9\n\n\
     [boundary]\nx_lo = \"periodic\"\nx_hi = \"periodic\"\ny_lo = \"reflecting\"\n\n\
     [initial]\nkind = \"riemann\"\n\n[initial.riemann]\naxis = \"y\"\nx0 = 0.25\n\
     left = [1.0, 0.0, 1.0]\nright = [0.125, 0.0, 0.1]\n",
    "[amr]\nmax_levels = 1\n\n[initial]\nkind = \"uniform\"\n\n[initial.uniform]\nrho = 2.0\n\
     velocity = [1.0, -1.0, 0.5]\np = 3.0\n\n[output]\nname = \"u-1.run\"\ninterval = 0\n\n\
     [batching]\nmode = \"static\"\nn_fixed = 7\nlayout = \"per_patch\"\n",
    "hydro.cfl = 0.5\nhydro.scheme = \"tvd\"\nrun.max_steps = 3\n\
     output = { dir = \"o\", checkpoint_interval = 2 }\n",
    "",
];

/// Replacement values: every type, the edges of every range, non-finite
/// numbers, empty and very long strings, and TOML that is not a value.
fn odd_value() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        "\"text\"",
        "\"\"",
        "true",
        "[]",
        "[[]]",
        "[1, 2]",
        "[1, \"a\", 2.0]",
        "{}",
        "{ a = 1 }",
        "0",
        "-0",
        "-1",
        "-0.0",
        "0.0",
        "1",
        "2",
        "4",
        "3",
        "64",
        "1.5",
        "nan",
        "-nan",
        "inf",
        "-inf",
        "1e308",
        "1e-320",
        "-1e308",
        "2147483648",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551616",
        "1e999",
        "0x10",
        "0o777",
        "1979-05-27T07:32:00Z",
        "[nan, 0.5, 0.5]",
        "[inf, 1, 1]",
        "[0.5, 0.5]",
        "[1048577, 32, 32]",
        "[1048576, 1048576, 1048576]",
        "[32, 32, -32]",
        "[2, 2, 2, 2, 2, 2, 2, 2, 2]",
        "'''multi\nline'''",
        "\"\\u0000\"",
        "\"a/b\"",
        "\"unterminated",
        "",
        "= 1",
    ])
    .prop_map(str::to_string);
    prop_oneof![
        4 => fixed,
        1 => any::<f64>().prop_map(toml_float),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        1 => (1usize..100_000).prop_map(|n| format!("\"{}\"", "x".repeat(n))),
        1 => "[a-z0-9 ._/-]{0,12}".prop_map(|s| format!("\"{s}\"")),
    ]
}

/// `v` as a TOML float literal.
fn toml_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:?}")
    }
}

/// Text that does not belong in a deck: control characters, a byte-order
/// mark, TOML punctuation, non-ASCII letters, whole stray lines.
fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any::<char>(), 1..8).prop_map(|c| c.into_iter().collect()),
        prop::sample::select(vec![
            "\0",
            "\u{feff}",
            "\r",
            "\r\n",
            "\t",
            "[",
            "]",
            "[[",
            "=",
            "\"",
            "'",
            "#",
            ",",
            "{",
            "}",
            ".",
            "\n[hydro]\n",
            "\n[[tagging]]\n",
            "\nx = 1\n",
            "\n= 2\n",
            "é",
            "\u{7f}",
        ])
        .prop_map(str::to_string),
    ]
}

#[derive(Clone, Debug)]
enum Mutation {
    /// The value of the `n`-th `key = value` line replaced.
    Value(Index, String),
    /// The `n`-th line removed.
    Delete(Index),
    /// The `n`-th line written twice (a duplicate key or table).
    Duplicate(Index),
    /// Junk inserted at a byte offset.
    Junk(Index, String),
    /// The text cut at a byte offset.
    Truncate(Index),
    /// Two section headers exchanged.
    SwapHeaders(Index, Index),
    /// A key no section has, before the `n`-th line.
    UnknownKey(Index, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let i = any::<Index>;
    prop_oneof![
        4 => (i(), odd_value()).prop_map(|(n, v)| Mutation::Value(n, v)),
        1 => i().prop_map(Mutation::Delete),
        1 => i().prop_map(Mutation::Duplicate),
        1 => (i(), junk()).prop_map(|(n, j)| Mutation::Junk(n, j)),
        1 => i().prop_map(Mutation::Truncate),
        1 => (i(), i()).prop_map(|(a, b)| Mutation::SwapHeaders(a, b)),
        1 => (i(), "[a-z_]{1,12}(\\.[a-z_]{1,8})?")
            .prop_map(|(n, k)| Mutation::UnknownKey(n, k)),
    ]
}

/// The largest character boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn is_header(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let pick = |idx: &Index, n: usize| idx.index(n.max(1));
    match m {
        Mutation::Value(n, v) => {
            let assigns: Vec<usize> = (0..lines.len())
                .filter(|&l| !is_header(&lines[l]) && lines[l].contains('='))
                .collect();
            if assigns.is_empty() {
                lines.push(format!("hydro.cfl = {v}"));
            } else {
                let l = assigns[pick(n, assigns.len())];
                let key = lines[l].split('=').next().unwrap_or_default().to_string();
                lines[l] = format!("{key}= {v}");
            }
        }
        Mutation::Delete(n) => {
            lines.remove(pick(n, lines.len()));
        }
        Mutation::Duplicate(n) => {
            let l = pick(n, lines.len());
            lines.insert(l, lines[l].clone());
        }
        Mutation::Junk(n, junk) => {
            let at = floor_boundary(text, pick(n, text.len() + 1));
            return format!("{}{junk}{}", &text[..at], &text[at..]);
        }
        Mutation::Truncate(n) => {
            return text[..floor_boundary(text, pick(n, text.len() + 1))].to_string();
        }
        Mutation::SwapHeaders(a, b) => {
            let headers: Vec<usize> = (0..lines.len()).filter(|&l| is_header(&lines[l])).collect();
            if !headers.is_empty() {
                let (a, b) = (
                    headers[pick(a, headers.len())],
                    headers[pick(b, headers.len())],
                );
                lines.swap(a, b);
            }
        }
        Mutation::UnknownKey(n, key) => {
            let l = pick(n, lines.len() + 1);
            lines.insert(l, format!("{key} = 1"));
        }
    }
    lines.join("\n")
}

/// The last plain segment of a dotted key: `tol` of `tagging[1].tol`.
fn leaf(key: &str) -> &str {
    let last = key.rsplit('.').next().unwrap_or(key);
    last.split('[').next().unwrap_or(last)
}

/// Whether `e` is the deck being refused for the memory it would need,
/// which depends on the machine rather than on the deck alone.
fn refused_for_memory(e: &DeckError) -> bool {
    e.key() == Some("domain.base_cells") && e.to_string().contains(MEMORY_LIMIT_VAR)
}

/// Parses `text` as `fuzz.toml` and checks the outcome; returns the error
/// text, if any, for tests that expect more of it.
fn check(text: &str) -> Option<String> {
    let start = Instant::now();
    let result = Deck::parse_named(text, FILE);
    let took = start.elapsed();
    assert!(took < TIME_LIMIT, "parsing took {took:?}:\n{text}");
    match result {
        Ok(deck) => {
            check_accepted(text, &deck);
            None
        }
        Err(e) => {
            check_refused(text, &e);
            Some(e.to_string())
        }
    }
}

/// An accepted deck is valid and equal to itself written out and read back.
fn check_accepted(text: &str, deck: &Deck) {
    if let Err(e) = deck.validate() {
        // Memory available may have dropped since the parse.
        assert!(
            refused_for_memory(&e),
            "accepted, then invalid: {e}\n--- deck:\n{text}"
        );
    }
    let written = deck.to_toml();
    let back = Deck::parse_named(&written, "written.toml").unwrap_or_else(|e| {
        panic!("written deck refused: {e}\n--- written:\n{written}\n--- from:\n{text}")
    });
    assert_eq!(&back, deck, "round trip differs\n--- written:\n{written}");
}

/// A refused deck names the file first, then the line (within the text)
/// and the key, which that line holds.
fn check_refused(text: &str, e: &DeckError) {
    let s = e.to_string();
    assert!(
        s.starts_with(FILE),
        "error does not name the file: {s}\n--- deck:\n{text}"
    );
    if let Some(key) = e.key() {
        assert!(s.contains(&format!("`{key}`")), "key not named: {s}");
    }
    let (DeckError::Parse { location, .. } | DeckError::Invalid { location, .. }) = e else {
        panic!("parsing text gave an I/O error: {s}");
    };
    match location {
        Location::Line { file, line, column } => {
            assert_eq!(file, FILE, "{s}");
            let lines: Vec<&str> = text.split('\n').collect();
            assert!(
                *line >= 1 && *line <= lines.len() && *column >= 1,
                "line {line} column {column} outside the {} lines: {s}",
                lines.len()
            );
            // A value's key sits on the line named (the text of a parse
            // error's value may run over several lines after its key).
            if let DeckError::Invalid { key, .. } = e {
                assert!(
                    lines[line - 1].contains(leaf(key)),
                    "line {line} `{}` does not hold key `{key}`: {s}",
                    lines[line - 1]
                );
            }
        }
        Location::Default { file } => assert_eq!(file, FILE, "{s}"),
        Location::CommandLine(flag) => panic!("no command line here, yet {flag}: {s}"),
    }
}

fn decks() -> impl Strategy<Value = String> {
    let mut all = vec![DEFAULT_DECK.to_string()];
    all.extend(SMALL_DECKS.iter().map(|s| s.to_string()));
    prop::sample::select(all)
}

/// A fixed seed: the same cases in every run, so CI cannot flake, and no
/// regression files written into the source tree.
/// `QUILT_FUZZ_CASES=N` runs N cases from a random seed instead, for a
/// deeper search by hand.
fn config(cases: u32, seed: u64) -> Config {
    let deep = std::env::var("QUILT_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    Config {
        cases: deep.unwrap_or(cases),
        failure_persistence: None,
        rng_seed: deep.map_or(RngSeed::Fixed(seed), |_| RngSeed::Random),
        ..Config::default()
    }
}

#[test]
fn the_unmutated_decks_are_valid_and_round_trip() {
    assert!(check(DEFAULT_DECK).is_none());
    for d in SMALL_DECKS {
        assert!(check(d).is_none(), "{d}");
    }
}

proptest! {
    #![proptest_config(config(64, 0x5eed_dec0))]

    /// One value replaced by one of another type or out of range.
    #[test]
    fn one_odd_value(deck in decks(), at in any::<Index>(), value in odd_value()) {
        check(&apply(&deck, &Mutation::Value(at, value)));
    }
}

proptest! {
    #![proptest_config(config(64, 0x5eed_dec1))]

    /// Up to four mutations of any kind, one after the other.
    #[test]
    fn several_mutations(deck in decks(), ms in prop::collection::vec(mutation(), 1..5)) {
        let text = ms.iter().fold(deck, |t, m| apply(&t, m));
        check(&text);
    }
}

proptest! {
    #![proptest_config(config(32, 0x5eed_dec2))]

    /// Every byte prefix is a deck too (a file cut off while written).
    #[test]
    fn truncated_default_deck(at in 0..DEFAULT_DECK.len()) {
        check(&DEFAULT_DECK[..floor_boundary(DEFAULT_DECK, at)]);
    }
}

/// Known-bad decks and the key each must name. None repeats the unit tests
/// of `deck/tests.rs`; these are the inputs a fuzzer finds first.
#[test]
fn known_bad_decks_name_their_key() {
    let long = "x".repeat(100_000);
    let corpus: Vec<(String, &str)> = vec![
        ("[hydro]\ncfl = 0.5\ncfl = 0.6\n".into(), "hydro.cfl"),
        (
            "[run]\nmax_steps = 18446744073709551616\n".into(),
            "run.max_steps",
        ),
        ("[run]\nthreads = -1\n".into(), "run.threads"),
        (
            "[batching]\nbin_edge = 4294967296\n".into(),
            "batching.bin_edge",
        ),
        (
            "[domain]\nbase_cells = [32.0, 32, 32]\n".into(),
            "domain.base_cells[0]",
        ),
        ("[amr]\nratios = []\n".into(), "amr.ratios"),
        (
            "[amr]\nregrid_interval = -4\n".into(),
            "amr.regrid_interval",
        ),
        ("[hydro]\ngamma = nan\n".into(), "hydro.gamma"),
        (
            "[hydro]\ndensity_floor = inf\n".into(),
            "hydro.density_floor",
        ),
        ("[run]\nend_time = \"0.2\"\n".into(), "run.end_time"),
        ("[run]\nmax_steps = 1.5\n".into(), "run.max_steps"),
        (
            "[output]\nhierarchy_files = \"yes\"\n".into(),
            "output.hierarchy_files",
        ),
        (format!("[output]\nname = \"{long}\"\n"), "output.name"),
        ("[output]\nname = \"\"\n".into(), "output.name"),
        ("[output]\nname = \"a\\u0000b\"\n".into(), "output.name"),
        ("[domain]\nlo = [0.0, 0.0]\n".into(), "domain.lo"),
        (
            "[initial]\nkind = \"sedov\"\n[initial.sedov]\ncenter = [0.5, 0.5, nan]\n".into(),
            "initial.sedov.center",
        ),
        (
            "[[tagging]]\nfield = \"density\"\ndetector = \"gradient\"\ntol = inf\n".into(),
            "tagging[0].tol",
        ),
        (
            "[[tagging]]\nfield = \"density\"\ndetector = \"gradient\"\ntol = 1\nonset = nan\n"
                .into(),
            "tagging[0].onset",
        ),
        (
            "[batching]\ncoefficients_dir = 3\n".into(),
            "batching.coefficients_dir",
        ),
        ("hydro = 3\n".into(), "hydro"),
    ];
    let mut wrong = Vec::new();
    for (text, key) in &corpus {
        let e = Deck::parse_named(text, FILE).expect_err(key);
        check_refused(text, &e);
        if e.key() != Some(*key) || e.line().is_none() {
            wrong.push(format!("expected key `{key}` and a line: {e}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
