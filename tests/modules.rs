//! Alloy modules: `declare` with `argument` and `export`, `import.file`, `import.string` and
//! `import.http`, nested and shadowed definitions, re-evaluation when arguments change, reload
//! when an imported file changes, and the errors, with positions inside imported files.
//!
//! The cases are Alloy's own (`internal/runtime/declare_test.go`, `import_test.go`,
//! `testdata/import_*`), ported to `test.pass` (a passthrough of strings) in place of Alloy's
//! counting test components: a value travels through the module and out of it.

mod runtime_support;

use std::path::Path;
use std::time::{Duration, Instant};

use runtime_support::module_server::{Answer, ModuleServer};
use runtime_support::{controller, pass, registry};
use scraper::runtime::{Controller, check_config};
use scraper::syntax::diag::Source;

/// Applies `src` and returns the input `test.pass.sum` ended up with.
async fn run_to_sum(src: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("main.alloy", src).await.expect("apply");
    c.wait_idle().await;
    pass(&c, "test.pass.sum").await.last_input()
}

/// Alloy's `TestDeclare` cases: what reaches `sum`.
#[tokio::test]
async fn declare_cases() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "basic declare",
            r#"
declare "test" {
  argument "input" { optional = false }
  test.pass "pt" { input = argument.input.value }
  export "output" { value = test.pass.pt.output }
}
test.pass "src" { input = "10" }
test "myModule" { input = test.pass.src.output }
test.pass "sum" { input = test.myModule.output }
"#,
            "10",
        ),
        (
            "nested declares",
            r#"
declare "test" {
  argument "input" { optional = false }
  declare "nested" {
    argument "input" { optional = false }
    export "output" { value = argument.input.value + "-nested" }
  }
  test.pass "pt" { input = argument.input.value }
  nested "default" { input = test.pass.pt.output }
  export "output" { value = nested.default.output }
}
test.pass "src" { input = "10" }
test "myModule" { input = test.pass.src.output }
test.pass "sum" { input = test.myModule.output }
"#,
            "10-nested",
        ),
        (
            "declared in parent, depth 1",
            r#"
declare "test" {
  argument "input" { optional = false }
  test.pass "pt" { input = argument.input.value }
  rootDeclare "default" { input = test.pass.pt.output }
  export "output" { value = rootDeclare.default.output }
}
declare "rootDeclare" {
  argument "input" { optional = false }
  export "output" { value = "root-" + argument.input.value }
}
test.pass "src" { input = "10" }
test "myModule" { input = test.pass.src.output }
test.pass "sum" { input = test.myModule.output }
"#,
            "root-10",
        ),
        (
            "declared in parent, depth 2",
            r#"
declare "test" {
  argument "input" { optional = false }
  test.pass "pt" { input = argument.input.value }
  declare "anotherDeclare" {
    argument "input" { optional = false }
    rootDeclare "default" { input = argument.input.value }
    export "output" { value = rootDeclare.default.output }
  }
  anotherDeclare "myOtherDeclare" { input = test.pass.pt.output }
  export "output" { value = anotherDeclare.myOtherDeclare.output }
}
declare "rootDeclare" {
  argument "input" { optional = false }
  export "output" { value = "root-" + argument.input.value }
}
test.pass "src" { input = "10" }
test "myModule" { input = test.pass.src.output }
test.pass "sum" { input = test.myModule.output }
"#,
            "root-10",
        ),
        (
            "a custom component may shadow a namespace",
            r#"
declare "prometheus" {
  argument "input" { optional = false }
  export "output" { value = argument.input.value }
}
test.pass "src" { input = "10" }
prometheus "myModule" { input = test.pass.src.output }
test.pass "sum" { input = prometheus.myModule.output }
"#,
            "10",
        ),
        (
            "a nested declare shadows an outer one",
            r#"
declare "a" {
  argument "input" { optional = false }
  export "output" { value = argument.input.value }
}
declare "test" {
  declare "a" {
    export "output" { value = "-10" }
  }
  a "default" {}
  export "output" { value = a.default.output }
}
test "myModule" {}
test.pass "sum" { input = test.myModule.output }
"#,
            "-10",
        ),
        (
            "a custom component may shadow the standard library",
            r#"
declare "constants" {
  argument "input" { optional = false }
  export "output" { value = argument.input.value }
}
test.pass "src" { input = "10" }
constants "myModule" { input = test.pass.src.output }
test.pass "sum" { input = constants.myModule.output }
"#,
            "10",
        ),
        (
            "optional argument takes its default",
            r#"
declare "test" {
  argument "input" {
    optional = true
    default  = "fallback"
  }
  export "output" { value = argument.input.value }
}
test "myModule" {}
test.pass "sum" { input = test.myModule.output }
"#,
            "fallback",
        ),
    ];
    for (name, src, want) in cases {
        assert_eq!(run_to_sum(src).await, *want, "{name}");
    }
}

