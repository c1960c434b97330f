//! From byte spans to lines and dotted keys, and back: what lets every deck
//! error name the key and the line it sits on.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// Where a value of the deck came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// Line and column (1-based) in the named deck file.
    Line {
        /// File name (or `<deck>` for text without a file).
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
    },
    /// A command-line option overrode the key.
    CommandLine(String),
    /// The key is absent from the deck: its default applies.
    Default {
        /// File name (or `<deck>`).
        file: String,
    },
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line { file, line, column } => write!(f, "{file}:{line}:{column}"),
            Location::CommandLine(flag) => write!(f, "command line option {flag}"),
            Location::Default { file } => write!(f, "{file} (default value)"),
        }
    }
}

/// 1-based line and column of byte offset `at` in `text`.
pub(crate) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    // Spans always fall on character boundaries of the parsed text; stay
    // safe for any offset anyway.
    let mut start = at;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// One segment of a key path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Splits `a.b[2].c` into `[Key(a), Key(b), Index(2), Key(c)]`.
fn segments(path: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let mut rest = part;
        if let Some(open) = rest.find('[') {
            out.push(Segment::Key(rest[..open].to_string()));
            rest = &rest[open..];
            while let Some(stripped) = rest.strip_prefix('[') {
                let close = stripped.find(']').unwrap_or(stripped.len());
                if let Ok(i) = stripped[..close].parse() {
                    out.push(Segment::Index(i));
                }
                rest = stripped.get(close + 1..).unwrap_or("");
            }
        } else {
            out.push(Segment::Key(rest.to_string()));
        }
    }
    out
}

/// The parsed deck text, for locating keys.
pub(crate) struct Locator<'a> {
    file: String,
    text: &'a str,
    root: Option<Spanned<DeTable<'a>>>,
    overrides: Vec<(String, String)>,
}

impl<'a> Locator<'a> {
    /// A locator over deck text `text` read from `file`; `overrides` lists
    /// `(key, command-line flag)` pairs that replaced deck values.
    pub(crate) fn new(file: &str, text: &'a str, overrides: &[(String, String)]) -> Self {
        Self {
            file: file.to_string(),
            text,
            root: DeTable::parse(text).ok(),
            overrides: overrides.to_vec(),
        }
    }

    /// Where `key` (dotted path, `[i]` for array entries) got its value.
    pub(crate) fn locate(&self, key: &str) -> Location {
        if let Some((_, flag)) = self.overrides.iter().find(|(k, _)| k == key) {
            return Location::CommandLine(flag.clone());
        }
        match self.span_of(key) {
            Some(span) => self.location_at(span.start),
            None => Location::Default {
                file: self.file.clone(),
            },
        }
    }

    /// Whether `key` appears in the deck text.
    pub(crate) fn present(&self, key: &str) -> bool {
        self.span_of(key).is_some()
    }

    /// The location of byte offset `at`.
    pub(crate) fn location_at(&self, at: usize) -> Location {
        let (line, column) = line_col(self.text, at);
        Location::Line {
            file: self.file.clone(),
            line,
            column,
        }
    }

    /// The span of the *key* of `path` (or of the array entry for an index).
    fn span_of(&self, path: &str) -> Option<Range<usize>> {
        let root = self.root.as_ref()?;
        let mut table: &DeTable<'_> = root.get_ref();
        let mut value: Option<&Spanned<DeValue<'_>>> = None;
        let mut span = None;
        for seg in segments(path) {
            match seg {
                Segment::Key(k) => {
                    if let Some(v) = value {
                        match v.get_ref() {
                            DeValue::Table(t) => table = t,
                            _ => return None,
                        }
                    }
                    let (key, v) = table.get_key_value(k.as_str())?;
                    span = Some(key.span());
                    value = Some(v);
                }
                Segment::Index(i) => {
                    let arr = match value?.get_ref() {
                        DeValue::Array(a) => a,
                        _ => return None,
                    };
                    let v = arr.get(i)?;
                    span = Some(v.span());
                    value = Some(v);
                }
            }
        }
        span
    }

    /// The dotted key whose key or value contains byte offset `at`, the
    /// innermost one (for errors reported by span only).
    pub(crate) fn key_at(&self, at: usize) -> Option<String> {
        walk_table(self.root.as_ref()?.get_ref(), at)
    }
}

