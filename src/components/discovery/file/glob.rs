//! Go's `path/filepath.Glob` and `Match` on Unix, which Prometheus' file SD expands `files`
//! with: `*` (any run of non-`/` bytes), `?` (one non-`/` character), `[a-z]`, `[^...]` and `\`
//! escapes; a malformed pattern is an error, a missing directory is no match. Matches in one
//! directory come sorted by name and joined as Go's `filepath.Join` does (cleaned: `./a.json`
//! is `a.json`). A pattern without metacharacters is returned as written when the path exists.
//! Names that are not UTF-8 are skipped (the patterns are strings).

/// The error Go calls `filepath.ErrBadPattern`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("syntax error in pattern")]
pub struct BadPattern;

/// The paths matching `pattern`.
pub fn glob(pattern: &str) -> Result<Vec<String>, BadPattern> {
    // Go checks the whole pattern first, so a bad pattern fails even when nothing exists.
    matches(pattern, "")?;
    if !has_meta(pattern) {
        return Ok(if std::fs::symlink_metadata(pattern).is_ok() {
            vec![pattern.to_string()]
        } else {
            Vec::new()
        });
    }
    let (dir, file) = split(pattern);
    let dir = clean_glob_dir(dir);
    if !has_meta(dir) {
        let mut out = Vec::new();
        glob_in(dir, file, &mut out)?;
        return Ok(out);
    }
    if dir == pattern {
        return Err(BadPattern);
    }
    let mut out = Vec::new();
    for d in glob(dir)? {
        glob_in(&d, file, &mut out)?;
    }
    Ok(out)
}

fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '\\'])
}

/// `filepath.Split`: everything up to and including the last `/`, and the rest.
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("", path),
    }
}

/// Go's `cleanGlobPath`: `""` is `.`, `/` stays, otherwise the trailing `/` goes.
fn clean_glob_dir(dir: &str) -> &str {
    match dir {
        "" => ".",
        "/" => "/",
        d => &d[..d.len() - 1],
    }
}

/// Appends the entries of `dir` matching `pattern`, sorted by name.
fn glob_in(dir: &str, pattern: &str, out: &mut Vec<String>) -> Result<(), BadPattern> {
    let Ok(meta) = std::fs::metadata(dir) else {
        return Ok(());
    };
    if !meta.is_dir() {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        if matches(pattern, &name)? {
            out.push(join(dir, &name));
        }
    }
    Ok(())
}

/// `filepath.Join(dir, name)`: joined, then cleaned.
fn join(dir: &str, name: &str) -> String {
    clean(&format!("{dir}/{name}"))
}

/// Go's `path.Clean`: one `/` between elements, no `.` elements, `..` resolved lexically.
fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Go's `filepath.Match(pattern, name)`.
pub fn matches(pattern: &str, name: &str) -> Result<bool, BadPattern> {
    let mut pattern = pattern;
    let mut name = name;
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            // A trailing `*` matches the rest of the name unless it crosses a separator.
            return Ok(!name.contains('/'));
        }
        let (t, ok) = match_chunk(chunk, name)?;
        if ok && (t.is_empty() || !pattern.is_empty()) {
            name = t;
            continue;
        }
        if star {
            // `*` takes 1, 2, ... bytes of the name, never a `/`.
            for (i, b) in name.bytes().enumerate() {
                if b == b'/' {
                    break;
                }
                let Some(after) = name.get(i + 1..) else {
                    continue;
                };
                let (t, ok) = match_chunk(chunk, after)?;
                if ok {
                    if pattern.is_empty() && !t.is_empty() {
                        continue;
                    }
                    name = t;
                    continue 'pattern;
                }
            }
        }
        // No match: still report a malformed rest of the pattern, as Go does.
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, "")?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Splits off the leading `*`s and the chunk up to the next unbracketed `*`.
fn scan_chunk(pattern: &str) -> (bool, &str, &str) {
    let trimmed = pattern.trim_start_matches('*');
    let star = trimmed.len() != pattern.len();
    let bytes = trimmed.as_bytes();
    let mut in_range = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            // The escaped byte is part of the chunk, whatever it is.
            b'\\' if i + 1 < bytes.len() => i += 1,
            b'[' => in_range = true,
            b']' => in_range = false,
            b'*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    (star, &trimmed[..i], &trimmed[i..])
}

