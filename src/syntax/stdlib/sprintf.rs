//! Go's `fmt.Sprintf` over Alloy values (the stdlib's `format`): Alloy decodes its arguments
//! into Go values and hands them to Go's `fmt`, so flags, verbs, widths and error notation are
//! Go's, and so is the float formatting of `strconv` underneath.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::super::eval::format_float;
use super::super::value::{Number, Value};
use crate::gocompat;

/// An Alloy value as the Go value `fmt` sees after Alloy decodes it into `any`.
enum GoArg<'a> {
    Nil,
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'a str),
    Bool(bool),
    Slice(&'a [Value]),
    Map(&'a BTreeMap<String, Value>),
    /// Functions and capsules: printed as an opaque description.
    Opaque(&'static str, String),
}

impl<'a> GoArg<'a> {
    fn of(v: &'a Value) -> GoArg<'a> {
        match v {
            Value::Null => GoArg::Nil,
            Value::Number(Number::Int(i)) => GoArg::Int(*i),
            // decodeAny: a uint that fits an int becomes an int.
            Value::Number(Number::Uint(u)) if *u <= i64::MAX as u64 => GoArg::Int(*u as i64),
            Value::Number(Number::Uint(u)) => GoArg::Uint(*u),
            Value::Number(Number::Float(f)) => GoArg::Float(*f),
            Value::String(s) => GoArg::Str(s),
            // The caller turns the result into a secret.
            Value::Secret(s) => GoArg::Str(s.expose()),
            Value::Bool(b) => GoArg::Bool(*b),
            Value::Array(a) => GoArg::Slice(a),
            Value::Object(m) => GoArg::Map(m),
            Value::Function(f) => GoArg::Opaque("func", format!("function({})", f.name)),
            Value::Capsule(c) => GoArg::Opaque("capsule", format!("capsule({})", c.type_name)),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            GoArg::Nil => "<nil>",
            GoArg::Int(_) => "int",
            GoArg::Uint(_) => "uint64",
            GoArg::Float(_) => "float64",
            GoArg::Str(_) => "string",
            GoArg::Bool(_) => "bool",
            GoArg::Slice(_) => "[]interface {}",
            GoArg::Map(_) => "map[string]interface {}",
            GoArg::Opaque(t, _) => t,
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

struct Printer {
    buf: String,
    f: Flags,
}

const LDIGITS: &[u8; 16] = b"0123456789abcdef";
const UDIGITS: &[u8; 16] = b"0123456789ABCDEF";

fn too_large(n: i64) -> bool {
    !(-1_000_000..=1_000_000).contains(&n)
}

/// Parses a decimal number at `s[i..end]` like Go's `parsenum`.
fn parsenum(s: &[u8], mut i: usize, end: usize) -> (Option<usize>, usize) {
    if i >= end || !s[i].is_ascii_digit() {
        return (None, i);
    }
    let mut num: i64 = 0;
    while i < end && s[i].is_ascii_digit() {
        num = num * 10 + i64::from(s[i] - b'0');
        if too_large(num) {
            return (None, end);
        }
        i += 1;
    }
    (Some(num as usize), i)
}

/// Go's `fmt.Sprintf` over Alloy values: flags `+ - # space 0`, width and precision (also
/// `*`), explicit argument indexes `%[n]v`, verbs `v T t b c d o O q x X U e E f F g G s %`,
/// and Go's error notation (`%!d(string=x)`, `%!v(MISSING)`, `%!(EXTRA int=1)`).
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let args: Vec<GoArg<'_>> = args.iter().map(GoArg::of).collect();
    let s = format.as_bytes();
    let end = s.len();
    let mut p = Printer {
        buf: String::new(),
        f: Flags::default(),
    };
    let mut arg_num = 0usize;
    let mut reordered = false;
    let mut i = 0;
    while i < end {
        let mut good_arg_num = true;
        let lasti = i;
        while i < end && s[i] != b'%' {
            i += 1;
        }
        if i > lasti {
            p.buf.push_str(&format[lasti..i]);
        }
        if i >= end {
            break;
        }
        i += 1; // skip '%'
        p.f = Flags::default();
        // Flags.
        while i < end {
            match s[i] {
                b'#' => p.f.sharp = true,
                b'0' => p.f.zero = !p.f.minus,
                b'+' => p.f.plus = true,
                b'-' => {
                    p.f.minus = true;
                    p.f.zero = false;
                }
                b' ' => p.f.space = true,
                _ => break,
            }
            i += 1;
        }
        // Argument index.
        let mut after_index;
        (arg_num, i, after_index) =
            arg_number(arg_num, s, i, args.len(), &mut reordered, &mut good_arg_num);
        // Width.
        if i < end && s[i] == b'*' {
            i += 1;
            let (w, ok, next) = int_from_arg(&args, arg_num);
            arg_num = next;
            if !ok {
                p.buf.push_str("%!(BADWIDTH)");
            } else if w < 0 {
                p.f.wid = Some(w.unsigned_abs() as usize);
                p.f.minus = true;
                p.f.zero = false;
            } else {
                p.f.wid = Some(w as usize);
            }
            after_index = false;
        } else {
            let (w, next) = parsenum(s, i, end);
            p.f.wid = w;
            i = next;
            if after_index && w.is_some() {
                good_arg_num = false;
            }
        }
        // Precision.
        if i + 1 < end && s[i] == b'.' {
            i += 1;
            if after_index {
                good_arg_num = false;
            }
            (arg_num, i, after_index) =
                arg_number(arg_num, s, i, args.len(), &mut reordered, &mut good_arg_num);
            if i < end && s[i] == b'*' {
                i += 1;
                let (pr, ok, next) = int_from_arg(&args, arg_num);
                arg_num = next;
                if pr < 0 || !ok {
                    p.f.prec = None;
                    if !ok {
                        p.buf.push_str("%!(BADPREC)");
                    }
                } else {
                    p.f.prec = Some(pr as usize);
                }
                after_index = false;
            } else {
                let (pr, next) = parsenum(s, i, end);
                i = next;
                p.f.prec = Some(pr.unwrap_or(0));
            }
        }
        if !after_index {
            (arg_num, i, _) =
                arg_number(arg_num, s, i, args.len(), &mut reordered, &mut good_arg_num);
        }
        if i >= end {
            p.buf.push_str("%!(NOVERB)");
            break;
        }
        let Some(verb) = format[i..].chars().next() else {
            break;
        };
        i += verb.len_utf8();
        match verb {
            '%' => p.buf.push('%'),
            _ if !good_arg_num => {
                let _ = write!(p.buf, "%!{verb}(BADINDEX)");
            }
            _ if arg_num >= args.len() => {
                let _ = write!(p.buf, "%!{verb}(MISSING)");
            }
            _ => {
                if verb == 'v' {
                    p.f.sharp_v = p.f.sharp;
                    p.f.sharp = false;
                    p.f.plus_v = p.f.plus;
                    p.f.plus = false;
                }
                p.print_arg(&args[arg_num], verb, 0);
                arg_num += 1;
            }
        }
    }
    if !reordered && arg_num < args.len() {
        p.f = Flags::default();
        p.buf.push_str("%!(EXTRA ");
        for (k, a) in args[arg_num..].iter().enumerate() {
            if k > 0 {
                p.buf.push_str(", ");
            }
            if let GoArg::Nil = a {
                p.buf.push_str("<nil>");
            } else {
                p.buf.push_str(a.type_name());
                p.buf.push('=');
                p.print_arg(a, 'v', 0);
            }
        }
        p.buf.push(')');
    }
    p.buf
}

/// Go's `argNumber`: an explicit `[n]` index.
fn arg_number(
    arg_num: usize,
    s: &[u8],
    i: usize,
    num_args: usize,
    reordered: &mut bool,
    good: &mut bool,
) -> (usize, usize, bool) {
    if i >= s.len() || s[i] != b'[' {
        return (arg_num, i, false);
    }
    *reordered = true;
    // parseArgNumber
    let rest = &s[i..];
    if rest.len() < 3 {
        *good = false;
        return (arg_num, i + 1, false);
    }
    for j in 1..rest.len() {
        if rest[j] == b']' {
            let (n, newi) = parsenum(rest, 1, j);
            return match n {
                Some(n) if newi == j && n >= 1 && n - 1 < num_args => (n - 1, i + j + 1, true),
                Some(_) if newi == j => {
                    *good = false;
                    (arg_num, i + j + 1, true)
                }
                _ => {
                    *good = false;
                    (arg_num, i + j + 1, false)
                }
            };
        }
    }
    *good = false;
    (arg_num, i + 1, false)
}

/// Go's `intFromArg` for `*` widths and precisions.
fn int_from_arg(args: &[GoArg<'_>], arg_num: usize) -> (i64, bool, usize) {
    if arg_num >= args.len() {
        return (0, false, arg_num);
    }
    let (n, ok) = match args[arg_num] {
        GoArg::Int(i) => (i, true),
        GoArg::Uint(u) if u <= i64::MAX as u64 => (u as i64, true),
        _ => (0, false),
    };
    if too_large(n) {
        return (0, false, arg_num + 1);
    }
    (n, ok, arg_num + 1)
}

impl Printer {
    fn write_padding(&mut self, n: usize) {
        let c = if self.f.zero && !self.f.minus {
            '0'
        } else {
            ' '
        };
        for _ in 0..n {
            self.buf.push(c);
        }
    }

    /// Pads to the width, counting runes like Go.
    fn pad(&mut self, s: &str) {
        let Some(wid) = self.f.wid else {
            self.buf.push_str(s);
            return;
        };
        let n = s.chars().count();
        let fill = wid.saturating_sub(n);
        if self.f.minus {
            self.buf.push_str(s);
            self.write_padding(fill);
        } else {
            self.write_padding(fill);
            self.buf.push_str(s);
        }
    }

    fn bad_verb(&mut self, a: &GoArg<'_>, verb: char) {
        let _ = write!(self.buf, "%!{verb}(");
        match a {
            GoArg::Nil => self.buf.push_str("<nil>"),
            _ => {
                self.buf.push_str(a.type_name());
                self.buf.push('=');
                self.print_arg(a, 'v', 0);
            }
        }
        self.buf.push(')');
    }

    fn print_arg(&mut self, a: &GoArg<'_>, verb: char, depth: usize) {
        if let GoArg::Nil = a {
            match verb {
                'T' | 'v' => self.pad("<nil>"),
                // Inside a slice or map, a nil element prints as <nil> whatever the verb.
                _ if depth > 0 => self.buf.push_str("<nil>"),
                _ => self.bad_verb(a, verb),
            }
            return;
        }
        if verb == 'T' {
            let t = a.type_name();
            self.fmt_s(t);
            return;
        }
        match *a {
            GoArg::Bool(b) => match verb {
                't' | 'v' => self.pad(if b { "true" } else { "false" }),
                _ => self.bad_verb(a, verb),
            },
            GoArg::Int(i) => self.fmt_integer(i as u64, true, verb, a),
            GoArg::Uint(u) => self.fmt_integer(u, false, verb, a),
            GoArg::Float(f) => self.fmt_float_verb(f, verb, a),
            GoArg::Str(s) => match verb {
                'v' if self.f.sharp_v => self.fmt_q(s),
                'v' | 's' => self.fmt_s(s),
                'x' => self.fmt_sx(s, LDIGITS),
                'X' => self.fmt_sx(s, UDIGITS),
                'q' => self.fmt_q(s),
                _ => self.bad_verb(a, verb),
            },
            GoArg::Slice(items) => {
                if self.f.sharp_v {
                    self.buf.push_str("[]interface {}{");
                    for (k, item) in items.iter().enumerate() {
                        if k > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_arg(&GoArg::of(item), verb, depth + 1);
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (k, item) in items.iter().enumerate() {
                        if k > 0 {
                            self.buf.push(' ');
                        }
                        self.print_arg(&GoArg::of(item), verb, depth + 1);
                    }
                    self.buf.push(']');
                }
            }
            GoArg::Map(m) => {
                if self.f.sharp_v {
                    self.buf.push_str("map[string]interface {}{");
                } else {
                    self.buf.push_str("map[");
                }
                for (k, (key, item)) in m.iter().enumerate() {
                    if k > 0 {
                        self.buf.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    self.print_arg(&GoArg::Str(key), verb, depth + 1);
                    self.buf.push(':');
                    self.print_arg(&GoArg::of(item), verb, depth + 1);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
            GoArg::Opaque(_, ref text) => match verb {
                'v' | 's' => self.pad(&text.clone()),
                _ => self.bad_verb(a, verb),
            },
            GoArg::Nil => {}
        }
    }

    fn fmt_s(&mut self, s: &str) {
        let s = match self.f.prec {
            Some(p) => match s.char_indices().nth(p) {
                Some((idx, _)) => &s[..idx],
                None => s,
            },
            None => s,
        };
        self.pad(s);
    }

    fn fmt_sx(&mut self, s: &str, digits: &[u8; 16]) {
        let bytes = s.as_bytes();
        let mut length = bytes.len();
        if let Some(p) = self.f.prec
            && p < length
        {
            length = p;
        }
        let mut width = 2 * length;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += length - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if let Some(w) = self.f.wid {
                self.write_padding(w);
            }
            return;
        }
        let wid = self.f.wid.unwrap_or(0);
        if wid > width && !self.f.minus {
            self.write_padding(wid - width);
        }
        // Go's digit tables end in 'x'/'X' for the prefix; ours stop at 'f'/'F'.
        let x = if digits == UDIGITS { 'X' } else { 'x' };
        if self.f.sharp {
            self.buf.push('0');
            self.buf.push(x);
        }
        for (k, &c) in bytes[..length].iter().enumerate() {
            if self.f.space && k > 0 {
                self.buf.push(' ');
                if self.f.sharp {
                    self.buf.push('0');
                    self.buf.push(x);
                }
            }
            self.buf.push(digits[(c >> 4) as usize] as char);
            self.buf.push(digits[(c & 0xf) as usize] as char);
        }
        if wid > width && self.f.minus {
            self.write_padding(wid - width);
        }
    }

    fn fmt_q(&mut self, s: &str) {
        let s = match self.f.prec {
            Some(p) => match s.char_indices().nth(p) {
                Some((idx, _)) => &s[..idx],
                None => s,
            },
            None => s,
        };
        if self.f.sharp && can_backquote(s) {
            let q = format!("`{s}`");
            self.pad(&q);
            return;
        }
        let q = if self.f.plus {
            gocompat::quote_ascii(s)
        } else {
            gocompat::quote(s)
        };
        self.pad(&q);
    }

    fn fmt_integer(&mut self, u: u64, signed: bool, verb: char, a: &GoArg<'_>) {
        match verb {
            'v' if self.f.sharp_v && !signed => {
                // Go prints unsigned ints in %#v as 0x hex.
                let saved = self.f.sharp;
                self.f.sharp = true;
                self.fmt_int_base(u, 16, signed, 'v', LDIGITS);
                self.f.sharp = saved;
            }
            'v' | 'd' => self.fmt_int_base(u, 10, signed, verb, LDIGITS),
            'b' => self.fmt_int_base(u, 2, signed, verb, LDIGITS),
            'o' | 'O' => self.fmt_int_base(u, 8, signed, verb, LDIGITS),
            'x' => self.fmt_int_base(u, 16, signed, verb, LDIGITS),
            'X' => self.fmt_int_base(u, 16, signed, verb, UDIGITS),
            'c' => {
                let c = char::from_u32(u32::try_from(u).unwrap_or(0xFFFD)).unwrap_or('\u{FFFD}');
                self.pad(&c.to_string());
            }
            'q' => {
                let c = char::from_u32(u32::try_from(u).unwrap_or(0xFFFD)).unwrap_or('\u{FFFD}');
                let q = gocompat::quote_rune(c, self.f.plus);
                self.pad(&q);
            }
            'U' => {
                let mut s = format!("U+{u:04X}");
                if self.f.sharp
                    && let Some(c) = char::from_u32(u32::try_from(u).unwrap_or(0xFFFD))
                    && gocompat::is_print(c)
                {
                    let _ = write!(s, " '{c}'");
                }
                self.pad(&s);
            }
            _ => self.bad_verb(a, verb),
        }
    }

    fn fmt_int_base(&mut self, u: u64, base: u64, signed: bool, verb: char, digits: &[u8; 16]) {
        let negative = signed && (u as i64) < 0;
        let mut u = if negative {
            (u as i64).unsigned_abs()
        } else {
            u
        };
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && u == 0 {
                let old = self.f.zero;
                self.f.zero = false;
                if let Some(w) = self.f.wid {
                    self.write_padding(w);
                }
                self.f.zero = old;
                return;
            }
        } else if self.f.zero && !self.f.minus && self.f.wid.is_some() {
            prec = self.f.wid.unwrap_or(0);
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut out: Vec<u8> = Vec::new();
        loop {
            out.push(digits[(u % base) as usize]);
            u /= base;
            if u == 0 {
                break;
            }
        }
        while out.len() < prec {
            out.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => out.extend_from_slice(b"b0"),
                8 if out.last() != Some(&b'0') => out.push(b'0'),
                16 => {
                    out.push(if digits == UDIGITS { b'X' } else { b'x' });
                    out.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            out.extend_from_slice(b"o0");
        }
        if negative {
            out.push(b'-');
        } else if self.f.plus {
            out.push(b'+');
        } else if self.f.space {
            out.push(b' ');
        }
        out.reverse();
        let s = String::from_utf8_lossy(&out).into_owned();
        let old = self.f.zero;
        self.f.zero = false;
        self.pad(&s);
        self.f.zero = old;
    }

    fn fmt_float_verb(&mut self, v: f64, verb: char, a: &GoArg<'_>) {
        match verb {
            'v' => self.fmt_float(v, 'g', None),
            'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(v, verb, None),
            'f' | 'e' | 'E' | 'F' => self.fmt_float(v, verb, Some(6)),
            _ => self.bad_verb(a, verb),
        }
    }

    fn fmt_float(&mut self, v: f64, verb: char, default_prec: Option<usize>) {
        let prec = self.f.prec.or(default_prec);
        let body = go_format_float(v, verb, prec);
        // Go formats with a leading sign slot, then decides whether to show it.
        let mut num = if body.starts_with('-') || body.starts_with('+') {
            body
        } else {
            format!("+{body}")
        };
        if self.f.space && num.starts_with('+') && !self.f.plus {
            num.replace_range(0..1, " ");
        }
        let second = num.as_bytes().get(1).copied();
        if second == Some(b'I') || second == Some(b'N') {
            let old = self.f.zero;
            self.f.zero = false;
            if second == Some(b'N') && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            self.pad(&num);
            self.f.zero = old;
            return;
        }
        if self.f.plus || !num.starts_with('+') {
            if self.f.zero
                && !self.f.minus
                && let Some(w) = self.f.wid
                && w > num.len()
            {
                let sign = num.remove(0);
                self.buf.push(sign);
                self.write_padding(w - num.len() - 1);
                self.buf.push_str(&num);
                return;
            }
            self.pad(&num);
            return;
        }
        self.pad(&num[1..]);
    }
}

/// Go's `strconv.CanBackquote`.
fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !(c < ' ' || c == '\u{7f}')))
}

/// Go's `strconv.FormatFloat(v, verb, prec, 64)` for the verbs fmt passes through
/// (`e E f F g G b x X`), and fmt's `%!verb(float64=…)` for any other.
pub fn go_format_float(v: f64, verb: char, prec: Option<usize>) -> String {
    gocompat::strconv::format_float(v, verb, prec)
        .unwrap_or_else(|| format!("%!{verb}(float64={})", format_float(v)))
}
