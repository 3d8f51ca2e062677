use super::unicode::{GO_CATEGORIES, GO_SCRIPTS, unicode_class};
use super::*;

fn compile(p: &str) -> Result<GoRegex, String> {
    GoRegex::new(p).map_err(|e| e.to_string())
}

fn matches(p: &str, s: &str) -> bool {
    compile(p)
        .unwrap_or_else(|e| panic!("{p:?}: {e}"))
        .is_match(s)
}

/// Group 1 of the match of `p` on `s`.
fn group1(p: &str, s: &str) -> Option<String> {
    let re = compile(p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let mut caps = Captures::default();
    if !re.captures_at(s, 0, 2, &mut caps) {
        return None;
    }
    caps.get(1).map(|(a, b)| s[a..b].to_owned())
}

#[test]
fn go_semantics_that_differ_from_rust_syntax() {
    // (pattern, input, Go's answer). Each row is a place where handing the pattern to the
    // Rust parser would have answered differently (or failed to compile).
    let cases: &[(&str, &str, bool)] = &[
        // \d \w \s are ASCII in Go.
        (r"\d+", "123", true),
        (r"\d+", "١٢٣", false),
        (r"\w+", "é", false),
        (r"\w+", "a_Z9", true),
        (r"\s", "\u{b}", false), // \v is not in Go's \s
        (r"\s", "\t", true),
        (r"[[:space:]]", "\u{b}", true), // but it is in [:space:]
        (r"\D", "٣", true),
        (r"\W", "é", true),
        // \b is an ASCII word boundary.
        (r".*\bb", "éb", true),
        (r"a\b.*", "aé", true),
        // \Q…\E and octal escapes.
        (r"\Qa.b\E", "a.b", true),
        (r"\Qa.b\E", "axb", false),
        (r"\101", "A", true),
        (r"\0", "\0", true),
        (r"\08", "\u{0}8", true),
        (r"\x41\x{1F600}", "A😀", true),
        // Class syntax: no set operations, '[' and '&' and '~' are plain members.
        (r"[a-z&&[^c]]", "c]", true),
        (r"[a-z&&[^c]]", "&]", true),
        (r"[a-z--c]", "-", true),
        (r"[a~~b]", "~", true),
        (r"[[a]]", "a]", true),
        (r"[[a]]", "a", false),
        (r"[]a]", "]", true),
        (r"[^]a]", "b", true),
        (r"[a-]", "-", true),
        (r"[a-c-e]", "-", true),
        (r"[a-c-e]", "d", false),
        // '{' that is not a repeat is a literal.
        (r"a{", "a{", true),
        (r"a{,5}", "a{,5}", true),
        (r"a{x}", "a{x}", true),
        (r"a{01}", "a{01}", true),
        (r"a{2}", "aa", true),
        (r"a{2,}", "aaaa", true),
        (r"a{1,2}", "aaa", false),
        // (?s) is on by default through the wrapper; (?-s) turns it off.
        (r".*", "a\nb", true),
        (r"(?-s).*", "a\nb", false),
        // $ is end of text (no trailing-newline allowance), (?m) makes it per line.
        (r"a$", "a", true),
        (r"(?m)a$\n.*", "a\nb", true),
        (r"(?m:^b)", "b", true),
        // Case folding: Unicode simple folding, fold-then-negate.
        (r"(?i)k", "K", true), // Kelvin sign
        (r"(?i)s", "ſ", true),
        (r"(?i)[^k]", "K", false),
        (r"(?i)[k]", "K", true),
        (r"(?i)\w", "K", true),
        (r"(?i)\W", "K", false),
        (r"(?i)[[:upper:]]", "a", true),
        (r"(?i)\p{Lu}", "a", true),
        (r"(?i)\P{Lu}", "a", false),
        // Flags scope: to the end of the enclosing group, across '|'.
        (r"(?i)a|b", "B", true),
        (r"(?:(?i)a)b", "AB", false),
        (r"(?i:a)b", "Ab", true),
        (r"(?)a", "a", true),
        // Unicode classes: Go names only, Go's C excludes unassigned code points.
        (r"\pL+", "héllo", true),
        (r"\p{Greek}+", "αβγ", true),
        (r"\p{^Greek}", "a", true),
        (r"\PL", "1", true),
        (r"\pC", "\u{378}", false), // unassigned
        (r"\pC", "\u{7}", true),
        (r"\p{Any}", "\n", true),
        (r"[\p{Nd}x]+", "x٣", true),
        // Group names: Go allows a leading digit and duplicates.
        (r"(?P<1x>a)", "a", true),
        (r"(?P<n>a)(?P<n>b)", "ab", true),
        (r"(?<n>a)", "a", true),
        // Repetition of an assertion and a repeat after a flag group.
        (r"^*a", "a", true),
        (r"a(?i)*", "aaa", true),
        (r"a*(?i)*", "aaa", true),
        // The unbalanced-parenthesis quirk.
        (r"api)|(web", "api-gateway", true),
        (r"api)|(web", "my-web", true),
        (r"api)|(web", "x", false),
        // Surrogate escapes never match.
        (r"\x{D800}|a", "a", true),
        (r"[\x{D7FF}-\x{E000}]", "\u{E000}", true),
        // Empty regex matches only the empty string.
        ("", "", true),
        ("", "a", false),
    ];
    for (p, s, want) in cases {
        assert_eq!(matches(p, s), *want, "pattern {p:?} on {s:?}");
    }
}

#[test]
fn errors_like_go() {
    // (pattern, Go's error text, wrapped pattern as Go quotes it)
    let cases: &[(&str, &str)] = &[
        ("(", "error parsing regexp: missing closing ): `^(?s:()$`"),
        ("a)", "error parsing regexp: unexpected ): `^(?s:a))$`"),
        ("[a", "error parsing regexp: missing closing ]: `[a)$`"),
        (
            "*a",
            "error parsing regexp: missing argument to repetition operator: `*`",
        ),
        (
            "a|*",
            "error parsing regexp: missing argument to repetition operator: `*`",
        ),
        (
            "(*)",
            "error parsing regexp: missing argument to repetition operator: `*`",
        ),
        (
            "a**",
            "error parsing regexp: invalid nested repetition operator: `**`",
        ),
        (
            "a*+",
            "error parsing regexp: invalid nested repetition operator: `*+`",
        ),
        (
            "a+?*",
            "error parsing regexp: invalid nested repetition operator: `+?*`",
        ),
        (
            "a{2}{3}",
            "error parsing regexp: invalid nested repetition operator: `{2}{3}`",
        ),
        (
            "a{1001}",
            "error parsing regexp: invalid repeat count: `{1001}`",
        ),
        (
            "a{2,1}",
            "error parsing regexp: invalid repeat count: `{2,1}`",
        ),
        (
            "(a{100}){100}",
            "error parsing regexp: invalid repeat count: `{100}`",
        ),
        (
            "a{100000000}",
            "error parsing regexp: invalid repeat count: `{100000000}`",
        ),
        (
            r"\Z",
            "error parsing regexp: invalid escape sequence: `\\Z`",
        ),
        (
            r"\C",
            "error parsing regexp: invalid escape sequence: `\\C`",
        ),
        (
            r"(a)\1",
            "error parsing regexp: invalid escape sequence: `\\1`",
        ),
        (
            r"\8",
            "error parsing regexp: invalid escape sequence: `\\8`",
        ),
        (
            r"\é",
            "error parsing regexp: invalid escape sequence: `\\é`",
        ),
        (
            r"\xZZ",
            "error parsing regexp: invalid escape sequence: `\\xZZ`",
        ),
        (
            r"\x{}",
            "error parsing regexp: invalid escape sequence: `\\x{}`",
        ),
        (
            r"\x{110000}",
            "error parsing regexp: invalid escape sequence: `\\x{110000`",
        ),
        (
            r"[\b]",
            "error parsing regexp: invalid escape sequence: `\\b`",
        ),
        (
            r"(?=a)",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
        ),
        (
            r"(?!a)",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
        ),
        (
            r"(?<=a)",
            "error parsing regexp: invalid named capture: `(?<=a))$`",
        ),
        (
            r"(?<!a)",
            "error parsing regexp: invalid named capture: `(?<!a))$`",
        ),
        (
            r"(?P=n)",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?P`",
        ),
        (
            r"(?P<n",
            "error parsing regexp: invalid named capture: `(?P<n)$`",
        ),
        (
            r"(?P<a-b>x)",
            "error parsing regexp: invalid named capture: `(?P<a-b>`",
        ),
        (
            r"(?x)a",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?x`",
        ),
        (
            r"(?-)a",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?-)`",
        ),
        (
            r"(?i-)a",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?i-)`",
        ),
        (
            r"(?i--s)a",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?i--`",
        ),
        (
            r"[z-a]",
            "error parsing regexp: invalid character class range: `z-a`",
        ),
        (
            r"[[:foo:]]",
            "error parsing regexp: invalid character class range: `[:foo:]`",
        ),
        (
            r"\p{Foo}",
            "error parsing regexp: invalid character class range: `\\p{Foo}`",
        ),
        (
            r"\pX",
            "error parsing regexp: invalid character class range: `\\pX`",
        ),
        (
            r"\p{L",
            "error parsing regexp: invalid character class range: `\\p{L)$`",
        ),
        (
            r"a\",
            "error parsing regexp: missing closing ): `^(?s:a\\)$`",
        ),
        (
            r"\Qa.b",
            "error parsing regexp: missing closing ): `^(?s:\\Qa.b)$`",
        ),
        (
            r"\p",
            "error parsing regexp: invalid character class range: `\\p)`",
        ),
        (
            r"[\p",
            "error parsing regexp: invalid character class range: `\\p)`",
        ),
        (
            r"(?P<>a)",
            "error parsing regexp: invalid named capture: `(?P<>`",
        ),
        (
            r"(?i)(?-i)*",
            "error parsing regexp: missing argument to repetition operator: `*`",
        ),
        (
            r"a++",
            "error parsing regexp: invalid nested repetition operator: `++`",
        ),
    ];
    for (p, want) in cases {
        match compile(p) {
            Ok(_) => panic!("{p:?} compiled, Go says {want}"),
            Err(got) => assert_eq!(&got, want, "pattern {p:?}"),
        }
    }
}

#[test]
fn newer_go_unicode_names_are_refused_with_a_reason() {
    for p in [
        r"\p{Letter}",
        r"\p{greek}",
        r"\p{Cn}",
        r"\p{LC}",
        r"\p{ASCII}",
    ] {
        let e = compile(p).unwrap_err();
        assert!(e.contains("unsupported by scraper"), "{p}: {e}");
    }
}

#[test]
fn every_go_unicode_name_is_known_to_the_rust_tables() {
    for name in GO_CATEGORIES.iter().chain(GO_SCRIPTS) {
        assert!(
            unicode_class(name).is_ok(),
            "Go's \\p{{{name}}} has no regex-syntax table"
        );
    }
    // Spot checks that names resolve to the right table.
    assert!(matches(r"\p{Han}", "中"));
    assert!(matches(r"\p{Common}", "1"));
    assert!(matches(r"\p{Inherited}", "\u{300}"));
    assert!(matches(r"\p{Lt}", "ǅ"));
    assert!(!matches(r"\p{Latin}", "α"));
}

#[test]
fn submatches_are_leftmost_first() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        (r"(.+):(\d+)", "10.0.0.1:8080", Some("10.0.0.1")),
        (
            r"(.+?)(?::\d+)?;(\d+)",
            "10.0.0.5:8080;6060",
            Some("10.0.0.5"),
        ),
        (r"(a|ab)(c|bcd)(d*)", "abcd", Some("a")),
        (r"(a*)+", "b", None), // no match at all: anchored
        (r"(a*)*", "", Some("")),
        (r"(a)|b", "b", None), // group 1 did not participate
        (r"(.*)", "x\ny", Some("x\ny")),
        (r"(.*)", "", Some("")),
    ];
    for (p, s, want) in cases {
        assert_eq!(group1(p, s).as_deref(), *want, "{p:?} on {s:?}");
    }
}

#[test]
fn fast_paths_agree_with_the_engine() {
    // Literal and match-all shapes take a shortcut; the general engine must agree.
    for (p, s) in [
        ("abc", "abc"),
        ("abc", "abcd"),
        ("(.*)", "any\nthing"),
        (".*", ""),
    ] {
        let fast = compile(p).unwrap();
        assert!(!matches!(fast.engine, Engine::Meta { .. }), "{p} not fast");
        let slow = GoRegex::compile_with(p, false).unwrap();
        assert!(matches!(slow.engine, Engine::Meta { .. }));
        assert_eq!(fast.is_match(s), slow.is_match(s), "{p:?} on {s:?}");
    }
    // (?i) literals and quirk shapes are not literal fast paths.
    assert!(matches!(
        compile("(?i)abc").unwrap().engine,
        Engine::Meta { .. }
    ));
    assert!(matches!(
        compile("a)|(b").unwrap().engine,
        Engine::Meta { .. }
    ));
}

#[test]
fn ascii_engine_agrees_with_full_engine_on_ascii_input() {
    let patterns = [
        r"(.+):(\d+)",
        "(.*)@(.*)",
        r"(?i)K|é(x)",
        r"[^a]+",
        r"(?-s)(.*)",
        r"\pL+(\d)?",
        r"(?i)[[:upper:]]+",
        r"\W+",
        "api)|(web",
        r"(.)é|(.)",
        r"[\x00-\x{10FFFF}]+",
    ];
    let inputs = [
        "10.0.0.1:8080",
        "a@b",
        "K",
        "k",
        "bbb",
        "x\ny",
        "abc1",
        "",
        "~!",
        "my-web",
    ];
    for p in patterns {
        let re = GoRegex::compile_with(p, false).unwrap();
        let Engine::Meta { full, ascii } = &re.engine else {
            panic!("{p} should use the general engine");
        };
        for s in inputs {
            assert_eq!(full.is_match(s), ascii.is_match(s), "{p} on {s:?}");
            let mut a = vec![None; 2 * re.group_len()];
            let mut b = vec![None; 2 * re.group_len()];
            let ma = full.search_slots(&Input::new(s), &mut a);
            let mb = ascii.search_slots(&Input::new(s), &mut b);
            assert_eq!(ma, mb, "{p} on {s:?}");
            // Slots are unspecified after a failed search.
            if ma.is_some() {
                assert_eq!(a, b, "{p} on {s:?}");
            }
        }
    }
}

#[test]
fn split_engine_agrees_with_the_automaton() {
    let patterns = [
        r"(.+):(\d+)",
        r"(.+)@(\d+)",
        "(.*)@(.*)",
        "(.*);(.*)",
        r"(.+?):(\d+)",
        r"(.*?)ab(.*)",
        r"([a-z]*)--(.+)",
        r"(?-s)(.*):(.*)",
        r"\w+:(\d*)",
        r"(.*):\d+",
        "(.+)é(.+?)",
        "(.*)aa(.*)",
        "(.{2,})a(.*)",
    ];
    // Every string up to length 5 over a small alphabet, plus some longer ones.
    let alphabet = ['a', 'b', ':', '1', '@', ';', '-', 'é', '\n'];
    let mut inputs: Vec<String> = vec![String::new()];
    let mut frontier = inputs.clone();
    for _ in 0..5 {
        let mut next = Vec::new();
        for s in &frontier {
            for c in alphabet {
                next.push(format!("{s}{c}"));
            }
        }
        inputs.extend(next.iter().cloned());
        frontier = next;
    }
    inputs.extend(["10.0.0.1:8080", "[fd00::2]:1777", "a@b@1", "x--y--z", "aaa"].map(String::from));
    for p in patterns {
        let fast = compile(p).unwrap();
        assert!(
            matches!(fast.engine, Engine::Split(_)),
            "{p} should use the split engine"
        );
        let slow = GoRegex::compile_with(p, false).unwrap();
        let n = fast.group_len();
        for s in &inputs {
            let (mut a, mut b) = (Captures::default(), Captures::default());
            let ma = fast.captures_at(s, 0, n, &mut a);
            let mb = slow.captures_at(s, 0, n, &mut b);
            assert_eq!(ma, mb, "{p} on {s:?}");
            if ma {
                for g in 0..n {
                    assert_eq!(a.get(g), b.get(g), "{p} group {g} on {s:?}");
                }
            }
        }
    }
    // Shapes that must not take the split path.
    for p in [
        "(?i)(.*)a(.*)",
        "(.*)(.*)",
        "a)|(b:(.*)",
        "(.*):(.*)$x",
        "(.{2,5})x(.*)",
    ] {
        let re = compile(p).unwrap();
        assert!(
            !matches!(re.engine, Engine::Split(_)),
            "{p} must not use the split engine"
        );
    }
}

#[test]
fn prefix_engine_agrees_with_the_automaton() {
    let patterns = [
        "__meta_kubernetes_pod_label_(.+)",
        "ab(.*)",
        "a:(.+?)",
        r"(\d+)",
        "(.+)",
        r"ab\d*",
        "(?-s)a(.*)",
        "é(.+)",
        "ab(?:.+)",
    ];
    let alphabet = ['a', 'b', ':', '1', 'é', '\n'];
    let mut inputs: Vec<String> = vec![String::new()];
    let mut frontier = inputs.clone();
    for _ in 0..5 {
        let mut next = Vec::new();
        for s in &frontier {
            for c in alphabet {
                next.push(format!("{s}{c}"));
            }
        }
        inputs.extend(next.iter().cloned());
        frontier = next;
    }
    inputs.extend(
        [
            "__meta_kubernetes_pod_label_app",
            "__meta_kubernetes_pod_label_",
            "__meta_kubernetes_pod_labelpresent_app",
        ]
        .map(String::from),
    );
    for p in patterns {
        let fast = compile(p).unwrap();
        assert!(
            matches!(fast.engine, Engine::Prefix(_)),
            "{p} should use the prefix engine"
        );
        let slow = GoRegex::compile_with(p, false).unwrap();
        let n = fast.group_len();
        for s in &inputs {
            assert_eq!(fast.is_match(s), slow.is_match(s), "{p} on {s:?}");
            for from in [0, 1] {
                if !s.is_char_boundary(from.min(s.len())) {
                    continue;
                }
                let (mut a, mut b) = (Captures::default(), Captures::default());
                let ma = fast.captures_at(s, from.min(s.len()), n, &mut a);
                let mb = slow.captures_at(s, from.min(s.len()), n, &mut b);
                assert_eq!(ma, mb, "{p} on {s:?} from {from}");
                if ma {
                    for g in 0..n {
                        assert_eq!(a.get(g), b.get(g), "{p} group {g} on {s:?}");
                    }
                }
            }
        }
    }
    // Shapes that must not take the prefix path: the literal after the repetition, two
    // groups, a bounded repetition, case folding, the unbalanced-parenthesis quirk.
    for p in ["(.+)a", "a(.*)(b*)", "a(.{2,5})", "(?i)ab(.*)", "a)|(b(.*)"] {
        let re = compile(p).unwrap();
        assert!(
            !matches!(re.engine, Engine::Prefix(_)),
            "{p} must not use the prefix engine"
        );
    }
}

#[test]
fn group_names() {
    let re = compile(r"(?P<a>x)(y)(?<a>z)").unwrap();
    assert_eq!(re.group_len(), 4);
    assert_eq!(re.groups_named("a"), vec![1, 3]);
    assert!(re.groups_named("b").is_empty());
}

#[test]
fn deep_nesting_is_refused_not_overflowing() {
    let deep = "(".repeat(2000) + &")".repeat(2000);
    let e = compile(&deep).unwrap_err();
    assert!(e.contains("nests too deeply"), "{e}");
    let ok = "(".repeat(100) + "a" + &")".repeat(100);
    assert!(matches(&ok, "a"));
}

#[test]
fn fast_engines_count_characters_not_bytes() {
    // Minimum counts, classes and literals over multi-byte characters (2, 3 and 4 bytes),
    // literals occurring several times and overlapping themselves, `(?-s)` around newlines:
    // the split and prefix engines must agree with the automaton on every group.
    let patterns = [
        "(.{2,})é(.+)",
        "(.{3,})😀(.{2,})",
        "([^é]+)é(.*)",
        r"(\S+) (.+)",
        "(.*?)éa(.*?)",
        "(.+)aa(.+)",
        "(.*)aéa(.*)",
        "(.+?)a(.{2,})",
        "([a-é]*):(.+)",
        "(.*)€(.*)",
        "([€😀]+)@([€😀]*)",
        "(?-s)(.+)a(.+)",
        r"(\PL*)a(\pL+)",
        "a(.{3,})",
        "é(.{2,})",
        "(.{2,})",
        "([^:]{2,})",
        "(?-s)(.{2,})",
    ];
    let alphabet = ['a', ':', 'é', '😀', '€', ' ', '\n', '@'];
    let mut inputs: Vec<String> = vec![String::new()];
    let mut frontier = inputs.clone();
    for _ in 0..5 {
        let mut next = Vec::new();
        for s in &frontier {
            for c in alphabet {
                next.push(format!("{s}{c}"));
            }
        }
        inputs.extend(next.iter().cloned());
        frontier = next;
    }
    for p in patterns {
        let fast = compile(p).unwrap();
        assert!(
            matches!(fast.engine, Engine::Split(_) | Engine::Prefix(_)),
            "{p} should take a fast path"
        );
        let slow = GoRegex::compile_with(p, false).unwrap();
        let n = fast.group_len();
        for s in &inputs {
            assert_eq!(fast.is_match(s), slow.is_match(s), "{p} on {s:?}");
            let (mut a, mut b) = (Captures::default(), Captures::default());
            let ma = fast.captures_at(s, 0, n, &mut a);
            let mb = slow.captures_at(s, 0, n, &mut b);
            assert_eq!(ma, mb, "{p} on {s:?}");
            if ma {
                for g in 0..n {
                    assert_eq!(a.get(g), b.get(g), "{p} group {g} on {s:?}");
                }
            }
        }
    }
}