/// Matches `chunk` (no `*`) against the start of `s`: what is left of `s`, and whether it
/// matched. Errors only for a malformed chunk, which Go checks even after a mismatch.
fn match_chunk<'a>(chunk: &str, s: &'a str) -> Result<(&'a str, bool), BadPattern> {
    let mut chunk = chunk;
    let mut s = s;
    let mut failed = false;
    while let Some(c) = chunk.chars().next() {
        if !failed && s.is_empty() {
            failed = true;
        }
        match c {
            '[' => {
                let mut r = None;
                if !failed {
                    let mut it = s.chars();
                    r = it.next();
                    s = it.as_str();
                }
                chunk = &chunk[1..];
                let negated = chunk.starts_with('^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut ranges = 0;
                loop {
                    if ranges > 0 && chunk.starts_with(']') {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = get_esc(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if let Some(rest) = chunk.strip_prefix('-') {
                        let (h, rest) = get_esc(rest)?;
                        hi = h;
                        chunk = rest;
                    }
                    if r.is_some_and(|r| lo <= r && r <= hi) {
                        matched = true;
                    }
                    ranges += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            '?' => {
                if !failed {
                    let mut it = s.chars();
                    if it.next() == Some('/') {
                        failed = true;
                    }
                    s = it.as_str();
                }
                chunk = &chunk[1..];
            }
            _ => {
                let literal = if c == '\\' {
                    chunk = &chunk[1..];
                    chunk.chars().next().ok_or(BadPattern)?
                } else {
                    c
                };
                if !failed {
                    match s.strip_prefix(literal) {
                        Some(rest) => s = rest,
                        None => {
                            failed = true;
                        }
                    }
                }
                chunk = &chunk[literal.len_utf8()..];
            }
        }
    }
    Ok(if failed { ("", false) } else { (s, true) })
}

/// One character of a `[...]` class, `\`-escaped or not; what follows must not be empty.
fn get_esc(chunk: &str) -> Result<(char, &str), BadPattern> {
    let mut chunk = chunk;
    if chunk.is_empty() || chunk.starts_with('-') || chunk.starts_with(']') {
        return Err(BadPattern);
    }
    if let Some(rest) = chunk.strip_prefix('\\') {
        chunk = rest;
    }
    let c = chunk.chars().next().ok_or(BadPattern)?;
    let rest = &chunk[c.len_utf8()..];
    if rest.is_empty() {
        return Err(BadPattern);
    }
    Ok((c, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's own `filepath.Match` test table (match_test.go), the Unix rows.
    #[test]
    fn match_agrees_with_go() {
        let cases: &[(&str, &str, Result<bool, BadPattern>)] = &[
            ("abc", "abc", Ok(true)),
            ("*", "abc", Ok(true)),
            ("*c", "abc", Ok(true)),
            ("a*", "a", Ok(true)),
            ("a*", "abc", Ok(true)),
            ("a*", "ab/c", Ok(false)),
            ("a*/b", "abc/b", Ok(true)),
            ("a*/b", "a/c/b", Ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", Ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", Ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", Ok(false)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", Ok(false)),
            ("a*b?c*x", "abxbbxdbxebxczzx", Ok(true)),
            ("a*b?c*x", "abxbbxdbxebxczzy", Ok(false)),
            ("ab[c]", "abc", Ok(true)),
            ("ab[b-d]", "abc", Ok(true)),
            ("ab[e-g]", "abc", Ok(false)),
            ("ab[^c]", "abc", Ok(false)),
            ("ab[^b-d]", "abc", Ok(false)),
            ("ab[^e-g]", "abc", Ok(true)),
            ("a\\*b", "a*b", Ok(true)),
            ("a\\*b", "ab", Ok(false)),
            ("a?b", "a☺b", Ok(true)),
            ("a[^a]b", "a☺b", Ok(true)),
            ("a???b", "a☺b", Ok(false)),
            ("a[^a][^a][^a]b", "a☺b", Ok(false)),
            ("[a-ζ]*", "α", Ok(true)),
            ("*[a-ζ]", "A", Ok(false)),
            ("a?b", "a/b", Ok(false)),
            ("a*b", "a/b", Ok(false)),
            ("[\\]a]", "]", Ok(true)),
            ("[\\-]", "-", Ok(true)),
            ("[x\\-]", "x", Ok(true)),
            ("[x\\-]", "-", Ok(true)),
            ("[x\\-]", "z", Ok(false)),
            ("[\\-x]", "x", Ok(true)),
            ("[\\-x]", "-", Ok(true)),
            ("[\\-x]", "a", Ok(false)),
            ("[]a]", "]", Err(BadPattern)),
            ("[-]", "-", Err(BadPattern)),
            ("[x-]", "x", Err(BadPattern)),
            ("[x-]", "-", Err(BadPattern)),
            ("[x-]", "z", Err(BadPattern)),
            ("[-x]", "x", Err(BadPattern)),
            ("[-x]", "-", Err(BadPattern)),
            ("[-x]", "a", Err(BadPattern)),
            ("\\", "a", Err(BadPattern)),
            ("[a-b-c]", "a", Err(BadPattern)),
            ("[", "a", Err(BadPattern)),
            ("[^", "a", Err(BadPattern)),
            ("[^bc", "a", Err(BadPattern)),
            ("a[", "a", Err(BadPattern)),
            ("a[", "ab", Err(BadPattern)),
            ("a[", "x", Err(BadPattern)),
            ("a/b[", "x", Err(BadPattern)),
            ("*x", "xxx", Ok(true)),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(
                matches(pattern, name),
                *want,
                "Match({pattern:?}, {name:?})"
            );
        }
    }

    #[test]
    fn clean_is_gos() {
        let cases = [
            ("", "."),
            ("./a.json", "a.json"),
            ("a//b/./c", "a/b/c"),
            ("a/../b", "b"),
            ("../a", "../a"),
            ("/../a", "/a"),
            ("/", "/"),
            ("dir/", "dir"),
        ];
        for (input, want) in cases {
            assert_eq!(clean(input), want, "{input:?}");
        }
    }

    #[test]
    fn glob_lists_sorted_matches_and_skips_missing_dirs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_str().expect("utf-8 temp dir");
        for sub in ["x", "y", "z"] {
            std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
        }
        for f in ["x/b.json", "x/a.json", "x/a.yml", "y/c.json", "z/d.txt"] {
            std::fs::write(dir.path().join(f), "[]").expect("write");
        }
        let rel = |paths: Vec<String>| -> Vec<String> {
            paths
                .into_iter()
                .map(|p| p.strip_prefix(root).unwrap_or(&p).to_string())
                .collect()
        };
        assert_eq!(
            rel(glob(&format!("{root}/x/*.json")).expect("ok")),
            ["/x/a.json", "/x/b.json"]
        );
        assert_eq!(
            rel(glob(&format!("{root}/*/*.json")).expect("ok")),
            ["/x/a.json", "/x/b.json", "/y/c.json"]
        );
        assert_eq!(
            rel(glob(&format!("{root}/x/a.yml")).expect("ok")),
            ["/x/a.yml"]
        );
        assert!(glob(&format!("{root}/nope/*.json")).expect("ok").is_empty());
        assert!(
            glob(&format!("{root}/x/missing.json"))
                .expect("ok")
                .is_empty()
        );
        assert_eq!(glob(&format!("{root}/x/[.json")), Err(BadPattern));
    }
}
