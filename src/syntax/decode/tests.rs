//! Tests of decoding: the attribute/block mapping, strictness and defaults, and the wording and
//! position of errors.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Deserialize;

use super::*;
use crate::syntax::diag::Source;
use crate::syntax::eval::{Scope, eval_body};
use crate::syntax::parser::parse_file;
use crate::syntax::types::{CapsuleRef, Duration, SecretString};
use crate::syntax::value::{Capsule, Number, Secret};

#[derive(Debug, PartialEq)]
struct Receiver(&'static str);

fn scope() -> Scope {
    let mut s = Scope::stdlib();
    s.set("secret", Value::Secret(Secret::new("hunter2")));
    s.insert_path(
        &["pyroscope", "write", "a", "receiver"],
        Value::Capsule(Capsule::new(
            "pyroscope.Appendable",
            Arc::new(Receiver("a")),
        )),
    );
    s.insert_path(
        &["other", "capsule"],
        Value::Capsule(Capsule::new("other.Thing", Arc::new(7u32))),
    );
    let mut kv = BTreeMap::new();
    let mut obj = BTreeMap::new();
    obj.insert(
        "field1".to_string(),
        Value::Array(vec![
            Value::Number(Number::Int(15)),
            Value::Number(Number::Int(30)),
            Value::string("Hello, world!"),
        ]),
    );
    kv.insert("object".to_string(), Value::Object(obj));
    s.set("key_value", Value::Object(kv));
    s
}

/// Parses and evaluates `src` as a body, then decodes it; errors as `line:col: message`
/// (or just the message when unpositioned).
fn decode<T: DeserializeOwned>(src: &str) -> Result<T, Vec<String>> {
    let (file, diags) = parse_file(src);
    assert!(diags.is_empty(), "{diags:?}");
    let body = eval_body(&file.body, &scope()).map_err(|d| vec![format!("eval: {d:?}")])?;
    let source = Source::new("", src);
    from_body_at(&body, Span::new(0, 0)).map_err(|ds| {
        ds.iter()
            .map(|d| match d.span {
                Some(s) => {
                    let (l, c) = source.line_col(s.start as usize);
                    format!("{l}:{c}: {}", d.message)
                }
                None => d.message.clone(),
            })
            .collect()
    })
}

fn err<T: DeserializeOwned + fmt::Debug>(src: &str) -> Vec<String> {
    match decode::<T>(src) {
        Ok(v) => panic!("{src}: expected errors, got {v:?}"),
        Err(e) => e,
    }
}

// A component-like schema.

trait ProfileKind {
    const PATH: &'static str;
    const ENABLED: bool;
}
#[derive(Debug, PartialEq)]
struct Memory;
impl ProfileKind for Memory {
    const PATH: &'static str = "/debug/pprof/allocs";
    const ENABLED: bool = true;
}
#[derive(Debug, PartialEq)]
struct Mutex;
impl ProfileKind for Mutex {
    const PATH: &'static str = "/debug/pprof/mutex";
    const ENABLED: bool = false;
}

/// Blocks of the same shape with different defaults: one type per block, via a marker.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(default, bound = "")]
struct Profile<K: ProfileKind> {
    enabled: bool,
    path: String,
    delta: bool,
    #[serde(skip)]
    _k: PhantomData<K>,
}
impl<K: ProfileKind> Default for Profile<K> {
    fn default() -> Self {
        Profile {
            enabled: K::ENABLED,
            path: K::PATH.to_string(),
            delta: false,
            _k: PhantomData,
        }
    }
}

#[derive(Debug, PartialEq, Deserialize, Default)]
#[serde(default)]
struct Custom {
    #[serde(rename = "$label")]
    label: String,
    path: String,
    enabled: bool,
}

#[derive(Debug, PartialEq, Deserialize, Default)]
#[serde(default)]
struct ProfilingConfig {
    #[serde(rename = "profile.memory")]
    memory: Profile<Memory>,
    #[serde(rename = "profile.mutex")]
    mutex: Profile<Mutex>,
    #[serde(rename = "profile.custom")]
    custom: Vec<Custom>,
    path_prefix: String,
}

#[derive(Debug, PartialEq, Deserialize)]
struct BasicAuth {
    username: String,
    password: Option<SecretString>,
}

#[derive(Debug, Deserialize)]
#[serde(default)]
struct Args {
    targets: Vec<BTreeMap<String, String>>,
    forward_to: Vec<CapsuleRef<Receiver>>,
    job_name: Option<String>,
    scrape_interval: Duration,
    scrape_timeout: Duration,
    port: u16,
    ratio: f64,
    enabled: bool,
    profiling_config: ProfilingConfig,
    basic_auth: Option<BasicAuth>,
    bearer_token: SecretString,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            targets: Vec::new(),
            forward_to: Vec::new(),
            job_name: None,
            scrape_interval: Duration::from_secs(15),
            scrape_timeout: Duration::from_secs(10),
            port: 80,
            ratio: 1.0,
            enabled: true,
            profiling_config: ProfilingConfig::default(),
            basic_auth: None,
            bearer_token: SecretString::default(),
        }
    }
}

