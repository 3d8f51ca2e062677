//! Lowering our parse tree to the engine's `Hir`.
//!
//! The tree already carries Go's meaning, so this is a mechanical translation; it lives on its
//! own because it is the only place that knows the engine's representation, and because it
//! builds two variants (full Unicode and ASCII-specialised) from one tree.

use regex_syntax::hir::{self, Class, ClassUnicode, ClassUnicodeRange, Dot, Hir, Repetition};

use super::parse::Node;

/// Builds the engine's HIR. With `ascii`, the HIR is specialised for haystacks known to be
/// ASCII: every class is intersected with ASCII, `.` becomes an ASCII class and non-ASCII
/// literals can never match. On an ASCII haystack it matches exactly like the full HIR (a
/// character outside ASCII cannot occur there), but compiles to single-byte transitions
/// instead of UTF-8 sequence automata, which makes submatch extraction several times cheaper.
/// Label names and most values (addresses, ports, Kubernetes names) are ASCII.
pub(super) fn to_hir(node: &Node, ascii: bool) -> Hir {
    let ascii_class = |mut c: ClassUnicode| {
        if ascii {
            c.intersect(&ClassUnicode::new([ClassUnicodeRange::new('\0', '\x7f')]));
        }
        Hir::class(Class::Unicode(c))
    };
    match node {
        Node::Empty => Hir::empty(),
        Node::Literal(c) if ascii && !c.is_ascii() => Hir::fail(),
        Node::Literal(c) => {
            let mut buf = [0u8; 4];
            Hir::literal(c.encode_utf8(&mut buf).as_bytes())
        }
        Node::Class(c) => ascii_class(c.clone()),
        Node::Never => Hir::fail(),
        Node::AnyChar if ascii => {
            ascii_class(ClassUnicode::new([ClassUnicodeRange::new('\0', '\x7f')]))
        }
        Node::AnyChar => Hir::dot(Dot::AnyChar),
        Node::AnyCharNotNl if ascii => ascii_class(ClassUnicode::new([
            ClassUnicodeRange::new('\0', '\x09'),
            ClassUnicodeRange::new('\x0b', '\x7f'),
        ])),
        Node::AnyCharNotNl => Hir::dot(Dot::AnyCharExceptLF),
        Node::Look(l) => Hir::look(*l),
        Node::Capture { index, sub } => Hir::capture(hir::Capture {
            index: *index,
            name: None,
            sub: Box::new(to_hir(sub, ascii)),
        }),
        Node::Repeat {
            min,
            max,
            greedy,
            sub,
        } => Hir::repetition(Repetition {
            min: *min,
            max: *max,
            greedy: *greedy,
            sub: Box::new(to_hir(sub, ascii)),
        }),
        Node::Concat(v) => Hir::concat(v.iter().map(|n| to_hir(n, ascii)).collect()),
        Node::Alternate(v) => Hir::alternation(v.iter().map(|n| to_hir(n, ascii)).collect()),
    }
}
