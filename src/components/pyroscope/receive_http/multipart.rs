//! `multipart/form-data` bodies (RFC 7578 over RFC 2046), as pyroscope-go uploads them to
//! `/ingest`, and the `type/subtype; key=value` header parameters they need (Go's
//! `mime.ParseMediaType`).
//!
//! The parser works on the whole body in memory (the request is already bounded by the
//! body size limit), accepts CRLF or bare LF line breaks as Go's reader does, and bounds the
//! number of parts and the size of each part's header block.

use std::collections::BTreeMap;

/// At most this many parts (Go's `mime/multipart` default limit).
pub const MAX_PARTS: usize = 1000;
/// At most this many bytes of headers per part.
pub const MAX_HEADER_BYTES: usize = 16 << 10;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MultipartError {
    #[error("mime: no media type")]
    NoMediaType,
    #[error("mime: invalid media parameter")]
    InvalidParameter,
    #[error("mime: duplicate parameter name {0:?}")]
    DuplicateParameter(String),
    #[error("malformed multipart content type header: no boundary")]
    NoBoundary,
    #[error("multipart: no opening boundary")]
    NoOpeningBoundary,
    #[error("multipart: unexpected end of body (no closing boundary)")]
    UnexpectedEnd,
    #[error("multipart: malformed boundary line")]
    BadBoundaryLine,
    #[error("multipart: malformed part header {0:?}")]
    BadHeader(String),
    #[error("multipart: part headers longer than {MAX_HEADER_BYTES} bytes")]
    HeaderTooLarge,
    #[error("multipart: more than {MAX_PARTS} parts")]
    TooManyParts,
}

/// A media type and its parameters (names lower-cased), e.g. from
/// `multipart/form-data; boundary="abc"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    pub essence: String,
    pub params: BTreeMap<String, String>,
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_graphic() && !"()<>@,;:\\\"/[]?=".contains(c)
}

/// Parses `type/subtype; name=value; name="quoted \"value\""` (Go's `mime.ParseMediaType`,
/// without RFC 2231 continuations). The media type is lower-cased.
pub fn parse_media_type(header: &str) -> Result<MediaType, MultipartError> {
    let (essence, mut rest) = header.split_once(';').unwrap_or((header, ""));
    let essence = essence.trim().to_ascii_lowercase();
    if essence.is_empty() {
        return Err(MultipartError::NoMediaType);
    }
    let mut params = BTreeMap::new();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ';']);
        if rest.is_empty() {
            break;
        }
        let name_len = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
        let name = rest[..name_len].to_ascii_lowercase();
        rest = rest[name_len..].trim_start_matches([' ', '\t']);
        if name.is_empty() || !rest.starts_with('=') {
            return Err(MultipartError::InvalidParameter);
        }
        rest = rest[1..].trim_start_matches([' ', '\t']);
        let value = if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    '\\' => match chars.next() {
                        Some((_, e)) => value.push(e),
                        None => return Err(MultipartError::InvalidParameter),
                    },
                    c => value.push(c),
                }
            }
            let end = end.ok_or(MultipartError::InvalidParameter)?;
            rest = &quoted[end..];
            value
        } else {
            let len = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
            if len == 0 {
                return Err(MultipartError::InvalidParameter);
            }
            let value = rest[..len].to_string();
            rest = &rest[len..];
            value
        };
        rest = rest.trim_start_matches([' ', '\t']);
        if !rest.is_empty() && !rest.starts_with(';') {
            return Err(MultipartError::InvalidParameter);
        }
        if params.insert(name.clone(), value).is_some() {
            return Err(MultipartError::DuplicateParameter(name));
        }
    }
    Ok(MediaType { essence, params })
}

/// The `boundary` parameter of a multipart `Content-Type`.
pub fn boundary(content_type: &str) -> Result<String, MultipartError> {
    let mt = parse_media_type(content_type)?;
    match mt.params.get("boundary") {
        Some(b) if !b.is_empty() => Ok(b.clone()),
        _ => Err(MultipartError::NoBoundary),
    }
}

