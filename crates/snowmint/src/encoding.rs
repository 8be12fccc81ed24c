//! Textual forms of an ID: decimal, hexadecimal, Crockford base32, binary.
//!
//! Each form has one formatter (a `Display` adapter, no allocation) and one
//! parser ([`Encoding::parse`]); `FromStr`, `TryFrom<&str>` and serde all go
//! through them.

use core::fmt;
use core::str::FromStr;

use crate::error::{Error, Field};
use crate::format::MAX_ID;
use crate::id::SnowflakeId;
use crate::parse::parse_in_range;

/// Crockford's base32 alphabet: no I, L, O or U.
const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
/// Characters of a base32 ID: 13 x 5 = 65 bits hold all 64.
pub const BASE32_LEN: usize = 13;
/// Digits of a hexadecimal ID.
pub const HEX_LEN: usize = 16;

/// Displays an ID as 16 lowercase hexadecimal digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hex(pub SnowflakeId);

impl fmt::Display for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0.get())
    }
}

/// Displays an ID as 13 lowercase characters of Crockford base32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Base32(pub SnowflakeId);

impl Base32 {
    /// The 13 ASCII bytes.
    pub const fn to_bytes(self) -> [u8; BASE32_LEN] {
        let v = self.0.get();
        let mut out = [0u8; BASE32_LEN];
        let mut i = 0;
        while i < BASE32_LEN {
            let shift = 5 * (BASE32_LEN - 1 - i) as u32;
            // The first character holds the top 4 bits (65 - 64 = 1 spare).
            let digit = if shift >= 64 { 0 } else { (v >> shift) & 31 };
            out[i] = CROCKFORD[digit as usize];
            i += 1;
        }
        out
    }
}

impl fmt::Display for Base32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.to_bytes();
        // The alphabet is ASCII, so this never fails.
        f.write_str(core::str::from_utf8(&bytes).map_err(|_| fmt::Error)?)
    }
}

/// Displays an ID as its 64 bits, most significant first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binary(pub SnowflakeId);

impl fmt::Display for Binary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:064b}", self.0.get())
    }
}

/// A textual form of an ID.
///
/// ```
/// use snowmint::Encoding;
///
/// let id = Encoding::Hex.parse("0xFA021000")?;
/// assert_eq!(id.get(), 4194439168);
/// assert_eq!(Encoding::Base32.format(id).to_string(), "0000003x04400");
/// assert_eq!("base32".parse::<Encoding>(), Ok(Encoding::Base32));
/// assert_eq!(
///     Encoding::Hex.parse("8000000000000000").unwrap_err().to_string(),
///     "id must be 0..=9223372036854775807, got 9223372036854775808: the sign bit is set"
/// );
/// # Ok::<(), snowmint::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// Decimal digits, the default.
    #[default]
    Decimal,
    /// Hexadecimal digits, optional `0x`.
    Hex,
    /// Crockford base32.
    Base32,
}

impl Encoding {
    /// All forms, in the order they are usually listed.
    pub const ALL: [Encoding; 3] = [Encoding::Decimal, Encoding::Hex, Encoding::Base32];

    /// The form's name: `decimal`, `hex` or `base32`.
    pub const fn name(self) -> &'static str {
        match self {
            Encoding::Decimal => "decimal",
            Encoding::Hex => "hex",
            Encoding::Base32 => "base32",
        }
    }

    /// Formats `id` in this form.
    pub fn format(self, id: SnowflakeId) -> impl fmt::Display {
        struct Formatted(Encoding, SnowflakeId);
        impl fmt::Display for Formatted {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.0 {
                    Encoding::Decimal => fmt::Display::fmt(&self.1, f),
                    Encoding::Hex => fmt::Display::fmt(&Hex(self.1), f),
                    Encoding::Base32 => fmt::Display::fmt(&Base32(self.1), f),
                }
            }
        }
        Formatted(self, id)
    }

    /// Parses an ID in this form. Surrounding whitespace is ignored; anything
    /// else that is not the form, or a value with the sign bit set, is an
    /// error naming the field `id`. Never panics.
    pub fn parse(self, input: &str) -> Result<SnowflakeId, Error> {
        match self {
            Encoding::Decimal => {
                parse_in_range(Field::Id, input, 0, MAX_ID).map(SnowflakeId::from_raw)
            }
            Encoding::Hex => {
                let s = input.trim();
                let digits = s
                    .strip_prefix("0x")
                    .or_else(|| s.strip_prefix("0X"))
                    .unwrap_or(s);
                let v = radix(digits, 4, |c| (c as char).to_digit(16).map(u128::from)).ok_or_else(
                    || {
                        Error::syntax(
                            Field::Id,
                            input,
                            "hexadecimal (1 to 16 digits, optional 0x)",
                            0,
                            MAX_ID,
                        )
                    },
                )?;
                checked(v, input)
            }
            Encoding::Base32 => {
                let v = radix(input.trim(), 5, crockford_digit).ok_or_else(|| {
                    Error::syntax(
                        Field::Id,
                        input,
                        "Crockford base32 (1 to 13 characters)",
                        0,
                        MAX_ID,
                    )
                })?;
                checked(v, input)
            }
        }
    }
}

