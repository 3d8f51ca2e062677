//! Tests of the formatter's output, and of the aligner and the trimmer on their own.

use super::*;
use crate::gocompat::quote as go_quote;
use crate::syntax::parser::parse_file;

fn fmt(src: &str) -> String {
    let (file, diags) = parse_file(src);
    assert!(diags.is_empty(), "test input must parse: {diags:?}");
    let once = format_file(&file, src);
    let (again, diags) = parse_file(&once);
    assert!(
        diags.is_empty(),
        "formatted text must parse: {diags:?}\n{once}"
    );
    assert_eq!(format_file(&again, &once), once, "formatting is idempotent");
    once
}

#[test]
fn aligns_equals_of_consecutive_attributes() {
    assert_eq!(
        fmt("block {\n  a = 1\n  long_name = 2\n  bb = \"x\"\n}\n"),
        "block {\n\ta         = 1\n\tlong_name = 2\n\tbb        = \"x\"\n}\n"
    );
}

#[test]
fn alignment_runs_end_at_blank_lines_blocks_and_multiline_values() {
    let src = "a = 1\nbbb = 2\n\ncc = 3\nd = [\n1,\n]\neeeee = 4\nf = 5\ninner {}\ngggggg = 6\n";
    assert_eq!(
        fmt(src),
        "a   = 1\nbbb = 2\n\ncc = 3\nd  = [\n\t1,\n]\neeeee = 4\nf     = 5\n\ninner { }\ngggggg = 6\n"
    );
}

#[test]
fn keeps_at_most_one_blank_line_and_separates_blocks() {
    assert_eq!(
        fmt("\n\na = 1\n\n\n\nb = 2\nx {}\ny {}\n\n\n"),
        "a = 1\n\nb = 2\n\nx { }\n\ny { }\n"
    );
}

#[test]
fn reindents_with_tabs_and_collapses_empty_blocks() {
    assert_eq!(
        fmt("outer \"l\" {\n    inner {\n        x = 1\n    }\n    empty {\n    }\n}\n"),
        "outer \"l\" {\n\tinner {\n\t\tx = 1\n\t}\n\n\tempty { }\n}\n"
    );
}

#[test]
fn line_comments_keep_their_place_and_indentation() {
    let src = "// head\n\nblock {\n// inside\n  a = 1 // trailing\n  bbb = 22 // aligned\n}  // discovery.kubernetes \"pods\"\n// tail\n";
    assert_eq!(
        fmt(src),
        "// head\n\nblock {\n\t// inside\n\ta   = 1  // trailing\n\tbbb = 22 // aligned\n} // discovery.kubernetes \"pods\"\n// tail\n"
    );
}

#[test]
fn a_form_feed_inside_a_comment_keeps_the_line_break_after_it() {
    // Found by the syntax fuzz target: the block after the comment was joined onto it.
    assert_eq!(fmt("//\x0c\ni{}\n"), "//\x0c\ni { }\n");
    assert_eq!(fmt("a = 1 // x\x0cy\nb = 2\n"), "a = 1 // x\x0cy\nb = 2\n");
    assert_eq!(fmt("/* \x0c */\nc {}\n"), "/* \x0c */\nc { }\n");
}

#[test]
fn comments_inside_a_block_name_move_above_the_block() {
    assert_eq!(fmt("a.// c\nb {}\n"), "// c\na.b { }\n");
    assert_eq!(
        fmt("x = 1\n\na.// c\nb \"l\" {}\n"),
        "x = 1\n\n// c\na.b \"l\" { }\n"
    );
    assert_eq!(fmt("a./* c */b {}\n"), "/* c */\na.b { }\n");
    assert_eq!(
        fmt("blk {\n  a.// c\n  b {}\n}\n"),
        "blk {\n\t// c\n\ta.b { }\n}\n"
    );
}

#[test]
fn block_comments_inline_and_multiline() {
    assert_eq!(fmt("a = 1 + /* two */ 2\n"), "a = 1 + /* two */ 2\n");
    assert_eq!(
        fmt("/*\n   kept   \n   as is\n*/\nb = true\n"),
        "/*\n   kept   \n   as is\n*/\nb = true\n"
    );
}

#[test]
fn comments_in_arrays_follow_element_indentation() {
    assert_eq!(
        fmt("x = [ // first\n  1, 2, // second\n  // before three\n  3,\n  // last\n]\n"),
        "x = [ // first\n\t1, 2, // second\n\t// before three\n\t3,\n\t// last\n]\n"
    );
}

#[test]
fn multiline_lists_get_one_break_per_source_break_and_trailing_commas() {
    assert_eq!(
        fmt("x = [\"a\",\n\"b\"]\ny = [1,2,3]\nz = [\n  1, 2]\n"),
        "x = [\"a\",\n\t\"b\"]\ny = [1, 2, 3]\nz = [\n\t1, 2]\n"
    );
    assert_eq!(
        fmt("x = [\n\"a\",  \"b\",\n]\ny = [1, 2, 3,]\n"),
        "x = [\n\t\"a\", \"b\",\n]\ny = [1, 2, 3]\n"
    );
}