/// One part of a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    /// The `name` of its `Content-Disposition: form-data`.
    pub name: Option<String>,
    /// The `filename`, when the part is a file.
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub body: &'a [u8],
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Skips transport padding and the line break after a boundary; returns where the next part
/// starts. `None` when the line holds something else.
fn after_boundary_line(body: &[u8], mut at: usize) -> Option<usize> {
    while matches!(body.get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    match (body.get(at), body.get(at + 1)) {
        (Some(b'\r'), Some(b'\n')) => Some(at + 2),
        (Some(b'\n'), _) => Some(at + 1),
        _ => None,
    }
}

/// Whether a delimiter ending at `at` is a real one: followed by `--` (the closing
/// delimiter) or by optional padding and a line break. Anything else is part content.
fn is_delimiter_end(body: &[u8], at: usize) -> bool {
    body[at..].starts_with(b"--") || after_boundary_line(body, at).is_some()
}

/// The next delimiter (`--boundary` at the start of a line, the line break excluded) at or
/// after `from`; `from` itself counts as a line start.
fn next_delimiter(body: &[u8], dash: &[u8], from: usize) -> Option<usize> {
    if body[from..].starts_with(dash) && is_delimiter_end(body, from + dash.len()) {
        return Some(from);
    }
    let nl = [b"\n".as_slice(), dash].concat();
    let mut search = from;
    loop {
        let at = find(body, &nl, search)? + 1;
        if is_delimiter_end(body, at + dash.len()) {
            return Some(at);
        }
        search = at;
    }
}

/// Splits a `multipart/form-data` body with `boundary` into its parts.
pub fn parse<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, MultipartError> {
    let dash = format!("--{boundary}");
    let dash = dash.as_bytes();
    // The opening delimiter: at the start, or at the start of a line after a preamble.
    let mut at = next_delimiter(body, dash, 0).ok_or(MultipartError::NoOpeningBoundary)?;
    let mut parts = Vec::new();
    loop {
        at += dash.len();
        if body[at..].starts_with(b"--") {
            return Ok(parts);
        }
        // Validated by next_delimiter.
        let start = after_boundary_line(body, at).ok_or(MultipartError::BadBoundaryLine)?;
        if parts.len() == MAX_PARTS {
            return Err(MultipartError::TooManyParts);
        }
        // The part ends at the next delimiter; the line break before it belongs to the
        // delimiter. A delimiter right after the headers' line break leaves an empty part.
        let next = match next_delimiter(body, dash, start) {
            Some(n) if n > start => n,
            Some(n) => {
                parts.push(part(&body[start..start])?);
                at = n;
                continue;
            }
            None => return Err(MultipartError::UnexpectedEnd),
        };
        let mut end = next - 1;
        if end > start && body[end - 1] == b'\r' {
            end -= 1;
        }
        parts.push(part(&body[start..end])?);
        at = next;
    }
}

/// A part's headers and body.
fn part(content: &[u8]) -> Result<Part<'_>, MultipartError> {
    let (headers, body) = if content.starts_with(b"\r\n") {
        (&content[..0], &content[2..])
    } else if content.starts_with(b"\n") {
        (&content[..0], &content[1..])
    } else {
        let (end, skip) = match (find(content, b"\r\n\r\n", 0), find(content, b"\n\n", 0)) {
            (Some(a), Some(b)) if b < a => (b, 2),
            (Some(a), _) => (a, 4),
            (None, Some(b)) => (b, 2),
            (None, None) => (content.len(), 0),
        };
        (&content[..end], &content[(end + skip).min(content.len())..])
    };
    if headers.len() > MAX_HEADER_BYTES {
        return Err(MultipartError::HeaderTooLarge);
    }
    let headers =
        std::str::from_utf8(headers).map_err(|_| MultipartError::BadHeader("not UTF-8".into()))?;
    let mut p = Part {
        name: None,
        filename: None,
        content_type: None,
        body,
    };
    for line in headers.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(MultipartError::BadHeader(line.chars().take(80).collect()));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-disposition" => {
                let d = parse_media_type(value)?;
                p.name = d.params.get("name").cloned();
                p.filename = d.params.get("filename").cloned();
            }
            "content-type" => p.content_type = Some(value.to_string()),
            _ => {}
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_and_boundaries() {
        let mt = parse_media_type("Multipart/Form-Data; Boundary=\"a b\\\"c\"; x=1").expect("ok");
        assert_eq!(mt.essence, "multipart/form-data");
        assert_eq!(mt.params["boundary"], "a b\"c");
        assert_eq!(mt.params["x"], "1");
        assert_eq!(
            boundary("multipart/form-data; boundary=abc123").as_deref(),
            Ok("abc123")
        );
        let cases = [
            ("multipart/form-data", MultipartError::NoBoundary),
            (
                "multipart/form-data; boundary=",
                MultipartError::InvalidParameter,
            ),
            (
                "multipart/form-data; boundary=\"\"",
                MultipartError::NoBoundary,
            ),
            (
                "multipart/form-data; boundary=\"abc",
                MultipartError::InvalidParameter,
            ),
            (
                "multipart/form-data; boundary",
                MultipartError::InvalidParameter,
            ),
            (
                "multipart/form-data; a=1; a=2",
                MultipartError::DuplicateParameter("a".into()),
            ),
            ("; boundary=x", MultipartError::NoMediaType),
            (
                "multipart/form-data; boundary=a b",
                MultipartError::InvalidParameter,
            ),
        ];
        for (ct, want) in cases {
            assert_eq!(boundary(ct), Err(want), "{ct}");
        }
    }

    fn form(nl: &str) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(format!("preamble{nl}--XYZ{nl}").as_bytes());
        b.extend_from_slice(
            format!(
                "Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"{nl}Content-Type: application/octet-stream{nl}{nl}"
            )
            .as_bytes(),
        );
        b.extend_from_slice(b"\x1f\x8b\x00\r\n--XY binary\n");
        b.extend_from_slice(format!("{nl}--XYZ{nl}").as_bytes());
        b.extend_from_slice(
            format!("Content-Disposition: form-data; name=\"sample_type_config\"{nl}{nl}{{}}")
                .as_bytes(),
        );
        b.extend_from_slice(format!("{nl}--XYZ--{nl}epilogue").as_bytes());
        b
    }

    #[test]
    fn parses_parts_with_crlf_or_lf() {
        for nl in ["\r\n", "\n"] {
            let body = form(nl);
            let parts = parse(&body, "XYZ").expect("parses");
            assert_eq!(parts.len(), 2, "{nl:?}");
            assert_eq!(parts[0].name.as_deref(), Some("profile"));
            assert_eq!(parts[0].filename.as_deref(), Some("profile.pprof"));
            assert_eq!(
                parts[0].content_type.as_deref(),
                Some("application/octet-stream")
            );
            assert_eq!(parts[0].body, b"\x1f\x8b\x00\r\n--XY binary\n");
            assert_eq!(parts[1].name.as_deref(), Some("sample_type_config"));
            assert_eq!(parts[1].filename, None);
            assert_eq!(parts[1].body, b"{}");
        }
    }

    #[test]
    fn edge_cases() {
        // No parts at all; a line that only starts like the boundary is preamble.
        assert_eq!(parse(b"--B--\r\n", "B"), Ok(vec![]));
        assert_eq!(parse(b"--Bjunk\r\n\r\nx\r\n--B--", "B"), Ok(vec![]));
        // The boundary string inside a part's content is content unless it ends a line.
        let parts = parse(b"--B\r\n\r\nx\r\n--Bx\r\n--B--", "B").expect("parses");
        assert_eq!(parts[0].body, b"x\r\n--Bx");
        // A part with no headers and an empty body.
        let parts = parse(b"--B\r\n\r\n\r\n--B--", "B").expect("parses");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].body, b"");
        // Transport padding after the boundary.
        let parts = parse(
            b"--B  \r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--B--",
            "B",
        )
        .expect("parses");
        assert_eq!(parts[0].name.as_deref(), Some("a"));
        assert_eq!(parts[0].body, b"x");

        let bad: &[(&[u8], MultipartError)] = &[
            (b"", MultipartError::NoOpeningBoundary),
            (b"no boundary here", MultipartError::NoOpeningBoundary),
            (
                b"--B\r\nContent-Disposition: form-data; name=a\r\n\r\nx",
                MultipartError::UnexpectedEnd,
            ),
            (b"--B", MultipartError::NoOpeningBoundary),
            (b"--B\r\n", MultipartError::UnexpectedEnd),
            (
                b"--B\r\nno colon\r\n\r\nx\r\n--B--",
                MultipartError::BadHeader("no colon".into()),
            ),
            (
                b"--B\r\nContent-Disposition: form-data; name\r\n\r\nx\r\n--B--",
                MultipartError::InvalidParameter,
            ),
        ];
        for (body, want) in bad {
            assert_eq!(
                parse(body, "B"),
                Err(want.clone()),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }

        let mut many = Vec::new();
        for _ in 0..=MAX_PARTS {
            many.extend_from_slice(b"--B\r\n\r\nx\r\n");
        }
        many.extend_from_slice(b"--B--");
        assert_eq!(parse(&many, "B"), Err(MultipartError::TooManyParts));

        let mut big = b"--B\r\nX-Big: ".to_vec();
        big.extend(std::iter::repeat_n(b'a', MAX_HEADER_BYTES));
        big.extend_from_slice(b"\r\n\r\nx\r\n--B--");
        assert_eq!(parse(&big, "B"), Err(MultipartError::HeaderTooLarge));
    }
}
