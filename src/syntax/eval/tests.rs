//! Tests of expression evaluation against Alloy's results and error wording, and of body
//! evaluation.

use std::collections::BTreeMap;

use super::*;
use crate::syntax::ast;
use crate::syntax::diag::Source;
use crate::syntax::parser::{parse_expression, parse_file};
use crate::syntax::stdlib;
use crate::syntax::value::{Number, Secret, Value};

fn scope() -> Scope {
    let mut s = Scope::stdlib();
    s.set("secret", Value::Secret(Secret::new("hunter2")));
    s.set("num", Value::Number(Number::Int(5)));
    let mut nested = BTreeMap::new();
    nested.insert(
        "field1".to_string(),
        Value::Array(vec![
            Value::Number(Number::Int(15)),
            Value::string("Hello, world!"),
        ]),
    );
    let mut outer = BTreeMap::new();
    outer.insert("object".to_string(), Value::Object(nested));
    s.set("key_value", Value::Object(outer));
    s
}

/// Evaluates `src`; errors as `line:col: message`.
fn ev(src: &str) -> Result<Value, String> {
    let expr = parse_expression(src).map_err(|d| format!("parse error: {d:?}"))?;
    eval_expr(&expr, &scope()).map_err(|d| {
        let (l, c) = Source::new("", src).line_col(d.span.map_or(0, |s| s.start as usize));
        format!("{l}:{c}: {}", d.message)
    })
}

fn int(i: i64) -> Value {
    Value::Number(Number::Int(i))
}

fn float(f: f64) -> Value {
    Value::Number(Number::Float(f))
}

/// Exact representation check (PartialEq on Number compares across kinds).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(Number::Int(x)), Value::Number(Number::Int(y))) => x == y,
        (Value::Number(Number::Uint(x)), Value::Number(Number::Uint(y))) => x == y,
        (Value::Number(Number::Float(x)), Value::Number(Number::Float(y))) => {
            x.to_bits() == y.to_bits()
        }
        (Value::Number(_), _) | (_, Value::Number(_)) => false,
        _ => a == b,
    }
}

#[test]
fn values() {
    let cases: &[(&str, Value)] = &[
        // Precedence and associativity.
        ("1 + 2 * 3", int(7)),
        ("(1 + 2) * 3", int(9)),
        ("2 ^ 3 ^ 2", int(512)),
        ("-2 ^ 2", int(4)),
        ("10 - 2 - 3", int(5)),
        ("2 * 3 % 4", int(2)),
        ("1 + 2 == 3 && 4 > 3", Value::Bool(true)),
        ("!false && false || true", Value::Bool(true)),
        ("1 < 2 == true", Value::Bool(true)),
        ("!!true", Value::Bool(true)),
        // Numbers: Go's int -> uint -> float conversion of the literal text.
        ("010", int(8)),
        ("0", int(0)),
        ("08", float(8.0)),
        ("09.5", float(9.5)),
        ("1e3", float(1000.0)),
        ("1.5", float(1.5)),
        ("9223372036854775807", int(i64::MAX)),
        (
            "18446744073709551615",
            Value::Number(Number::Uint(u64::MAX)),
        ),
        ("18446744073709551616", float(18446744073709551616.0)),
        ("-9223372036854775807 - 1", int(i64::MIN)),
        // Arithmetic.
        ("7 / 2", int(3)),
        ("-7 / 2", int(-3)),
        ("7.0 / 2", float(3.5)),
        ("-7 % 3", int(-1)),
        ("7.5 % 2", float(1.5)),
        ("2 ^ 10", int(1024)),
        ("2 ^ 0", int(1)),
        ("2 ^ -1", int(2)),
        ("2.0 ^ -1", float(0.5)),
        ("0 ^ 5", int(0)),
        ("1 + 2.5", float(3.5)),
        // uint op int computes in int (Alloy's fitNumberKinds), wrapping like Go.
        ("18446744073709551615 - 1", int(-2)),
        ("-18446744073709551615", int(1)),
        ("-num", int(-5)),
        // Comparisons.
        ("3 == 3.0", Value::Bool(true)),
        ("3 != 3.0", Value::Bool(false)),
        ("\"a\" < \"b\"", Value::Bool(true)),
        ("\"b\" >= \"b\"", Value::Bool(true)),
        ("1 == \"1\"", Value::Bool(false)),
        ("null == null", Value::Bool(true)),
        ("[1, {a = 2}] == [1.0, {a = 2}]", Value::Bool(true)),
        ("{a = 1} == {a = 1, b = 2}", Value::Bool(false)),
        ("sys.env == sys.env", Value::Bool(false)),
        // Strings are never interpolated.
        ("\"${1}\"", Value::string("${1}")),
        ("\"$1:$2\" + \"$$\"", Value::string("$1:$2$$")),
        ("\"a\" + \"b\"", Value::string("ab")),
        // Indexing and access.
        ("[1, 2, 3][1]", int(2)),
        ("[1, 2, 3][1.9]", int(2)),
        ("{a = 1}[\"a\"]", int(1)),
        ("{a = 1}[\"b\"]", Value::Null),
        (
            "{ \"app.kubernetes.io/name\" = \"x\" }[\"app.kubernetes.io/name\"]",
            Value::string("x"),
        ),
        ("{a = {b = [10, 20]}}.a.b[1]", int(20)),
        ("key_value.object.field1[0]", int(15)),
        ("{a = 1, a = 2}.a", int(2)),
        ("constants.os", Value::string(std::env::consts::OS)),
    ];
    for (src, want) in cases {
        match ev(src) {
            Ok(got) => assert!(same(&got, want), "{src}: got {got:?}, want {want:?}"),
            Err(e) => panic!("{src}: {e}"),
        }
    }
}

