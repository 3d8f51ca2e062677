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
