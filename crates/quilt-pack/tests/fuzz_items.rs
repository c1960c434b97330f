//! Fuzzing item files: valid `w,h,d` lists (with and without a header,
//! comments, blank lines, CRLF), their fields replaced by odd values, lines
//! deleted, repeated or swapped, junk inserted, the text truncated, and
//! foreign text, must each parse to positive sizes that pack or are refused
//! naming the item, or be refused with an error naming the line (and the
//! field, at a column inside that line), quickly and without a panic.
//!
//! Whether a first line is a header is another helper's business; the
//! checks here hold whichever way it is decided.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed};
use quilt_pack::{Extent, ItemsFileError, PackOptions, pack, parse_items};

/// Far more than parsing and packing a few items takes on a loaded machine.
const TIME_LIMIT: Duration = Duration::from_secs(5);

/// Valid item files in the forms people write them.
const FILES: [&str; 6] = [
    "w,h,d\n16,16,16\n32,16,8\n20,20,20\n64,64,64\n",
    "# patches of step 12\n\n16, 32, 64\n 20 , 20 ,20 \n\n# done\n",
    "width,height,depth\r\n40,24,16\r\n24,40,16\r\n",
    "\"w\",\"h\",\"d\"\n1,1,1\n2,3,4\n",
    "8,8,8\n",
    "",
];

