//! `import.file`, `import.string` and `import.http`: reading a module, parsing it as one more
//! file of the config (so that positions inside it name it), and registering its definitions.
//! A module may hold only `declare` and `import` blocks. `import.git` is refused: it needs
//! git and the network, and nothing here could test it.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Duration as StdDuration;

use serde::Deserialize;

use super::fetch;
use crate::runtime::loader::{Expander, name_span};
use crate::syntax::ast::{Block, Body, Stmt};
use crate::syntax::decode;
use crate::syntax::diag::{Diagnostic, Source};
use crate::syntax::eval::{Scope, eval_body};
use crate::syntax::parser::parse_source_file;
use crate::syntax::types::Duration;
use crate::syntax::value::Value;

/// An imported file or URL and how often to look at it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Watch {
    pub what: Watched,
    pub every: StdDuration,
    /// Of the content the config was loaded with.
    pub fingerprint: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Watched {
    /// A file, or a directory whose `*.alloy` files are one module.
    File(PathBuf),
    Http(fetch::Request),
}

/// Modules already read in this load, by what they were read from, so that a module imported
/// by a definition instantiated many times is read and parsed once; and the imports being
/// read, so that a module importing itself is an error rather than a loop.
#[derive(Debug, Default)]
pub(crate) struct ImportCache {
    done: HashMap<String, Option<usize>>,
    reading: Vec<String>,
}

fn default_poll() -> Duration {
    Duration::from_secs(60)
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

fn default_detector() -> String {
    "fsnotify".to_string()
}

fn default_method() -> String {
    "GET".to_string()
}

#[derive(Deserialize)]
#[serde(rename = "import.file")]
struct FileArgs {
    filename: String,
    #[serde(default = "default_detector")]
    detector: String,
    #[serde(default = "default_poll")]
    poll_frequency: Duration,
}

#[derive(Deserialize)]
#[serde(rename = "import.string")]
struct StringArgs {
    content: String,
}

#[derive(Deserialize)]
#[serde(rename = "import.http")]
struct HttpArgs {
    url: String,
    #[serde(default = "default_method")]
    method: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default = "default_poll")]
    poll_frequency: Duration,
    #[serde(default = "default_timeout")]
    poll_timeout: Duration,
}

/// A module's files as read, and what to watch.
struct Read {
    key: String,
    files: Vec<(String, String)>,
    watch: Option<Watch>,
    /// The module's own `module_path` (an imported file's directory); None: the importer's.
    module_path: Option<String>,
}

/// A content fingerprint for change detection (not security: the content is ours to read).
pub(crate) fn fingerprint(files: &[(String, String)]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    files.hash(&mut h);
    h.finish()
}

/// Reads `path`: a file, or a directory's `*.alloy` files sorted by name (not recursive), as
/// Alloy's `import.file` does.
pub(crate) fn read_path(path: &Path) -> std::io::Result<Vec<(String, String)>> {
    if !std::fs::metadata(path)?.is_dir() {
        return Ok(vec![(path.display().to_string(), read_text(path)?)]);
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let file = entry?.path();
        if file.extension().is_some_and(|e| e == "alloy")
            && std::fs::metadata(&file).is_ok_and(|m| m.is_file())
        {
            names.push(file);
        }
    }
    names.sort();
    names
        .into_iter()
        .map(|f| Ok((f.display().to_string(), read_text(&f)?)))
        .collect()
}

