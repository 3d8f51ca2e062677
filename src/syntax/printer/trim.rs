//! Stage 3: drop trailing blanks and the escape characters, and turn the column separators into
//! tabs. It runs after the aligner because the escapes protect text from the aligner until then.

use super::ESCAPE;

pub(super) fn trim_blanks(input: &[u8]) -> String {
    let mut out = Vec::with_capacity(input.len());
    let mut pending: Vec<u8> = Vec::new();
    let mut escaped = false;
    for &b in input {
        if escaped {
            if b == ESCAPE {
                escaped = false;
            } else {
                out.push(b);
            }
            continue;
        }
        match b {
            b' ' | b'\t' => pending.push(b),
            b'\x0b' => pending.push(b'\t'),
            b'\n' | b'\x0c' => {
                pending.clear();
                out.push(b'\n');
            }
            ESCAPE => {
                out.append(&mut pending);
                escaped = true;
            }
            _ => {
                out.append(&mut pending);
                out.push(b);
            }
        }
    }
    match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}
