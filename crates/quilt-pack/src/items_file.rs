//! Reading item lists: one `w,h,d` line per item.

use crate::Extent;
use crate::error::ItemsFileError;

/// Parses an item list: one `w,h,d` line per item, sizes in cells.
///
/// Blank lines and lines starting with `#` are skipped; fields may carry
/// surrounding spaces. The first non-blank line is taken as a header when
/// none of its fields starts with a digit or sign (e.g. `w,h,d`). Items are
/// numbered from 0 in file order.
///
/// # Errors
/// [`ItemsFileError`] naming the 1-based line (and field) of the first line
/// that does not hold three positive integer sizes below 2³².
///
/// # Example
/// ```
/// let items = quilt_pack::parse_items("w,h,d\n16,32,64\n 20, 20 ,20\n").unwrap();
/// assert_eq!(items, vec![[16, 32, 64], [20, 20, 20]]);
/// assert!(quilt_pack::parse_items("16,32\n").is_err());
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
        if first_data_line && fields.iter().all(|f| !looks_numeric(f)) {
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

fn looks_numeric(field: &str) -> bool {
    field.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+')
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
    fn extents() {
        assert_eq!(parse_extent("64,64,64"), Ok([64, 64, 64]));
        assert_eq!(parse_extent("32x16x8"), Ok([32, 16, 8]));
        assert!(parse_extent("64,64").is_err());
        assert!(parse_extent("64,0,64").is_err());
        assert!(parse_extent("64,-1,64").is_err());
    }
}