#[test]
fn decodes_a_component() {
    let src = r#"
targets    = [{"__address__" = "localhost:4100", "port" = 4100}]
forward_to = [pyroscope.write.a.receiver]
job_name   = null
scrape_interval = "1m30s"
port = "8080"
ratio = "0.5"
bearer_token = secret
basic_auth {
  username = "u"
  password = "p"
}
profiling_config {
  profile.mutex {
    enabled = true
  }
  profile.custom "one" {
    path = "/one"
  }
  profile.custom "two" {
    path    = "/two"
    enabled = true
  }
}
"#;
    let a: Args = decode(src).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(a.targets.len(), 1);
    // number -> string conversion inside a map.
    assert_eq!(a.targets[0].get("port").map(String::as_str), Some("4100"));
    assert_eq!(a.forward_to.len(), 1);
    assert_eq!(*a.forward_to[0], Receiver("a"));
    assert_eq!(a.job_name, None);
    assert_eq!(a.scrape_interval, Duration::from_secs(90));
    // Omitted: default kept.
    assert_eq!(a.scrape_timeout, Duration::from_secs(10));
    // Numeric strings convert to numbers.
    assert_eq!(a.port, 8080);
    assert_eq!(a.ratio, 0.5);
    assert!(a.enabled);
    assert_eq!(a.bearer_token.expose(), "hunter2");
    let auth = a
        .basic_auth
        .as_ref()
        .map(|b| (b.username.as_str(), b.password.as_ref().map(|p| p.expose())));
    assert_eq!(auth, Some(("u", Some("p"))));
    let pc = &a.profiling_config;
    // Defaults per block: the omitted block keeps its defaults, the written one keeps
    // the defaults of the fields it does not set.
    assert_eq!(pc.memory, Profile::<Memory>::default());
    assert!(pc.mutex.enabled);
    assert_eq!(pc.mutex.path, "/debug/pprof/mutex");
    assert_eq!(
        pc.custom,
        vec![
            Custom {
                label: "one".into(),
                path: "/one".into(),
                enabled: false
            },
            Custom {
                label: "two".into(),
                path: "/two".into(),
                enabled: true
            },
        ]
    );
}

#[test]
fn labelled_blocks_as_map() {
    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        path: String,
    }
    #[derive(Debug, Deserialize)]
    struct Outer {
        #[serde(rename = "profile.custom", default)]
        custom: BTreeMap<String, Inner>,
    }
    let o: Outer =
        decode("profile.custom \"b\" { path = \"/b\" }\nprofile.custom \"a\" { path = \"/a\" }\n")
            .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(o.custom.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(o.custom["b"].path, "/b");
    let o: Outer = decode("").unwrap_or_else(|e| panic!("{e:?}"));
    assert!(o.custom.is_empty());
    assert_eq!(
        err::<Outer>(
            "profile.custom \"a\" { path = \"/a\" }\nprofile.custom \"a\" { path = \"/b\" }\n"
        ),
        ["2:1: block \"profile.custom\" with label \"a\" may only be specified once"]
    );
    assert_eq!(
        err::<Outer>("profile.custom \"a\" { path = \"/a\" }\nprofile.custom { path = \"/b\" }\n"),
        ["2:1: block \"profile.custom\" requires non-empty label"]
    );
}

