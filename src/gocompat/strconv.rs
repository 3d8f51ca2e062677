//! Go's `strconv.FormatFloat` for float64: every format `fmt` uses, and the shortest decimal
//! as Go picks it.
//!
//! Rust's shortest formatting and Go's agree on the number of digits, but when two decimals of
//! that length are equally close to the float (its exact value lies halfway between them)
//! Rust may take the upper one; Go takes the even one, as correctly rounding the exact value
//! to that many digits does. `tests/gocompat_oracle.rs` found such floats
//! (1394865425023536.25 is `…536.2` in Go, `…536.3` in Rust's `Display`) and checks the fix
//! over a quarter of a million cases.

use std::fmt::Write as _;

/// The shortest round-tripping decimal of a finite `v` in Rust's `{:e}` layout
/// (`1.2345e6`, `-5e-7`), with Go's choice between equally close candidates.
pub fn shortest_sci(v: f64) -> String {
    let rust = format!("{v:e}");
    let mantissa = rust.split_once('e').map_or(rust.as_str(), |(m, _)| m);
    let digits = mantissa.bytes().filter(u8::is_ascii_digit).count();
    // Correctly rounded (ties to even on the exact binary value) to the same length: the
    // closest decimal of that length, hence Go's, whenever it still reads back as `v`.
    let exact = format!("{:.*e}", digits.saturating_sub(1), v);
    if exact.parse::<f64>() == Ok(v) && exact != rust {
        // `{:.Ne}` keeps trailing zeros that `{:e}` drops; a tie never ends in 0 (the even
        // candidate differs from the other in its last digit), so none are left to strip.
        exact
    } else {
        rust
    }
}

/// The same decimal without an exponent, as Go's `FormatFloat(v, 'f', -1, 64)` and Rust's
/// `Display` lay it out.
pub fn shortest_fixed(v: f64) -> String {
    let sci = shortest_sci(v);
    if sci == format!("{v:e}") {
        return format!("{v}");
    }
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    // The value is d.ddd × 10^exp: the decimal point goes after `exp + 1` digits.
    let point = exp + 1;
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(&digits);
    } else if point as usize >= digits.len() {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
    } else {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    }
    out
}

/// Splits Rust's `{:e}` output (`1.2345e6`, `-5e-7`) into sign, digits and decimal exponent.
fn sci_parts(s: &str) -> (bool, String, i32) {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    (neg, digits, exp.parse().unwrap_or(0))
}

/// `d.ddde±XX` from digits (first digit before the point) and exponent.
fn e_form(neg: bool, digits: &str, frac_digits: usize, exp: i32, upper: bool) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let mut chars = digits.chars();
    s.push(chars.next().unwrap_or('0'));
    if frac_digits > 0 {
        s.push('.');
        let rest: String = chars.collect();
        for k in 0..frac_digits {
            s.push(rest.as_bytes().get(k).map(|b| *b as char).unwrap_or('0'));
        }
    }
    s.push(if upper { 'E' } else { 'e' });
    s.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(s, "{:02}", exp.unsigned_abs());
    s
}

/// Fixed notation from digits `d1d2...` meaning `0.d1d2... × 10^dp`.
fn f_form(neg: bool, digits: &str, dp: i32, frac_digits: usize) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let d = digits.as_bytes();
    let digit = |k: i32| -> char {
        if k >= 0 && (k as usize) < d.len() {
            d[k as usize] as char
        } else {
            '0'
        }
    };
    if dp > 0 {
        for k in 0..dp {
            s.push(digit(k));
        }
    } else {
        s.push('0');
    }
    if frac_digits > 0 {
        s.push('.');
        for k in 0..frac_digits as i32 {
            s.push(digit(dp + k));
        }
    }
    s
}

/// `FormatFloat(v, 'e', -1, 64)`.
pub fn format_e_shortest(v: f64) -> String {
    let (neg, digits, exp) = sci_parts(&shortest_sci(v));
    e_form(neg, &digits, digits.len().saturating_sub(1), exp, false)
}

/// `strconv.FormatFloat(v, verb, prec, 64)` for the verbs `e E f g G b x X` (and fmt's `F`, an
/// alias of `f`); `None` precision means shortest (Go's -1). `None` for any other verb.
pub fn format_float(v: f64, verb: char, prec: Option<usize>) -> Option<String> {
    matches!(verb, 'e' | 'E' | 'f' | 'F' | 'g' | 'G' | 'b' | 'x' | 'X')
        .then(|| format_known(v, verb, prec))
}

