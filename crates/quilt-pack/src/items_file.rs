//! Reading item lists: one `w,h,d` line per item.

use crate::Extent;
use crate::error::ItemsFileError;

/// Parses an item list: one `w,h,d` line per item, sizes in cells.
///
/// Blank lines and lines starting with `#` are skipped; fields may carry
/// surrounding spaces. The first non-blank line is taken as a header when
/// it names the three columns (case ignored, optionally quoted): `w,h,d`,
/// `width,height,depth`, `x,y,z` or `nx,ny,nz`. Any other first line is
/// data, so that a damaged first line is reported rather than dropped.
/// Items are numbered from 0 in file order.
///
/// # Errors
/// [`ItemsFileError`] naming the 1-based line (and field) of the first line
/// that does not hold three positive integer sizes below 2³²;
/// [`ItemsFileError::column`] finds the column.
///
/// # Example
/// ```
/// let items = quilt_pack::parse_items("w,h,d\n16,32,64\n 20, 20 ,20\n").unwrap();
/// assert_eq!(items, vec![[16, 32, 64], [20, 20, 20]]);
/// assert!(quilt_pack::parse_items("16,32\n").is_err());
/// assert!(quilt_pack::parse_items("sizes\n16,32,64\n").is_err());
/// ```
pub fn parse_items(text: &str) -> Result<Vec<Extent>, ItemsFileError> {
    let mut items = Vec::new();
    let mut seen_data = false;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        let first_data_line = !seen_data;
        seen_data = true;
        if first_data_line && is_header(&fields) {
            continue;
        }
        if fields.len() != 3 {
            return Err(ItemsFileError::FieldCount {
                line,
                found: fields.len(),
                text: trimmed.to_owned(),
            });
        }
        let mut extent = [0u32; 3];
        for (k, field) in fields.iter().enumerate() {
            extent[k] = parse_size(field, line, k + 1)?;
        }
        items.push(extent);
    }
    Ok(items)
}

/// Names a header may give each column, in `w, h, d` order.
const COLUMN_NAMES: [&[&str]; 3] = [
    &["w", "width", "x", "nx"],
    &["h", "height", "y", "ny"],
    &["d", "depth", "z", "nz"],
];

fn is_header(fields: &[&str]) -> bool {
    fields.len() == 3
        && fields.iter().zip(COLUMN_NAMES).all(|(field, names)| {
            // Spreadsheets write a byte-order mark and quote their headers.
            let name = field
                .trim_start_matches('\u{feff}')
                .trim_matches('"')
                .trim();
            names.iter().any(|n| n.eq_ignore_ascii_case(name))
        })
}

impl ItemsFileError {
    /// The 1-based column (in characters) of the error in `text`, the text
    /// that [`parse_items`] read: where the offending field starts, or the
    /// line's first non-blank character when the line as a whole is wrong.
    /// With [`ItemsFileError::line`], the `file:line:column` of editors.
    pub fn column(&self, text: &str) -> usize {
        let Some(raw) = text.lines().nth(self.line().saturating_sub(1)) else {
            return 1;
        };
        let field = match self {
            ItemsFileError::FieldCount { .. } => 1,
            ItemsFileError::NotAnInteger { field, .. }
            | ItemsFileError::Negative { field, .. }
            | ItemsFileError::Zero { field, .. } => *field,
        };
        // Byte offset of the field within the line, then of its first
        // non-blank character.
        let start: usize = raw
            .split(',')
            .take(field.saturating_sub(1))
            .map(|f| f.len() + 1)
            .sum();
        let rest = raw.get(start..).unwrap_or("");
        let at = start + (rest.len() - rest.trim_start().len());
        raw[..at.min(raw.len())].chars().count() + 1
    }
}

fn parse_size(field: &str, line: usize, index: usize) -> Result<u32, ItemsFileError> {
    let not_integer = || ItemsFileError::NotAnInteger {
        line,
        field: index,
        text: field.to_owned(),
    };
    if let Some(rest) = field.strip_prefix('-') {
        // Distinguish "-3" (a negative size) from "-x" (not a number).
        return if !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_digit())
            && rest.bytes().any(|b| b != b'0')
        {
            Err(ItemsFileError::Negative {
                line,
                field: index,
                text: field.to_owned(),
            })
        } else if !rest.is_empty() && rest.bytes().all(|b| b == b'0') {
            Err(ItemsFileError::Zero { line, field: index })
        } else {
            Err(not_integer())
        };
    }
    let value: u32 = field.parse().map_err(|_| not_integer())?;
    if value == 0 {
        return Err(ItemsFileError::Zero { line, field: index });
    }
    Ok(value)
}

