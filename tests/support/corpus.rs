//! Access to the Alloy conformance corpus in ../shared/alloy-corpus (present in CI).

use std::path::{Path, PathBuf};

/// The corpus root, or `None` with a printed notice when it is absent, so a developer without
/// the corpus sees that these checks did not run (the unit tests cover every feature without it).
pub fn root() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/alloy-corpus");
    if root.join("valid").is_dir() {
        return Some(root);
    }
    if std::env::var_os("SCRAPER_REQUIRE_CORPUS").is_some() {
        panic!(
            "SCRAPER_REQUIRE_CORPUS is set but {} is missing",
            root.display()
        );
    }
    eprintln!("SKIPPED: Alloy corpus not found at {}", root.display());
    None
}

/// Every `.alloy` file in `dir`, sorted.
pub fn alloy_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "alloy"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// One case of invalid/: the input bytes plus the parsed `.expect` file.
#[derive(Debug, Clone)]
pub struct Expect {
    pub name: String,
    pub input: Vec<u8>,
    pub stage: String,
    pub expression_entry: bool,
    pub parses_no: bool,
    pub errors: Vec<String>,
    pub observed: Vec<String>,
    pub keys: Vec<(String, String)>,
}

impl Expect {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

pub fn invalid_cases(root: &Path) -> Vec<Expect> {
    let dir = root.join("invalid");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "expect"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .filter_map(|expect_path| {
            let text = std::fs::read_to_string(&expect_path).ok()?;
            let input = std::fs::read(expect_path.with_extension("alloy")).ok()?;
            let mut case = Expect {
                name: expect_path.file_stem()?.to_string_lossy().into_owned(),
                input,
                stage: String::new(),
                expression_entry: false,
                parses_no: false,
                errors: Vec::new(),
                observed: Vec::new(),
                keys: Vec::new(),
            };
            for line in text.lines() {
                let Some((k, v)) = line.split_once(": ") else {
                    continue;
                };
                match k {
                    "stage" => case.stage = v.split_whitespace().next().unwrap_or("").to_string(),
                    "entry" => case.expression_entry = v.starts_with("expression"),
                    "parses" => case.parses_no = v.starts_with("no"),
                    "error" => case.errors.push(v.to_string()),
                    "observed" => case.observed.push(v.to_string()),
                    _ => {}
                }
                case.keys.push((k.to_string(), v.to_string()));
            }
            Some(case)
        })
        .collect()
}

/// One component block of a corpus config, evaluated with the standard library.
pub struct ComponentBlock {
    /// `file: component label`, for failure messages.
    pub name: String,
    /// The component name, e.g. `pyroscope.scrape`.
    pub component: String,
    pub header: scraper::syntax::ast::Span,
    /// The evaluated body, or why evaluation failed.
    pub body: Result<scraper::syntax::eval::EvaluatedBody, String>,
}

/// Every block of the profiling/ and valid/ configs whose name is in `components`, with the
/// attributes named in `stubbed` (references to other components: `targets`, `forward_to`...)
/// replaced by `[]` and everything else evaluated as written.
pub fn component_blocks(root: &Path, components: &[&str], stubbed: &[&str]) -> Vec<ComponentBlock> {
    use scraper::syntax::ast::{Expr, ExprKind, Stmt};
    use scraper::syntax::eval::{Scope, eval_body};
    use scraper::syntax::parser::parse_file;

    let mut out = Vec::new();
    for dir in ["profiling", "valid"] {
        for path in alloy_files(&root.join(dir)) {
            let Ok(src) = std::fs::read_to_string(&path) else {
                continue;
            };
            if !components.iter().any(|c| src.contains(c)) {
                continue;
            }
            let (file, diags) = parse_file(&src);
            if diags.iter().any(|d| d.is_error()) {
                continue;
            }
            for stmt in &file.body.stmts {
                let Stmt::Block(block) = stmt else { continue };
                let component = block.full_name();
                if !components.contains(&component.as_str()) {
                    continue;
                }
                let mut body = block.body.clone();
                for s in &mut body.stmts {
                    if let Stmt::Attribute(a) = s
                        && stubbed.contains(&a.name.name.as_str())
                    {
                        a.value = Expr {
                            kind: ExprKind::Array(Vec::new()),
                            span: a.value.span,
                        };
                    }
                }
                out.push(ComponentBlock {
                    name: format!(
                        "{}: {component} {}",
                        path.file_name().unwrap_or_default().to_string_lossy(),
                        block.label.as_ref().map_or("", |l| l.value.as_str())
                    ),
                    header: block.header_span(),
                    body: eval_body(&body, &Scope::stdlib()).map_err(|e| format!("{e:?}")),
                    component,
                });
            }
        }
    }
    out
}

/// Decode failures, `name: message; message`.
pub fn decode_failure(name: &str, diags: &[scraper::syntax::diag::Diagnostic]) -> String {
    format!(
        "{name}: {}",
        diags
            .iter()
            .map(|d| d.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    )
}
