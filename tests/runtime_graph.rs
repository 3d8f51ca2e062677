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
            "foreach is unsupported; an import needs its arguments",
            "declare \"x\" {\n}\nimport.file \"y\" {\n}\nforeach \"z\" {\n}\n",
            &[
                "missing required attribute \"filename\"",
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
            "a bad reference does not hide the block's other errors",
            "test.pass \"a\" {\n  input = test.pass.zzz.output\n  bogus = 1\n}\n",
            &[
                "component \"test.pass.zzz.output\" does not exist or is out of scope",
                "unrecognized attribute name \"bogus\"",
            ],
        ),
        (
            "an unevaluable attribute is not also reported missing",
            "test.pass \"a\" {\n  input = test.pass.b.nothing\n}\ntest.pass \"b\" {\n  input = \"x\"\n  inptu = 2\n}\n",
            &[
                "field \"nothing\" does not exist",
                "unrecognized attribute name \"inptu\"",
            ],
        ),
        (
            "the component's own validation",
            "test.pass \"a\" {\n  input = \"invalid\"\n}\n",
            &["input \"invalid\" is refused"],
        ),
        (
            "ignored config blocks only warn",
            "livedebugging {\n  enabled = true\n}\ntracing {\n}\n",
            &[],
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

/// Hints and positions of the names that are likely typos: (file, expected short forms).
#[test]
fn misspelt_names_get_a_suggestion() {
    let cases: &[(&str, &[&str])] = &[
        (
            "test.pas \"a\" {\n  input = \"x\"\n}\n",
            &[
                "t.alloy:1:1: cannot find the definition of component name \"test.pas\" (supported components: test.pass, test.secret) (did you mean \"test.pass\"?)",
            ],
        ),
        (
            "logign {\n}\n",
            &[
                "t.alloy:1:1: cannot find the definition of component name \"logign\" (supported components: test.pass, test.secret) (did you mean \"logging\"?)",
            ],
        ),
        (
            "test.pass \"a\" {\n  inptu = \"x\"\n}\n",
            &[
                "t.alloy:1:1: missing required attribute \"input\"",
                "t.alloy:2:3: unrecognized attribute name \"inptu\" (did you mean \"input\"?)",
            ],
        ),
        (
            "test.pass \"a\" {\n  input = \"x\"\n}\ntest.pass \"b\" {\n  input = test.pas.a.output\n}\n",
            &[
                "t.alloy:5:11: component \"test.pas.a.output\" does not exist or is out of scope (did you mean \"test.pass.a\"?)",
            ],
        ),
        (
            "test.pass \"a\" {\n  input = \"x\"\n}\ntest.pass \"b\" {\n  input = test.pass.a.ouptut\n}\n",
            &["t.alloy:5:23: field \"ouptut\" does not exist (did you mean \"output\"?)"],
        ),
        (
            "test.pass \"a\" {\n  input = sys.evn(\"X\")\n}\n",
            &["t.alloy:2:15: field \"evn\" does not exist (did you mean \"env\"?)"],
        ),
    ];
    let registry = registry();
    for (src, want) in cases {
        let source = scraper::syntax::diag::Source::new("t.alloy", *src);
        let got: Vec<String> = check(&registry, "t.alloy", src)
            .iter()
            .filter(|d| d.is_error())
            .map(|d| source.short(d))
            .collect();
        assert_eq!(got, *want, "{src}");
    }
}

/// `run` goes through the same analysis as `check`: a component's validation error stops the
/// load with its position; ignored config blocks do not; a failed build points at its block.
#[tokio::test]
async fn run_reports_errors_with_positions_like_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());

    let err = c
        .apply_source("v.alloy", "test.pass \"a\" {\n  input = \"invalid\"\n}\n")
        .await
        .expect_err("refused by validation");
    assert!(matches!(err, LoadError::Invalid(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "v.alloy:2:11: input \"invalid\" is refused"
    );
    assert!(err.render().contains("^^^^^^^^^"), "{}", err.render());

    let err = c
        .apply_source(
            "b.alloy",
            "test.pass \"a\" {\n  input = \"fail-build\"\n}\n",
        )
        .await
        .expect_err("fails to build");
    assert_eq!(
        err.to_string(),
        "config applied, but some components failed:\ntest.pass.a: b.alloy:1:1: building component: refused to build"
    );
    let rendered = err.render();
    assert!(
        rendered.contains("b.alloy:1:1: building component: refused to build")
            && rendered.contains("test.pass \"a\" {"),
        "{rendered}"
    );

    let with_ignored =
        "livedebugging {\n  enabled = true\n}\ntest.pass \"a\" {\n  input = \"x\"\n}\n";
    c.apply_source("l.alloy", with_ignored)
        .await
        .expect("livedebugging only warns");
    assert_eq!(pass(&c, "test.pass.a").await.last_input(), "x");
}

/// A directory is one config: its `*.alloy` files in name order, references across files,
/// errors naming the file they are in; for `run` (load_file) and `check` alike.
#[tokio::test]
async fn a_directory_is_one_config() {
    let storage = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let write =
        |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write(
        "b.alloy",
        "test.pass \"b\" {\n  input = test.pass.a.output\n}\n",
    );
    write("a.alloy", "test.pass \"a\" {\n  input = \"from a\"\n}\n");
    write("notes.txt", "not a config {");
    let c = controller(storage.path());
    c.load_file(dir.path()).await.expect("load the directory");
    c.wait_idle().await;
    assert_eq!(pass(&c, "test.pass.b").await.last_input(), "from a");

    let registry = registry();
    let d = dir.path().display();
    let cases: &[(&str, &str, &str)] = &[
        (
            "c.alloy",
            "\ntest.pass \"a\" {\n  input = \"again\"\n}\n",
            "{d}/c.alloy:2:1: block test.pass.a already declared at {d}/a.alloy:1:1",
        ),
        (
            "c.alloy",
            "test.pass \"c\" {\n  input = \"invalid\"\n}\n",
            "{d}/c.alloy:2:11: input \"invalid\" is refused",
        ),
        // An error at the end of one file is reported in that file, not the next.
        (
            "a2.alloy",
            "test.pass \"x\" {\n  input = \"x\"\n",
            "{d}/a2.alloy:3:1: expected }, got EOF",
        ),
    ];
    for (name, text, want) in cases {
        write(name, text);
        let source = scraper::runtime::source::read_config(dir.path()).expect("read");
        let got: Vec<String> = scraper::runtime::check_source(&registry, &source)
            .iter()
            .filter(|x| x.is_error())
            .map(|x| source.short(x))
            .collect();
        assert_eq!(got, [want.replace("{d}", &d.to_string())], "{name}");
        let err = c.load_file(dir.path()).await.expect_err("refused");
        assert_eq!(err.to_string(), want.replace("{d}", &d.to_string()));
        std::fs::remove_file(dir.path().join(name)).expect("remove");
    }

    let empty = tempfile::tempdir().expect("tempdir");
    let err = c
        .load_file(empty.path())
        .await
        .expect_err("empty directory");
    assert!(
        err.to_string().contains("no .alloy files in directory"),
        "{err}"
    );
}
