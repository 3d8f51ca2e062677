//! The stdlib's encoding functions: `encoding.from_json`/`from_yaml`/`from_base64`/
//! `to_base64`/`url_encode`/..., and Go's `encoding/json` for `encoding.to_json`.

use super::*;

pub(super) fn json_to_value(j: serde_json::Value) -> Value {
    use serde_json::Value as J;
    match j {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(b),
        // Go's encoding/json decodes every number into float64.
        J::Number(n) => Value::Number(Number::Float(n.as_f64().unwrap_or(f64::NAN))),
        J::String(s) => Value::String(s),
        J::Array(a) => Value::Array(a.into_iter().map(json_to_value).collect()),
        J::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, json_to_value(v))).collect()),
    }
}

pub(super) fn from_json(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    let s = arg_string(&args, 0)?;
    let j: serde_json::Value =
        serde_json::from_str(&s).map_err(|e| FnError::Call(e.to_string()))?;
    Ok(json_to_value(j))
}

pub(super) fn yaml_key(k: serde_norway::Value) -> String {
    use serde_norway::Value as Y;
    match k {
        Y::Null => "null".to_string(),
        Y::Bool(b) => b.to_string(),
        Y::Number(n) => n.to_string(),
        Y::String(s) => s,
        Y::Tagged(t) => yaml_key(t.value),
        // Go would produce a map[interface{}]interface{}; a composite key has no sensible
        // string form, so use its YAML text.
        other => serde_norway::to_string(&other)
            .map(|s| s.trim_end().to_string())
            .unwrap_or_default(),
    }
}

pub(super) fn yaml_to_value(y: serde_norway::Value) -> Value {
    use serde_norway::Value as Y;
    match y {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Number(Number::Int(i))
            } else if let Some(u) = n.as_u64() {
                Value::Number(Number::Uint(u))
            } else {
                Value::Number(Number::Float(n.as_f64().unwrap_or(f64::NAN)))
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_value).collect()),
        Y::Mapping(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (yaml_key(k), yaml_to_value(v)))
                .collect(),
        ),
        Y::Tagged(t) => yaml_to_value(t.value),
    }
}

pub(super) fn from_yaml(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    let s = arg_string(&args, 0)?;
    if s.trim().is_empty() {
        // yaml.Unmarshal of an empty document leaves the target nil.
        return Ok(Value::Null);
    }
    let y: serde_norway::Value =
        serde_norway::from_str(&s).map_err(|e| FnError::Call(e.to_string()))?;
    Ok(yaml_to_value(y))
}

pub(super) fn base64_engine(url: bool) -> base64::engine::GeneralPurpose {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    // Go's StdEncoding/URLEncoding: padding required, non-zero trailing bits tolerated.
    let cfg = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true);
    GeneralPurpose::new(
        if url {
            &base64::alphabet::URL_SAFE
        } else {
            &base64::alphabet::STANDARD
        },
        cfg,
    )
}

pub(super) fn base64_decode(s: &str, url: bool) -> Result<Vec<u8>, FnError> {
    // Go's decoder skips newlines.
    let cleaned: String = s.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    base64_engine(url).decode(cleaned.as_bytes()).map_err(|e| {
        use base64::DecodeError::*;
        let at = match e {
            InvalidByte(off, _) | InvalidLastSymbol(off, _) => off,
            InvalidLength(len) => len,
            InvalidPadding => cleaned.len(),
        };
        FnError::Call(format!("illegal base64 data at input byte {at}"))
    })
}

pub(super) fn from_base64(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    let s = arg_string(&args, 0)?;
    Ok(bytes_to_value(base64_decode(&s, false)?))
}

pub(super) fn from_url_base64(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    let s = arg_string(&args, 0)?;
    Ok(bytes_to_value(base64_decode(&s, true)?))
}

pub(super) fn to_base64(args: Vec<Value>) -> Result<Value, FnError> {
    string_fn(args, |s| base64_engine(false).encode(s.as_bytes()))
}

pub(super) fn to_url_base64(args: Vec<Value>) -> Result<Value, FnError> {
    string_fn(args, |s| base64_engine(true).encode(s.as_bytes()))
}

pub(super) fn url_encode(args: Vec<Value>) -> Result<Value, FnError> {
    string_fn(args, query_escape)
}

pub(super) fn url_decode(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    let s = arg_string(&args, 0)?;
    query_unescape(&s).map(Value::String).map_err(FnError::Call)
}

pub(super) fn to_json(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    if !matches!(args[0], Value::Object(_)) {
        return Err(FnError::Call("jsonEncode only supports map".to_string()));
    }
    let mut out = String::new();
    go_json_encode(&args[0], &mut out).map_err(FnError::Call)?;
    if contains_secret(&args[0]) {
        Ok(Value::Secret(Secret::new(out)))
    } else {
        Ok(Value::String(out))
    }
}

/// Go's `json.Marshal` of the value Alloy decodes into `any`: sorted object keys, HTML-safe
/// string escaping, Go's float spelling.
pub fn go_json_encode(v: &Value, out: &mut String) -> Result<(), String> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(Number::Int(i)) => {
            let _ = write!(out, "{i}");
        }
        Value::Number(Number::Uint(u)) => {
            let _ = write!(out, "{u}");
        }
        Value::Number(Number::Float(f)) => out.push_str(&go_json_float(*f)?),
        Value::String(s) => go_json_string(s, out),
        Value::Secret(s) => go_json_string(s.expose(), out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_encode(item, out)?;
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                go_json_encode(item, out)?;
            }
            out.push('}');
        }
        Value::Function(f) => return Err(format!("json: unsupported type: function({})", f.name)),
        Value::Capsule(c) => {
            return Err(format!("json: unsupported type: capsule({})", c.type_name));
        }
    }
    Ok(())
}

pub(super) fn go_json_float(f: f64) -> Result<String, String> {
    if !f.is_finite() {
        return Err(format!("json: unsupported value: {}", format_float(f)));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // 'e' format, shortest, with Go's two-digit exponent minimum undone for negatives
        // ("e-07" -> "e-7") as encoding/json does.
        let s = go_format_e_shortest(f);
        let n = s.len();
        let b = s.as_bytes();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            let mut t = s[..n - 2].to_string();
            t.push(b[n - 1] as char);
            return Ok(t);
        }
        return Ok(s);
    }
    Ok(format_float(f))
}

pub(super) fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            // HTML-safe escaping, as json.Marshal does by default.
            c if (c as u32) < 0x20 || c == '<' || c == '>' || c == '&' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}
