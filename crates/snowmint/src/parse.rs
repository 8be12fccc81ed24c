//! The one integer scanner every decimal parser goes through, and the one
//! range check of a typed integer.

use crate::error::{Error, Field};

/// What a piece of text holds, read as a decimal integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParsedInt {
    /// An integer that fits an `i128` (so any `u64`, and negatives).
    Int(i128),
    /// Digits, but more than an `i128` holds.
    TooWide,
    /// Not an optionally signed run of ASCII digits.
    NotANumber,
}

/// Reads an optionally signed decimal integer, ignoring surrounding
/// whitespace. Never panics.
pub(crate) fn parse_int(input: &str) -> ParsedInt {
    let s = input.trim();
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return ParsedInt::NotANumber;
    }
    // Every value that can be valid fits a u64, whose arithmetic is far
    // cheaper than i128's; wider inputs take the slow path below.
    let mut fast: u64 = 0;
    for b in digits.bytes() {
        match fast
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
        {
            Some(v) => fast = v,
            None => return wide(negative, digits),
        }
    }
    let v = i128::from(fast);
    ParsedInt::Int(if negative { -v } else { v })
}

/// [`parse_int`] for more digits than a `u64` holds.
#[cold]
fn wide(negative: bool, digits: &str) -> ParsedInt {
    let mut v: i128 = 0;
    for b in digits.bytes() {
        let d = i128::from(b - b'0');
        v = match v.checked_mul(10).and_then(|v| v.checked_add(d)) {
            Some(v) => v,
            None => return ParsedInt::TooWide,
        };
    }
    ParsedInt::Int(if negative { -v } else { v })
}

/// Parses a decimal integer typed for `field` and checks it against
/// `min..=max`: [`Layout::parse_field`](crate::Layout::parse_field) for a range of your own (say, how
/// many IDs a command may print). Surrounding whitespace is ignored; never
/// panics.
///
/// ```
/// use snowmint::{Field, parse_in_range};
/// assert_eq!(parse_in_range(Field::Count, "10", 1, 100), Ok(10));
/// assert_eq!(
///     parse_in_range(Field::Count, "0", 1, 100).unwrap_err().to_string(),
///     "count must be 1..=100, got 0"
/// );
/// assert_eq!(
///     parse_in_range(Field::Count, "lots", 1, 100).unwrap_err().to_string(),
///     r#"count must be a decimal integer 1..=100, got "lots""#
/// );
/// ```
pub fn parse_in_range(field: Field, input: &str, min: u64, max: u64) -> Result<u64, Error> {
    match parse_int(input) {
        ParsedInt::Int(v) if v >= i128::from(min) && v <= i128::from(max) => Ok(v as u64),
        ParsedInt::Int(v) if field.is_time() => Err(Error::timestamp_in(field, v, min, max)),
        ParsedInt::Int(v) => Err(Error::out_of_range(field, v, min, max)),
        ParsedInt::TooWide => Err(Error::too_wide(field, input.trim(), min, max)),
        ParsedInt::NotANumber => Err(Error::syntax(
            field,
            input,
            if field.is_time() {
                "Unix milliseconds"
            } else {
                "a decimal integer"
            },
            min,
            max,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans() {
        assert_eq!(parse_int(" 42 "), ParsedInt::Int(42));
        assert_eq!(parse_int("-5"), ParsedInt::Int(-5));
        assert_eq!(parse_int("+5"), ParsedInt::Int(5));
        assert_eq!(parse_int("-"), ParsedInt::NotANumber);
        assert_eq!(parse_int("1.0"), ParsedInt::NotANumber);
        assert_eq!(parse_int("１"), ParsedInt::NotANumber);
        assert_eq!(parse_int(&"9".repeat(60)), ParsedInt::TooWide);
        assert_eq!(
            parse_int("18446744073709551615"),
            ParsedInt::Int(u64::MAX.into())
        );
        assert_eq!(
            parse_int("-18446744073709551616"),
            ParsedInt::Int(-(i128::from(u64::MAX) + 1))
        );
        assert_eq!(
            parse_int("99999999999999999999"),
            ParsedInt::Int(99_999_999_999_999_999_999)
        );
    }
}
