//! The Alloy standard library (`syntax/internal/stdlib` in grafana/alloy).
//!
//! Functions behave like their Go counterparts, including how arguments are converted: a
//! string parameter accepts a number (converted to its decimal text) and null (the empty
//! string), and rejects a secret with "secrets may not be converted into strings". Errors are
//! split into problems with the call as a whole (reported at the call as `<function> <message>`)
//! and problems with one argument (reported at that argument, or at the literal element inside
//! it, as `<argument> <message>`), which is how Alloy words them.
//!
//! Secrets never leak through a function: functions that take any value (`string.format`,
//! `encoding.to_json`) return a secret when an argument contains one.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use base64::Engine as _;

use super::eval::{PathSeg, format_float, number_to_string};
use super::value::{Function, Number, Secret, Type, Value};
use crate::gocompat::{query_escape, query_unescape};

mod encoding;
mod sprintf;

use encoding::*;

use crate::gocompat::strconv::format_e_shortest as go_format_e_shortest;
pub use sprintf::{go_format_float, sprintf};

/// Alloy's warning for deprecated top-level aliases such as `env` and `concat`.
pub const DEPRECATION_MESSAGE: &str = "this stdlib function is deprecated; please refer to the documentation for updated usage and alternatives";

/// Why a standard-library call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FnError {
    /// A problem with the call as a whole (wrong number of arguments, a failure inside the
    /// function). Reported as `<function expression> <message>`.
    Call(String),
    /// A problem with argument `index`, or with the element at `path` inside it.
    Arg {
        index: usize,
        path: Vec<PathSeg>,
        message: String,
    },
}

impl FnError {
    fn arg(index: usize, message: impl Into<String>) -> Self {
        FnError::Arg {
            index,
            path: Vec::new(),
            message: message.into(),
        }
    }

    fn arg_at(index: usize, path: Vec<PathSeg>, message: impl Into<String>) -> Self {
        FnError::Arg {
            index,
            path,
            message: message.into(),
        }
    }

    fn message(&self) -> &str {
        match self {
            FnError::Call(m) => m,
            FnError::Arg { message, .. } => message,
        }
    }
}

type RichFn = fn(Vec<Value>) -> Result<Value, FnError>;

struct Stdlib {
    /// Top-level identifiers: namespaces as objects, functions, and deprecated aliases.
    identifiers: BTreeMap<String, Value>,
    /// Implementation of each stdlib function value, keyed by the address of its closure, so
    /// the evaluator gets structured errors while `Function::func` stays a plain closure.
    rich: HashMap<usize, RichFn>,
}

fn func_key(f: &Function) -> usize {
    Arc::as_ptr(&f.func) as *const () as usize
}

fn make_fn(name: &'static str, imp: RichFn, rich: &mut HashMap<usize, RichFn>) -> Value {
    let f = Function {
        name,
        func: Arc::new(move |args: &[Value]| {
            imp(args.to_vec()).map_err(|e| e.message().to_string())
        }),
    };
    rich.insert(func_key(&f), imp);
    Value::Function(f)
}

fn build() -> Stdlib {
    let mut rich = HashMap::new();
    let mut ids = BTreeMap::new();

    let ns = |entries: &[(&'static str, RichFn)], rich: &mut HashMap<usize, RichFn>| {
        Value::Object(
            entries
                .iter()
                .map(|(name, imp)| {
                    // The function's name is its full dotted name, for messages and the API.
                    let short = name.rsplit('.').next().unwrap_or(name).to_string();
                    (short, make_fn(name, *imp, rich))
                })
                .collect(),
        )
    };

    ids.insert(
        "sys".to_string(),
        ns(&[("sys.env", sys_env as RichFn)], &mut rich),
    );
    ids.insert(
        "convert".to_string(),
        ns(
            &[("convert.nonsensitive", nonsensitive as RichFn)],
            &mut rich,
        ),
    );
    ids.insert(
        "array".to_string(),
        ns(
            &[
                ("array.concat", concat as RichFn),
                ("array.combine_maps", combine_maps),
                ("array.group_by", group_by),
            ],
            &mut rich,
        ),
    );
    ids.insert(
        "encoding".to_string(),
        ns(
            &[
                ("encoding.from_json", from_json as RichFn),
                ("encoding.from_yaml", from_yaml),
                ("encoding.from_base64", from_base64),
                ("encoding.from_URLbase64", from_url_base64),
                ("encoding.to_json", to_json),
                ("encoding.to_base64", to_base64),
                ("encoding.to_URLbase64", to_url_base64),
                ("encoding.url_encode", url_encode),
                ("encoding.url_decode", url_decode),
            ],
            &mut rich,
        ),
    );
    ids.insert(
        "string".to_string(),
        ns(
            &[
                ("string.format", format as RichFn),
                ("string.join", join),
                ("string.replace", replace),
                ("string.split", split),
                ("string.to_lower", to_lower),
                ("string.to_upper", to_upper),
                ("string.trim", trim),
                ("string.trim_prefix", trim_prefix),
                ("string.trim_suffix", trim_suffix),
                ("string.trim_space", trim_space),
            ],
            &mut rich,
        ),
    );
    ids.insert(
        "file".to_string(),
        ns(&[("file.path_join", path_join as RichFn)], &mut rich),
    );
    ids.insert("constants".to_string(), constants());
    ids.insert(
        "coalesce".to_string(),
        make_fn("coalesce", coalesce, &mut rich),
    );

    for (name, imp) in DEPRECATED {
        ids.insert(name.to_string(), make_fn(name, *imp, &mut rich));
    }

    Stdlib {
        identifiers: ids,
        rich,
    }
}

/// Deprecated top-level aliases, still accepted (Alloy logs a warning for them).
const DEPRECATED: &[(&str, RichFn)] = &[
    ("env", sys_env),
    ("nonsensitive", nonsensitive),
    ("concat", concat),
    ("json_decode", from_json),
    ("yaml_decode", from_yaml),
    ("base64_decode", from_base64),
    ("format", format),
    ("join", join),
    ("replace", replace),
    ("split", split),
    ("to_lower", to_lower),
    ("to_upper", to_upper),
    ("trim", trim),
    ("trim_prefix", trim_prefix),
    ("trim_suffix", trim_suffix),
    ("trim_space", trim_space),
];

/// Experimental identifiers (Alloy requires `--stability.level=experimental` for them; we
/// accept them and let the runtime decide whether to warn).
pub const EXPERIMENTAL: &[&str] = &["array.combine_maps", "array.group_by"];

fn stdlib() -> &'static Stdlib {
    static STDLIB: OnceLock<Stdlib> = OnceLock::new();
    STDLIB.get_or_init(build)
}