#[test]
fn strictness_errors() {
    let cases: &[(&str, &[&str])] = &[
        (
            "bogus = 1\n",
            &["1:1: unrecognized attribute name \"bogus\""],
        ),
        ("bogus { }\n", &["1:1: unrecognized block name \"bogus\""]),
        (
            "profiling_config {\n  profile.nope { }\n  path_prefix = \"/x\"\n  wat = 1\n}\n",
            &[
                "2:3: unrecognized block name \"profile.nope\"",
                "4:3: unrecognized attribute name \"wat\"",
            ],
        ),
        (
            "basic_auth {\n  password = \"x\"\n}\n",
            &["1:1: missing required attribute \"username\""],
        ),
        (
            "basic_auth = 5\n",
            &["1:1: \"basic_auth\" must be a block, but is used as an attribute"],
        ),
        (
            "port { }\n",
            &["1:1: \"port\" must be an attribute, but is used as a block"],
        ),
        (
            "targets { }\n",
            &["1:1: \"targets\" must be an attribute, but is used as a block"],
        ),
        (
            "basic_auth { username = \"a\" }\nbasic_auth { username = \"b\" }\n",
            &["2:1: block \"basic_auth\" may only be specified once"],
        ),
        (
            "basic_auth \"x\" { username = \"a\" }\n",
            &["1:1: block \"basic_auth\" does not support specifying labels"],
        ),
        (
            "profiling_config {\n  profile.custom { path = \"/x\" }\n}\n",
            &["2:3: block \"profile.custom\" requires non-empty label"],
        ),
        (
            "profiling_config {\n  profile.custom \"\" { path = \"/x\" }\n}\n",
            &["2:3: block \"profile.custom\" requires non-empty label"],
        ),
        (
            "port = 1\nport = 2\n",
            &["2:1: attribute \"port\" may only be provided once"],
        ),
    ];
    for (src, want) in cases {
        assert_eq!(err::<Args>(src), *want, "{src}");
    }
}

#[test]
fn type_errors() {
    let cases: &[(&str, &[&str])] = &[
        ("port = true\n", &["1:8: true should be number, got bool"]),
        (
            "port = \"80x\"\n",
            &["1:8: \"80x\" should be number, got string"],
        ),
        (
            "port = 70000\n",
            &["1:8: 70000 invalid value: integer `70000`, expected u16"],
        ),
        (
            "enabled = \"yes\"\n",
            &["1:11: \"yes\" should be bool, got string"],
        ),
        (
            "job_name = [0, 1, 2]\n",
            &["1:12: [0, 1, 2] should be string, got array"],
        ),
        (
            "scrape_interval = \"1d\"\n",
            &["1:19: \"1d\" time: unknown unit \"d\" in duration \"1d\""],
        ),
        (
            "scrape_interval = 5\n",
            &["1:19: 5 time: missing unit in duration \"5\""],
        ),
        (
            "targets = [{a = \"x\"}, 5]\n",
            &["1:23: 5 should be object, got number"],
        ),
        (
            "targets = [{a = \"x\", b = [1]}]\n",
            &["1:26: [1] should be string, got array"],
        ),
        (
            "job_name = secret\n",
            &["1:12: secret secrets may not be converted into strings"],
        ),
        (
            "forward_to = [1]\n",
            &["1:15: 1 expected capsule(Receiver), got number"],
        ),
        (
            "forward_to = [other.capsule]\n",
            &["1:15: other.capsule expected capsule(Receiver), got capsule(other.Thing)"],
        ),
        (
            "forward_to = pyroscope.write.a.receiver\n",
            &["1:14: pyroscope.write.a.receiver should be array, got capsule"],
        ),
        (
            "bearer_token = [1]\n",
            &["1:16: [1] should be secret, got array"],
        ),
        // Every bad attribute is reported, in source order, nested ones included.
        (
            "port = true\nenabled = 1\nprofiling_config {\n  profile.mutex { enabled = \"no\" }\n  path_prefix = [1]\n}\nratio = \"x\"\nbogus = 1\n",
            &[
                "1:8: true should be number, got bool",
                "2:11: 1 should be bool, got number",
                "4:29: \"no\" should be bool, got string",
                "5:17: [1] should be string, got array",
                "7:9: \"x\" should be number, got string",
                "8:1: unrecognized attribute name \"bogus\"",
            ],
        ),
        // An error inside a required block also reports the rest.
        (
            "basic_auth { username = [1] }\nport = false\n",
            &[
                "1:25: [1] should be string, got array",
                "2:8: false should be number, got bool",
            ],
        ),
    ];
    for (src, want) in cases {
        assert_eq!(err::<Args>(src), *want, "{src}");
    }
}