/// `module_path` is the directory of the file a block was read from: the config's (`.` for
/// a bare file name), or the imported file's (Alloy's `TestDeclareModulePath`).
#[tokio::test]
async fn module_path_in_blocks() {
    let local = r#"
declare "mod" {
  export "output" { value = module_path }
}
mod "myModule" {}
test.pass "sum" { input = "[" + mod.myModule.output + "]" }
"#;
    assert_eq!(
        run_to_sum(local).await,
        "[.]",
        "Go's filepath.Dir of a bare file name"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("lib");
    write(
        &sub.join("module.alloy"),
        "declare \"where\" {\n  test.pass \"p\" {\n    input = module_path\n  }\n  export \"output\" {\n    value = test.pass.p.output\n  }\n}\n",
    );
    let main = format!(
        "import.file \"m\" {{\n  filename = {:?}\n}}\nm.where \"x\" {{}}\ntest.pass \"sum\" {{\n  input = m.where.x.output\n}}\n",
        sub.join("module.alloy").display().to_string()
    );
    assert_eq!(run_to_sum(&main).await, sub.display().to_string());
}

/// A changed argument re-evaluates the blocks inside the instance that use it, and a changed
/// export the blocks outside that use it; the other instance is left alone.
#[tokio::test]
async fn argument_changes_re_evaluate_the_instance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    let src = r#"
declare "wrap" {
  argument "input" { }
  test.pass "inner" { input = "[" + argument.input.value + "]" }
  export "output" { value = test.pass.inner.output }
}
test.pass "src" { input = "a" }
wrap "one" { input = test.pass.src.output }
wrap "two" { input = "fixed" }
test.pass "sum" { input = wrap.one.output + wrap.two.output }
"#;
    c.apply_source("main.alloy", src).await.expect("apply");
    c.wait_idle().await;
    assert_eq!(pass(&c, "test.pass.sum").await.last_input(), "[a][fixed]");

    pass(&c, "test.pass.src").await.set_output("b");
    c.wait_idle().await;
    assert_eq!(
        pass(&c, "wrap.one/test.pass.inner").await.last_input(),
        "[b]"
    );
    assert_eq!(pass(&c, "test.pass.sum").await.last_input(), "[b][fixed]");
    assert_eq!(pass(&c, "wrap.two/test.pass.inner").await.updates(), 0);

    // The API lists module components under unique `instance/local` IDs with their module.
    let infos = c.components().await;
    let inner = infos
        .iter()
        .find(|i| i.local_id == "wrap.one/test.pass.inner")
        .expect("listed");
    assert_eq!(inner.module_id, "wrap.one");
    let ids: std::collections::HashSet<&str> = infos.iter().map(|i| i.local_id.as_str()).collect();
    assert_eq!(ids.len(), infos.len(), "IDs are unique");
    assert!(ids.contains("wrap.two/test.pass.inner"));
}