/// Every top-level standard-library identifier and its value.
pub fn identifiers() -> &'static BTreeMap<String, Value> {
    &stdlib().identifiers
}

/// Whether `name` is a deprecated top-level alias (`env`, `concat`, ...).
pub fn is_deprecated(name: &str) -> bool {
    DEPRECATED.iter().any(|(n, _)| *n == name)
}

/// Calls a function value. Standard-library functions report structured errors; any other
/// function's error becomes a call error.
pub fn call(f: &Function, args: Vec<Value>) -> Result<Value, FnError> {
    match stdlib().rich.get(&func_key(f)) {
        Some(imp) => imp(args),
        None => (f.func)(&args).map_err(FnError::Call),
    }
}

// ---------------------------------------------------------------------------------------------
// Argument conversion (Go's decode rules for function parameters)
// ---------------------------------------------------------------------------------------------

fn expect_args(args: &[Value], n: usize) -> Result<(), FnError> {
    if args.len() != n {
        return Err(FnError::Call(format!(
            "expected {n} args, got {}",
            args.len()
        )));
    }
    Ok(())
}

fn type_msg(expected: Type, got: &Value) -> String {
    format!("should be {expected}, got {}", got.ty())
}

pub(crate) const SECRET_TO_STRING: &str = "secrets may not be converted into strings";

/// Decodes a value into a Go `string`: numbers convert to their text, null is "".
fn to_string_at(v: &Value, index: usize, path: &[PathSeg]) -> Result<String, FnError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(number_to_string(*n)),
        Value::Null => Ok(String::new()),
        Value::Secret(_) => Err(FnError::arg_at(index, path.to_vec(), SECRET_TO_STRING)),
        other => Err(FnError::arg_at(
            index,
            path.to_vec(),
            type_msg(Type::String, other),
        )),
    }
}

fn arg_string(args: &[Value], index: usize) -> Result<String, FnError> {
    match args.get(index) {
        Some(v) => to_string_at(v, index, &[]),
        None => Ok(String::new()),
    }
}

/// Decodes a value into a Go `[]string`.
fn arg_string_list(args: &[Value], index: usize) -> Result<Vec<String>, FnError> {
    match args.get(index) {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| to_string_at(v, index, &[PathSeg::Index(i)]))
            .collect(),
        Some(Value::Null) | None => Ok(Vec::new()),
        Some(other) => Err(FnError::arg(index, type_msg(Type::Array, other))),
    }
}

fn string_fn(args: Vec<Value>, f: impl FnOnce(&str) -> String) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    let s = arg_string(&args, 0)?;
    Ok(Value::String(f(&s)))
}

fn contains_secret(v: &Value) -> bool {
    match v {
        Value::Secret(_) => true,
        Value::Array(items) => items.iter().any(contains_secret),
        Value::Object(m) => m.values().any(contains_secret),
        _ => false,
    }
}

/// Bytes decoded by base64/URL functions: Go keeps arbitrary bytes in a string; we must have
/// UTF-8, so invalid sequences become U+FFFD.
fn bytes_to_value(b: Vec<u8>) -> Value {
    match String::from_utf8(b) {
        Ok(s) => Value::String(s),
        Err(e) => Value::String(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

// ---------------------------------------------------------------------------------------------
// sys, constants, convert, coalesce
// ---------------------------------------------------------------------------------------------

fn sys_env(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    let name = arg_string(&args, 0)?;
    // os.Getenv: "" when unset. An empty name or one with '=' or NUL cannot be set; avoid the
    // platform call for those (std panics on some of them).
    if name.is_empty() || name.contains(['=', '\0']) {
        return Ok(Value::String(String::new()));
    }
    let v = std::env::var_os(&name)
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Value::String(v))
}

/// The host name as Go's `os.Hostname` gives it (`constants.hostname`; also the default
/// cluster node name).
pub(crate) fn hostname() -> String {
    // Go's os.Hostname reads this file first on Linux.
    if let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let s = s.trim();
        if !s.is_empty() {
            return s.to_string();
        }
    }
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for `buf.len()` bytes; gethostname writes at most that many.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Go's GOOS spelling of the target OS.
fn go_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    }
}