#[test]
fn nulls() {
    // null means "use the default".
    let a: Args = decode("port = null\nscrape_interval = null\nforward_to = null\n")
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(a.port, 80);
    assert_eq!(a.scrape_interval, Duration::from_secs(15));
    assert!(a.forward_to.is_empty());

    // A required attribute assigned null gets its zero value (Alloy's behaviour).
    #[derive(Debug, Deserialize)]
    struct Req {
        targets: Vec<String>,
        name: String,
        n: u32,
    }
    let r: Req =
        decode("targets = null\nname = null\nn = null\n").unwrap_or_else(|e| panic!("{e:?}"));
    assert!(r.targets.is_empty());
    assert_eq!(r.name, "");
    assert_eq!(r.n, 0);
    assert_eq!(
        err::<Req>("name = null\n"),
        ["1:1: missing required attribute \"targets\""]
    );
    // null inside lists decodes to the zero value.
    let r: Req = decode("targets = [\"a\", null]\nname = \"x\"\nn = 1\n")
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(r.targets, ["a", ""]);
}

#[test]
fn secrets_and_strings() {
    #[derive(Debug, Deserialize)]
    struct S {
        a: SecretString,
        b: SecretString,
        c: String,
        d: Option<SecretString>,
    }
    let s: S =
        decode("a = secret\nb = \"plain\"\nc = convert.nonsensitive(secret)\nd = \"x\" + secret\n")
            .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(s.a.expose(), "hunter2");
    assert_eq!(s.b.expose(), "plain");
    assert_eq!(s.c, "hunter2");
    assert_eq!(s.d.as_ref().map(|d| d.expose()), Some("xhunter2"));
    assert_eq!(format!("{:?}", s.a), "(secret)");
    // A secret never reaches a plain string or an untyped target, and errors do not
    // show it.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct P {
        #[serde(default)]
        c: String,
        #[serde(default)]
        any: Option<serde_json::Value>,
    }
    for src in [
        "c = secret\n",
        "c = \"a\" + secret\n",
        "any = secret\n",
        "any = [secret]\n",
    ] {
        let e = err::<P>(src);
        assert!(
            e[0].contains("secrets may not be converted into strings"),
            "{e:?}"
        );
        assert!(!e[0].contains("hunter2"));
    }
}