/// The error messages `check` gives: (case, config, expected message fragment).
#[test]
fn declare_and_import_errors() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "an export and a built-in component with one name",
            "declare \"test\" {\n  export \"x\" {\n    value = \"a\"\n  }\n}\ntest \"pass\" {}\ntest.pass \"x\" {\n  input = \"b\"\n}\n",
            "test.pass.x names both",
        ),
        (
            "cycle between declares",
            r#"
declare "a" { b "t1" {} }
declare "b" { a "t2" {} }
a "t3" {}
"#,
            "cycle: declare.a, declare.b",
        ),
        (
            "cycle within a declare",
            r#"
declare "a" {
  declare "b" { c "t1" {} }
  declare "c" { b "t2" {} }
  b "t3" {}
}
a "t4" {}
"#,
            "cycle: declare.b, declare.c",
        ),
        (
            "a declare instantiating itself",
            "declare \"a\" {\n  a \"t1\" {}\n}\na \"t2\" {}\n",
            "self reference: declare.a",
        ),
        (
            "a declare cannot see the components around it",
            r#"
test.pass "src" { input = "x" }
declare "example_a" {
  test.pass "sum" { input = test.pass.src.output }
}
example_a "test" {}
"#,
            r#"component "test.pass.src.output" does not exist or is out of scope"#,
        ),
        (
            "a declare cannot see the declares inside another",
            r#"
declare "a" { b_1 "default" {} }
declare "b" { declare "b_1" {} }
a "example" {}
"#,
            r#"cannot find the definition of component name "b_1""#,
        ),
        (
            "declare is not a valid label",
            "declare \"declare\" {}\n",
            "'declare' is not a valid label for a declare block",
        ),
        (
            "an imported declare cannot see the importer's declares",
            r#"
declare "cantAccessThis" {
  export "output" { value = -1 }
}
import.string "testImport" {
  content = ` declare "a" {
    cantAccessThis "default" {}
  }`
}
testImport.a "cc" {}
"#,
            r#"cannot find the definition of component name "cantAccessThis""#,
        ),
        (
            "the importer cannot see a nested import's declares",
            r#"
import.string "testImport" {
  content = `import.string "nestedImport" {
    content = "declare \"cantAccessThis\" {}"
  }`
}
testImport.cantAccessThis "cc" {}
"#,
            r#"cannot find the definition of component name "testImport.cantAccessThis""#,
        ),
        (
            "missing required argument",
            "declare \"m\" {\n  argument \"username\" {}\n}\nm \"x\" {}\n",
            r#"missing required argument "username" to module"#,
        ),
        (
            "argument the module does not define",
            "declare \"m\" {}\nm \"x\" {\n  nope = 1\n}\n",
            r#"Provided argument "nope" is not defined in the module"#,
        ),
        (
            "argument outside a module",
            "argument \"x\" {}\n",
            "argument blocks only allowed inside a module",
        ),
        (
            "export outside a module",
            "export \"x\" {\n  value = 1\n}\n",
            "export blocks only allowed inside a module",
        ),
        (
            "logging inside a module",
            "declare \"m\" {\n  logging {}\n}\nm \"x\" {}\n",
            "logging block not allowed inside a module",
        ),
        (
            "a module holds only declare and import blocks",
            "import.string \"m\" {\n  content = `test.pass \"x\" { input = \"y\" }`\n}\n",
            "only declare and import blocks are allowed in a module, got test.pass",
        ),
        (
            "import.git is refused with a reason",
            "import.git \"m\" {\n  repository = \"https://example.com/r.git\"\n}\n",
            "import.git is not supported by scraper",
        ),
        (
            "import.file of a missing file",
            "import.file \"m\" {\n  filename = \"/nonexistent/module.alloy\"\n}\n",
            "failed to read file: ",
        ),
        (
            "an error inside an instance is reported once, however many instances",
            "declare \"m\" {\n  test.pass \"a\" { input = [1] }\n}\nm \"x\" {}\nm \"y\" {}\n",
            "main.alloy:2:27: [1] should be string, got array",
        ),
    ];
    let registry = registry();
    for (name, src, want) in cases {
        let (source, diags) = check_config(&registry, &Source::new("main.alloy", *src));
        let errors: Vec<String> = diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| source.short(d))
            .collect();
        assert!(
            errors.iter().any(|e| e.contains(want)),
            "{name}: want {want:?} in {errors:#?}"
        );
        if name.contains("reported once") {
            assert_eq!(errors.len(), 1, "{name}: {errors:#?}");
        }
    }
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// Errors inside an imported file point into that file, with its name, line, column and a
/// caret under the fault, not at the import block.
#[test]
fn errors_inside_imported_files_point_into_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let module = dir.path().join("module.alloy");
    write(
        &module,
        "declare \"m\" {\n  argument \"in\" {}\n  test.pas \"a\" {\n    input = argument.in.value\n  }\n}\n",
    );
    let broken = dir.path().join("broken.alloy");
    write(
        &broken,
        "declare \"b\" {\n  test.pass \"a\" {\n    input = \n",
    );
    let main = format!(
        "import.file \"mod\" {{\n  filename = {:?}\n}}\nimport.file \"bad\" {{\n  filename = {:?}\n}}\nmod.m \"x\" {{\n  in = \"v\"\n}}\nbad.b \"y\" {{}}\n",
        module.display().to_string(),
        broken.display().to_string(),
    );
    let registry = registry();
    let (source, diags) = check_config(&registry, &Source::new("main.alloy", main));
    let rendered = source.render_all(&diags);
    let module_name = module.display().to_string();
    assert!(
        rendered.contains(&format!(
            "{module_name}:3:3: cannot find the definition of component name \"test.pas\""
        )),
        "{rendered}"
    );
    // The caret line shows the imported file's text.
    assert!(rendered.contains("  test.pas \"a\" {"), "{rendered}");
    let broken_name = broken.display().to_string();
    assert!(
        rendered
            .lines()
            .any(|l| l.contains(&format!("{broken_name}:")) && l.contains("error")),
        "{rendered}"
    );
    // The blocks using the broken module's definitions are not reported on top of it.
    assert!(!rendered.contains("\"bad.b\""), "{rendered}");
}