/// Go's GOARCH spelling of the target architecture.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "mips64" if cfg!(target_endian = "little") => "mips64le",
        "mips" if cfg!(target_endian = "little") => "mipsle",
        "loongarch64" => "loong64",
        other => other,
    }
}

fn constants() -> Value {
    let mut m = BTreeMap::new();
    m.insert("hostname".to_string(), Value::String(hostname()));
    m.insert("os".to_string(), Value::string(go_os()));
    m.insert("arch".to_string(), Value::string(go_arch()));
    // Alloy normalises its version to a "v"-prefixed semver.
    m.insert(
        "version".to_string(),
        Value::String(format!("v{}", env!("CARGO_PKG_VERSION"))),
    );
    Value::Object(m)
}

fn nonsensitive(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 1)?;
    match &args[0] {
        Value::Secret(s) => Ok(Value::String(s.expose().to_string())),
        // A string converts to a secret, so a plain string passes through unchanged.
        Value::String(s) => Ok(Value::String(s.clone())),
        Value::Null => Ok(Value::String(String::new())),
        other => Err(FnError::arg(0, type_msg(Type::Secret, other))),
    }
}

/// Go's `reflect.Value.IsZero` plus Alloy's emptiness rules for arrays and objects.
fn is_empty_for_coalesce(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Number(Number::Int(i)) => *i == 0,
        Value::Number(Number::Uint(u)) => *u == 0,
        // IsZero on a float compares bits, so -0.0 is not zero.
        Value::Number(Number::Float(f)) => f.to_bits() == 0,
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Secret(s) => s.expose().is_empty(),
        Value::Function(_) | Value::Capsule(_) => false,
    }
}

fn coalesce(mut args: Vec<Value>) -> Result<Value, FnError> {
    if args.is_empty() {
        return Ok(Value::Null);
    }
    if let Some(i) = args.iter().position(|v| !is_empty_for_coalesce(v)) {
        return Ok(args.swap_remove(i));
    }
    Ok(args.pop().unwrap_or(Value::Null))
}

// ---------------------------------------------------------------------------------------------
// array
// ---------------------------------------------------------------------------------------------

fn concat(args: Vec<Value>) -> Result<Value, FnError> {
    let mut total = 0;
    for (i, a) in args.iter().enumerate() {
        match a {
            Value::Array(items) => total += items.len(),
            other => return Err(FnError::arg(i, type_msg(Type::Array, other))),
        }
    }
    let mut out = Vec::with_capacity(total);
    for a in args {
        if let Value::Array(items) = a {
            out.extend(items);
        }
    }
    Ok(Value::Array(out))
}

fn combine_maps(args: Vec<Value>) -> Result<Value, FnError> {
    if args.len() != 3 && args.len() != 4 {
        return Err(FnError::Call(format!(
            "combine_maps: expected 3 or 4 arguments, got {}",
            args.len()
        )));
    }
    for (i, arg) in args.iter().enumerate().take(2) {
        match arg {
            Value::Array(items) => {
                for (j, e) in items.iter().enumerate() {
                    if !matches!(e, Value::Object(_)) {
                        return Err(FnError::arg_at(
                            i,
                            vec![PathSeg::Index(j)],
                            type_msg(Type::Object, e),
                        ));
                    }
                }
            }
            other => return Err(FnError::arg(i, type_msg(Type::Array, other))),
        }
    }
    let conds = match &args[2] {
        Value::Array(c) => c,
        other => return Err(FnError::arg(2, type_msg(Type::Array, other))),
    };
    if conds.is_empty() {
        return Err(FnError::arg(
            2,
            "combine_maps: merge conditions must not be empty",
        ));
    }
    // Go reads each condition with Text(), which only works on strings.
    let mut keys = Vec::with_capacity(conds.len());
    for (j, c) in conds.iter().enumerate() {
        match c {
            Value::String(s) => keys.push(s.as_str()),
            other => {
                return Err(FnError::arg_at(
                    2,
                    vec![PathSeg::Index(j)],
                    type_msg(Type::String, other),
                ));
            }
        }
    }
    let passthrough = match args.get(3) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(FnError::arg(3, type_msg(Type::Bool, other))),
    };
    let (Value::Array(left), Value::Array(right)) = (&args[0], &args[1]) else {
        return Ok(Value::Array(Vec::new()));
    };
    let mut out = Vec::new();
    // Same loop shape as Alloy: a passthrough element is repeated once per non-matching right
    // element.
    for l in left {
        for r in right {
            let (Value::Object(lm), Value::Object(rm)) = (l, r) else {
                continue;
            };
            let join = keys.iter().all(|k| match (lm.get(*k), rm.get(*k)) {
                (Some(a), Some(b)) => super::eval::values_equal(a, b),
                _ => false,
            });
            if join {
                let mut merged = lm.clone();
                for (k, v) in rm {
                    merged.insert(k.clone(), v.clone());
                }
                out.push(Value::Object(merged));
            } else if passthrough {
                out.push(l.clone());
            }
        }
    }
    Ok(Value::Array(out))
}

