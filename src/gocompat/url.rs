//! `net/url`'s query escaping, as Go's `url.QueryEscape` and `url.QueryUnescape` do it.

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
                    _ => {
                        let end = (i + 3).min(b.len());
                        let bad = String::from_utf8_lossy(&b[i..end]);
                        return Err(format!("invalid URL escape {}", super::quote(&bad)));
                    }
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
    Ok(String::from_utf8_lossy(&out).into_owned())
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
}