/// Waits (bounded, a hang guard only) until `f` holds.
async fn eventually(what: &str, mut f: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn sum(c: &Controller) -> String {
    pass(c, "test.pass.sum").await.last_input()
}

/// `import.file` of a module that itself imports a file: loaded, then reloaded when the
/// nested file changes (polling), and a broken edit keeps the running graph and reports
/// the error as the latest load's.
#[tokio::test]
async fn import_file_nested_reload_and_broken_edit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inner = dir.path().join("inner.alloy");
    let outer = dir.path().join("outer.alloy");
    write(
        &inner,
        "declare \"greet\" {\n  argument \"name\" {}\n  export \"out\" {\n    value = \"hello \" + argument.name.value\n  }\n}\n",
    );
    write(
        &outer,
        &format!(
            "import.file \"lib\" {{\n  filename = {:?}\n  detector = \"poll\"\n  poll_frequency = \"50ms\"\n}}\ndeclare \"wrap\" {{\n  argument \"name\" {{}}\n  lib.greet \"g\" {{\n    name = argument.name.value\n  }}\n  test.pass \"inside\" {{\n    input = lib.greet.g.out\n  }}\n  export \"out\" {{\n    value = test.pass.inside.output\n  }}\n}}\n",
            inner.display().to_string()
        ),
    );
    let main = format!(
        "import.file \"mods\" {{\n  filename = {:?}\n  poll_frequency = \"50ms\"\n}}\nmods.wrap \"w\" {{\n  name = \"world\"\n}}\ntest.pass \"sum\" {{\n  input = mods.wrap.w.out\n}}\n",
        outer.display().to_string()
    );
    let storage = tempfile::tempdir().expect("tempdir");
    let c = controller(storage.path());
    c.apply_source("main.alloy", &main).await.expect("apply");
    c.wait_idle().await;
    assert_eq!(sum(&c).await, "hello world");
    let inside = pass(&c, "mods.wrap.w/test.pass.inside").await;

    write(
        &inner,
        "declare \"greet\" {\n  argument \"name\" {}\n  export \"out\" {\n    value = \"bye \" + argument.name.value\n  }\n}\n",
    );
    eventually("the reload", async || sum(&c).await == "bye world").await;
    // The component inside survived the reload and was updated, not rebuilt.
    let after = pass(&c, "mods.wrap.w/test.pass.inside").await;
    assert!(std::sync::Arc::ptr_eq(&inside, &after));

    write(&inner, "declare \"greet\" {\n  export \"out\" {\n");
    eventually("the failed reload", async || {
        c.last_load().and_then(|l| l.error).is_some()
    })
    .await;
    let error = c.last_load().and_then(|l| l.error).unwrap_or_default();
    assert!(
        error.contains(&inner.display().to_string()),
        "error names the imported file: {error}"
    );
    assert_eq!(sum(&c).await, "bye world", "the running graph is kept");
    assert!(c.unhealthy_components().await.is_empty());
}