/// The dotted key of the duplicate key whose name spans `span` of `text`.
/// Text with a duplicate key does not parse, so no [`Locator`] can walk
/// it; the same text with that occurrence renamed can, and the renamed
/// key's path is the duplicate's.
pub(crate) fn duplicate_key(text: &str, span: Range<usize>) -> Option<String> {
    const MARK: &str = "__quilt_duplicate__";
    let name = text.get(span.clone())?;
    // Inside the quotes of a quoted key.
    let end = if name.len() >= 2 && name.ends_with(['"', '\'']) {
        span.end - 1
    } else {
        span.end
    };
    let renamed = format!("{}{MARK}{}", &text[..end], &text[end..]);
    let path = Locator::new("", &renamed, &[]).key_at(span.start)?;
    path.contains(MARK).then(|| path.replacen(MARK, "", 1))
}

/// Depth-first search for the entry whose key or scalar value contains
/// `at`. Table spans do not cover the entries of a `[header]` table, so
/// every table is searched whatever its span.
fn walk_table(t: &DeTable<'_>, at: usize) -> Option<String> {
    for (k, v) in t.iter() {
        if k.span().contains(&at) {
            return Some(k.get_ref().to_string());
        }
        if let Some(rest) = walk_value(v, at) {
            return Some(if rest.is_empty() {
                k.get_ref().to_string()
            } else if rest.starts_with('[') {
                format!("{}{rest}", k.get_ref())
            } else {
                format!("{}.{rest}", k.get_ref())
            });
        }
    }
    None
}

/// `Some("")` when the scalar `v` itself contains `at`; the path below
/// `v` when an entry inside it does.
fn walk_value(v: &Spanned<DeValue<'_>>, at: usize) -> Option<String> {
    match v.get_ref() {
        DeValue::Table(t) => walk_table(t, at),
        DeValue::Array(a) => {
            for (i, e) in a.iter().enumerate() {
                if let Some(rest) = walk_value(e, at) {
                    return Some(if rest.is_empty() || rest.starts_with('[') {
                        format!("[{i}]{rest}")
                    } else {
                        format!("[{i}].{rest}")
                    });
                }
            }
            v.span().contains(&at).then(String::new)
        }
        _ => v.span().contains(&at).then(String::new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let t = "a = 1\nbb = 2\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        assert_eq!(line_col(t, 8), (2, 3));
        assert_eq!(line_col(t, 100), (3, 1));
    }

    #[test]
    fn keys_are_found_by_path_and_by_offset() {
        let t = "[hydro]\ncfl = 0.9\n\n[[tagging]]\ntol = 1\n[[tagging]]\ntol = 2\n";
        let l = Locator::new("d.toml", t, &[]);
        assert_eq!(
            l.locate("hydro.cfl"),
            Location::Line {
                file: "d.toml".into(),
                line: 2,
                column: 1
            }
        );
        match l.locate("tagging[1].tol") {
            Location::Line { line, .. } => assert_eq!(line, 7),
            other => panic!("{other:?}"),
        }
        assert!(matches!(l.locate("hydro.gamma"), Location::Default { .. }));
        assert_eq!(
            l.key_at(t.find("0.9").unwrap()).as_deref(),
            Some("hydro.cfl")
        );
        assert_eq!(
            l.key_at(t.rfind("2").unwrap()).as_deref(),
            Some("tagging[1].tol")
        );
        let o = Locator::new("d.toml", t, &[("hydro.cfl".into(), "--cfl".into())]);
        assert_eq!(o.locate("hydro.cfl"), Location::CommandLine("--cfl".into()));
    }

    #[test]
    fn duplicate_keys_are_found_by_their_second_span() {
        let dup = |t: &str, name: &str| {
            let at = t.rfind(name).unwrap();
            duplicate_key(t, at..at + name.len())
        };
        let t = "[hydro]\ncfl = 0.5\ncfl = 0.6\n";
        assert_eq!(dup(t, "cfl").as_deref(), Some("hydro.cfl"));
        let t = "[[tagging]]\ntol = 1\n[[tagging]]\ntol = 1\ntol = 2\n";
        assert_eq!(dup(t, "tol").as_deref(), Some("tagging[1].tol"));
        let t = "[hydro]\ncfl = 1\n[amr]\n[hydro]\n";
        assert_eq!(dup(t, "hydro").as_deref(), Some("hydro"));
        let t = "[run]\nend_time = 1\n\"end_time\" = 2\n";
        assert_eq!(dup(t, "\"end_time\"").as_deref(), Some("run.end_time"));
        assert_eq!(dup("a.b = 1\na.b = 2\n", "b").as_deref(), Some("a.b"));
    }
}