#[test]
fn syntax_test_schemas() {
    // Schemas of grafana/alloy's syntax/vm tests (the `decode` cases of the corpus).
    #[derive(Debug, Deserialize)]
    struct NumberOnly {
        #[allow(dead_code)]
        number: f64,
    }
    #[derive(Debug, Deserialize)]
    struct NumberString {
        #[allow(dead_code)]
        number: f64,
        #[allow(dead_code)]
        string: String,
    }
    #[derive(Debug, Deserialize)]
    struct ChildAttr {
        #[allow(dead_code)]
        attr: bool,
    }
    #[derive(Debug, Deserialize)]
    struct WithChild {
        #[allow(dead_code)]
        child: ChildAttr,
    }
    #[derive(Debug, Deserialize)]
    struct WithChildBlock {
        #[allow(dead_code)]
        value: f64,
        #[serde(rename = "child.block")]
        #[allow(dead_code)]
        child: ChildAttr,
    }
    #[derive(Debug, Deserialize)]
    struct ValueOnly {
        #[allow(dead_code)]
        value: f64,
    }
    #[derive(Debug, Deserialize)]
    struct Labelled {
        #[serde(rename = "$label")]
        #[allow(dead_code)]
        label: String,
    }
    #[derive(Debug, Deserialize)]
    struct Empty {}
    #[derive(Debug, Deserialize)]
    struct Key {
        #[allow(dead_code)]
        key: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
    }
    #[derive(Debug, Deserialize)]
    struct KeyString {
        #[allow(dead_code)]
        key: String,
    }
    #[derive(Debug, Deserialize)]
    struct Settings {
        #[serde(rename = "some.settings")]
        #[allow(dead_code)]
        settings: BTreeMap<String, crate::syntax::types::RawValue>,
    }

    fn first_block<T: DeserializeOwned + fmt::Debug>(src: &str) -> Vec<String> {
        #[derive(Debug, Deserialize)]
        struct Wrap<T> {
            #[allow(dead_code)]
            some_block: T,
        }
        err::<Wrap<T>>(src)
    }

    assert_eq!(
        first_block::<NumberOnly>(
            "some_block {\n\t\t\tnumber  = 15 \n\t\t\tinvalid = \"This attribute does not exist!\"\n\t\t}"
        ),
        ["3:4: unrecognized attribute name \"invalid\""]
    );
    assert_eq!(
        first_block::<WithChild>("some_block {\n\t\t\tchild = 15\n\t\t}"),
        ["2:4: \"child\" must be a block, but is used as an attribute"]
    );
    assert_eq!(
        first_block::<WithChildBlock>("some_block {\n\t\t\tvalue = 15\n\t\t}"),
        ["1:1: missing required block \"child.block\""]
    );
    assert_eq!(
        first_block::<ValueOnly>(
            "some_block {\n\t\t\tvalue = 15\n\n\t\t\tchild.block { attr = true }\n\t\t}"
        ),
        ["4:4: unrecognized block name \"child.block\""]
    );
    assert_eq!(
        first_block::<Empty>("some_block \"label_value_2\" {}"),
        ["1:1: block \"some_block\" does not support specifying labels"]
    );
    assert_eq!(
        first_block::<Labelled>("some_block {}"),
        ["1:1: block \"some_block\" requires non-empty label"]
    );
    assert_eq!(
        first_block::<Labelled>("some_block \"\" {}"),
        ["1:1: block \"some_block\" requires non-empty label"]
    );
    assert_eq!(
        first_block::<NumberOnly>("some_block {\n\t\t\tnumber {} \n\t\t}"),
        ["2:4: \"number\" must be an attribute, but is used as a block"]
    );
    assert_eq!(
        first_block::<NumberString>("some_block {\n\t\t\tnumber = 15 \n\t\t}"),
        ["1:1: missing required attribute \"string\""]
    );
    assert_eq!(
        err::<Settings>(
            "\n\t\t\t\tsome.settings \"foo\" {\n\t\t\t\t\tfield_a = 12345\n\t\t\t\t}\n\t\t\t"
        ),
        ["2:5: block \"some.settings\" requires empty label"]
    );
    assert_eq!(
        err::<Settings>(
            "\n\t\t\t\tsome.settings {\n\t\t\t\t\tinner_map {\n\t\t\t\t\t\tfield_a = 12345\n\t\t\t\t\t}\n\t\t\t\t}\n\t\t\t"
        ),
        ["3:6: nested blocks not supported here"]
    );
    assert_eq!(
        err::<Key>("key = true"),
        ["1:7: true should be object, got bool"]
    );
    assert_eq!(
        err::<Key>(
            "\n\t\t\t\tkey = {\n\t\t\t\t\tobject = {\n\t\t\t\t\t\tfield1 = [15, 30, \"Hello, world!\"],\n\t\t\t\t\t},\n\t\t\t\t}\n\t\t\t"
        ),
        ["4:25: \"Hello, world!\" should be number, got string"]
    );
    assert_eq!(
        err::<Key>("key = key_value"),
        ["1:7: key_value.object.field1[2] should be number, got string"]
    );
    assert_eq!(
        err::<KeyString>("key = [0, 1, 2]"),
        ["1:7: [0, 1, 2] should be string, got array"]
    );
    // And the map form accepts plain attributes.
    let s: Settings =
        decode("some.settings {\n  a = 1\n  b = \"x\"\n}\n").unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(s.settings.len(), 2);
}