/// `import.file` of a directory loads every `*.alloy` file in it as one module.
#[tokio::test]
async fn import_file_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        &dir.path().join("a.alloy"),
        "declare \"a\" {\n  export \"out\" {\n    value = \"A\"\n  }\n}\n",
    );
    write(
        &dir.path().join("b.alloy"),
        "declare \"b\" {\n  export \"out\" {\n    value = \"B\"\n  }\n}\n",
    );
    write(&dir.path().join("ignored.txt"), "not alloy");
    let main = format!(
        "import.file \"d\" {{\n  filename = {:?}\n}}\nd.a \"x\" {{}}\nd.b \"y\" {{}}\ntest.pass \"sum\" {{\n  input = d.a.x.out + d.b.y.out\n}}\n",
        dir.path().display().to_string()
    );
    assert_eq!(run_to_sum(&main).await, "AB");
}

fn remote(value: &str) -> String {
    format!("declare \"remote\" {{\n  export \"out\" {{\n    value = \"{value}\"\n  }}\n}}\n")
}

/// `import.http` fetches the module from a URL with the configured method and headers; a
/// module imported by a definition instantiated three times is fetched once per load.
#[tokio::test]
async fn import_http_method_headers_and_one_fetch_per_load() {
    let server = ModuleServer::start(&remote("from http"));
    let main = format!(
        "declare \"wrap\" {{\n  import.http \"h\" {{\n    url = {url:?}\n    method = \"POST\"\n    headers = {{ \"X-Token\" = \"secret\" }}\n  }}\n  h.remote \"x\" {{}}\n  export \"out\" {{\n    value = h.remote.x.out\n  }}\n}}\nwrap \"a\" {{}}\nwrap \"b\" {{}}\nwrap \"c\" {{}}\ntest.pass \"sum\" {{\n  input = wrap.a.out + wrap.b.out + wrap.c.out\n}}\n",
        url = server.url()
    );
    assert_eq!(run_to_sum(&main).await, "from httpfrom httpfrom http");
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        1,
        "one fetch for three instances: {requests:#?}"
    );
    assert!(
        requests[0].starts_with("POST /module.alloy "),
        "{requests:#?}"
    );
    assert!(
        requests[0].to_ascii_lowercase().contains("x-token: secret"),
        "{requests:#?}"
    );
}

/// A server answering non-200, or not answering, fails the first load with the reason; once a
/// module was read, a later load (here an unrelated edit of the config) goes on with the
/// content last read, and the module's recovery is picked up by the poll.
#[tokio::test]
async fn import_http_down_keeps_the_last_module() {
    let server = ModuleServer::start(&remote("v1"));
    let main = |input: &str| {
        format!(
            "import.http \"h\" {{\n  url = {url:?}\n  poll_frequency = \"50ms\"\n  poll_timeout = \"2s\"\n}}\nh.remote \"x\" {{}}\ntest.pass \"sum\" {{\n  input = h.remote.x.out\n}}\ntest.pass \"other\" {{\n  input = {input:?}\n}}\n",
            url = server.url()
        )
    };
    let storage = tempfile::tempdir().expect("tempdir");
    let c = controller(storage.path());
    server.set(Answer::Status(500), &remote("v1"));
    let error = c
        .apply_source("main.alloy", &main("a"))
        .await
        .expect_err("nothing to fall back to");
    assert!(
        error.to_string().contains("unexpected status code 500"),
        "{error}"
    );

    server.set(Answer::Status(200), &remote("v1"));
    c.apply_source("main.alloy", &main("a"))
        .await
        .expect("apply");
    c.wait_idle().await;
    assert_eq!(sum(&c).await, "v1");

    for (answer, input) in [(Answer::Status(503), "b"), (Answer::Drop, "c")] {
        server.set(answer.clone(), &remote("never served"));
        c.apply_source("main.alloy", &main(input))
            .await
            .unwrap_or_else(|e| panic!("{answer:?}: the last module is used: {e}"));
        c.wait_idle().await;
        assert_eq!(pass(&c, "test.pass.other").await.last_input(), input);
        assert_eq!(sum(&c).await, "v1", "{answer:?}");
    }

    server.set(Answer::Status(200), &remote("v2"));
    eventually("the recovered module", async || sum(&c).await == "v2").await;
}

