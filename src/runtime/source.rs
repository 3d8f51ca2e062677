//! Reading a config: one file, or a directory whose `*.alloy` files Alloy loads as one config
//! (sorted by name, each parsed on its own, their blocks sharing one namespace).

use std::io;
use std::path::Path;

use crate::syntax::diag::Source;

/// Reads `path`, a file or a directory. Bytes that are not UTF-8 are replaced, and the parser
/// reports them. A directory without `*.alloy` files is an error: an empty config would run
/// nothing without saying so.
pub fn read_config(path: &Path) -> io::Result<Source> {
    let name = path.display().to_string();
    if !std::fs::metadata(path)?.is_dir() {
        return Ok(Source::new(name, read_text(path)?));
    }
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let file = entry?.path();
        // Following symlinks, as Alloy does (ConfigMap mounts are symlinks).
        let is_file = std::fs::metadata(&file).is_ok_and(|m| m.is_file());
        if is_file && file.extension().is_some_and(|e| e == "alloy") {
            files.push(file);
        }
    }
    if files.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no .alloy files in directory {name}"),
        ));
    }
    files.sort();
    let mut texts = Vec::with_capacity(files.len());
    for file in files {
        let text = read_text(&file)?;
        texts.push((file.display().to_string(), text));
    }
    Ok(Source::from_files(name, texts))
}

fn read_text(path: &Path) -> io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}
