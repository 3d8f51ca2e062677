//! Alloy's `demangle` modes, applied to names blazesym has already demangled.
//!
//! Alloy passes every name through `github.com/ianlancetaylor/demangle` with, per mode:
//! `full` → `NoClones`; `templates` → `NoParams, NoEnclosingParams`; `simplified` → `NoParams,
//! NoEnclosingParams, NoTemplateParams`; `none` → the symbol as it is. blazesym can only
//! demangle fully (C++ with parameter lists, Rust without the hash, as Go's demangler also
//! prints legacy Rust names), so the other modes are derived here by editing that text:
//! * clone suffixes (` [clone .constprop.0]`) are dropped in every demangled mode;
//! * `templates` drops parameter lists, those of enclosing functions too (`f(int)::x` → `f::x`),
//!   anything after the last list (` const`, `&&`), and the return type template functions
//!   carry (`int f<int>(int)` → `f<int>`);
//! * `simplified` also drops template and generic arguments (`std::vector<int>::push_back` →
//!   `std::vector::push_back`, Rust `f::<u8>` → `f`), keeping Rust's `<T as Trait>` paths.
//!
//! Names that do not parse as expected (unbalanced brackets) are left fully demangled rather
//! than cut at a guess. Go names never come through here: they are not mangled, and their
//! `(*T).m` receivers would read as parameter lists.

use std::fmt;
use std::str::FromStr;

/// The `demangle` argument of `pyroscope.ebpf`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Demangle {
    /// Symbol names exactly as in the symbol table (Alloy's default).
    #[default]
    None,
    /// Demangled, without parameter lists, template arguments or return types.
    Simplified,
    /// Demangled, keeping template arguments but not parameter lists.
    Templates,
    /// Fully demangled.
    Full,
}

impl Demangle {
    pub fn as_str(self) -> &'static str {
        match self {
            Demangle::None => "none",
            Demangle::Simplified => "simplified",
            Demangle::Templates => "templates",
            Demangle::Full => "full",
        }
    }
}

impl fmt::Display for Demangle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid demangle value {0:?}: must be one of \"none\", \"simplified\", \"templates\", \"full\""
)]
pub struct ParseDemangleError(pub String);

/// Configuration validation reports errors as text.
impl From<ParseDemangleError> for String {
    fn from(e: ParseDemangleError) -> String {
        e.to_string()
    }
}

impl FromStr for Demangle {
    type Err = ParseDemangleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Demangle::None),
            "simplified" => Ok(Demangle::Simplified),
            "templates" => Ok(Demangle::Templates),
            "full" => Ok(Demangle::Full),
            other => Err(ParseDemangleError(other.to_owned())),
        }
    }
}

/// Shapes a name blazesym returned (demangled unless `mode` is `None`) for `mode`.
pub(crate) fn shape(name: &str, mode: Demangle) -> String {
    match mode {
        Demangle::None => name.to_owned(),
        Demangle::Full => strip_clones(name).to_owned(),
        Demangle::Templates => simplify(strip_clones(name), false),
        Demangle::Simplified => simplify(strip_clones(name), true),
    }
}

fn strip_clones(mut name: &str) -> &str {
    while name.ends_with(']') {
        match name.rfind(" [clone ") {
            Some(i) => name = &name[..i],
            None => break,
        }
    }
    name
}

