//! Number text, read and written as Go's `strconv` does it: literals (base prefixes,
//! underscores, octal by leading zero) and the implicit number/string conversions of attributes.
//! Alloy inherits these rules from Go, so configs that parse there must mean the same here.

use crate::syntax::ast::{self, LiteralValue};
use crate::syntax::value::{Number, Value};

pub(super) fn literal_value(lit: &ast::Literal) -> Result<Value, String> {
    Ok(match &lit.value {
        LiteralValue::Null => Value::Null,
        LiteralValue::Bool(b) => Value::Bool(*b),
        LiteralValue::String(s) => Value::String(s.clone()),
        LiteralValue::Number => Value::Number(parse_number(&lit.raw)?),
    })
}

/// Converts number literal text the way Alloy does: Go's `strconv.ParseInt(s, 0, 64)`, then
/// `ParseUint(s, 0, 64)`, then `ParseFloat(s, 64)`. Base prefixes apply, so a leading zero means
/// octal (`010` is 8) and `08`, invalid octal, falls through to the float 8.
pub fn parse_number(text: &str) -> Result<Number, String> {
    if let Some(i) = go_parse_int(text) {
        return Ok(Number::Int(i));
    }
    if let Some(u) = go_parse_uint(text) {
        return Ok(Number::Uint(u));
    }
    go_parse_float(text).map(Number::Float)
}

/// Go's `underscoreOK`: underscores only between digits or after a base prefix.
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    // saw: '^' start, '0' digit or prefix, '_' underscore, '!' other
    let mut saw = b'^';
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        i = 1;
    }
    let mut hex = false;
    if b.len() - i >= 2 && b[i] == b'0' {
        let c = b[i + 1] | 0x20;
        if c == b'x' || c == b'o' || c == b'b' {
            hex = c == b'x';
            i += 2;
            saw = b'0';
        }
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && (c | 0x20).is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.ParseUint(s, 0, 64)`. `None` on any error.
fn go_parse_uint(s: &str) -> Option<u64> {
    let (base, digits) = if let Some(rest) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, rest)
    } else if let Some(rest) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (2, rest)
    } else if let Some(rest) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (8, rest)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() {
        return None;
    }
    let mut has_underscore = false;
    let mut n: u64 = 0;
    for c in digits.chars() {
        if c == '_' {
            has_underscore = true;
            continue;
        }
        let d = c.to_digit(base)?;
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    if has_underscore && !underscore_ok(s) {
        return None;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = go_parse_uint(body)?;
    if neg {
        if u <= i64::MAX as u64 + 1 {
            Some((u as i64).wrapping_neg())
        } else {
            None
        }
    } else if u <= i64::MAX as u64 {
        Some(u as i64)
    } else {
        None
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms (hexadecimal floats cannot come from
/// the scanner and are rejected). Out-of-range values are errors, as in Go.
fn go_parse_float(s: &str) -> Result<f64, String> {
    let syntax = || format!("strconv.ParseFloat: parsing {s:?}: invalid syntax");
    if s.contains('_') {
        // Go allows underscores only with a base prefix, which decimal floats do not have.
        return Err(syntax());
    }
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if body.starts_with("0x") {
        return Err(syntax());
    }
    let f: f64 = s.parse().map_err(|_| syntax())?;
    if f.is_infinite() && !body.starts_with("inf") {
        return Err(format!(
            "strconv.ParseFloat: parsing {s:?}: value out of range"
        ));
    }
    Ok(f)
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: the shortest decimal that round-trips, never in
/// exponent form. Used for number -> string conversion.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        // Go's `FormatFloat(f, 'f', -1, 64)`: shortest round-trip, no exponent.
        crate::gocompat::strconv::shortest_fixed(f)
    }
}

/// A number as Alloy converts it to a string (number -> string attribute conversion).
pub fn number_to_string(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Uint(u) => u.to_string(),
        Number::Float(f) => format_float(f),
    }
}

/// Alloy's string -> number conversion for attributes: a leading `-` parses as a signed base-10
/// int, text containing `.`, `e` or `E` as a float, anything else as an unsigned base-10 int.
pub fn string_to_number(s: &str) -> Option<Number> {
    if s.is_empty() {
        return None;
    }
    if s.starts_with('-') {
        return s.parse::<i64>().ok().map(Number::Int);
    }
    if s.contains(['.', 'e', 'E']) {
        return go_parse_float(s).ok().map(Number::Float);
    }
    if s.starts_with('+') {
        // Go's ParseUint rejects a sign.
        return None;
    }
    s.parse::<u64>().ok().map(Number::Uint)
}