/// An `import.http` module's `module_path` is the URL's directory (Alloy's `path.Split`); a
/// `body` is sent; a server that does not answer within `poll_timeout` fails the load with
/// that reason.
#[tokio::test]
async fn import_http_module_path_body_and_timeout() {
    let server = ModuleServer::start(
        "declare \"where\" {\n  export \"out\" {\n    value = module_path\n  }\n}\n",
    );
    let main = |timeout: &str| {
        format!(
            "import.http \"h\" {{\n  url = {url:?}\n  method = \"PUT\"\n  body = \"hello\"\n  poll_timeout = {timeout:?}\n}}\nh.where \"x\" {{}}\ntest.pass \"sum\" {{\n  input = h.where.x.out\n}}\n",
            url = server.url()
        )
    };
    assert_eq!(
        run_to_sum(&main("10s")).await,
        format!("http://{}/", server.addr)
    );
    let requests = server.requests();
    assert!(
        requests[0]
            .to_ascii_lowercase()
            .contains("content-length: 5"),
        "the body is sent: {requests:#?}"
    );

    server.set(Answer::Silent(Duration::from_secs(3)), "");
    let storage = tempfile::tempdir().expect("tempdir");
    let c = controller(storage.path());
    let error = c
        .apply_source("main.alloy", &main("200ms"))
        .await
        .expect_err("no answer");
    assert!(
        error.to_string().contains("timed out after 200ms"),
        "{error}"
    );
}

/// Each import is polled at its own `poll_frequency`: a URL polled hourly beside a file polled
/// every 50ms is fetched only by the loads (one each), not at the file's pace.
#[tokio::test]
async fn import_http_is_polled_at_its_own_frequency() {
    let server = ModuleServer::start(&remote("remote"));
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = dir.path().join("lib.alloy");
    write(&lib, &remote("v1").replace("remote", "local"));
    let main = format!(
        "import.http \"h\" {{\n  url = {url:?}\n  poll_frequency = \"1h\"\n}}\nimport.file \"f\" {{\n  filename = {lib:?}\n  detector = \"poll\"\n  poll_frequency = \"50ms\"\n}}\nh.remote \"x\" {{}}\nf.local \"y\" {{}}\ntest.pass \"sum\" {{\n  input = h.remote.x.out + f.local.y.out\n}}\n",
        url = server.url(),
        lib = lib.display().to_string(),
    );
    let storage = tempfile::tempdir().expect("tempdir");
    let c = controller(storage.path());
    c.apply_source("main.alloy", &main).await.expect("apply");
    c.wait_idle().await;
    assert_eq!(sum(&c).await, "remotev1");
    for v in ["v2", "v3"] {
        // Replaced whole, so that no poll reads a half-written file (one more load).
        let tmp = dir.path().join("lib.tmp");
        write(&tmp, &remote(v).replace("remote", "local"));
        std::fs::rename(&tmp, &lib).expect("rename");
        eventually("the file reload", async || {
            sum(&c).await == format!("remote{v}")
        })
        .await;
    }
    assert_eq!(
        server.requests().len(),
        3,
        "one fetch per load, none by the watch"
    );
}