#[test]
fn errors() {
    let cases: &[(&str, &str)] = &[
        ("foobar", "1:1: identifier \"foobar\" does not exist"),
        ("{ a = 15 }.b", "1:12: field \"b\" does not exist"),
        ("1 + \"a\"", "1:5: \"a\" should be number, got string"),
        (
            "true + 1",
            "1:1: true should be one of [number string secret] for binop +, got bool",
        ),
        (
            "1 - \"a\"",
            "1:5: \"a\" should be one of [number] for binop -, got string",
        ),
        (
            "1 && true",
            "1:1: 1 should be one of [bool] for binop &&, got number",
        ),
        ("1 / 0", "1:5: 0 divide by zero error"),
        ("1 % 0", "1:5: 0 divide by zero error"),
        ("1.5 / 0.0", "1:7: 0.0 divide by zero error"),
        ("10 / (5 - 5)", "1:6: (5 - 5) divide by zero error"),
        (
            "[1, 2, 3][3]",
            "1:11: 3 index 3 is out of range of array with length 3",
        ),
        (
            "[1, 2, 3][-1]",
            "1:11: -1 index -1 is out of range of array with length 3",
        ),
        ("[1][\"a\"]", "1:5: \"a\" should be number, got string"),
        ("{a = 1}[0]", "1:9: 0 should be string, got number"),
        ("1[0]", "1:1: 1 expected object or array, got number"),
        (
            "(1).a",
            "1:1: (1) cannot access field \"a\" on value of type number",
        ),
        (
            "num.a",
            "1:1: num cannot access field \"a\" on value of type number",
        ),
        ("\"a\"()", "1:1: \"a\" should be function, got string"),
        ("!1", "1:2: 1 should be bool, got number"),
        ("-\"a\"", "1:2: \"a\" should be number, got string"),
        ("\"a\" < 1", "1:7: 1 should be string, got number"),
        (
            "[1] < [2]",
            "1:1: [1] should be one of [number string] for binop <, got array",
        ),
        (
            "key_value.object.nope",
            "1:18: field \"nope\" does not exist",
        ),
        // Errors deep inside expressions point at the innermost sub-expression.
        (
            "[1, 2, 1 + true]",
            "1:12: true should be one of [number string secret] for binop +, got bool",
        ),
        ("{ a = { b = x } }", "1:13: identifier \"x\" does not exist"),
    ];
    for (src, want) in cases {
        match ev(src) {
            Ok(v) => panic!("{src}: expected an error, got {v:?}"),
            Err(e) => assert_eq!(&e, want, "{src}"),
        }
    }
}

