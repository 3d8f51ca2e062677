//! The frame every server-rendered page shares: the document head, the style (the explorer's
//! look: `ui/src/explore.css`'s colours and top bar, so moving between pages does not change
//! the design) and the top bar linking the pages.

/// Styles of the server-rendered pages. Colours as in `ui/src/explore.css`.
const STYLE: &str = "\
:root{--fg:#1d1d1f;--muted:#6e6e73;--line:#d9d9de;--soft:#f5f6f8;--accent:#3d71d9}\
*{box-sizing:border-box}html,body{margin:0}\
body{color:var(--fg);font:13px/1.4 system-ui,-apple-system,\"Segoe UI\",sans-serif}\
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}\
header.top{display:flex;align-items:center;gap:10px;padding:8px 16px;\
border-bottom:1px solid var(--line);background:var(--soft)}\
header.top .brand{font-weight:700;color:var(--fg)}header.top .title{color:var(--muted)}\
header.top nav{margin-left:auto;display:flex;gap:14px}\
main{padding:10px 16px 40px}h1{font-size:18px;margin:8px 0}h2{font-size:15px;margin:18px 0 6px}\
table{border-collapse:collapse;margin-bottom:1em}\
td,th{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}\
th{background:var(--soft);font-weight:600}\
table table td,table table th{border-color:#e4e4e4}\
.healthy,.up{color:#1a7f37}.unhealthy,.down{color:#cf222e}.exited{color:#9a6700}\
.unknown,.null,.muted{color:var(--muted)}pre{white-space:pre-wrap;margin:0}\
code,.mono{font-family:ui-monospace,\"SFMono-Regular\",Menlo,Consolas,monospace;font-size:12px}\
form.filter{display:flex;gap:8px;align-items:center;margin:8px 0}\
form.filter input,form.filter select{font:inherit;padding:3px 6px}\
td.error{min-width:24em;max-width:48em}";

/// The pages of the top bar: `(path, label)`.
const NAV: [(&str, &str); 6] = [
    ("/", "Components"),
    ("/explore", "Explore"),
    ("/targets", "Targets"),
    ("/cluster", "Cluster"),
    ("/metrics", "Metrics"),
    ("/debug/pprof/", "Profile scraper"),
];

/// The document up to and including the opening of `<main>`; `title` is already escaped.
pub(super) fn start(title: &str, subtitle: &str) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} · scraper</title>\n<link rel=\"icon\" href=\"data:,\">\n\
         <style>{STYLE}</style>\n</head>\n<body>\n<header class=\"top\">\
         <a class=\"brand\" href=\"/\">scraper</a><span class=\"title\">{subtitle}</span><nav>"
    );
    for (path, label) in NAV {
        out.push_str(&format!("<a href=\"{path}\">{label}</a>"));
    }
    out.push_str("</nav></header>\n<main>\n");
    out
}

/// Closes what [`start`] opened.
pub(super) const END: &str = "</main>\n</body>\n</html>\n";

#[cfg(test)]
mod tests {
    #[test]
    fn pages_share_the_top_bar() {
        let html = super::start("Targets", "Targets");
        assert!(html.contains("<title>Targets · scraper</title>"), "{html}");
        assert!(html.contains("<a href=\"/explore\">Explore</a>"), "{html}");
        assert!(html.ends_with("<main>\n"));
    }
}