/// Import cycles through several files name the chain; the same file named two ways is one
/// module; imports nesting too deep and configs expanding too far are errors, not hangs.
#[test]
fn import_cycles_depth_and_expansion_bounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str| dir.path().join(name).display().to_string();
    let import =
        |label: &str, path: &str| format!("import.file {label:?} {{\n  filename = {path:?}\n}}\n");
    write(&dir.path().join("a.alloy"), &import("b", &file("b.alloy")));
    // `b` names `a` through a detour: the same file, so the cycle is found.
    let detour = format!("{}/sub/../a.alloy", dir.path().display());
    write(&dir.path().join("sub/keep"), "");
    write(&dir.path().join("b.alloy"), &import("a", &detour));
    let chain = 40;
    for i in 0..chain {
        write(
            &dir.path().join(format!("n{i}.alloy")),
            &import("next", &file(&format!("n{}.alloy", i + 1))),
        );
    }
    write(&dir.path().join(format!("n{chain}.alloy")), "");
    // Each definition instantiates the previous one twice: 2^40 instances unbounded.
    let mut doubling =
        "declare \"d0\" {\n  test.pass \"p\" {\n    input = \"x\"\n  }\n}\n".to_string();
    for i in 1..=40 {
        let p = i - 1;
        doubling.push_str(&format!(
            "declare \"d{i}\" {{\n  d{p} \"a\" {{}}\n  d{p} \"b\" {{}}\n}}\n"
        ));
    }
    doubling.push_str("d40 \"top\" {}\n");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "cycle through two files",
            import("a", &file("a.alloy")),
            "imports itself through",
        ),
        (
            "import depth",
            import("n", &file("n0.alloy")),
            "imports nest more than 32 levels deep",
        ),
        ("expansion", doubling, "expands into more than 10000"),
        (
            "component export in an import argument",
            "test.pass \"p\" {\n  input = \"x\"\n}\nimport.file \"m\" {\n  filename = test.pass.p.output\n}\n".to_string(),
            "components and arguments are not supported here",
        ),
    ];
    let registry = registry();
    for (name, src, want) in cases {
        let started = Instant::now();
        let (source, diags) = check_config(&registry, &Source::new("main.alloy", src));
        let rendered = source.render_all(&diags);
        assert!(rendered.contains(want), "{name}: {rendered}");
        // Recorded, not asserted (a hang is caught by the harness's own timeout).
        eprintln!("{name}: checked in {:?}", started.elapsed());
        if name == "cycle through two files" {
            assert!(
                rendered.contains(&format!("{} -> {}", file("b.alloy"), detour)),
                "the chain: {rendered}"
            );
        }
    }
}

/// The sections of a txtar file (`-- name --` lines), the format of Alloy's test data.
fn txtar(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- ").and_then(|l| l.strip_suffix(" --")) {
            out.push((name.to_string(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// Alloy's `TestImportFile` cases (tests/modules/import_file/*.txtar, ported to `test.pass`):
/// `main.alloy` imports modules written beside it (found through `module_path`); `sum`
/// gets "10"; then the `update/` file replaces its namesake and `sum` gets "-10" through the
/// reload, without touching the main file.
#[tokio::test]
async fn import_file_txtar_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/modules/import_file");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "txtar"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 9, "{cases:?}");
    for case in cases {
        let name = case.display().to_string();
        let sections = txtar(&std::fs::read_to_string(&case).expect("read"));
        let work = tempfile::tempdir().expect("tempdir");
        let mut updates = Vec::new();
        for (file, text) in &sections {
            match file.strip_prefix("update/") {
                Some(target) => updates.push((work.path().join(target), text.clone())),
                None => write(&work.path().join(file), text),
            }
        }
        let storage = tempfile::tempdir().expect("tempdir");
        let c = controller(storage.path());
        c.load_file(&work.path().join("main.alloy"))
            .await
            .unwrap_or_else(|e| panic!("{name}: {}", e.render()));
        c.wait_idle().await;
        assert_eq!(sum(&c).await, "10", "{name}");
        assert!(!updates.is_empty(), "{name} has an update");
        for (path, text) in updates {
            write(&path, &text);
        }
        eventually(&name, async || sum(&c).await == "-10").await;
        assert_eq!(c.last_load().and_then(|l| l.error), None, "{name}");
        c.shutdown().await;
    }
}