#[test]
fn secrets() {
    let s = |v: &str| Value::Secret(Secret::new(v));
    let cases: &[(&str, Value)] = &[
        ("\"Bearer \" + secret", s("Bearer hunter2")),
        ("secret + \"!\"", s("hunter2!")),
        ("secret + secret", s("hunter2hunter2")),
        ("secret == \"hunter2\"", Value::Bool(true)),
        ("\"hunter2\" == secret", Value::Bool(true)),
        ("secret != \"x\"", Value::Bool(true)),
        ("convert.nonsensitive(secret)", Value::string("hunter2")),
        ("nonsensitive(secret)", Value::string("hunter2")),
        ("convert.nonsensitive(\"plain\")", Value::string("plain")),
        ("string.format(\"%s!\", secret)", s("hunter2!")),
        ("encoding.to_json({a = secret})", s("{\"a\":\"hunter2\"}")),
        ("coalesce(secret, \"x\")", s("hunter2")),
    ];
    for (src, want) in cases {
        match ev(src) {
            Ok(got) => assert_eq!(&got, want, "{src}"),
            Err(e) => panic!("{src}: {e}"),
        }
    }
    // No error message ever shows the secret's text.
    let errors = [
        "secret < \"a\"",
        "secret - 1",
        "string.to_upper(secret)",
        "string.join([secret], \",\")",
        "encoding.to_base64(secret)",
        "secret.x",
        "secret[0]",
        "secret()",
        "-secret",
        "!secret",
        "[secret][1]",
    ];
    for src in errors {
        let e = ev(src).expect_err(src);
        assert!(!e.contains("hunter2"), "{src}: {e}");
    }
    assert_eq!(
        ev("string.to_upper(secret)").err().as_deref(),
        Some("1:17: secret secrets may not be converted into strings")
    );
    assert_eq!(format!("{:?}", scope().get("secret")), "Some((secret))");
}

#[test]
fn number_text() {
    assert_eq!(number_to_string(Number::Float(1.0)), "1");
    assert_eq!(number_to_string(Number::Float(0.1)), "0.1");
    assert_eq!(
        number_to_string(Number::Float(1e21)),
        "1000000000000000000000"
    );
    assert_eq!(number_to_string(Number::Float(1e-7)), "0.0000001");
    assert_eq!(number_to_string(Number::Float(f64::INFINITY)), "+Inf");
    assert_eq!(number_to_string(Number::Int(-3)), "-3");
    assert!(matches!(string_to_number("-3"), Some(Number::Int(-3))));
    assert!(matches!(string_to_number("3"), Some(Number::Uint(3))));
    assert!(matches!(string_to_number("3.5"), Some(Number::Float(_))));
    assert!(matches!(string_to_number("1e3"), Some(Number::Float(_))));
    assert!(string_to_number("").is_none());
    assert!(string_to_number("+3").is_none());
    assert!(string_to_number("0x10").is_none());
    assert!(string_to_number("abc").is_none());
    // Hand-built literal texts follow strconv's base prefixes and underscore rules.
    assert!(matches!(parse_number("0x1F"), Ok(Number::Int(31))));
    assert!(matches!(parse_number("0b101"), Ok(Number::Int(5))));
    assert!(matches!(parse_number("0o17"), Ok(Number::Int(15))));
    assert!(matches!(parse_number("1_000"), Ok(Number::Int(1000))));
    assert!(parse_number("1__0").is_err());
    assert!(parse_number("_1").is_err());
    assert_eq!(
        parse_number("1e400").err().as_deref(),
        Some("strconv.ParseFloat: parsing \"1e400\": value out of range")
    );
}

