//! Names in a layout: [`FieldName`], the limits on a layout's fields, and
//! the presets' names.

/// The presets' names, in the order of [`Layout::PRESETS`](crate::Layout::PRESETS).
pub(crate) const PRESET_NAMES: [&str; 5] =
    ["twitter", "discord", "instagram", "sonyflake", "mastodon"];

/// Most fields a layout can have, the timestamp included.
pub const MAX_FIELDS: usize = 16;
/// Longest field name, in bytes.
pub const MAX_NAME_LEN: usize = 24;

/// The name of a layout's field: 1 to [`MAX_NAME_LEN`] lower-case ASCII
/// letters, digits and `_`, stored inline so that [`Layout`](crate::Layout) stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldName {
    len: u8,
    bytes: [u8; MAX_NAME_LEN],
}

impl FieldName {
    pub(crate) const EMPTY: FieldName = FieldName {
        len: 0,
        bytes: [0; MAX_NAME_LEN],
    };

    /// A name for the presets and [`Layout::new`]: known to be valid.
    pub(crate) const fn of(name: &str) -> FieldName {
        match FieldName::new(name) {
            Some(n) => n,
            None => panic!("invalid built-in field name"),
        }
    }

    /// `name` if it is 1 to [`MAX_NAME_LEN`] bytes of `[a-z0-9_]`.
    ///
    /// ```
    /// use snowmint::FieldName;
    /// assert_eq!(FieldName::new("machine_id").unwrap().as_str(), "machine_id");
    /// assert!(FieldName::new("Machine").is_none());
    /// assert!(FieldName::new("").is_none());
    /// ```
    pub const fn new(name: &str) -> Option<FieldName> {
        let b = name.as_bytes();
        if b.is_empty() || b.len() > MAX_NAME_LEN {
            return None;
        }
        let mut out = FieldName::EMPTY;
        let mut i = 0;
        while i < b.len() {
            if !matches!(b[i], b'a'..=b'z' | b'0'..=b'9' | b'_') {
                return None;
            }
            out.bytes[i] = b[i];
            i += 1;
        }
        out.len = b.len() as u8;
        Some(out)
    }

    /// The name.
    pub const fn as_str(&self) -> &str {
        let (bytes, _) = self.bytes.split_at(self.len as usize);
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            // Only ASCII is ever stored.
            Err(_) => "",
        }
    }

    /// Whether the name is `other`.
    pub const fn is(&self, other: &str) -> bool {
        let o = other.as_bytes();
        if o.len() != self.len as usize {
            return false;
        }
        let mut i = 0;
        while i < o.len() {
            if o[i] != self.bytes[i] {
                return false;
            }
            i += 1;
        }
        true
    }
}

impl core::fmt::Debug for FieldName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl core::fmt::Display for FieldName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}