/// Reads digits of `bits` bits each into a `u128`; `None` if a character is
/// not a digit, there are none, or there are more than 26. A value too wide
/// for a `u128` saturates to `u128::MAX`, which [`checked`] reports as more
/// than 64 bits (it never wraps into a small, valid ID).
fn radix(digits: &str, bits: u32, digit: impl Fn(u8) -> Option<u128>) -> Option<u128> {
    if digits.is_empty() || digits.len() > 26 {
        return None;
    }
    digits.bytes().try_fold(0u128, |acc, c| {
        let d = digit(c)?;
        Some(if acc.leading_zeros() < bits {
            u128::MAX
        } else {
            (acc << bits) | d
        })
    })
}

fn checked(v: u128, input: &str) -> Result<SnowflakeId, Error> {
    if v <= u128::from(MAX_ID) {
        Ok(SnowflakeId::from_raw(v as u64))
    } else if v <= u128::from(u64::MAX) {
        Err(Error::out_of_range(Field::Id, v as i128, 0, MAX_ID))
    } else {
        Err(Error::too_wide(Field::Id, input.trim(), 0, MAX_ID))
    }
}

fn crockford_digit(c: u8) -> Option<u128> {
    let c = c.to_ascii_lowercase();
    let v = match c {
        b'o' => 0,
        b'i' | b'l' => 1,
        b'u' => return None,
        _ => CROCKFORD.iter().position(|&a| a == c)? as u128,
    };
    Some(v)
}

/// The name of an unknown encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEncoding;

impl fmt::Display for UnknownEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("encoding must be one of decimal, hex, base32")
    }
}

impl core::error::Error for UnknownEncoding {}

impl FromStr for Encoding {
    type Err = UnknownEncoding;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Encoding::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(s.trim()))
            .ok_or(UnknownEncoding)
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The ID type's textual forms, each through its one formatter and parser.
impl SnowflakeId {
    /// Formats as 16 lowercase hexadecimal digits (fixed width, so text order
    /// is numeric order).
    ///
    /// ```
    /// let id = snowmint::SnowflakeId::new(4194439168)?;
    /// assert_eq!(id.hex().to_string(), "00000000fa021000");
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub const fn hex(self) -> Hex {
        Hex(self)
    }

    /// Formats as 13 characters of Crockford base32 (fixed width, so text
    /// order is numeric order).
    ///
    /// ```
    /// let id = snowmint::SnowflakeId::new(4194439168)?;
    /// assert_eq!(id.base32().to_string(), "0000003x04400");
    /// # Ok::<(), snowmint::Error>(())
    /// ```
    pub const fn base32(self) -> Base32 {
        Base32(self)
    }

    /// Formats as the 64 bits, most significant first.
    pub const fn binary(self) -> Binary {
        Binary(self)
    }

    /// Parses decimal text (the same as `FromStr`).
    pub fn parse_decimal(input: &str) -> Result<SnowflakeId, Error> {
        Encoding::Decimal.parse(input)
    }

    /// Parses hexadecimal text: 1 to 16 digits, either case, optional `0x`.
    pub fn parse_hex(input: &str) -> Result<SnowflakeId, Error> {
        Encoding::Hex.parse(input)
    }

    /// Parses Crockford base32: 1 to 13 characters, either case, with `I`/`L`
    /// read as 1 and `O` as 0.
    pub fn parse_base32(input: &str) -> Result<SnowflakeId, Error> {
        Encoding::Base32.parse(input)
    }
}

impl FromStr for SnowflakeId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Encoding::Decimal.parse(s)
    }
}

impl TryFrom<&str> for SnowflakeId {
    type Error = Error;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn fixed_width() {
        assert_eq!(SnowflakeId::MIN.base32().to_string(), "0000000000000");
        assert_eq!(SnowflakeId::MAX.base32().to_string(), "7zzzzzzzzzzzz");
        assert_eq!(SnowflakeId::MAX.hex().to_string(), "7fffffffffffffff");
        assert_eq!(
            Encoding::Base32
                .parse("8000000000000")
                .unwrap_err()
                .to_string(),
            "id must be 0..=9223372036854775807, got 9223372036854775808: the sign bit is set"
        );
        assert!(Encoding::Base32.parse("0000000000000u").is_err());
        assert_eq!(
            Encoding::Hex
                .parse("1ffffffffffffffff")
                .unwrap_err()
                .to_string(),
            "id must be 0..=9223372036854775807, got \"1ffffffffffffffff\": more than 64 bits"
        );
        assert_eq!(Encoding::Base32.parse("OIL").unwrap().get(), 33);
        // 26 characters of base32 are 130 bits: the top ones must not wrap.
        for wide in ["g0000000000000000000000000", "g0000000000000000000000004"] {
            assert!(
                Encoding::Base32
                    .parse(wide)
                    .unwrap_err()
                    .to_string()
                    .ends_with("more than 64 bits"),
                "{wide}"
            );
        }
    }
}
