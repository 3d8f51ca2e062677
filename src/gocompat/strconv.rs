//! The shortest decimal of a float64 as Go's `strconv.FormatFloat(v, fmt, -1, 64)` picks it.
//!
//! Rust's shortest formatting and Go's agree on the number of digits, but when two decimals of
//! that length are equally close to the float (its exact value lies halfway between them)
//! Rust may take the upper one; Go takes the even one, as correctly rounding the exact value
//! to that many digits does. `tests/gocompat_oracle.rs` found such floats
//! (1394865425023536.25 is `…536.2` in Go, `…536.3` in Rust's `Display`) and checks the fix
//! over a quarter of a million cases.

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

#[cfg(test)]
mod tests {
    use super::*;

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
