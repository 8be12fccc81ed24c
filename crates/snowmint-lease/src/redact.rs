//! Secrets out of what is shown: the one redaction of coordinator URLs and
//! connection strings, for every coordinator's messages, logs and `Debug`.

/// `text` (a URL, a connection string, or a message that quotes one) fit
/// to be shown: every password replaced by `***`, whatever it holds. The one
/// redaction of every coordinator (`snowmint_db::DbConfig::redact`,
/// `snowmint_redis::redact`).
///
/// Hidden: in a URL (`scheme://user:password@host...`), everything from
/// the first `:` after the scheme to the *last* `@` of the text, so a
/// password holding `/`, `?`, `#`, `@`, `:` or percent-escapes is hidden
/// whole however a driver would have cut the URL (without a scheme, the
/// same from the start); and the value of any parameter whose name holds
/// `pass`, `pwd`, `secret` or `token` (`password=` in a PostgreSQL
/// `key=value` string, `?password=` or `&sslpassword=` in a URL's query) to
/// the end of the text. When in doubt more is hidden, never less.
///
/// ```
/// use snowmint_lease::redact;
///
/// assert_eq!(redact("mysql://app:pa/ss@db:3306/ids"), "mysql://app:***@db:3306/ids");
/// assert_eq!(
///     redact("host=db user=app password='s3 cr3t' dbname=ids"),
///     "host=db user=app password=***"
/// );
/// assert_eq!(redact("redis://:p@ss@db:6379/0"), "redis://:***@db:6379/0");
/// assert_eq!(redact("mysql://db/ids"), "mysql://db/ids");
/// ```
pub fn redact(text: &str) -> String {
    let mut ranges = secret_ranges(text);
    ranges.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut shown = 0;
    for range in ranges {
        if range.end <= shown {
            continue;
        }
        let start = range.start.max(shown);
        out.push_str(&text[shown..start]);
        if !out.ends_with("***") || start > shown {
            out.push_str("***");
        }
        shown = range.end;
    }
    out.push_str(&text[shown..]);
    out
}

/// Bytes that end a password-like parameter's key in a connection string
/// or a URL's query, and so may start the next key.
const KEY_STARTS_AFTER: &[u8] = b" \t\r\n?&;,'\"(";

/// Whether `key` (a parameter's name, percent-escapes decoded) names a
/// secret: `password`, `sslpassword`, `pwd`, `pass`, a token, a secret.
fn secret_key(key: &str) -> bool {
    let key = percent_decode(key).to_ascii_lowercase();
    ["pass", "pwd", "secret", "token"]
        .iter()
        .any(|word| key.contains(word))
}

/// The byte ranges of `text` that may hold a secret (see
/// [`redact`]), unsorted and possibly overlapping.
fn secret_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut hidden = Vec::new();
    // A URL's userinfo (`scheme://user:password@host`): from the first `:`
    // after the scheme to the last `@` of the text. Whatever the password
    // holds (`/`, `?`, `#`, `@`, `:`, escapes), it lies in there: a parser
    // that ends the authority earlier (at the first `/` or `@`) can only
    // see less of it as a password, never more. Without a scheme, the same
    // from the start of the text (`user:password@host/db`).
    let scheme_before = |i: usize| {
        let scheme = text[..i]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
            .next()
            .unwrap_or("");
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
    };
    let mut starts: Vec<usize> = text
        .match_indices("://")
        .filter(|&(i, _)| scheme_before(i))
        .map(|(i, _)| i + 3)
        .collect();
    if starts.is_empty() {
        starts.push(0);
    }
    for start in starts {
        let Some(at) = text[start..].rfind('@').map(|i| start + i) else {
            continue;
        };
        if let Some(colon) = text[start..at].find(':') {
            hidden.push(start + colon + 1..at);
        }
    }
    // A password-like parameter (`password=`, `?password=`,
    // `&sslpassword=`): from its value to the end of the text, since an
    // unquoted or unescaped value may hold the separators that would end
    // it (a space, `&`, a quote).
    for (i, _) in text.char_indices() {
        if i > 0 && !KEY_STARTS_AFTER.contains(&bytes[i - 1]) {
            continue;
        }
        let key_len = text[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_-.%".contains(c)))
            .unwrap_or(text.len() - i);
        if key_len == 0 || !secret_key(&text[i..i + key_len]) {
            continue;
        }
        let after = text[i + key_len..].trim_start();
        if let Some(value) = after.strip_prefix('=') {
            let from = text.len() - value.len();
            if from < text.len() {
                hidden.push(from..text.len());
            }
        }
    }
    hidden
}

/// `%2F` and the like, as in a URL (invalid escapes kept as typed).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(Some(h)), Some(Some(l))) = (
                bytes.get(i + 1).map(|&b| hex(b)),
                bytes.get(i + 2).map(|&b| hex(b)),
            )
        {
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
