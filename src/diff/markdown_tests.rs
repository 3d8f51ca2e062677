use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::*;
use crate::diff::fail_on::{Condition, MissingStatistics, evaluate};
use crate::diff::fixture;

/// The tables of `md` as a GFM renderer (pulldown-cmark) reads them: rows of cell texts, the
/// header row first.
fn tables(md: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables = Vec::new();
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut cell: Option<String> = None;
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Table(_)) => table.clear(),
            Event::Start(Tag::TableHead | Tag::TableRow) => row.clear(),
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(c) = cell.as_mut() {
                    c.push_str(&t);
                }
            }
            Event::End(TagEnd::TableCell) => row.extend(cell.take()),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                table.push(std::mem::take(&mut row))
            }
            Event::End(TagEnd::Table) => tables.push(std::mem::take(&mut table)),
            _ => {}
        }
    }
    tables
}

/// Everything outside tables, as text.
fn prose(md: &str) -> String {
    let mut out = String::new();
    let mut in_table = false;
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Table(_)) => in_table = true,
            Event::End(TagEnd::Table) => in_table = false,
            Event::Text(t) | Event::Code(t) if !in_table => out.push_str(&t),
            Event::SoftBreak
            | Event::End(TagEnd::Item | TagEnd::Paragraph | TagEnd::Heading(_)) => out.push('\n'),
            _ => {}
        }
    }
    out
}

fn render_fixture(stats: bool, conditions: &[&str], top: usize) -> String {
    let r = fixture::report(stats);
    let conditions: Vec<Condition> = conditions
        .iter()
        .map(|c| Condition::parse(c).expect("parse"))
        .collect();
    let missing = if stats {
        MissingStatistics::Error
    } else {
        MissingStatistics::Estimates
    };
    let e = evaluate(&r, &conditions, missing).expect("evaluate");
    render(
        &r,
        "process_cpu {service_name=~\"api.*\"} around \"v2\"",
        top,
        &e,
    )
}

#[test]
fn renders_as_tables_with_the_expected_rows_and_columns() {
    let md = render_fixture(true, &["total>5%", "function=~alpha>1%"], 4);
    eprintln!("{md}");
    let t = tables(&md);
    assert_eq!(t.len(), 2, "{md}");
    // The windows.
    assert_eq!(t[0][0], ["window", "from", "total"]);
    assert_eq!(t[0].len(), 3);
    assert_eq!(t[0][1][0], "before \"v2\": 12:00..12:30");
    assert_eq!(t[0][1][1], "30s × 2 instances, 20 profiles");
    // The functions: a header, --top rows, nine columns each; names survive the cell
    // splitting (`|` in a name) as code.
    let f = &t[1];
    assert_eq!(f.len(), 1 + 4, "{md}");
    assert!(f.iter().all(|row| row.len() == 9), "{f:?}");
    assert_eq!(f[0][0], "function");
    assert_eq!(f[0][8], "cum verdict");
    let names: Vec<&str> = f[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        ["main.alpha", "main.beta", "main.gamma|pipe", "main.main"]
    );
    let beta = &f[2];
    assert_eq!(beta[3], "new");
    assert_eq!(beta[4], "increase");
    let gamma = &f[3];
    assert_eq!(gamma[3], "+50.0% (+48.0% .. +52.0%)");
    assert_eq!(f[1][4], "decrease");

    let text = prose(&md);
    // The heading keeps the selector's characters (no emphasis from `.*`).
    assert!(
        text.starts_with("process_cpu {service_name=~\"api.*\"} around \"v2\"\n"),
        "{text}"
    );
    assert!(
        text.contains("Total: 100ns/s → 120ns/s, +20.0% (+18.0% .. +22.0%), increase"),
        "{text}"
    );
    assert!(text.contains("4 of 5 functions shown"), "{text}");
    assert!(
        text.contains("Statistics: welch at 95% confidence"),
        "{text}"
    );
    assert!(
        text.contains("FAILED total>5%: total +20.0% (interval +18.0% .. +22.0%, increase)"),
        "{text}"
    );
    assert!(text.contains("passed function=~alpha>1%\n"), "{text}");
}

#[test]
fn without_statistics_it_says_so() {
    let md = render_fixture(false, &["function=~beta>5%"], 0);
    let t = tables(&md);
    assert_eq!(t[1].len(), 1 + 5, "all rows with --top 0");
    assert!(t[1][1..].iter().all(|r| r[4].is_empty() && r[8].is_empty()));
    let text = prose(&md);
    assert!(text.contains("No statistics"), "{text}");
    assert!(text.contains("judged on the point estimates"), "{text}");
    assert!(
        text.contains("FAILED function=~beta>5%: main.beta flat new (0 before) (point estimate, no statistics)"),
        "{text}"
    );
}

#[test]
fn awkward_names_stay_in_their_cell() {
    for (name, _) in [
        ("a`b", ()),
        ("`edge", ()),
        ("x|y|z", ()),
        ("under_score*star", ()),
    ] {
        let mut r = fixture::report(true);
        r.rows[0].function = name.to_string();
        let e = evaluate(&r, &[], MissingStatistics::Error).expect("evaluate");
        let md = render(&r, "t", 1, &e);
        let t = tables(&md);
        assert_eq!(t[1][1].len(), 9, "{name}: {md}");
        assert_eq!(t[1][1][0], name, "{md}");
    }
}

#[test]
fn long_reports_fit_in_a_comment() {
    // 5,000 functions with long names, all increased: every one triggers `function=~.>1%`.
    let mut r = fixture::report(false);
    let template = r.rows[2].clone();
    r.rows = (0..5_000)
        .map(|i| {
            let mut row = template.clone();
            row.function = format!("github.com/example/module/internal/pkg{i}.(*Type).Method");
            row
        })
        .collect();
    let conditions = [Condition::parse("function=~.>1%").expect("parse")];
    let e = evaluate(&r, &conditions, MissingStatistics::Estimates).expect("evaluate");
    assert_eq!(e.outcomes[0].triggers.len(), 10_000, "flat and cum");
    let md = render(&r, "t", 0, &e);
    assert!(md.chars().count() <= 65_536, "{} characters", md.len());
    assert!(md.len() <= MAX_BYTES, "{} bytes", md.len());
    let t = tables(&md);
    let rows = t[1].len() - 1;
    assert!(rows > 100, "as many rows as fit: {rows}");
    assert!(t[1][1..].iter().all(|r| r.len() == 9));
    let text = prose(&md);
    assert!(
        text.contains(&format!(
            "{rows} of 5000 functions shown (more would not fit"
        )),
        "{text}"
    );
    let failed = text
        .lines()
        .find(|l| l.starts_with("FAILED"))
        .expect("the condition");
    assert_eq!(failed.matches("pkg").count(), 10, "{failed}");
    assert!(failed.ends_with("; and 9990 more"), "{failed}");
}