#[test]
fn objects_align_keys_and_take_trailing_commas() {
    assert_eq!(
        fmt("o = {\n  a = 1,\n  \"long.key\" = 2,\n}\np = {a=1,b=2,}\n"),
        "o = {\n\ta          = 1,\n\t\"long.key\" = 2,\n}\np = {a = 1, b = 2}\n"
    );
}

#[test]
fn call_arguments_on_separate_lines_are_indented() {
    assert_eq!(
        fmt("x = string.join([\"a\",\"b\"],\",\")\ny = f(\n1,\n2,\n)\n"),
        "x = string.join([\"a\", \"b\"], \",\")\ny = f(\n\t1,\n\t2,\n)\n"
    );
}

#[test]
fn a_comment_after_the_last_call_argument_stays_on_its_line() {
    // Found by the syntax fuzz target: the comment used to move behind `)` and then, on
    // the next run, onto a line of its own.
    assert_eq!(
        fmt("f = g(\n\t\"%s\", // c\n)\n"),
        "f = g(\n\t\"%s\", // c\n)\n"
    );
    assert_eq!(fmt("f = g(1, /* c */)\n"), "f = g(1 /* c */ )\n");
    assert_eq!(fmt("f = g(\n\t1,\n) // c\n"), "f = g(\n\t1,\n) // c\n");
    assert_eq!(
        fmt("f = g(\n\t1, // a\n\t2, // b\n)\n"),
        "f = g(\n\t1, // a\n\t2, // b\n)\n"
    );
}

#[test]
fn comments_inside_access_chains_and_parentheses_keep_their_line_breaks() {
    // Found by the syntax fuzz target: the comment swallowed `.c` and the `,` after it.
    assert_eq!(
        fmt("x = f(\n\ta.\n\t// c\n\tb.c,\n)\n"),
        "x = f(\n\ta.\n\t// c\n\tb.c,\n)\n"
    );
    assert_eq!(fmt("x = (1 /* c */)\n"), "x = (1 /* c */ )\n");
    assert_eq!(fmt("x = a.b.c // c\n"), "x = a.b.c // c\n");
}

#[test]
fn deviations_from_alloy_keep_the_text_parseable() {
    // Alloy prints `f(,` newline `)` here, and drops the empty label.
    assert_eq!(fmt("x = f(\n)\n"), "x = f()\n");
    assert_eq!(fmt("b \"\" {}\n"), "b \"\" { }\n");
}

#[test]
fn empty_multiline_collections_collapse_and_align_in_one_pass() {
    // Alloy only aligns `headers` with its neighbours on a second run.
    assert_eq!(
        fmt("a = 1\nheaders = {\n}\nlist = [\n]\nbb = 2\n"),
        "a       = 1\nheaders = {}\nlist    = []\nbb      = 2\n"
    );
}

#[test]
fn literals_are_printed_verbatim() {
    // No interpolation (`${1}` is plain text), no re-quoting, no re-spelling of escapes or
    // numbers.
    let src = r#"a = "${1}"
b = "$1:$2"
c = "(.+):(\\d+)"
d = "\u00e9\"q\""
n = 1.50e3
m = 007
"#;
    assert_eq!(fmt(src), src);
}

#[test]
fn raw_strings_keep_tabs_and_trailing_blanks() {
    let src = "block {\n  content = `line one  \n\tindented\tand tabbed\n  `\n  x = 1\n}\n";
    assert_eq!(
        fmt(src),
        "block {\n\tcontent = `line one  \n\tindented\tand tabbed\n  `\n\tx = 1\n}\n"
    );
}

#[test]
fn quoted_keys_are_not_requoted() {
    assert_eq!(fmt("o = {\"a\\\"b\" = 1}\n"), "o = {\"a\\\"b\" = 1}\n");
}

#[test]
fn expressions_are_spaced_canonically() {
    assert_eq!(
        fmt("x = -a.b[0]+(2*c)  ==  !d\ny = sys.env(\"HOME\")\n"),
        "x = -a.b[0] + (2 * c) == !d\ny = sys.env(\"HOME\")\n"
    );
}

#[test]
fn comment_only_and_empty_files() {
    assert_eq!(fmt(""), "\n");
    assert_eq!(
        fmt("// only\n\n\n// comments\n"),
        "// only\n\n// comments\n"
    );
}

#[test]
fn labels_are_quoted_like_go() {
    assert_eq!(go_quote("pods"), "\"pods\"");
    assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    assert_eq!(go_quote("tab\there\u{1}"), "\"tab\\there\\x01\"");
    assert_eq!(go_quote("é→\u{a0}"), "\"é→\\u00a0\"");
}

#[test]
fn aligner_pads_soft_columns_with_spaces_and_indents_with_tabs() {
    let out = align_columns(b"\ta\x0b= 1\n\tlong\x0b= 2\x0c\tx\x0b= 3");
    assert_eq!(out, b"\ta    = 1\n\tlong = 2\n\tx = 3".to_vec());
}

#[test]
fn trimmer_drops_trailing_blanks_but_not_escaped_text() {
    let input = b"a \t\nb \xff// c  \xff  \n";
    assert_eq!(trim_blanks(input), "a\nb // c  \n");
}