#[test]
fn scope_paths() {
    let mut s = Scope::stdlib();
    let out = |v: i64| {
        let mut m = BTreeMap::new();
        m.insert("output".to_string(), int(v));
        Value::Object(m)
    };
    s.insert_path(&["discovery", "relabel", "a"], out(1));
    s.insert_path(&["discovery", "relabel", "b"], out(2));
    s.insert_path(&["discovery", "kubernetes", "pods"], out(3));
    assert_eq!(
        s.lookup_path(&["discovery", "relabel", "a", "output"]),
        Some(&int(1))
    );
    assert_eq!(
        s.lookup_path(&["discovery", "relabel", "b", "output"]),
        Some(&int(2))
    );
    assert_eq!(
        s.lookup_path(&["discovery", "kubernetes", "pods", "output"]),
        Some(&int(3))
    );
    // Merged with a stdlib namespace of the same root: both stay reachable.
    s.insert_path(&["string", "custom", "x"], out(4));
    assert!(matches!(
        s.lookup_path(&["string", "join"]),
        Some(Value::Function(_))
    ));
    assert_eq!(
        s.lookup_path(&["string", "custom", "x", "output"]),
        Some(&int(4))
    );
    // A component named like a stdlib function wins over it.
    s.insert_path(&["coalesce", "x"], out(5));
    assert_eq!(s.lookup_path(&["coalesce", "x", "output"]), Some(&int(5)));
    // Expressions see the merged tree.
    let e =
        parse_expression("discovery.relabel.b.output + string.custom.x.output").expect("parses");
    assert_eq!(eval_expr(&e, &s), Ok(int(6)));
    // Overwriting replaces the leaf only.
    s.insert_path(&["discovery", "relabel", "a"], out(7));
    assert_eq!(
        s.lookup_path(&["discovery", "relabel", "a", "output"]),
        Some(&int(7))
    );
    assert_eq!(
        s.lookup_path(&["discovery", "relabel", "b", "output"]),
        Some(&int(2))
    );
    // Removal prunes empty objects and restores a shadowed stdlib name.
    s.remove_path(&["discovery", "relabel", "a"]);
    s.remove_path(&["discovery", "relabel", "b"]);
    assert!(s.lookup_path(&["discovery", "relabel"]).is_none());
    assert!(s.lookup_path(&["discovery", "kubernetes"]).is_some());
    s.remove_path(&["coalesce", "x"]);
    assert!(matches!(s.get("coalesce"), Some(Value::Function(_))));
}

fn body_of(src: &str) -> ast::Body {
    let (file, diags) = parse_file(src);
    assert!(diags.is_empty(), "{diags:?}");
    file.body
}

#[test]
fn bodies() {
    let src = "a = 1 + 1\nblk \"l\" {\n  b = \"x\"\n  inner { c = [1] }\n}\n";
    let s = Scope::stdlib();
    let body = eval_body(&body_of(src), &s).expect("evaluates");
    assert_eq!(body.attributes.len(), 1);
    assert_eq!(body.attributes[0].value, int(2));
    assert_eq!(body.blocks[0].name, "blk");
    assert_eq!(body.blocks[0].label.as_deref(), Some("l"));
    assert_eq!(body.blocks[0].body.blocks[0].name, "inner");

    // Equality ignores spans: the same body shifted by an edit elsewhere is equal.
    let shifted = eval_body(&body_of(&format!("\n\n// comment\n{src}")), &s).expect("evaluates");
    assert_eq!(body, shifted);
    let changed = eval_body(&body_of(&src.replace("\"x\"", "\"y\"")), &s).expect("evaluates");
    assert_ne!(body, changed);

    // Every failing attribute is reported, nested ones included.
    let errs =
        eval_body(&body_of("a = x\nb = 1\nc = 1 / 0\nblk {\n d = y\n}\n"), &s).expect_err("fails");
    let msgs: Vec<&str> = errs.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        msgs,
        [
            "identifier \"x\" does not exist",
            "0 divide by zero error",
            "identifier \"y\" does not exist"
        ]
    );
}

#[test]
fn json_redacted() {
    let mut s = Scope::stdlib();
    s.set("secret", Value::Secret(Secret::new("hunter2")));
    s.set(
        "recv",
        Value::Capsule(super::super::value::Capsule::new(
            "pyroscope.Appendable",
            std::sync::Arc::new(1u8),
        )),
    );
    let src = "password = secret\nforward_to = [recv]\nn = 1.5\nlabels = { a = \"b\" }\nprofile.custom \"x\" {\n  path = \"/p\"\n}\n";
    let body = eval_body(&body_of(src), &s).expect("evaluates");
    let j = body.to_json_redacted();
    assert_eq!(
        j,
        serde_json::json!({
            "password": "(secret)",
            "forward_to": ["capsule(pyroscope.Appendable)"],
            "n": 1.5,
            "labels": {"a": "b"},
            "profile.custom": [{"$label": "x", "path": "/p"}],
        })
    );
    assert!(!j.to_string().contains("hunter2"));
}

#[test]
fn deprecations() {
    let body = body_of("a = env(\"X\")\nb = sys.env(\"X\")\nc = concat([], [])\n");
    let w = deprecation_warnings(&body, &Scope::stdlib());
    assert_eq!(w.len(), 2);
    assert!(w.iter().all(|d| d.message == stdlib::DEPRECATION_MESSAGE));
}