#[test]
fn objects_into_structs_and_enums() {
    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Role {
        Pod,
        Node,
    }
    #[derive(Debug, Deserialize, PartialEq)]
    struct Sel {
        role: Role,
        label: Option<String>,
    }
    #[derive(Debug, Deserialize)]
    struct S {
        role: Role,
        sel: Vec<Sel>,
        obj: Sel,
    }
    let s: S = decode("role = \"pod\"\nsel = [{role = \"node\"}, {role = \"pod\", label = \"x\"}]\nobj = {role = \"node\"}\n")
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(s.role, Role::Pod);
    assert_eq!(
        s.sel[1],
        Sel {
            role: Role::Pod,
            label: Some("x".into())
        }
    );
    assert_eq!(s.obj.role, Role::Node);
    let e = err::<S>("role = \"pods\"\nsel = []\nobj = {role = \"pod\", x = 1}\n");
    assert_eq!(
        e[0],
        "1:8: \"pods\" unknown variant `pods`, expected `pod` or `node`"
    );
    assert_eq!(
        e[1],
        "3:7: {role = \"pod\", x = 1} has an unrecognized field \"x\""
            .replace("{role", "{ role")
            .replace("1}", "1 }")
    );
    assert_eq!(
        err::<S>("role = \"pod\"\nsel = [{}]\nobj = {role = \"pod\"}\n"),
        ["2:8: {} missing required field \"role\""]
    );
}

#[test]
fn validation_errors_point_at_the_block() {
    #[derive(Debug, Deserialize)]
    #[serde(try_from = "Raw")]
    struct Checked {
        #[allow(dead_code)]
        interval: Duration,
    }
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Raw {
        interval: Duration,
    }
    impl TryFrom<Raw> for Checked {
        type Error = String;
        fn try_from(r: Raw) -> Result<Self, String> {
            if r.interval < Duration::from_secs(2) {
                return Err("scrape_interval must be at least 2 seconds".into());
            }
            Ok(Checked {
                interval: r.interval,
            })
        }
    }
    #[derive(Debug, Deserialize)]
    struct Outer {
        #[allow(dead_code)]
        inner: Checked,
    }
    assert_eq!(
        err::<Checked>("interval = \"1s\"\n"),
        ["1:1: scrape_interval must be at least 2 seconds"]
    );
    assert_eq!(
        err::<Outer>("\ninner {\n  interval = \"1s\"\n}\n"),
        ["2:1: scrape_interval must be at least 2 seconds"]
    );
    // Once a bad statement of the block is set aside, a validation failure of the block is
    // the default's doing and is not reported; unknown names found meanwhile are kept.
    assert_eq!(
        err::<Outer>("inner {\n  interval = 1\n  x = 1\n}\n"),
        [
            "2:14: 1 time: missing unit in duration \"1\"",
            "3:3: unrecognized attribute name \"x\""
        ]
    );
}

#[test]
fn values_directly() {
    let v = Value::Array(vec![Value::string("1"), Value::Number(Number::Int(2))]);
    assert_eq!(from_value::<Vec<u32>>(&v), Ok(vec![1, 2]));
    assert_eq!(
        from_value::<Vec<String>>(&v),
        Ok(vec!["1".to_string(), "2".to_string()])
    );
    assert_eq!(
        from_value::<Vec<bool>>(&v),
        Err("[0] should be bool, got string".to_string())
    );
    let c = Value::Capsule(Capsule::new(
        "pyroscope.Appendable",
        Arc::new(Receiver("z")),
    ));
    let r = from_value::<CapsuleRef<Receiver>>(&c).map(|r| r.0.0);
    assert_eq!(r, Ok("z"));
    // Capsules left behind by a failed decode do not accumulate in the side table.
    let bad = Value::Array(vec![c.clone(), Value::Null]);
    assert!(from_value::<(CapsuleRef<Receiver>, CapsuleRef<Receiver>)>(&bad).is_err());
    assert_eq!(crate::syntax::types::capsule_mark(), 0);
}