fn format_known(v: f64, verb: char, prec: Option<usize>) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    match verb {
        'e' | 'E' => match prec {
            Some(p) => {
                let (neg, digits, exp) = sci_parts(&format!("{:.*e}", p, v));
                e_form(neg, &digits, p, exp, verb == 'E')
            }
            None => {
                let (neg, digits, exp) = sci_parts(&shortest_sci(v));
                e_form(
                    neg,
                    &digits,
                    digits.len().saturating_sub(1),
                    exp,
                    verb == 'E',
                )
            }
        },
        'f' | 'F' => match prec {
            Some(p) => format!("{:.*}", p, v),
            None => shortest_fixed(v),
        },
        'g' | 'G' => {
            let upper = verb == 'G';
            let (neg, mut digits, exp, eprec, prec_digits) = match prec {
                None => {
                    let (neg, digits, exp) = sci_parts(&shortest_sci(v));
                    let nd = digits.len();
                    (neg, digits, exp, 6usize, nd)
                }
                Some(p) => {
                    let p = p.max(1);
                    let (neg, digits, exp) = sci_parts(&format!("{:.*e}", p - 1, v));
                    (neg, digits, exp, p, p)
                }
            };
            // Go's decimal representation has no trailing zeros, and zero has no digits.
            while digits.ends_with('0') {
                digits.pop();
            }
            let nd = digits.len();
            let dp = if v == 0.0 { 0 } else { exp + 1 };
            let mut eprec = eprec;
            if prec.is_some() && eprec > nd && nd as i32 >= dp {
                eprec = nd;
            }
            let x = dp - 1;
            if x < -4 || x >= eprec as i32 {
                let p = prec_digits.min(nd);
                return e_form(neg, &digits, p.saturating_sub(1), x, upper);
            }
            let p = if prec_digits as i32 > dp {
                nd
            } else {
                prec_digits
            };
            let frac = (p as i32 - dp).max(0) as usize;
            f_form(neg, &digits, dp, frac)
        }
        'b' => {
            let bits = v.to_bits();
            let neg = bits >> 63 == 1;
            let exp = ((bits >> 52) & 0x7ff) as i64;
            let mut mant = bits & ((1u64 << 52) - 1);
            let e = if exp == 0 {
                -1074
            } else {
                mant |= 1u64 << 52;
                exp - 1075
            };
            format!(
                "{}{}p{}{}",
                if neg { "-" } else { "" },
                mant,
                if e >= 0 { "+" } else { "-" },
                e.abs()
            )
        }
        'x' | 'X' => format_hex_float(v, prec, verb == 'X'),
        // `format_float` lets no other verb through.
        _ => String::new(),
    }
}

/// Go's `%x` for floats (`strconv` `fmtX`): `-0x1.23abcp+20`.
fn format_hex_float(v: f64, prec: Option<usize>, upper: bool) -> String {
    let bits = v.to_bits();
    let neg = bits >> 63 == 1;
    let bexp = ((bits >> 52) & 0x7ff) as i64;
    let mut mant = bits & ((1u64 << 52) - 1);
    let mut exp = if bexp == 0 {
        // Denormalized.
        1 - 1023
    } else {
        mant |= 1u64 << 52;
        bexp - 1023
    };
    if mant == 0 {
        exp = 0;
    }
    // Shift digits so the leading 1 (if any) is at bit 60.
    mant <<= 60 - 52;
    while mant != 0 && mant & (1u64 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if let Some(p) = prec
        && p < 15
    {
        let shift = (p * 4) as u32;
        let extra = (mant << shift) & ((1u64 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1u64 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1u64 << 61) != 0 {
            // Wrapped around.
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push('0');
    s.push(if upper { 'X' } else { 'x' });
    s.push((b'0' + ((mant >> 60) & 1) as u8) as char);
    mant <<= 4; // remove the leading digit
    match prec {
        None if mant != 0 => {
            s.push('.');
            while mant != 0 {
                s.push(hex[((mant >> 60) & 15) as usize] as char);
                mant <<= 4;
            }
        }
        Some(p) if p > 0 => {
            s.push('.');
            for _ in 0..p {
                s.push(hex[((mant >> 60) & 15) as usize] as char);
                mant <<= 4;
            }
        }
        _ => {}
    }
    s.push(if upper { 'P' } else { 'p' });
    s.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(s, "{:02}", exp.abs());
    s
}

/// Go's `strconv.ParseBool`, which Go's `flag` package (so Alloy's command line) reads boolean
/// flags with; the error is Go's message.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!(
            "strconv.ParseBool: parsing {}: invalid syntax",
            super::quote::quote(s)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every form Go's ParseBool accepts, and near misses it refuses.
    #[test]
    fn parse_bool_takes_gos_forms() {
        for s in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(s), Ok(true), "{s}");
        }
        for s in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(s), Ok(false), "{s}");
        }
        for s in ["", "yes", "tRUE", "on", " true", "2"] {
            assert!(parse_bool(s).is_err(), "{s:?}");
        }
        assert_eq!(
            parse_bool("maybe"),
            Err("strconv.ParseBool: parsing \"maybe\": invalid syntax".to_string())
        );
    }

    #[test]
    fn ties_go_to_the_even_digit_like_go() {
        // 1394865425023536.25 exactly: 17 digits, halfway between …536.2 and …536.3.
        let v = f64::from_bits(0x4313_d27d_a8ac_08c1);
        assert_eq!(shortest_sci(v), "1.3948654250235362e15");
        assert_eq!(shortest_fixed(v), "1394865425023536.2");
        assert_eq!(shortest_fixed(-v), "-1394865425023536.2");
        // Everything else is Rust's shortest, unchanged.
        for (v, sci, fixed) in [
            (0.1, "1e-1", "0.1"),
            (1e21, "1e21", "1000000000000000000000"),
            (123.456, "1.23456e2", "123.456"),
            (-2.5e-7, "-2.5e-7", "-0.00000025"),
            (0.0, "0e0", "0"),
        ] {
            assert_eq!(shortest_sci(v), sci);
            assert_eq!(shortest_fixed(v), fixed);
        }
    }
}
