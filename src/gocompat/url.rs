//! `net/url`'s query escaping, as Go's `url.QueryEscape` and `url.QueryUnescape` do it, and
//! `url.ParseQuery(..).Get` over a raw query string.

use std::fmt::Write as _;

/// `url.QueryEscape`: unreserved bytes kept, space as `+`, every other byte `%XX`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// `url.QueryUnescape`: `%XX` and `+` decoded; the error names the bad escape as Go does
/// (`invalid URL escape "%zz"`). Bytes that do not form UTF-8 are replaced (Go keeps them in its
/// byte string; ours is a `String`).
pub fn query_unescape(s: &str) -> Result<String, String> {
    match unescape_bytes(s) {
        Ok(out) => Ok(String::from_utf8_lossy(&out).into_owned()),
        Err(bad) => Err(format!(
            "invalid URL escape {}",
            super::quote(&String::from_utf8_lossy(bad))
        )),
    }
}

/// `url.QueryUnescape` for callers that skip what does not decode: `None` for a malformed
/// escape, and also for bytes that are not UTF-8 (where [`query_unescape`] would replace them),
/// so that such a value is never passed on altered.
pub fn query_unescape_strict(s: &str) -> Option<String> {
    String::from_utf8(unescape_bytes(s).ok()?).ok()
}

/// Go's `url.ParseQuery(query).Get(key)` over a raw query string: the first value of `key`;
/// `None` where Go's `Get` would give `""` because the key is absent. As in Go, pairs
/// containing `;` or a bad escape (in the key or the value) are skipped, `+` is a space, and a
/// pair without `=` has an empty value. Unlike Go, a key or value whose bytes are not UTF-8 is
/// skipped too (see [`query_unescape_strict`]).
pub fn query_get(query: &str, key: &str) -> Option<String> {
    for pair in query.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(k) = query_unescape_strict(k) else {
            continue;
        };
        if k != key {
            continue;
        }
        if let Some(v) = query_unescape_strict(v) {
            return Some(v);
        }
    }
    None
}

/// The one decoder behind [`query_unescape`] and [`query_unescape_strict`]: the decoded bytes,
/// or the malformed escape as it stands in `s` (`%` and at most two bytes after it, Go's
/// `EscapeError`).
fn unescape_bytes(s: &str) -> Result<Vec<u8>, &[u8]> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (
                    b.get(i + 1).and_then(|c| hex(*c)),
                    b.get(i + 2).and_then(|c| hex(*c)),
                ) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                    }
                    _ => return Err(&b[i..(i + 3).min(b.len())]),
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_unescapes_like_net_url() {
        let cases = [
            ("a b", "a+b"),
            ("a+b&c=d/é", "a%2Bb%26c%3Dd%2F%C3%A9"),
            ("-_.~09AZaz", "-_.~09AZaz"),
        ];
        for (raw, escaped) in cases {
            assert_eq!(query_escape(raw), escaped);
            assert_eq!(query_unescape(escaped).as_deref(), Ok(raw));
        }
        assert_eq!(
            query_unescape("a%zzb"),
            Err(r#"invalid URL escape "%zz""#.to_string())
        );
        assert_eq!(
            query_unescape("a%4"),
            Err(r#"invalid URL escape "%4""#.to_string())
        );
    }

    #[test]
    fn strict_unescape_refuses_what_the_lossy_one_replaces() {
        assert_eq!(
            query_unescape_strict("a+b%2F%C3%A9").as_deref(),
            Some("a b/é")
        );
        assert_eq!(query_unescape_strict("a%zz"), None);
        assert_eq!(query_unescape_strict("a%4"), None);
        // %FF is no UTF-8: replaced by the lossy variant, refused by the strict one.
        assert_eq!(query_unescape("%FF").as_deref(), Ok("\u{FFFD}"));
        assert_eq!(query_unescape_strict("%FF"), None);
    }

    #[test]
    fn queries_decode_like_go() {
        let q = "name=app.cpu%7Benv%3Dprod%7D&from=1&from=2&x=a+b&bad=%zz&semi=1;2&spyName=";
        assert_eq!(query_get(q, "name").as_deref(), Some("app.cpu{env=prod}"));
        assert_eq!(query_get(q, "from").as_deref(), Some("1"));
        assert_eq!(query_get(q, "x").as_deref(), Some("a b"));
        assert_eq!(query_get(q, "bad"), None);
        assert_eq!(query_get(q, "semi"), None);
        assert_eq!(query_get(q, "spyName").as_deref(), Some(""));
        assert_eq!(query_get(q, "missing"), None);
        assert_eq!(
            query_get("name=app{env=prod,region=eu}", "name").as_deref(),
            Some("app{env=prod,region=eu}")
        );
        assert_eq!(query_get("", "name"), None);
    }
}
