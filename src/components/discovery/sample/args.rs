//! The `discovery.sample` block: arguments, defaults and validation.

use serde::Deserialize;

use crate::syntax::decode::Invalid;
use crate::targets::Shared;

/// The block's arguments (the names and defaults of the session's design contract).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename = "discovery.sample")]
pub struct Arguments {
    /// The targets to sample from.
    pub targets: Vec<Shared>,
    /// At most this many keys (pods) per group.
    #[serde(default)]
    pub max: Option<i64>,
    /// At most `ceil(fraction * keys)` keys per group (at least one of a non-empty group).
    #[serde(default)]
    pub fraction: Option<f64>,
    /// The labels whose values make a group (a workload).
    #[serde(default = "default_group_by")]
    pub group_by: Vec<String>,
    /// The labels whose values identify what is chosen (a pod): every target with the same key
    /// is kept or left out together.
    #[serde(default = "default_key_by")]
    pub key_by: Vec<String>,
}

fn default_group_by() -> Vec<String> {
    [
        "__meta_kubernetes_namespace",
        "__meta_kubernetes_pod_controller_kind",
        "__meta_kubernetes_pod_controller_name",
    ]
    .map(String::from)
    .to_vec()
}

fn default_key_by() -> Vec<String> {
    ["__meta_kubernetes_namespace", "__meta_kubernetes_pod_name"]
        .map(String::from)
        .to_vec()
}

/// How many keys a group may keep: the validated `max`/`fraction` pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit {
    pub max: Option<usize>,
    pub fraction: Option<f64>,
}

impl Limit {
    /// The number of keys kept of a group of `keys` distinct keys: the smaller of `max` and
    /// `ceil(fraction * keys)`, at least 1 when the group is not empty, never more than `keys`.
    pub fn of(&self, keys: usize) -> usize {
        if keys == 0 {
            return 0;
        }
        let mut n = keys;
        if let Some(max) = self.max {
            n = n.min(max);
        }
        if let Some(f) = self.fraction {
            n = n.min(ceil_fraction(f, keys).max(1));
        }
        n.max(1)
    }
}

/// `ceil(f × keys)` as if `f` were the decimal the user wrote. `f` is the binary float nearest
/// that decimal, so the product can land a hair above an integer (0.07 × 100 =
/// 7.000000000000001, whose plain `ceil` is 8). Both roundings together err by under 3e-16 of
/// the product, so a product within 1e-14 of it from an integer is that integer; a real
/// fractional part that small would need a fraction written with about 14 significant digits.
fn ceil_fraction(f: f64, keys: usize) -> usize {
    let x = f * keys as f64;
    let nearest = x.round();
    let exact = if (x - nearest).abs() <= x * 1e-14 {
        nearest
    } else {
        x.ceil()
    };
    // A float-to-int `as` saturates; the caller caps the result at `keys` anyway.
    exact as usize
}

impl Arguments {
    /// The problems [`Arguments::limit`] would refuse, placed at the attribute at fault.
    pub fn invalid(&self) -> Vec<Invalid> {
        let mut out = Vec::new();
        if self.max.is_none() && self.fraction.is_none() {
            out.push(Invalid::new(
                "discovery.sample needs \"max\" or \"fraction\" (or both): how many targets of each group to keep",
            ));
        }
        if let Some(max) = self.max
            && max < 1
        {
            out.push(Invalid::new(format!("max must be at least 1, got {max}")).attr("max"));
        }
        if let Some(f) = self.fraction
            && !(f > 0.0 && f <= 1.0)
        {
            out.push(Invalid::new(format!("fraction must be in (0, 1], got {f}")).attr("fraction"));
        }
        out
    }

    /// The limit, or the first problem's message.
    pub fn limit(&self) -> Result<Limit, String> {
        if let Some(first) = self.invalid().into_iter().next() {
            return Err(first.message);
        }
        Ok(Limit {
            max: self.max.map(|m| usize::try_from(m).unwrap_or(usize::MAX)),
            fraction: self.fraction,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode;

    fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
        decode::decode_source(src)
    }

    #[test]
    fn defaults_and_names() {
        let a = decode_args("targets = []\nmax = 3\n").expect("valid");
        assert_eq!(a.max, Some(3));
        assert_eq!(a.fraction, None);
        assert_eq!(a.group_by, default_group_by());
        assert_eq!(a.key_by, default_key_by());
        let a = decode_args("targets = []\nfraction = 0.5\ngroup_by = [\"app\"]\nkey_by = []\n")
            .expect("valid");
        assert_eq!(a.fraction, Some(0.5));
        assert_eq!(a.group_by, ["app"]);
        assert!(a.key_by.is_empty());
        let errs = decode_args("targets = []\nmax = 3\nmaximum = 2\n").expect_err("unknown");
        assert_eq!(errs, ["3:1: unrecognized attribute name \"maximum\""]);
    }

    #[test]
    fn validation() {
        let cases: &[(&str, &[&str])] = &[
            ("max = 3", &[]),
            ("fraction = 1", &[]),
            ("max = 2\nfraction = 0.1", &[]),
            ("", &["needs \"max\" or \"fraction\""]),
            ("max = 0", &["max must be at least 1, got 0"]),
            ("fraction = 0", &["fraction must be in (0, 1], got 0"]),
            ("fraction = 1.5", &["fraction must be in (0, 1], got 1.5"]),
            (
                "fraction = -0.5\nmax = -1",
                &["max must be", "fraction must be"],
            ),
        ];
        for (body, want) in cases {
            let a = decode_args(&format!("targets = []\n{body}\n")).expect("decodes");
            let got: Vec<String> = a.invalid().into_iter().map(|i| i.message).collect();
            assert_eq!(got.len(), want.len(), "{body}: {got:?}");
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(g.contains(w), "{body}: {g:?} lacks {w:?}");
            }
            assert_eq!(a.limit().is_ok(), want.is_empty(), "{body}");
        }
    }

    #[test]
    fn limit_per_group_size() {
        let l = |max: Option<usize>, fraction: Option<f64>| Limit { max, fraction };
        let cases = [
            (l(Some(3), None), 0, 0),
            (l(Some(3), None), 1, 1),
            (l(Some(3), None), 20, 3),
            (l(Some(3), None), 40, 3),
            (l(None, Some(0.1)), 20, 2),
            (l(None, Some(0.1)), 21, 3),
            (l(None, Some(0.01)), 5, 1),
            (l(None, Some(1.0)), 7, 7),
            (l(Some(2), Some(0.5)), 20, 2),
            (l(Some(20), Some(0.25)), 20, 5),
        ];
        for (limit, keys, want) in cases {
            assert_eq!(limit.of(keys), want, "{limit:?} of {keys}");
        }
    }

    /// Every whole percentage over groups of 1 to 1,000 keys against integer arithmetic:
    /// ceil(p × n / 100) = (p × n + 99) / 100. (0.07 × 100 pods was 8 with a plain float ceil.)
    #[test]
    fn fraction_rounds_like_exact_decimal_arithmetic() {
        let mut wrong = Vec::new();
        for p in 1..=99usize {
            let f: f64 = format!("0.{p:02}").parse().expect("a decimal");
            let limit = Limit {
                max: None,
                fraction: Some(f),
            };
            for n in 1..=1000usize {
                let want = ((p * n).div_ceil(100)).max(1);
                let got = limit.of(n);
                if got != want {
                    wrong.push(format!("{f} of {n}: {got}, want {want}"));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "{} wrong, first: {:?}",
            wrong.len(),
            &wrong[..wrong.len().min(5)]
        );
    }
}