fn simplify(name: &str, drop_templates: bool) -> String {
    let Some(no_params) = strip_params(name.as_bytes()) else {
        return name.to_owned();
    };
    let shaped = if drop_templates {
        match strip_templates(&no_params) {
            Some(s) => s,
            None => return name.to_owned(),
        }
    } else {
        no_params
    };
    if shaped.is_empty() {
        return name.to_owned();
    }
    String::from_utf8(shaped).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Drops parameter lists and, for template functions, the return type in front of the name.
fn strip_params(b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(b.len());
    let mut removed = false;
    let mut i = 0;
    while i < b.len() {
        if let Some(n) = operator_len(b, i) {
            out.extend_from_slice(&b[i..i + n]);
            i += n;
            continue;
        }
        match b[i] {
            b'(' => {
                let close = matching(b, i)?;
                if &b[i + 1..close] == b"anonymous namespace" {
                    out.extend_from_slice(&b[i..=close]);
                    i = close + 1;
                    continue;
                }
                removed = true;
                i = close + 1;
                if !b[i..].starts_with(b"::") {
                    // The function's own list: what follows are qualifiers (` const`, `&&`).
                    break;
                }
            }
            b'<' | b'[' | b'{' => {
                let close = matching(b, i)?;
                out.extend_from_slice(&b[i..=close]);
                i = close + 1;
            }
            b'-' if b.get(i + 1) == Some(&b'>') => {
                out.extend_from_slice(b"->");
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    if removed
        && out.last() == Some(&b'>')
        && let Some(space) = last_top_level_space(&out)?
    {
        out.drain(..=space);
    }
    Some(out)
}

/// The last space outside brackets and before any `operator` keyword: what precedes it is a
/// template function's return type.
fn last_top_level_space(b: &[u8]) -> Option<Option<usize>> {
    let mut last = None;
    let mut i = 0;
    while i < b.len() {
        if operator_len(b, i).is_some() {
            break;
        }
        match b[i] {
            b'(' | b'<' | b'[' | b'{' => i = matching(b, i)? + 1,
            b'-' if b.get(i + 1) == Some(&b'>') => i += 2,
            b' ' => {
                last = Some(i);
                i += 1;
            }
            _ => i += 1,
        }
    }
    Some(last)
}

/// Drops template/generic argument lists; keeps Rust's qualified paths (`<T as Trait>::f`).
fn strip_templates(b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if let Some(n) = operator_len(b, i) {
            out.extend_from_slice(&b[i..i + n]);
            i += n;
            // `operator< <int>`: the demangler separates an operator's arguments by a space.
            if b[i..].starts_with(b" <") {
                i = matching(b, i + 1)? + 1;
            }
            continue;
        }
        match b[i] {
            b'<' => {
                let close = matching(b, i)?;
                if out.ends_with(b"::") {
                    // Rust turbofish `f::<T>`.
                    out.truncate(out.len() - 2);
                    i = close + 1;
                } else if out
                    .last()
                    .is_some_and(|&c| is_ident(c) || c == b'>' || c == b']')
                {
                    i = close + 1;
                } else {
                    out.push(b'<');
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'>') => {
                out.extend_from_slice(b"->");
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Length of a C++ operator name starting at `i` (`operator<<`, `operator()`, `operator new`
/// → just the keyword), so that its symbols are not read as brackets.
fn operator_len(b: &[u8], i: usize) -> Option<usize> {
    const KW: &[u8] = b"operator";
    if !b[i..].starts_with(KW) || (i > 0 && is_ident(b[i - 1])) {
        return None;
    }
    let j = i + KW.len();
    match b.get(j) {
        Some(&c) if is_ident(c) => None,
        _ if b[j..].starts_with(b"()") || b[j..].starts_with(b"[]") => Some(KW.len() + 2),
        _ => {
            let run = b[j..]
                .iter()
                .take_while(|c| b"<>=!+-*/%^&|~,".contains(c))
                .count();
            Some(KW.len() + run)
        }
    }
}

/// Index of the bracket closing the one at `open`, across all four bracket kinds.
fn matching(b: &[u8], open: usize) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    let mut i = open;
    while i < b.len() {
        if let Some(n) = operator_len(b, i) {
            i += n;
            continue;
        }
        match b[i] {
            b'-' if b.get(i + 1) == Some(&b'>') => {
                i += 2;
                continue;
            }
            c @ (b'(' | b'<' | b'[' | b'{') => stack.push(c),
            c @ (b')' | b'>' | b']' | b'}') => {
                let want = match c {
                    b')' => b'(',
                    b'>' => b'<',
                    b']' => b'[',
                    _ => b'{',
                };
                if stack.pop() != Some(want) {
                    return None;
                }
                if stack.is_empty() {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_alloy_values() {
        let cases: &[(&str, Option<Demangle>)] = &[
            ("none", Some(Demangle::None)),
            ("simplified", Some(Demangle::Simplified)),
            ("templates", Some(Demangle::Templates)),
            ("full", Some(Demangle::Full)),
            ("Full", None),
            ("", None),
            ("bogus", None),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<Demangle>().ok(), *want, "{input:?}");
        }
        for mode in [
            Demangle::None,
            Demangle::Simplified,
            Demangle::Templates,
            Demangle::Full,
        ] {
            assert_eq!(mode.to_string().parse::<Demangle>(), Ok(mode));
        }
        let err = "bogus".parse::<Demangle>().expect_err("rejected");
        assert_eq!(
            err.to_string(),
            "invalid demangle value \"bogus\": must be one of \"none\", \"simplified\", \"templates\", \"full\""
        );
        assert_eq!(Demangle::default(), Demangle::None);
    }

    #[test]
    fn shapes_demangled_names() {
        // (fully demangled input, templates, simplified)
        let cases: &[(&str, &str, &str)] = &[
            ("main", "main", "main"),
            (
                "hot_spin.constprop.0",
                "hot_spin.constprop.0",
                "hot_spin.constprop.0",
            ),
            (
                "app::hot::Worker<unsigned long>::crunch(unsigned long)",
                "app::hot::Worker<unsigned long>::crunch",
                "app::hot::Worker::crunch",
            ),
            (
                "int app::hot::twice<int>(int)",
                "app::hot::twice<int>",
                "app::hot::twice",
            ),
            (
                "std::vector<int, std::allocator<int> > const& pick<std::vector<int, std::allocator<int> > >(std::vector<int, std::allocator<int> > const&)",
                "pick<std::vector<int, std::allocator<int> > >",
                "pick",
            ),
            ("unsigned long ns::f<char>(char)", "ns::f<char>", "ns::f"),
            ("Foo::bar(int) const", "Foo::bar", "Foo::bar"),
            ("Foo::bar() &&", "Foo::bar", "Foo::bar"),
            ("foo(int) [clone .constprop.0]", "foo", "foo"),
            ("foo() [clone .isra.0] [clone .cold]", "foo", "foo"),
            (
                "(anonymous namespace)::helper(char const*)",
                "(anonymous namespace)::helper",
                "(anonymous namespace)::helper",
            ),
            (
                "outer(int)::{lambda(int)#1}::operator()(int) const",
                "outer::{lambda(int)#1}::operator()",
                "outer::{lambda(int)#1}::operator()",
            ),
            (
                "Foo::operator<(Foo const&) const",
                "Foo::operator<",
                "Foo::operator<",
            ),
            ("Foo::operator<<(int)", "Foo::operator<<", "Foo::operator<<"),
            (
                "Foo::operator->() const",
                "Foo::operator->",
                "Foo::operator->",
            ),
            (
                "Foo::operator bool() const",
                "Foo::operator bool",
                "Foo::operator bool",
            ),
            (
                "operator new(unsigned long)",
                "operator new",
                "operator new",
            ),
            (
                "operator delete[](void*)",
                "operator delete[]",
                "operator delete[]",
            ),
            (
                "bool operator< <int>(A<int> const&, A<int> const&)",
                "operator< <int>",
                "operator<",
            ),
            (
                "std::function<void (int)>::operator()(int) const",
                "std::function<void (int)>::operator()",
                "std::function::operator()",
            ),
            (
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)",
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create",
                "std::__cxx11::basic_string::_M_create",
            ),
            (
                "vtable for Foo<int>",
                "vtable for Foo<int>",
                "vtable for Foo",
            ),
            ("foo[abi:cxx11](int)", "foo[abi:cxx11]", "foo[abi:cxx11]"),
            // Rust, as blazesym prints it (no hash).
            (
                "<busy_rs::Lcg<T> as busy_rs::Crunch>::crunch",
                "<busy_rs::Lcg<T> as busy_rs::Crunch>::crunch",
                "<busy_rs::Lcg as busy_rs::Crunch>::crunch",
            ),
            (
                "core::ptr::drop_in_place<alloc::vec::Vec<u8>>",
                "core::ptr::drop_in_place<alloc::vec::Vec<u8>>",
                "core::ptr::drop_in_place",
            ),
            (
                "core::ptr::drop_in_place::<alloc::vec::Vec<u8>>",
                "core::ptr::drop_in_place::<alloc::vec::Vec<u8>>",
                "core::ptr::drop_in_place",
            ),
            (
                "std::rt::lang_start::{{closure}}",
                "std::rt::lang_start::{{closure}}",
                "std::rt::lang_start::{{closure}}",
            ),
            (
                "<&mut I as core::iter::traits::iterator::Iterator>::next",
                "<&mut I as core::iter::traits::iterator::Iterator>::next",
                "<&mut I as core::iter::traits::iterator::Iterator>::next",
            ),
            (
                "<(A, B) as core::fmt::Debug>::fmt",
                "<(A, B) as core::fmt::Debug>::fmt",
                "<(A, B) as core::fmt::Debug>::fmt",
            ),
            // Unbalanced: left alone.
            ("broken<(int", "broken<(int", "broken<(int"),
        ];
        for (full, templates, simplified) in cases {
            assert_eq!(
                shape(full, Demangle::Templates),
                *templates,
                "templates of {full}"
            );
            assert_eq!(
                shape(full, Demangle::Simplified),
                *simplified,
                "simplified of {full}"
            );
            assert_eq!(shape(full, Demangle::None), *full);
        }
        assert_eq!(
            shape("foo(int) [clone .constprop.0]", Demangle::Full),
            "foo(int)"
        );
    }
}