fn group_by(args: Vec<Value>) -> Result<Value, FnError> {
    if args.len() != 3 {
        return Err(FnError::Call(format!(
            "group_by: expected 3 arguments, got {}",
            args.len()
        )));
    }
    let Value::Array(items) = &args[0] else {
        return Err(FnError::arg(0, type_msg(Type::Array, &args[0])));
    };
    let Value::String(key) = &args[1] else {
        return Err(FnError::arg(1, type_msg(Type::String, &args[1])));
    };
    let Value::Bool(drop_missing) = &args[2] else {
        return Err(FnError::arg(2, type_msg(Type::Bool, &args[2])));
    };
    // Go iterates a map, so group order is unspecified there; sorted by key here.
    let mut groups: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Object(m) = item else {
            return Err(FnError::arg_at(
                0,
                vec![PathSeg::Index(i)],
                type_msg(Type::Object, item),
            ));
        };
        match m.get(key) {
            None if *drop_missing => {}
            None => groups.entry(String::new()).or_default().push(item.clone()),
            Some(Value::String(s)) => groups.entry(s.clone()).or_default().push(item.clone()),
            Some(other) => {
                return Err(FnError::arg_at(
                    0,
                    vec![PathSeg::Index(i), PathSeg::Field(key.clone())],
                    type_msg(Type::String, other),
                ));
            }
        }
    }
    Ok(Value::Array(
        groups
            .into_iter()
            .map(|(k, items)| {
                let mut g = BTreeMap::new();
                g.insert(key.clone(), Value::String(k));
                g.insert("items".to_string(), Value::Array(items));
                Value::Object(g)
            })
            .collect(),
    ))
}

// ---------------------------------------------------------------------------------------------
// string
// ---------------------------------------------------------------------------------------------

fn format(args: Vec<Value>) -> Result<Value, FnError> {
    if args.is_empty() {
        return Err(FnError::Call("expected at least 1 args, got 0".to_string()));
    }
    let spec = arg_string(&args, 0)?;
    let rest = &args[1..];
    let out = sprintf(&spec, rest);
    // Formatting a secret gives a secret: the text is in the result.
    if rest.iter().any(contains_secret) {
        Ok(Value::Secret(Secret::new(out)))
    } else {
        Ok(Value::String(out))
    }
}

fn join(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 2)?;
    let list = arg_string_list(&args, 0)?;
    let sep = arg_string(&args, 1)?;
    Ok(Value::String(list.join(&sep)))
}

fn replace(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 3)?;
    let s = arg_string(&args, 0)?;
    let old = arg_string(&args, 1)?;
    let new = arg_string(&args, 2)?;
    // Rust's replace with an empty pattern inserts at every char boundary, like Go's ReplaceAll.
    Ok(Value::String(s.replace(&old, &new)))
}

fn split(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 2)?;
    let s = arg_string(&args, 0)?;
    let sep = arg_string(&args, 1)?;
    let parts: Vec<Value> = if sep.is_empty() {
        // Go splits into UTF-8 sequences (and "" into no elements).
        s.chars().map(|c| Value::String(c.to_string())).collect()
    } else {
        s.split(sep.as_str()).map(Value::string).collect()
    };
    Ok(Value::Array(parts))
}

/// Go maps case rune by rune (simple case mapping): a rune whose full mapping has several
/// characters (`ß` -> `SS`) is left alone.
fn map_case(s: &str, upper: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let mut buf = [c; 3];
        let mut n = 0;
        let mapped: Box<dyn Iterator<Item = char>> = if upper {
            Box::new(c.to_uppercase())
        } else {
            Box::new(c.to_lowercase())
        };
        for m in mapped {
            if n < 3 {
                buf[n] = m;
            }
            n += 1;
        }
        if n == 1 {
            out.push(buf[0]);
        } else {
            out.push(c);
        }
    }
    out
}

fn to_lower(args: Vec<Value>) -> Result<Value, FnError> {
    string_fn(args, |s| map_case(s, false))
}

fn to_upper(args: Vec<Value>) -> Result<Value, FnError> {
    string_fn(args, |s| map_case(s, true))
}

fn trim_space(args: Vec<Value>) -> Result<Value, FnError> {
    // Go's unicode.IsSpace and Rust's White_Space property agree.
    string_fn(args, |s| s.trim().to_string())
}

fn trim(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 2)?;
    let s = arg_string(&args, 0)?;
    let cutset = arg_string(&args, 1)?;
    Ok(Value::String(
        s.trim_matches(|c| cutset.contains(c)).to_string(),
    ))
}

fn trim_prefix(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 2)?;
    let s = arg_string(&args, 0)?;
    let p = arg_string(&args, 1)?;
    Ok(Value::String(
        s.strip_prefix(p.as_str()).unwrap_or(&s).to_string(),
    ))
}

fn trim_suffix(args: Vec<Value>) -> Result<Value, FnError> {
    expect_args(&args, 2)?;
    let s = arg_string(&args, 0)?;
    let p = arg_string(&args, 1)?;
    Ok(Value::String(
        s.strip_suffix(p.as_str()).unwrap_or(&s).to_string(),
    ))
}

// ---------------------------------------------------------------------------------------------
// file
// ---------------------------------------------------------------------------------------------

fn path_join(args: Vec<Value>) -> Result<Value, FnError> {
    let mut parts = Vec::with_capacity(args.len());
    for i in 0..args.len() {
        parts.push(arg_string(&args, i)?);
    }
    Ok(Value::String(go_path_join(&parts)))
}