/// Parses an extent written `W,H,D` (or `WxHxD`), e.g. a bin size on a
/// command line.
///
/// # Errors
/// [`crate::ParseOptionError`] when there are not three positive integers.
pub fn parse_extent(text: &str) -> Result<Extent, crate::ParseOptionError> {
    let err = || crate::ParseOptionError {
        kind: "extent",
        text: text.to_owned(),
        expected: "three positive integers W,H,D (or WxHxD)",
    };
    let fields: Vec<&str> = text.split([',', 'x', 'X']).map(str::trim).collect();
    if fields.len() != 3 {
        return Err(err());
    }
    let mut e = [0u32; 3];
    for (k, f) in fields.iter().enumerate() {
        e[k] = f.parse().map_err(|_| err())?;
        if e[k] == 0 {
            return Err(err());
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_comments_and_blank_lines() {
        let text = "# patches\n\nw, h, d\n16,16,16\n\n64,32,16\n";
        assert_eq!(parse_items(text).unwrap(), vec![[16, 16, 16], [64, 32, 16]]);
        assert_eq!(parse_items("").unwrap(), Vec::<Extent>::new());
    }

    #[test]
    fn malformed_lines_name_line_and_field() {
        let e = parse_items("w,h,d\n1,2,3\n1,2\n").unwrap_err();
        assert_eq!(
            e,
            ItemsFileError::FieldCount {
                line: 3,
                found: 2,
                text: "1,2".into()
            }
        );
        let e = parse_items("1,2,3\n4,five,6\n").unwrap_err();
        assert_eq!(
            e,
            ItemsFileError::NotAnInteger {
                line: 2,
                field: 2,
                text: "five".into()
            }
        );
        let e = parse_items("1,2,-3\n").unwrap_err();
        assert_eq!(
            e,
            ItemsFileError::Negative {
                line: 1,
                field: 3,
                text: "-3".into()
            }
        );
        let e = parse_items("1,0,3\n").unwrap_err();
        assert_eq!(e, ItemsFileError::Zero { line: 1, field: 2 });
        let e = parse_items("1,-0,3\n").unwrap_err();
        assert_eq!(e, ItemsFileError::Zero { line: 1, field: 2 });
        let e = parse_items("1,2,4294967296\n").unwrap_err();
        assert_eq!(e.line(), 1);
        let e = parse_items("1,2,3.5\n").unwrap_err();
        assert!(e.to_string().contains("line 1, field 3"), "{e}");
        // Only the first data line may be a header.
        let e = parse_items("1,2,3\nw,h,d\n").unwrap_err();
        assert_eq!(e.line(), 2);
    }

    #[test]
    fn only_column_names_make_a_header() {
        for header in [
            "w,h,d",
            "W, H, D",
            "width,height,depth",
            "x,y,z",
            "nx,ny,nz",
            "\"w\",\"h\",\"d\"",
            "\u{feff}w,h,d",
        ] {
            let text = format!("{header}\n1,2,3\n");
            assert_eq!(parse_items(&text), Ok(vec![[1, 2, 3]]), "{header:?}");
        }
        // A damaged or foreign first line is an error, not a header.
        let e = parse_items("junk\n1,2,3\n").unwrap_err();
        assert_eq!(
            e,
            ItemsFileError::FieldCount {
                line: 1,
                found: 1,
                text: "junk".into()
            }
        );
        let e = parse_items("# sizes\n\nw,h,depth_in_cells\n1,2,3\n").unwrap_err();
        assert_eq!(
            e,
            ItemsFileError::NotAnInteger {
                line: 3,
                field: 1,
                text: "w".into()
            }
        );
        assert!(parse_items("a,b,c\n").is_err());
        assert!(parse_items("w,h\n1,2,3\n").is_err());
    }

    #[test]
    fn columns_point_at_the_field() {
        let text = "w,h,d\n1,2,3\n 4, five ,6\n";
        let e = parse_items(text).unwrap_err();
        assert_eq!((e.line(), e.column(text)), (3, 5));
        let text = "1,2,3\n  1,2\n";
        let e = parse_items(text).unwrap_err();
        assert_eq!((e.line(), e.column(text)), (2, 3));
        let text = "junk\n";
        assert_eq!(parse_items(text).unwrap_err().column(text), 1);
        let text = "1,2,-3\n";
        assert_eq!(parse_items(text).unwrap_err().column(text), 5);
        // Columns count characters, not bytes.
        let text = "1,2,3\n\u{e9}\u{e9},0,1\n";
        let e = parse_items(text).unwrap_err();
        assert_eq!((e.line(), e.column(text)), (2, 1));
        let text = "1,2,3\n1,\u{e9},1\n";
        assert_eq!(parse_items(text).unwrap_err().column(text), 3);
        // A no-break space (two bytes) before the line's first field.
        let text = "1,2,3\n\u{a0}1,0,1\n";
        let e = parse_items(text).unwrap_err();
        assert_eq!((e.line(), e.column(text)), (2, 4));
    }

    #[test]
    fn extents() {
        assert_eq!(parse_extent("64,64,64"), Ok([64, 64, 64]));
        assert_eq!(parse_extent("32x16x8"), Ok([32, 16, 8]));
        assert!(parse_extent("64,64").is_err());
        assert!(parse_extent("64,0,64").is_err());
        assert!(parse_extent("64,-1,64").is_err());
    }
}
