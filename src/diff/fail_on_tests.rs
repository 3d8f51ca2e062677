use super::*;
use crate::diff::fixture;

#[test]
fn parse_errors_point_at_the_problem() {
    // (condition, column, part of the message)
    let cases = [
        ("total", 6, "expected '>'"),
        ("total>5", 7, "the '%' is required"),
        ("total>x%", 7, "expected a number"),
        ("total>-5%", 7, "non-negative"),
        ("total>+5%", 7, "non-negative"),
        ("total>inf%", 7, "non-negative"),
        ("totl>5%", 1, "unknown subject \"totl\""),
        ("func=~a>5%", 1, "unknown subject \"func\""),
        ("function=~>5%", 11, "expected a regex"),
        (
            "function=~main.(beta>5%",
            11,
            "missing closing ): `main.(beta`",
        ),
        ("cum=~a)b>5%", 6, "unexpected )"),
        ("flat=~a**>5%", 7, "invalid nested repetition operator"),
    ];
    for (text, column, message) in cases {
        let e = Condition::parse(text).expect_err(text);
        assert_eq!(e.column, column, "{text}: {e}");
        assert!(e.message.contains(message), "{text}: {e}");
        // The rendering quotes the condition and puts the caret under the column.
        let shown = e.to_string();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[1], format!("  {text}"), "{shown}");
        assert_eq!(lines[2].find('^'), Some(2 + column - 1), "{shown}");
    }
}

#[test]
fn parses_the_grammar() {
    for (text, threshold) in [
        ("total>5%", 5.0),
        ("total>0%", 0.0),
        ("total>2.5%", 2.5),
        ("function=~^main\\.beta>10%", 10.0),
        ("flat=~x>1%", 1.0),
        ("cum=~x>1%", 1.0),
        // The regex runs to the last '>': Go's named groups keep working.
        ("function=~(?P<n>a)>3%", 3.0),
    ] {
        let c = Condition::parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.threshold, threshold, "{text}");
        assert_eq!(c.text, text);
    }
}

fn held(report: &Report, text: &str, missing: MissingStatistics) -> Vec<String> {
    let c = Condition::parse(text).unwrap_or_else(|e| panic!("{e}"));
    let e = evaluate(report, &[c], missing).expect("evaluate");
    assert_eq!(e.held(), e.outcomes[0].held);
    e.outcomes[0]
        .triggers
        .iter()
        .map(|t| format!("{}:{}", t.function.as_deref().unwrap_or("total"), t.value))
        .collect()
}

#[test]
fn conditions_hold_on_confident_increases_above_the_threshold() {
    let r = fixture::report(true);
    let s = MissingStatistics::Error;
    // (condition, what holds)
    let cases: [(&str, &[&str]); 11] = [
        // Total +20 %, interval +18 .. +22: the low end decides.
        ("total>5%", &["total:total"]),
        ("total>17.9%", &["total:total"]),
        ("total>18%", &[]),
        ("total>20%", &[]),
        // New (0 before) with an increase verdict: above any threshold.
        (
            "function=~^main\\.beta>1000%",
            &["main.beta:flat", "main.beta:cum"],
        ),
        // Unanchored, like Go's MatchString.
        ("function=~beta>5%", &["main.beta:flat", "main.beta:cum"]),
        ("function=~^beta>5%", &[]),
        // A decrease never holds.
        ("function=~alpha>0%", &[]),
        // flat=~ and cum=~ look at one value; main.main's flat is 0 in both windows.
        ("flat=~^main\\.main$>5%", &[]),
        ("cum=~^main\\.main$>5%", &["main.main:cum"]),
        // `|` in a name is just a character to the regex when escaped.
        (
            "function=~gamma\\|pipe>40%",
            &["main.gamma|pipe:flat", "main.gamma|pipe:cum"],
        ),
    ];
    for (text, want) in cases {
        assert_eq!(held(&r, text, s), want, "{text}");
    }
    let e = evaluate(&r, &[], s).expect("no conditions");
    assert_eq!(e.basis, Basis::NotEvaluated);
    assert!(!e.held());
}

#[test]
fn no_change_verdicts_never_hold_whatever_the_estimate() {
    let mut r = fixture::report(true);
    // A +50 % estimate that the test could not tell from noise.
    for row in &mut r.rows {
        for s in [&mut row.flat_stats, &mut row.cum_stats]
            .into_iter()
            .flatten()
        {
            s.verdict = Verdict::NoChange;
        }
    }
    assert!(held(&r, "function=~.>0%", MissingStatistics::Error).is_empty());
    // Untested functions (no statistics in a report that has them) do not hold either.
    for row in &mut r.rows {
        row.flat_stats = None;
        row.cum_stats = None;
    }
    assert!(held(&r, "function=~.>0%", MissingStatistics::Error).is_empty());
}

#[test]
fn without_statistics_the_choice_is_explicit() {
    let r = fixture::report(false);
    let c = || vec![Condition::parse("total>5%").expect("parse")];
    assert_eq!(
        evaluate(&r, &c(), MissingStatistics::Error),
        Err(EvaluateError::NoStatistics)
    );
    let skipped = evaluate(&r, &c(), MissingStatistics::Skip).expect("skip");
    assert_eq!(skipped.basis, Basis::NotEvaluated);
    assert!(!skipped.held());
    // Point estimates: total +20 %, beta new, alpha down.
    let e = MissingStatistics::Estimates;
    assert_eq!(held(&r, "total>19%", e), ["total:total"]);
    assert!(held(&r, "total>20%", e).is_empty());
    assert_eq!(
        held(&r, "function=~beta>5%", e),
        ["main.beta:flat", "main.beta:cum"]
    );
    assert!(held(&r, "function=~alpha>0%", e).is_empty());
    // Without conditions, a report without statistics is fine.
    assert!(evaluate(&r, &[], MissingStatistics::Error).is_ok());
}

#[test]
fn triggers_read_well() {
    let r = fixture::report(true);
    let c = Condition::parse("function=~beta|gamma>5%").expect("parse");
    let e = evaluate(&r, &[c], MissingStatistics::Error).expect("evaluate");
    let lines: Vec<String> = e.outcomes[0]
        .triggers
        .iter()
        .map(|t| t.to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "main.beta flat new (0 before) (increase)",
            "main.beta cum new (0 before) (increase)",
            "main.gamma|pipe flat +50.0% (interval +48.0% .. +52.0%, increase)",
            "main.gamma|pipe cum +50.0% (interval +48.0% .. +52.0%, increase)",
        ]
    );
}
