//! `serde` for [`SnowflakeId`]: written as a decimal string (JavaScript
//! numbers lose precision above 2^53), read from a string or a number.

use core::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::id::SnowflakeId;

impl Serialize for SnowflakeId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = SnowflakeId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Snowflake ID: an integer 0..=9223372036854775807, as a string or a number")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<SnowflakeId, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SnowflakeId, E> {
        SnowflakeId::new(v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SnowflakeId, E> {
        SnowflakeId::try_from(v).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<SnowflakeId, E> {
        // JSON numbers too wide for a u64 (and fractions) arrive as floats.
        Err(E::custom(format_args!(
            "id must be an integer 0..={}, got {v}",
            crate::MAX_ID
        )))
    }
}

impl<'de> Deserialize<'de> for SnowflakeId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why `json` is not read as an ID.
    fn refusal(json: &str) -> String {
        serde_json::from_str::<SnowflakeId>(json)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn string_out_string_or_number_in() {
        let id = SnowflakeId::new(4194439168).unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"4194439168\"");
        assert_eq!(
            serde_json::from_str::<SnowflakeId>("\"4194439168\"").unwrap(),
            id
        );
        assert_eq!(
            serde_json::from_str::<SnowflakeId>("4194439168").unwrap(),
            id
        );
        let err = refusal("-5");
        assert!(
            err.contains("id must be 0..=9223372036854775807, got -5"),
            "{err}"
        );
        assert!(serde_json::from_str::<SnowflakeId>("\"abc\"").is_err());
        let err = refusal("1.5");
        assert!(
            err.starts_with("id must be an integer 0..=9223372036854775807, got 1.5"),
            "{err}"
        );
        let err = refusal("1e30");
        assert!(
            err.starts_with(
                "id must be an integer 0..=9223372036854775807, got 1000000000000000000000000000000"
            ),
            "{err}"
        );
    }
}