/// Go's `filepath.Join` on Unix: join the non-empty elements with `/`, then `Clean`.
pub fn go_path_join(parts: &[String]) -> String {
    let non_empty: Vec<&str> = parts
        .iter()
        .map(String::as_str)
        .filter(|p| !p.is_empty())
        .collect();
    if non_empty.is_empty() {
        return String::new();
    }
    go_path_clean(&non_empty.join("/"))
}

/// Go's `path.Clean`.
pub fn go_path_clean(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let rooted = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for elem in path.split('/') {
        match elem {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            e => out.push(e),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::diag::Source;
    use crate::syntax::eval::{Scope, eval_expr, values_equal};
    use crate::syntax::parser::parse_expression;

    fn ev(src: &str) -> Result<Value, String> {
        let expr = parse_expression(src).map_err(|d| format!("parse error: {d:?}"))?;
        let mut scope = Scope::stdlib();
        scope.set("secret", Value::Secret(Secret::new("hunter2")));
        eval_expr(&expr, &scope).map_err(|d| {
            let (l, c) = Source::new("", src).line_col(d.span.map_or(0, |s| s.start as usize));
            format!("{l}:{c}: {}", d.message)
        })
    }

    #[test]
    fn functions() {
        // SAFETY: tests in this module are the only ones touching these variables.
        unsafe {
            std::env::set_var("SCRAPER_TEST_VAR", "Hello!");
            std::env::remove_var("SCRAPER_TEST_UNSET");
        }
        // (expression, expression giving the expected value)
        let cases: &[(&str, &str)] = &[
            ("sys.env(\"SCRAPER_TEST_VAR\")", "\"Hello!\""),
            ("env(\"SCRAPER_TEST_VAR\")", "\"Hello!\""),
            ("sys.env(\"SCRAPER_TEST_UNSET\")", "\"\""),
            ("coalesce()", "null"),
            ("coalesce(\"a\")", "\"a\""),
            (
                "coalesce(sys.env(\"SCRAPER_TEST_UNSET\"), \"World!\")",
                "\"World!\"",
            ),
            ("coalesce([], [\"fallback\"])", "[\"fallback\"]"),
            ("coalesce(0, 1, 2)", "1"),
            ("coalesce(false, true)", "true"),
            ("coalesce(encoding.from_json(\"{}\"), false)", "false"),
            ("coalesce([], null)", "null"),
            ("coalesce(\"\", 0, false)", "false"),
            (
                "array.concat([true, \"foo\"], [], [false, 1])",
                "[true, \"foo\", false, 1]",
            ),
            ("concat([1], [2])", "[1, 2]"),
            ("array.concat()", "[]"),
            ("string.format(\"Hello %s\", \"World\")", "\"Hello World\""),
            ("format(\"%#v\", 1)", "\"1\""),
            ("string.format(\"%#v\", true)", "\"true\""),
            ("string.format(\"%q\", \"hello\")", "\"\\\"hello\\\"\""),
            ("string.format(\"%[2]s-%[1]s\", \"a\", \"b\")", "\"b-a\""),
            ("string.format(\"%d:%05.1f\", 3, 2.25)", "\"3:002.2\""),
            (
                "string.join([\"foo\", \"bar\", \"baz\"], \", \")",
                "\"foo, bar, baz\"",
            ),
            ("join([0, 0, 1], \", \")", "\"0, 0, 1\""),
            ("string.join([], \",\")", "\"\""),
            (
                "string.replace(\"Hello World\", \" World\", \"!\")",
                "\"Hello!\"",
            ),
            ("replace(\"aaa\", \"a\", \"b\")", "\"bbb\""),
            (
                "string.split(\"/aaa/bbb\", \"/\")",
                "[\"\", \"aaa\", \"bbb\"]",
            ),
            ("split(\"abc\", \"\")", "[\"a\", \"b\", \"c\"]"),
            ("string.split(\"\", \",\")", "[\"\"]"),
            (
                "string.join(string.split(\"/a/b\", \"/\"), \"/\")",
                "\"/a/b\"",
            ),
            ("string.to_lower(\"String\")", "\"string\""),
            ("string.to_upper(\"string\")", "\"STRING\""),
            ("string.to_upper(\"straße\")", "\"STRAßE\""),
            ("to_lower(\"ÀB\")", "\"àb\""),
            ("string.trim(\"?!hello?!\", \"!?\")", "\"hello\""),
            ("trim(\"   hello! world.!  \", \"! \")", "\"hello! world.\""),
            ("string.trim_prefix(\"helloworld\", \"hello\")", "\"world\""),
            (
                "string.trim_prefix(\"helloworld\", \"x\")",
                "\"helloworld\"",
            ),
            ("trim_suffix(\"helloworld\", \"world\")", "\"hello\""),
            ("string.trim_space(\"   string \\n\\n\")", "\"string\""),
            ("string.to_upper(42)", "\"42\""),
            ("string.to_upper(1.5)", "\"1.5\""),
            (
                "encoding.from_json(\"{\\\"foo\\\": \\\"bar\\\"}\")",
                "{foo = \"bar\"}",
            ),
            ("json_decode(\"[0, 1, null]\")", "[0.0, 1.0, null]"),
            ("encoding.from_json(\"1\") == 1", "true"),
            ("encoding.from_yaml(`foo: bar`)", "{foo = \"bar\"}"),
            ("yaml_decode(`[0, 1, 2]`)", "[0, 1, 2]"),
            (
                "encoding.from_yaml(`[0.5, null, true, \"x\"]`)",
                "[0.5, null, true, \"x\"]",
            ),
            ("encoding.from_yaml(`a: {1: b}`)", "{a = {\"1\" = \"b\"}}"),
            ("encoding.from_yaml(``)", "null"),
            (
                "encoding.from_base64(\"Zm9vYmFyMTIzIT8kKiYoKSctPUB+\")",
                "\"foobar123!?$*&()'-=@~\"",
            ),
            ("base64_decode(\"Zm9v\\nYmFy\")", "\"foobar\""),
            (
                "encoding.from_URLbase64(\"c3RyaW5nMTIzIT8kKiYoKSctPUB-\")",
                "\"string123!?$*&()'-=@~\"",
            ),
            (
                "encoding.to_base64(\"string123!?$*&()'-=@~\")",
                "\"c3RyaW5nMTIzIT8kKiYoKSctPUB+\"",
            ),
            (
                "encoding.to_URLbase64(\"string123!?$*&()'-=@~\")",
                "\"c3RyaW5nMTIzIT8kKiYoKSctPUB-\"",
            ),
            ("encoding.to_base64(\"a\")", "\"YQ==\""),
            (
                "encoding.url_encode(\"string123!?$*&()'-=@~ x\")",
                "\"string123%21%3F%24%2A%26%28%29%27-%3D%40~+x\"",
            ),
            (
                "encoding.url_decode(\"string123%21%3F%24%2A%26%28%29%27-%3D%40~+x\")",
                "\"string123!?$*&()'-=@~ x\"",
            ),
            (
                "encoding.to_json({\"modules\"={\"http_2xx\"={\"prober\"=\"http\",\"timeout\"=\"5s\",\"http\"={\"headers\"={\"Authorization\"=sys.env(\"SCRAPER_TEST_VAR\")}}}}})",
                "`{\"modules\":{\"http_2xx\":{\"http\":{\"headers\":{\"Authorization\":\"Hello!\"}},\"prober\":\"http\",\"timeout\":\"5s\"}}}`",
            ),
            (
                "encoding.to_json({a = \"<&>\", b = 1.5, c = 1e21, d = 0.0000001, e = [1, null, true]})",
                "`{\"a\":\"\\u003c\\u0026\\u003e\",\"b\":1.5,\"c\":1e+21,\"d\":1e-7,\"e\":[1,null,true]}`",
            ),
            ("convert.nonsensitive(secret)", "\"hunter2\""),
            (
                "file.path_join(\"this/is\", \"a/path\")",
                "\"this/is/a/path\"",
            ),
            ("file.path_join()", "\"\""),
            (
                "file.path_join(\"/a/\", \"../b\", \"\", \"./c\")",
                "\"/b/c\"",
            ),
            ("file.path_join(\"a\", \"../..\")", "\"..\""),
            (
                "array.combine_maps([{\"a\" = \"a1\", \"b\" = \"b1\"}], [{\"a\" = \"a1\", \"c\" = \"c1\"}], [\"a\"])",
                "[{a = \"a1\", b = \"b1\", c = \"c1\"}]",
            ),
            (
                "array.combine_maps([{\"a\" = 1, \"b\" = 4.2}, {\"d\" = \"x\"}], [{\"a\" = 2}], [\"a\"], true)",
                "[{a = 1, b = 4.2}, {d = \"x\"}]",
            ),
            (
                "array.combine_maps([{\"a\" = 1, \"b\" = 2.2}], [{\"a\" = \"1\"}], [\"a\"])",
                "[]",
            ),
            (
                "array.group_by([{\"type\" = \"fruit\", \"name\" = \"apple\"}, {\"name\" = \"x\"}, {\"type\" = \"veg\", \"name\" = \"carrot\"}], \"type\", false)",
                "[{type = \"\", items = [{name = \"x\"}]}, {type = \"fruit\", items = [{type = \"fruit\", name = \"apple\"}]}, {type = \"veg\", items = [{type = \"veg\", name = \"carrot\"}]}]",
            ),
            (
                "array.group_by([{\"name\" = \"bob\"}], \"age\", true)",
                "[]",
            ),
            (
                "constants.arch == \"amd64\" || constants.arch == \"arm64\" || constants.arch != \"\"",
                "true",
            ),
            (
                "constants.version",
                &format!("\"v{}\"", env!("CARGO_PKG_VERSION")),
            ),
            ("constants.hostname != \"\"", "true"),
        ];
        for (src, want) in cases {
            let got = ev(src).unwrap_or_else(|e| panic!("{src}: {e}"));
            let want_v = ev(want).unwrap_or_else(|e| panic!("{want}: {e}"));
            assert!(
                values_equal(&got, &want_v),
                "{src}: got {got:?}, want {want_v:?}"
            );
        }
    }

    #[test]
    fn function_errors() {
        let cases: &[(&str, &str)] = &[
            (
                "array.combine_maps([{\"a\" = \"a1\", \"b\" = \"b1\"}], \"a\", [\"a\"])",
                "1:48: \"a\" should be array, got string",
            ),
            (
                "array.combine_maps([{\"a\" = \"a1\", \"b\" = \"b1\"}], [\"a\"], [\"a\"])",
                "1:49: \"a\" should be object, got string",
            ),
            (
                "array.combine_maps([{\"a\" = \"a1\"}], [{\"a\" = \"a1\"}], [])",
                "1:52: [] combine_maps: merge conditions must not be empty",
            ),
            (
                "encoding.to_json(12)",
                "1:1: encoding.to_json jsonEncode only supports map",
            ),
            (
                "array.group_by([{\"name\" = \"alice\"}], \"age\")",
                "1:1: array.group_by group_by: expected 3 arguments, got 2",
            ),
            (
                "array.group_by(\"not an array\", \"age\", false)",
                "1:16: \"not an array\" should be array, got string",
            ),
            (
                "array.group_by([{\"name\" = \"alice\"}], 123, false)",
                "1:38: 123 should be string, got number",
            ),
            (
                "array.group_by([{\"name\" = \"alice\"}], \"age\", \"not a bool\")",
                "1:45: \"not a bool\" should be bool, got string",
            ),
            (
                "array.group_by([\"not an object\"], \"age\", false)",
                "1:17: \"not an object\" should be object, got string",
            ),
            (
                "array.group_by([{\"name\" = \"alice\", \"age\" = 20}], \"age\", false)",
                "1:44: 20 should be string, got number",
            ),
            (
                "array.concat([1], 2)",
                "1:19: 2 should be array, got number",
            ),
            (
                "string.join(\"a\", \",\")",
                "1:13: \"a\" should be array, got string",
            ),
            (
                "string.join([\"a\", true], \",\")",
                "1:19: true should be string, got bool",
            ),
            (
                "string.join([\"a\"])",
                "1:1: string.join expected 2 args, got 1",
            ),
            ("sys.env()", "1:1: sys.env expected 1 args, got 0"),
            (
                "string.format()",
                "1:1: string.format expected at least 1 args, got 0",
            ),
            (
                "string.to_upper([1])",
                "1:17: [1] should be string, got array",
            ),
            (
                "convert.nonsensitive(1)",
                "1:22: 1 should be secret, got number",
            ),
            (
                "encoding.from_base64(\"!!\")",
                "1:1: encoding.from_base64 illegal base64 data at input byte 0",
            ),
            (
                "encoding.url_decode(\"%zz\")",
                "1:1: encoding.url_decode invalid URL escape \"%zz\"",
            ),
            (
                "encoding.to_json({a = 1.0 / 0.5, b = sys.env})",
                "1:1: encoding.to_json json: unsupported type: function(sys.env)",
            ),
        ];
        for (src, want) in cases {
            match ev(src) {
                Ok(v) => panic!("{src}: expected an error, got {v:?}"),
                Err(e) => assert_eq!(&e, want, "{src}"),
            }
        }
        // Decoding errors quote the JSON/YAML parser.
        let e = ev("encoding.from_json(\"{\")").expect_err("bad json");
        assert!(e.starts_with("1:1: encoding.from_json "), "{e}");
        let e = ev("encoding.from_yaml(\"a: [\")").expect_err("bad yaml");
        assert!(e.starts_with("1:1: encoding.from_yaml "), "{e}");
    }

    fn s(v: &str) -> Value {
        Value::string(v)
    }
    fn i(v: i64) -> Value {
        Value::Number(Number::Int(v))
    }
    fn f(v: f64) -> Value {
        Value::Number(Number::Float(v))
    }

    #[test]
    fn sprintf_verbs() {
        let arr = Value::Array(vec![i(1), s("a"), Value::Null]);
        let mut m = BTreeMap::new();
        m.insert("b".to_string(), i(2));
        m.insert("a".to_string(), s("x"));
        let obj = Value::Object(m);
        let cases: Vec<(&str, Vec<Value>, &str)> = vec![
            ("%%", vec![], "%"),
            ("%d", vec![i(42)], "42"),
            (
                "%5d|%-5d|%05d",
                vec![i(42), i(42), i(-42)],
                "   42|42   |-0042",
            ),
            ("%+d % d", vec![i(5), i(5)], "+5  5"),
            ("%.3d", vec![i(7)], "007"),
            (
                "%x %X %#x %o %#o %O %b",
                vec![i(255), i(255), i(255), i(8), i(8), i(8), i(5)],
                "ff FF 0xff 10 010 0o10 101",
            ),
            (
                "%c %q %U %#U",
                vec![i(65), i(65), i(0x1F600), i(65)],
                "A 'A' U+1F600 U+0041 'A'",
            ),
            (
                "%s|%10s|%-10s|%.2s",
                vec![s("hi"), s("hi"), s("hi"), s("héllo")],
                "hi|        hi|hi        |hé",
            ),
            (
                "%q %+q %#q",
                vec![s("a\"b\n"), s("é"), s("x")],
                "\"a\\\"b\\n\" \"\\u00e9\" `x`",
            ),
            (
                "%x % X %#x",
                vec![s("hi"), s("hi"), s("hi")],
                "6869 68 69 0x6869",
            ),
            (
                "%v %t",
                vec![Value::Bool(true), Value::Bool(false)],
                "true false",
            ),
            (
                "%f %.2f %8.3f %-8.1f|",
                vec![f(1.23456), f(1.23456), f(1.23456), f(2.0)],
                "1.234560 1.23    1.235 2.0     |",
            ),
            (
                "%e %E %.2e",
                vec![f(1234.5678), f(0.000123), f(1234.5678)],
                "1.234568e+03 1.230000E-04 1.23e+03",
            ),
            (
                "%g %g %g %g %G",
                vec![f(100.0), f(1e6), f(123456.0), f(0.0001), f(1e-5)],
                "100 1e+06 123456 0.0001 1E-05",
            ),
            (
                "%.3g %.10g %g",
                vec![f(1234.5678), f(1.0), f(0.0)],
                "1.23e+03 1 0",
            ),
            ("%v %v %v", vec![f(1.0), f(1.5), f(1e21)], "1 1.5 1e+21"),
            (
                "%+.1f %08.3f %+08.2f",
                vec![f(2.0), f(-1.23456), f(1.23456)],
                "+2.0 -001.235 +0001.23",
            ),
            ("%f %v", vec![f(f64::INFINITY), f(f64::NAN)], "+Inf NaN"),
            ("%x %.1x", vec![f(1.0), f(1.0)], "0x1p+00 0x1.0p+00"),
            ("%b", vec![f(1.0)], "4503599627370496p-52"),
            ("%v", vec![arr.clone()], "[1 a <nil>]"),
            ("%d", vec![arr.clone()], "[1 %!d(string=a) <nil>]"),
            ("%v", vec![obj.clone()], "map[a:x b:2]"),
            ("%#v", vec![s("q")], "\"q\""),
            ("%#v", vec![arr], "[]interface {}{1, \"a\", <nil>}"),
            (
                "%#v",
                vec![obj],
                "map[string]interface {}{\"a\":\"x\", \"b\":2}",
            ),
            (
                "%T %T %T %T %T",
                vec![i(1), f(1.0), s(""), Value::Bool(true), Value::Null],
                "int float64 string bool <nil>",
            ),
            ("%v", vec![Value::Null], "<nil>"),
            ("%d", vec![Value::Null], "%!d(<nil>)"),
            ("%d", vec![s("x")], "%!d(string=x)"),
            ("%s", vec![i(5)], "%!s(int=5)"),
            ("%z", vec![i(5)], "%!z(int=5)"),
            ("%d %d", vec![i(1)], "1 %!d(MISSING)"),
            (
                "%d",
                vec![i(1), s("x"), Value::Null],
                "1%!(EXTRA string=x, <nil>)",
            ),
            ("%[3]d", vec![i(1)], "%!d(BADINDEX)"),
            ("%[2]d %[1]d %d", vec![i(1), i(2)], "2 1 2"),
            ("%*d|%-*d", vec![i(4), i(7), i(3), i(1)], "   7|1  "),
            ("%.*f", vec![i(1), f(2.25)], "2.2"),
            ("%", vec![], "%!(NOVERB)"),
            (
                "%d",
                vec![Value::Number(Number::Uint(u64::MAX))],
                "18446744073709551615",
            ),
            (
                "%v",
                vec![Value::Number(Number::Uint(u64::MAX))],
                "18446744073709551615",
            ),
            ("héllo %s", vec![s("wörld")], "héllo wörld"),
            ("%6.2v|", vec![s("abc")], "    ab|"),
        ];
        for (fmt, args, want) in cases {
            assert_eq!(sprintf(fmt, &args), want, "format {fmt:?}");
        }
    }

    #[test]
    fn float_formats() {
        let cases: &[(f64, char, Option<usize>, &str)] = &[
            (123456789.0, 'g', None, "1.23456789e+08"),
            (0.00001234, 'g', None, "1.234e-05"),
            (1e20, 'g', None, "1e+20"),
            (-0.5, 'g', None, "-0.5"),
            (2.5, 'f', Some(0), "2"),
            (3.5, 'f', Some(0), "4"),
            (1e-7, 'e', None, "1e-07"),
            (100.0, 'e', Some(0), "1e+02"),
            (1.0, 'g', Some(3), "1"),
            (0.0, 'g', Some(3), "0"),
            (0.0, 'e', Some(2), "0.00e+00"),
            (0.0, 'g', None, "0"),
            (123.0, 'g', Some(2), "1.2e+02"),
            (0.1, 'x', None, "0x1.999999999999ap-04"),
        ];
        for (v, verb, prec, want) in cases {
            assert_eq!(
                go_format_float(*v, *verb, *prec),
                *want,
                "{v} {verb} {prec:?}"
            );
        }
        assert_eq!(go_json_float(1e21).as_deref(), Ok("1e+21"));
        assert_eq!(go_json_float(1e-7).as_deref(), Ok("1e-7"));
        assert_eq!(go_json_float(123.0).as_deref(), Ok("123"));
        assert_eq!(go_json_float(0.000001).as_deref(), Ok("0.000001"));
    }

    #[test]
    fn quoting_and_urls() {
        assert_eq!(go_path_clean("a/../../b/./c//"), "../b/c");
        assert_eq!(go_path_clean(""), ".");
        assert_eq!(go_path_clean("/.."), "/");
    }

    #[test]
    fn function_values_work_without_the_evaluator() {
        // A stdlib function value is also callable through its plain closure.
        let Some(Value::Object(ns)) = identifiers().get("string") else {
            panic!("string namespace missing");
        };
        let Some(Value::Function(f)) = ns.get("join") else {
            panic!("string.join missing");
        };
        assert_eq!(f.name, "string.join");
        let out = (f.func)(&[Value::Array(vec![s("a"), s("b")]), s("-")]);
        assert_eq!(out, Ok(s("a-b")));
        assert_eq!(
            (f.func)(&[s("x")]),
            Err("expected 2 args, got 1".to_string())
        );
        assert!(is_deprecated("env"));
        assert!(!is_deprecated("sys"));
    }
}
