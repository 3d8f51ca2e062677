//! Byte sizes as users write them in configs and flags (`max_size = "2GiB"`,
//! `--memory.limit=256MiB`).

/// Parses a byte size: a plain number of bytes (`"1048576"`), or a number with a unit, as
/// Kubernetes quantities write them: `KB`/`K`, `MB`/`M`, `GB`/`G`, `TB`/`T` are powers of
/// 1000, `KiB`/`Ki`, `MiB`/`Mi`, `GiB`/`Gi`, `TiB`/`Ti` powers of 1024; `B` is bytes. Units
/// are case-insensitive and may follow a space; decimals are allowed (`"1.5GiB"`).
pub fn parse_size(input: &str) -> Result<u64, String> {
    let s = input.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let unit = unit.trim();
    if number.is_empty() {
        return Err(format!(
            "invalid size {input:?}: expected a number of bytes, optionally with a unit, such as \"512MiB\" or \"2GiB\""
        ));
    }
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "ki" | "kib" => 1 << 10,
        "mi" | "mib" => 1 << 20,
        "gi" | "gib" => 1 << 30,
        "ti" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "invalid size {input:?}: unknown unit {unit:?} (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)"
            ));
        }
    };
    let too_large = || format!("invalid size {input:?}: too large");
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(multiplier).ok_or_else(too_large);
    }
    let n: f64 = number
        .parse()
        .map_err(|_| format!("invalid size {input:?}: {number:?} is not a number"))?;
    let bytes = n * multiplier as f64;
    // u64::MAX as f64 rounds up to 2^64, which does not fit.
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(too_large());
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let ok: &[(&str, u64)] = &[
            ("0", 0),
            ("1048576", 1 << 20),
            ("2GiB", 2 << 30),
            ("2gib", 2 << 30),
            ("2 GiB", 2 << 30),
            ("2Gi", 2 << 30),
            ("1GB", 1_000_000_000),
            ("1G", 1_000_000_000),
            ("512MiB", 512 << 20),
            ("100KB", 100_000),
            ("100KiB", 100 << 10),
            ("1.5GiB", 3 << 29),
            ("1TiB", 1 << 40),
            ("10B", 10),
            (" 7 ", 7),
        ];
        for (s, want) in ok {
            assert_eq!(parse_size(s), Ok(*want), "{s}");
        }
        let bad: &[(&str, &str)] = &[
            ("", "expected a number of bytes"),
            ("GiB", "expected a number of bytes"),
            ("2XB", "unknown unit \"XB\""),
            ("2 gigs", "unknown unit \"gigs\""),
            ("1.2.3GB", "is not a number"),
            ("-1GB", "expected a number"),
            ("99999999999TiB", "too large"),
            ("18446744073709551616", "too large"),
        ];
        for (s, want) in bad {
            let got = parse_size(s);
            assert!(
                got.as_ref().is_err_and(|e| e.contains(want)),
                "{s}: {got:?}"
            );
        }
    }
}