/// Fields that are not a size below 2^32, or barely are.
const ODD_FIELDS: [&str; 26] = [
    "0",
    "-0",
    "-1",
    "+5",
    "1",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999999999999999",
    "16.0",
    "1e3",
    "0x10",
    "NaN",
    "inf",
    "",
    " ",
    "\t16",
    "١٦",
    "１６",
    "16 16",
    "\"16\"",
    "w",
    "-",
    "--3",
    "16,16",
    "\u{feff}16",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// The `n`-th field (counting over all lines) replaced.
    Field(Index, &'static str),
    /// The `n`-th line removed.
    DeleteLine(Index),
    /// The `n`-th line written twice.
    DuplicateLine(Index),
    /// Two lines exchanged.
    SwapLines(Index, Index),
    /// Text inserted at a byte offset.
    Junk(Index, String),
    /// The text cut at a byte offset.
    Truncate(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let i = any::<Index>;
    prop_oneof![
        3 => (i(), prop::sample::select(&ODD_FIELDS[..])).prop_map(|(n, v)| Mutation::Field(n, v)),
        1 => i().prop_map(Mutation::DeleteLine),
        1 => i().prop_map(Mutation::DuplicateLine),
        1 => (i(), i()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        1 => (i(), "[,#\r\n\t 0-9a-z\u{0}-\u{1f}\u{feff}é-]{1,6}").prop_map(|(n, j)| Mutation::Junk(n, j)),
        1 => i().prop_map(Mutation::Truncate),
    ]
}

/// The largest character boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

fn apply(text: String, m: &Mutation) -> String {
    let pick = |n: &Index, len: usize| n.index(len.max(1));
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    match m {
        Mutation::Field(n, v) => {
            let slots: Vec<(usize, usize)> = (0..lines.len())
                .flat_map(|l| (0..lines[l].split(',').count()).map(move |f| (l, f)))
                .collect();
            let (l, f) = slots[pick(n, slots.len())];
            let mut fields: Vec<&str> = lines[l].split(',').collect();
            fields[f] = v;
            lines[l] = fields.join(",");
        }
        Mutation::DeleteLine(n) => {
            lines.remove(pick(n, lines.len()));
        }
        Mutation::DuplicateLine(n) => {
            let at = pick(n, lines.len());
            lines.insert(at, lines[at].clone());
        }
        Mutation::SwapLines(a, b) => {
            let (a, b) = (pick(a, lines.len()), pick(b, lines.len()));
            lines.swap(a, b);
        }
        Mutation::Junk(n, junk) => {
            let at = floor_boundary(&text, pick(n, text.len() + 1));
            return format!("{}{junk}{}", &text[..at], &text[at..]);
        }
        Mutation::Truncate(n) => {
            return text[..floor_boundary(&text, pick(n, text.len() + 1))].to_string();
        }
    }
    lines.join("\n")
}

/// Parses `text` and checks the outcome; returns the error, if any.
fn check(text: &str) -> Option<ItemsFileError> {
    let start = Instant::now();
    let result = parse_items(text);
    let outcome = match result {
        Ok(items) => {
            check_items(text, &items);
            None
        }
        Err(e) => {
            check_error(text, &e);
            Some(e)
        }
    };
    let took = start.elapsed();
    assert!(took < TIME_LIMIT, "took {took:?}:\n{text:?}");
    outcome
}

/// Parsed items are positive sizes, at most one per line, that read back
/// from their own list, and that pack into 64³ bins or are refused
/// naming the item.
fn check_items(text: &str, items: &[Extent]) {
    assert!(
        items.len() <= text.lines().count(),
        "{} items from {} lines: {text:?}",
        items.len(),
        text.lines().count()
    );
    assert!(
        items.iter().flatten().all(|&s| s > 0),
        "{items:?} from {text:?}"
    );
    let written: String = items
        .iter()
        .map(|[w, h, d]| format!("{w},{h},{d}\n"))
        .collect();
    assert_eq!(parse_items(&written).as_deref(), Ok(items), "{written:?}");
    match pack(items, [64; 3], &PackOptions::default()) {
        Ok(p) => p
            .verify(items, false)
            .unwrap_or_else(|d| panic!("packing of {items:?} is wrong: {d}")),
        Err(e) => assert!(
            e.item().is_some_and(|i| i < items.len()),
            "packing {items:?} failed without naming an item: {e}"
        ),
    }
}

/// An error names a line of the text that holds data (not blank, not a
/// comment), and the field, where it names one, at a column in that line.
fn check_error(text: &str, e: &ItemsFileError) {
    let s = e.to_string();
    let line = e.line();
    assert!(s.contains(&format!("line {line}")), "{s}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        (1..=lines.len()).contains(&line),
        "line {line} of {}: {s}\n{text:?}",
        lines.len()
    );
    let raw = lines[line - 1];
    let trimmed = raw.trim();
    assert!(
        !trimmed.is_empty() && !trimmed.starts_with('#'),
        "line {line} holds no data: {raw:?}: {s}"
    );
    let column = e.column(text);
    assert!(
        (1..=raw.chars().count() + 1).contains(&column),
        "column {column} outside line {line} {raw:?}: {s}"
    );
    let quoted = match e {
        ItemsFileError::FieldCount { text, .. }
        | ItemsFileError::NotAnInteger { text, .. }
        | ItemsFileError::Negative { text, .. } => Some(text),
        _ => None,
    };
    if let Some(q) = quoted {
        assert!(
            raw.contains(q.as_str()),
            "`{q}` is not on line {line} {raw:?}: {s}"
        );
    }
}

/// A fixed seed: the same cases in every run, and no regression files
/// written into the source tree. `QUILT_FUZZ_CASES=N` runs N cases from a
/// random seed instead, for a deeper search by hand.
fn config(cases: u32) -> Config {
    let deep = std::env::var("QUILT_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    Config {
        cases: deep.unwrap_or(cases),
        failure_persistence: None,
        rng_seed: deep.map_or(RngSeed::Fixed(0x17e5_f11e), |_| RngSeed::Random),
        ..Config::default()
    }
}

#[test]
fn the_valid_files_parse() {
    for f in FILES {
        assert_eq!(check(f), None, "{f:?}");
    }
}

proptest! {
    #![proptest_config(config(96))]

    /// One to three mutations of a valid file.
    #[test]
    fn mutated_files(
        file in prop::sample::select(&FILES[..]),
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        check(&ms.iter().fold(file.to_string(), apply));
    }

    /// Text that was never an item file.
    #[test]
    fn foreign_text(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        check(&String::from_utf8_lossy(&bytes));
    }
}

/// Foreign files of the kinds that get passed by mistake, each refused at
/// the line it names.
#[test]
fn foreign_files_are_refused_at_their_first_line() {
    let cases: [(&str, usize); 8] = [
        ("{\"domain_cells\": [32, 32, 32], \"ghost\": 2}\n", 1),
        ("[domain]\nbase_cells = [32, 32, 32]\n", 1),
        ("\u{fffd}HDF\r\n\u{1a}\n\0\0\0", 1),
        ("16\t16\t16\n", 1),
        ("16 16 16\n", 1),
        ("# items\n\n\n16;16;16\n", 4),
        ("w,h,d\nw,h,d\n", 2),
        (&"9".repeat(100_000), 1),
    ];
    for (text, line) in cases {
        let e = check(text).unwrap_or_else(|| panic!("accepted {text:?}"));
        assert_eq!(e.line(), line, "{e}");
    }
}
