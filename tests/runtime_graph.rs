//! Loading a file into a graph: evaluation order and every kind of load error.

mod runtime_support;

use runtime_support::{controller, pass, registry};
use scraper::runtime::{LoadError, check};

#[tokio::test]
async fn builds_in_dependency_order_whatever_the_file_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    let src = r#"
test.pass "c" {
  input = test.pass.b.output
}

test.pass "b" {
  input = test.pass.a.output
}

test.pass "a" {
  input = "hello"
}
"#;
    c.apply_source("order.alloy", src).await.expect("apply");
    let (a, b, cc) = (
        pass(&c, "test.pass.a").await,
        pass(&c, "test.pass.b").await,
        pass(&c, "test.pass.c").await,
    );
    assert!(a.built_seq < b.built_seq && b.built_seq < cc.built_seq);
    // Built after its dependency had published, so it never saw the initial (empty) exports.
    assert_eq!(*cc.history.lock().expect("lock"), ["hello"]);
    let ids: Vec<String> = c
        .components()
        .await
        .into_iter()
        .map(|i| i.local_id)
        .collect();
    assert_eq!(ids, ["test.pass.a", "test.pass.b", "test.pass.c"]);

    let b_info = c.component("test.pass.b").await.expect("b");
    assert_eq!(b_info.references_to, ["test.pass.a"]);
    assert_eq!(b_info.referenced_by, ["test.pass.c"]);
    assert!(c.is_ready());
}

/// Every load error, as `check` reports it: (name, file, expected messages in order).
#[test]
fn load_errors() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "self reference",
            "test.pass \"a\" {\n  input = test.pass.a.output\n}\n",
            &["self reference: test.pass.a"],
        ),
        (
            "cycle",
            concat!(
                "test.pass \"a\" {\n  input = test.pass.c.output\n}\n",
                "test.pass \"b\" {\n  input = test.pass.a.output\n}\n",
                "test.pass \"c\" {\n  input = test.pass.b.output\n}\n",
            ),
            &["cycle: test.pass.a -> test.pass.c -> test.pass.b -> test.pass.a"],
        ),
        (
            "unknown component names the supported ones",
            "pyroscope.nope \"x\" {\n}\n",
            &[
                "cannot find the definition of component name \"pyroscope.nope\" (supported components: test.pass, test.secret)",
            ],
        ),
        (
            "missing label",
            "test.pass {\n  input = \"x\"\n}\n",
            &["component \"test.pass\" must have a label"],
        ),
        (
            "duplicate id",
            "test.pass \"a\" {\n  input = \"x\"\n}\ntest.pass \"a\" {\n  input = \"y\"\n}\n",
            &["block test.pass.a already declared at dup.alloy:1:1"],
        ),
        (
            "reference to nothing",
            "test.pass \"a\" {\n  input = test.pass.zzz.output\n}\n",
            &["component \"test.pass.zzz.output\" does not exist or is out of scope"],
        ),
        (
            "unsupported module blocks",
            "declare \"x\" {\n}\nimport.file \"y\" {\n}\nforeach \"z\" {\n}\n",
            &[
                "custom components (declare blocks) are not supported by scraper",
                "modules (import blocks) are not supported by scraper",
                "foreach blocks are not supported by scraper",
            ],
        ),
        (
            "top-level attribute",
            "x = 1\n",
            &["unrecognized attribute x"],
        ),
        (
            "logging: duplicate, label, bad values, component reference",
            concat!(
                "logging {\n  level = \"verbose\"\n  format = \"xml\"\n}\n",
                "logging {\n}\n",
                "test.pass \"a\" {\n  input = \"x\"\n}\n",
            ),
            &[
                "unrecognized log level \"verbose\" (expected debug, info, warn or error)",
                "unrecognized log format \"xml\" (expected logfmt or json)",
                "block logging already declared at dup.alloy:1:1",
            ],
        ),
        (
            "logging cannot reference components",
            "logging {\n  level = test.pass.a.output\n}\ntest.pass \"a\" {\n  input = \"x\"\n}\n",
            &["the logging block cannot reference components"],
        ),
        (
            "references to a broken block are not reported twice",
            "nope.thing \"x\" {\n}\ntest.pass \"a\" {\n  input = nope.thing.x.output\n}\n",
            &[
                "cannot find the definition of component name \"nope.thing\" (supported components: test.pass, test.secret)",
            ],
        ),
        (
            "evaluation errors",
            "test.pass \"a\" {\n  input = test.pass.b.missing_field\n}\ntest.pass \"b\" {\n  input = \"x\"\n}\n",
            &["field \"missing_field\" does not exist"],
        ),
    ];
    let registry = registry();
    for (name, src, want) in cases {
        let diags = check(&registry, "dup.alloy", src);
        let got: Vec<&str> = diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(got.len(), want.len(), "{name}: {got:#?}");
        for (g, w) in got.iter().zip(want.iter()) {
            assert!(g.contains(w), "{name}: got {g:?}, want {w:?}");
        }
    }
}

#[tokio::test]
async fn a_cyclic_file_is_not_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    let src = "test.pass \"a\" {\n  input = test.pass.b.output\n}\ntest.pass \"b\" {\n  input = test.pass.a.output\n}\n";
    let err = c.apply_source("cycle.alloy", src).await.expect_err("cycle");
    let LoadError::Invalid(d) = &err else {
        panic!("unexpected error {err:?}");
    };
    assert_eq!(d.items.len(), 1, "{err}");
    assert_eq!(
        err.to_string(),
        "cycle.alloy:1:1: cycle: test.pass.a -> test.pass.b -> test.pass.a"
    );
    assert!(c.components().await.is_empty());
    assert!(!c.is_ready());
}
