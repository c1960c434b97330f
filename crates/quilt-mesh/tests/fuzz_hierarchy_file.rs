//! Fuzzing hierarchy files: a valid file written by [`write_hierarchy`],
//! truncated, bit-flipped, its numbers replaced by huge or negative ones,
//! fields and lines deleted or repeated, and foreign files (binary junk,
//! empty, other JSON, absurd sizes), must each be read as a valid
//! hierarchy or refused with an error naming the file, quickly, without a
//! panic or an unbounded allocation, and without touching the file.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed};
use quilt_mesh::{Hierarchy, MeshError, SyntheticSpec, generate, read_hierarchy, write_hierarchy};

/// Far more than reading a small file takes on a loaded machine.
const TIME_LIMIT: Duration = Duration::from_secs(5);

fn scratch(name: &str) -> PathBuf {
    let base = option_env!("CARGO_TARGET_TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("quilt-mesh-fuzz-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A small valid hierarchy of a few levels (about 20 patches).
fn sample() -> Hierarchy {
    generate(&SyntheticSpec {
        patches: 20,
        seed: 7,
        domain_cells: 64,
        ..Default::default()
    })
    .unwrap()
}

/// The text of [`sample`] as [`write_hierarchy`] writes it.
fn sample_text() -> String {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let dir = scratch("sample");
        let path = dir.join("h.json");
        write_hierarchy(&sample(), &path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        text
    })
    .clone()
}

/// Writes `bytes` to `path`, reads it back as a hierarchy, and checks the
/// outcome: a valid hierarchy, or an error naming the file; quickly; and
/// the file as it was. Returns the error text, if any.
fn check(path: &Path, bytes: &[u8]) -> Option<String> {
    fs::write(path, bytes).unwrap();
    let start = Instant::now();
    let result = read_hierarchy(path);
    let took = start.elapsed();
    let shown = String::from_utf8_lossy(bytes);
    assert!(took < TIME_LIMIT, "reading took {took:?}:\n{shown}");
    assert!(fs::read(path).unwrap() == bytes, "reading changed the file");
    match result {
        Ok(h) => {
            check_valid(path, &h);
            None
        }
        Err(e) => {
            check_error(path, bytes, &e);
            Some(e.to_string())
        }
    }
}

/// A hierarchy read from a file validates again from its specs and
/// survives a write and read.
fn check_valid(path: &Path, h: &Hierarchy) {
    let again = Hierarchy::new(h.geometry().clone(), h.ghost(), h.limits(), h.specs())
        .unwrap_or_else(|e| panic!("accepted, yet its own specs are invalid: {e}"));
    assert_eq!(again.specs(), h.specs());
    let copy = path.with_extension("copy.json");
    write_hierarchy(h, &copy).unwrap();
    let back = read_hierarchy(&copy).unwrap();
    assert_eq!(back.specs(), h.specs());
    assert_eq!(back.geometry(), h.geometry());
    fs::remove_file(&copy).unwrap();
}

/// An error names the file first; a parse error's line lies in the file.
fn check_error(path: &Path, bytes: &[u8], e: &MeshError) {
    let s = e.to_string();
    let name = path.display().to_string();
    assert!(
        s.starts_with(&name),
        "error does not name the file: {s}\n--- file:\n{}",
        String::from_utf8_lossy(bytes)
    );
    assert!(s.len() > name.len() + 2, "error says nothing more: {s}");
    match e {
        MeshError::Parse { line, column, .. } => {
            let lines = bytes.split(|&b| b == b'\n').count();
            assert!(
                *line <= lines && (*line == 0 || *column <= bytes.len() + 1),
                "line {line} column {column} outside the {lines} lines: {s}"
            );
        }
        MeshError::InFile { .. } | MeshError::Io { .. } => {}
        other => panic!("a file error of another kind: {other:?}"),
    }
}

/// Numbers that break a field: negative, zero, beyond i32 / u32, huge
/// floats, other types.
const ODD_NUMBERS: [&str; 22] = [
    "-1",
    "0",
    "1",
    "3",
    "-2147483648",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "1073741824",
    "1073741823",
    "-9223372036854775809",
    "99999999999999999999999",
    "1e12",
    "1.5",
    "-0",
    "NaN",
    "null",
    "\"7\"",
    "[]",
    "{}",
    "true",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// The file cut at a byte offset.
    Truncate(Index),
    /// One bit of one byte flipped.
    FlipBit(Index, u8),
    /// One byte replaced by any byte.
    SetByte(Index, u8),
    /// The `n`-th number replaced.
    Number(Index, &'static str),
    /// The `n`-th `"key": value` field removed.
    DeleteField(Index),
    /// The `n`-th line removed.
    DeleteLine(Index),
    /// The `n`-th line written twice.
    DuplicateLine(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let i = any::<Index>;
    prop_oneof![
        1 => i().prop_map(Mutation::Truncate),
        1 => (i(), 0u8..8).prop_map(|(n, b)| Mutation::FlipBit(n, b)),
        1 => (i(), any::<u8>()).prop_map(|(n, b)| Mutation::SetByte(n, b)),
        3 => (i(), prop::sample::select(&ODD_NUMBERS[..])).prop_map(|(n, v)| Mutation::Number(n, v)),
        1 => i().prop_map(Mutation::DeleteField),
        1 => i().prop_map(Mutation::DeleteLine),
        1 => i().prop_map(Mutation::DuplicateLine),
    ]
}

/// Byte ranges of the numbers (with their sign) in `text`.
fn numbers(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let sign = text[i] == b'-' && text.get(i + 1).is_some_and(u8::is_ascii_digit);
        if sign || text[i].is_ascii_digit() {
            let start = i;
            i += 1;
            while i < text.len() && text[i].is_ascii_digit() {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

/// Byte ranges of the `"key": value` fields in `text`, each with the
/// comma that separates it from the next (or the previous) field.
fn fields(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (colon, _) in text.iter().enumerate().filter(|(_, c)| **c == b':') {
        let Some(open) = text[..colon.saturating_sub(1)]
            .iter()
            .rposition(|&c| c == b'"')
        else {
            continue;
        };
        // The value: up to the end of its brackets, or to the next `,`, `}`.
        let (mut end, mut depth) = (colon + 1, 0i32);
        while end < text.len() {
            match text[end] {
                b'[' | b'{' => depth += 1,
                b']' | b'}' if depth == 0 => break,
                b']' | b'}' => depth -= 1,
                b',' if depth == 0 => break,
                _ => {}
            }
            end += 1;
        }
        if end < text.len() && text[end] == b',' {
            out.push((open, end + 1));
        } else {
            let start = text[..open]
                .iter()
                .rposition(|&c| c == b',')
                .unwrap_or(open);
            out.push((start, end));
        }
    }
    out
}

fn apply(mut bytes: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let pick = |n: &Index, len: usize| n.index(len.max(1));
    match m {
        Mutation::Truncate(n) => bytes.truncate(pick(n, bytes.len() + 1)),
        Mutation::FlipBit(n, bit) if !bytes.is_empty() => {
            let at = pick(n, bytes.len());
            bytes[at] ^= 1 << bit;
        }
        Mutation::SetByte(n, b) if !bytes.is_empty() => {
            let at = pick(n, bytes.len());
            bytes[at] = *b;
        }
        Mutation::Number(n, v) => {
            let all = numbers(&bytes);
            if !all.is_empty() {
                let (a, b) = all[pick(n, all.len())];
                bytes.splice(a..b, v.bytes());
            }
        }
        Mutation::DeleteField(n) => {
            let all = fields(&bytes);
            if !all.is_empty() {
                let (a, b) = all[pick(n, all.len())];
                bytes.drain(a..b);
            }
        }
        Mutation::DeleteLine(n) | Mutation::DuplicateLine(n) => {
            let mut lines: Vec<Vec<u8>> =
                bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            let at = pick(n, lines.len());
            if matches!(m, Mutation::DeleteLine(_)) {
                lines.remove(at);
            } else {
                lines.insert(at, lines[at].clone());
            }
            bytes = lines.join(&b'\n');
        }
        _ => {}
    }
    bytes
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
        rng_seed: deep.map_or(RngSeed::Fixed(0x41e2_a2c4), |_| RngSeed::Random),
        ..Config::default()
    }
}

#[test]
fn the_written_file_reads_back() {
    let dir = scratch("valid");
    assert_eq!(check(&dir.join("h.json"), sample_text().as_bytes()), None);
    fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(config(96))]

    /// One to three mutations of the written file.
    #[test]
    fn mutated_files(ms in prop::collection::vec(mutation(), 1..4)) {
        let dir = scratch("mutated");
        let bytes = ms.iter().fold(sample_text().into_bytes(), apply);
        check(&dir.join("h.json"), &bytes);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Files that were never hierarchy files: random bytes.
    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let dir = scratch("random");
        prop_assert!(check(&dir.join("junk.json"), &bytes).is_some());
        fs::remove_dir_all(&dir).unwrap();
    }
}

/// A one-level file over `domain` with the given ghost width and patches
/// (`lo`, `hi`).
fn one_level(domain: [i64; 3], ghost: i64, patches: &[([i64; 3], [i64; 3])]) -> String {
    let p: Vec<String> = patches
        .iter()
        .enumerate()
        .map(|(n, (lo, hi))| {
            format!("{{\"id\": {n}, \"lo\": {lo:?}, \"hi\": {hi:?}, \"parent\": -1}}")
        })
        .collect();
    format!(
        "{{\"domain_cells\": {domain:?}, \"ghost\": {ghost}, \"levels\": [{{\"ratio\": 1, \"patches\": [{}]}}]}}",
        p.join(", ")
    )
}

/// Foreign files and absurd sizes, each with a word its error must hold.
#[test]
fn foreign_files_and_absurd_sizes_are_refused() {
    let dir = scratch("foreign");
    let big = 1i64 << 30;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "EOF"),
        ("a JSON array", b"[1, 2, 3]".to_vec(), "invalid type"),
        ("an empty object", b"{}".to_vec(), "domain_cells"),
        ("null", b"null".to_vec(), "invalid type"),
        ("deep nesting", deep.into_bytes(), "invalid type"),
        ("a TOML deck", b"[domain]\nbase_cells = [32, 32, 32]\n".to_vec(), "expected"),
        ("an HDF5 signature", b"\x89HDF\r\n\x1a\n\0\0\0\0".to_vec(), "UTF-8"),
        ("a byte-order mark", [&b"\xef\xbb\xbf"[..], sample_text().as_bytes()].concat(), "expected value"),
        ("invalid UTF-8", b"{\"domain_cells\": [\xff]}".to_vec(), "UTF-8"),
        (
            "trailing text",
            format!("{}x", sample_text()).into_bytes(),
            "trailing characters",
        ),
        (
            "a 2^30-cell box",
            one_level([big; 3], 2, &[([0; 3], [big - 1; 3])]).into_bytes(),
            "outside the limits",
        ),
        (
            "a 2^90-cell domain",
            one_level([big; 3], 2, &[([0; 3], [31; 3])]).into_bytes(),
            "does not cover",
        ),
        (
            "a 2^31-cell axis",
            one_level([2 * big, 32, 32], 2, &[([0; 3], [31; 3])]).into_bytes(),
            "invalid value",
        ),
        (
            "a box at the end of i32",
            one_level([32; 3], 2, &[([i32::MAX as i64 - 31; 3], [i32::MAX as i64; 3])]).into_bytes(),
            "not inside",
        ),
        (
            "a box at the start of i32",
            one_level([32; 3], 2, &[([i32::MIN as i64; 3], [i32::MIN as i64 + 31; 3])]).into_bytes(),
            "not inside",
        ),
        (
            "an inverted box",
            one_level([32; 3], 2, &[([31; 3], [0; 3])]).into_bytes(),
            "empty",
        ),
        (
            "a huge ghost width",
            one_level([32; 3], i32::MAX as i64, &[([0; 3], [31; 3])]).into_bytes(),
            "ghost",
        ),
        (
            "a negative ghost width",
            one_level([32; 3], -3, &[([0; 3], [31; 3])]).into_bytes(),
            "ghost",
        ),
        (
            "no level",
            b"{\"domain_cells\": [32, 32, 32], \"ghost\": 2, \"levels\": []}".to_vec(),
            "level 0",
        ),
        (
            "forty levels",
            format!(
                "{{\"domain_cells\": [32, 32, 32], \"ghost\": 2, \"levels\": [{{\"ratio\": 1, \"patches\": []}}{}]}}",
                ", {\"ratio\": 2, \"patches\": []}".repeat(39)
            )
            .into_bytes(),
            "level",
        ),
    ];
    let mut wrong = Vec::new();
    for (what, bytes, expect) in &cases {
        let path = dir.join("foreign.json");
        match check(&path, bytes) {
            Some(s) if s.contains(expect) => {}
            other => wrong.push(format!(
                "{what}: expected an error with `{expect}`, got {other:?}"
            )),
        }
    }
    // Not a file at all.
    let e = read_hierarchy(&dir).unwrap_err().to_string();
    if !e.starts_with(&dir.display().to_string()) {
        wrong.push(format!("a directory: {e}"));
    }
    let missing = dir.join("missing.json");
    let e = read_hierarchy(&missing).unwrap_err().to_string();
    if !e.starts_with(&missing.display().to_string()) {
        wrong.push(format!("a missing file: {e}"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    fs::remove_dir_all(&dir).unwrap();
}

/// A write that fails (its target is a directory) leaves what was there,
/// and no temporary file.
#[test]
fn a_failed_write_keeps_what_was_written_before() {
    let dir = scratch("failed-write");
    let target = dir.join("h.json");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("kept"), b"before").unwrap();
    let e = write_hierarchy(&sample(), &target).unwrap_err();
    assert!(e.to_string().contains("h.json"), "{e}");
    assert_eq!(fs::read(target.join("kept")).unwrap(), b"before");
    let names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["h.json"], "temporary left behind");
    fs::remove_dir_all(&dir).unwrap();
}
