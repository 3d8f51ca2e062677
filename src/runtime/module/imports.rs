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
    /// Key and display name of each import being read, outermost first.
    reading: Vec<(String, String)>,
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
    #[serde(default)]
    body: Option<String>,
    #[serde(default = "default_poll")]
    poll_frequency: Duration,
    #[serde(default = "default_timeout")]
    poll_timeout: Duration,
}

/// A module's files as read, and what to watch.
struct Read {
    key: String,
    display: String,
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

/// How deeply imports may nest (a module importing a module ...): an import cycle is reported
/// as such, so this bounds long chains of distinct files.
const MAX_IMPORT_DEPTH: usize = 32;

/// What an import block asks for, decided before anything is read: its cache key and how to
/// read it.
struct Planned {
    /// The canonical file path or the URL (with the kind), the key of [`ImportCache`].
    key: String,
    /// How messages name it.
    display: String,
    plan: Plan,
}

enum Plan {
    Watched {
        what: Watched,
        every: StdDuration,
        module_path: Option<String>,
    },
    Text(Vec<(String, String)>),
}

/// Reads what a watch watches: the file or directory, or the URL.
pub(crate) fn read_watched(what: &Watched) -> Result<Vec<(String, String)>, String> {
    match what {
        Watched::File(path) => read_path(path).map_err(|e| format!("failed to read file: {e}")),
        Watched::Http(request) => {
            fetch::get_blocking(request).map(|text| vec![(request.url.clone(), text)])
        }
    }
}

/// Go's `filepath.Dir`: the directory part, `.` when there is none.
pub(crate) fn dir_of(path: &Path) -> String {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.display().to_string(),
        _ => ".".to_string(),
    }
}

impl Expander<'_> {
    /// Reads the module `block` imports and registers its definitions in a new scope of their
    /// own (a module does not see the definitions of its importer); returns that scope.
    pub(crate) fn import(&mut self, block: &Block, scope: usize, from_http: bool) -> Option<usize> {
        let importer_path = self.defs.module_path(scope);
        let planned = self.plan_import(block, &importer_path, from_http)?;
        // Checked before reading: a module imported by a definition instantiated many times
        // is read once per load.
        if let Some(done) = self.imports.done.get(&planned.key) {
            return *done;
        }
        if let Some(pos) = self
            .imports
            .reading
            .iter()
            .position(|(k, _)| *k == planned.key)
        {
            let mut chain: Vec<&str> = self.imports.reading[pos..]
                .iter()
                .map(|(_, d)| d.as_str())
                .collect();
            chain.push(&planned.display);
            let message = if chain.len() == 2 {
                format!("import cycle: {} imports itself", planned.display)
            } else {
                format!(
                    "import cycle: {} imports itself through {}",
                    planned.display,
                    chain.join(" -> ")
                )
            };
            self.error(block.header_span(), message);
            return None;
        }
        if self.imports.reading.len() >= MAX_IMPORT_DEPTH {
            self.error(
                block.header_span(),
                format!("imports nest more than {MAX_IMPORT_DEPTH} levels deep"),
            );
            return None;
        }
        let read = self.read_planned(block, planned)?;
        if let Some(watch) = read.watch {
            self.out.watches.push(watch);
        }
        self.imports
            .reading
            .push((read.key.clone(), read.display.clone()));
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

    /// Reads a planned import; a file or URL that cannot be read falls back to the content
    /// last read from it (the watch then compares with the error, so that its recovery is a
    /// change).
    fn read_planned(&mut self, block: &Block, planned: Planned) -> Option<Read> {
        let Planned { key, display, plan } = planned;
        let (what, every, module_path) = match plan {
            Plan::Text(files) => {
                return Some(Read {
                    key,
                    display,
                    files,
                    watch: None,
                    module_path: None,
                });
            }
            Plan::Watched {
                what,
                every,
                module_path,
            } => (what, every, module_path),
        };
        let (files, fp) = match read_watched(&what) {
            Ok(files) => {
                self.last_good.record_ok(&key, &display, &files);
                let fp = fingerprint(&files);
                (files, fp)
            }
            Err(e) => match self.last_good.fallback(&key, &display, &e) {
                Some(files) => (files, super::watch::error_fingerprint(&e)),
                None => {
                    self.error(block.header_span(), e);
                    return None;
                }
            },
        };
        Some(Read {
            key,
            display,
            files,
            watch: Some(Watch {
                what,
                every,
                fingerprint: fp,
            }),
            module_path,
        })
    }

    fn plan_import(
        &mut self,
        block: &Block,
        module_path: &str,
        from_http: bool,
    ) -> Option<Planned> {
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
                self.out
                    .diags
                    .extend(diags.into_iter().map(explain_import_scope));
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
                let dir = if path.is_dir() {
                    path.display().to_string()
                } else {
                    dir_of(&path)
                };
                // fsnotify is approximated by reading the file every second (or at
                // `poll_frequency` if shorter): a change is seen within a second.
                let mut every = positive(a.poll_frequency.get());
                if a.detector == "fsnotify" {
                    every = every.min(StdDuration::from_secs(1));
                }
                // The same file named two ways (`./m.alloy`, `m.alloy`) is one module.
                let canonical = std::fs::canonicalize(&path)
                    .map_or_else(|_| a.filename.clone(), |p| p.display().to_string());
                Ok(Planned {
                    key: format!("file:{canonical}"),
                    display: a.filename.clone(),
                    plan: Plan::Watched {
                        what: Watched::File(path),
                        every,
                        module_path: Some(dir),
                    },
                })
            }),
            "import.string" => decode::from_body_at::<StringArgs>(&body, header).map(|a| {
                let files = vec![(format!("{label} (import.string)"), a.content)];
                Ok(Planned {
                    key: format!("string:{label}:{}", fingerprint(&files)),
                    display: format!("import.string {label:?}"),
                    plan: Plan::Text(files),
                })
            }),
            _ => decode::from_body_at::<HttpArgs>(&body, header).map(|a| {
                let request = fetch::Request {
                    url: a.url.clone(),
                    method: a.method,
                    headers: a.headers,
                    body: a.body,
                    timeout: positive(a.poll_timeout.get()),
                };
                Ok(Planned {
                    key: format!("http:{}", a.url),
                    display: a.url.clone(),
                    plan: Plan::Watched {
                        what: Watched::Http(request),
                        every: positive(a.poll_frequency.get()),
                        // As Alloy: the URL's directory (`path.Split`).
                        module_path: Some(fetch::url_dir(&a.url)),
                    },
                })
            }),
        };
        match decoded {
            Ok(Ok(planned)) => Some(planned),
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

/// An import's arguments are evaluated before any component exists: a name unknown there is
/// most likely a component export or an argument, which cannot be used here, so say so.
fn explain_import_scope(mut d: Diagnostic) -> Diagnostic {
    if d.is_error() && d.message.starts_with("identifier ") && d.message.ends_with("does not exist")
    {
        // In the help, so that the message keeps Alloy's wording.
        let why = "import arguments can use the standard library and module_path only; \
                   components and arguments are not supported here";
        d.help = Some(match d.help.take() {
            Some(help) => format!("{why} ({help})"),
            None => why.to_string(),
        });
    }
    d
}

/// A zero interval would poll in a busy loop.
fn positive(d: StdDuration) -> StdDuration {
    d.max(StdDuration::from_millis(10))
}