fn read_text(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

impl Expander<'_> {
    /// Reads the module `block` imports and registers its definitions in a new scope of their
    /// own (a module does not see the definitions of its importer); returns that scope.
    pub(crate) fn import(&mut self, block: &Block, scope: usize, from_http: bool) -> Option<usize> {
        let importer_path = self.defs.module_path(scope);
        let read = self.read_import(block, &importer_path, from_http)?;
        if let Some(done) = self.imports.done.get(&read.key) {
            return *done;
        }
        if self.imports.reading.contains(&read.key) {
            self.error(
                block.header_span(),
                format!("import cycle: {} imports itself", read.key),
            );
            return None;
        }
        if let Some(watch) = read.watch {
            self.out.watches.push(watch);
        }
        self.imports.reading.push(read.key.clone());
        let mut body = Body { stmts: Vec::new() };
        let mut parsed_ok = true;
        for (name, text) in read.files {
            self.files.push((name, text));
            self.out.source = Source::from_files(self.out.source.name.clone(), self.files.clone());
            let (file, diags) = parse_source_file(&self.out.source, self.files.len() - 1);
            parsed_ok &= !diags.iter().any(Diagnostic::is_error);
            self.out.diags.extend(diags);
            body.stmts.extend(file.body.stmts);
        }
        let module_path = read.module_path.unwrap_or(importer_path);
        let scope = self.defs.new_scope(None, module_path);
        if parsed_ok {
            for stmt in &body.stmts {
                match stmt {
                    Stmt::Attribute(a) => self.error(
                        a.span,
                        "only declare and import blocks are allowed in a module",
                    ),
                    Stmt::Block(b) => {
                        let name = b.full_name();
                        if name != "declare" && !name.starts_with("import.") {
                            self.error(
                                name_span(b),
                                format!(
                                    "only declare and import blocks are allowed in a module, got {name}"
                                ),
                            );
                        }
                    }
                }
            }
            let http = from_http || block.full_name() == "import.http";
            self.register_definitions(&body, scope, http);
        }
        self.imports.reading.pop();
        let module = parsed_ok.then_some(scope);
        self.imports.done.insert(read.key, module);
        module
    }

    fn read_import(&mut self, block: &Block, module_path: &str, from_http: bool) -> Option<Read> {
        let name = block.full_name();
        let header = block.header_span();
        let label = block.label.as_ref().map_or("", |l| l.value.as_str());
        if name == "import.git" {
            self.error(
                name_span(block),
                "import.git is not supported by scraper (it needs git and network access); \
                 check the repository out and use import.file, or serve the file for import.http",
            );
            return None;
        }
        if !matches!(
            name.as_str(),
            "import.file" | "import.string" | "import.http"
        ) {
            self.error(
                name_span(block),
                format!("cannot find the definition of component name {name:?}"),
            );
            return None;
        }
        // Import arguments are read while loading, before any component runs: they can use
        // the standard library (`sys.env`) and `module_path`, not component exports.
        let mut scope = Scope::stdlib();
        scope.set("module_path", Value::String(module_path.to_string()));
        let body = match eval_body(&block.body, &scope) {
            Ok(body) => body,
            Err(diags) => {
                self.out.diags.extend(diags);
                return None;
            }
        };
        let decoded = match name.as_str() {
            "import.file" => decode::from_body_at::<FileArgs>(&body, header).map(|a| {
                if from_http {
                    return Err(
                        "importing a module via import.http that contains an import.file block is not supported".to_string(),
                    );
                }
                if a.detector != "fsnotify" && a.detector != "poll" {
                    return Err(format!(
                        "unknown detector {:?}, must be \"fsnotify\" or \"poll\"",
                        a.detector
                    ));
                }
                let path = PathBuf::from(&a.filename);
                let files = read_path(&path).map_err(|e| format!("failed to read file: {e}"))?;
                let dir = if path.is_dir() {
                    Some(path.clone())
                } else {
                    path.parent().map(Path::to_path_buf)
                };
                // fsnotify is approximated by reading the file every second (or at
                // `poll_frequency` if shorter): a change is seen within a second.
                let mut every = positive(a.poll_frequency.get());
                if a.detector == "fsnotify" {
                    every = every.min(StdDuration::from_secs(1));
                }
                let watch = Watch {
                    what: Watched::File(path),
                    every,
                    fingerprint: fingerprint(&files),
                };
                Ok(Read {
                    key: format!("file:{}", a.filename),
                    files,
                    watch: Some(watch),
                    module_path: dir.map(|d| d.display().to_string()),
                })
            }),
            "import.string" => decode::from_body_at::<StringArgs>(&body, header).map(|a| {
                let files = vec![(format!("{label} (import.string)"), a.content)];
                Ok(Read {
                    key: format!("string:{label}:{}", fingerprint(&files)),
                    files,
                    watch: None,
                    module_path: None,
                })
            }),
            _ => decode::from_body_at::<HttpArgs>(&body, header).map(|a| {
                let request = fetch::Request {
                    url: a.url.clone(),
                    method: a.method,
                    headers: a.headers,
                    timeout: positive(a.poll_timeout.get()),
                };
                let text = fetch::get_blocking(&request)?;
                let files = vec![(a.url.clone(), text)];
                let watch = Watch {
                    what: Watched::Http(request),
                    every: positive(a.poll_frequency.get()),
                    fingerprint: fingerprint(&files),
                };
                Ok(Read {
                    key: format!("http:{}", a.url),
                    files,
                    watch: Some(watch),
                    module_path: None,
                })
            }),
        };
        match decoded {
            Ok(Ok(read)) => Some(read),
            Ok(Err(message)) => {
                self.error(header, message);
                None
            }
            Err(diags) => {
                self.out.diags.extend(diags);
                None
            }
        }
    }
}

/// A zero interval would poll in a busy loop.
fn positive(d: StdDuration) -> StdDuration {
    d.max(StdDuration::from_millis(10))
}
