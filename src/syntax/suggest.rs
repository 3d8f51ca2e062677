//! "Did you mean ...?": the known name nearest to a misspelt one, for unknown components,
//! blocks and attributes.

/// The hint for `name` among `candidates`, if one is close enough to be a likely typo:
/// `did you mean "scrape_interval"?`.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    nearest(name, candidates).map(|c| format!("did you mean {c:?}?"))
}

/// The candidate with the smallest edit distance to `name` (transpositions count as one edit,
/// case is ignored), if that distance is small for the name's length: one edit for names up
/// to four characters, two up to 17, then one per six characters. Tighter would miss
/// `logign`; looser suggests real but different components (`pyroscope.java` is not a
/// misspelt `pyroscope.ebpf`). Ties go to the earliest candidate.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if let Some(d) = distance(name, candidate)
            && best.is_none_or(|(bd, _)| d < bd)
        {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// The edit distance between `name` and `candidate` if `candidate` is a likely intended
/// spelling of `name` (see [`nearest`]); `None` for the name itself.
pub fn distance(name: &str, candidate: &str) -> Option<usize> {
    if candidate == name {
        return None;
    }
    let len = name.chars().count();
    let allowed = if len <= 4 { 1 } else { (len / 6).max(2) };
    let d = strsim::osa_distance(&name.to_lowercase(), &candidate.to_lowercase());
    (d <= allowed).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_names() {
        let components = [
            "discovery.kubernetes",
            "discovery.relabel",
            "pyroscope.scrape",
            "pyroscope.write",
        ];
        let attrs = [
            "url",
            "name",
            "headers",
            "scrape_interval",
            "scrape_timeout",
        ];
        let cases: &[(&str, &[&str], Option<&str>)] = &[
            ("pyroscope.scrap", &components, Some("pyroscope.scrape")),
            ("pyroscope.wirte", &components, Some("pyroscope.write")),
            (
                "discovery.kubernets",
                &components,
                Some("discovery.kubernetes"),
            ),
            ("Pyroscope.Write", &components, Some("pyroscope.write")),
            ("prometheus.scrape", &components, None),
            ("pyroscope.java", &["pyroscope.ebpf"], None),
            ("discovery.docker", &["discovery.process"], None),
            ("logign", &["logging"], Some("logging")),
            ("scrape_intervall", &attrs, Some("scrape_interval")),
            ("scrape_timout", &attrs, Some("scrape_timeout")),
            ("uri", &attrs, Some("url")),
            ("nme", &attrs, Some("name")),
            ("tls", &attrs, None),
            ("x", &attrs, None),
        ];
        for (name, candidates, want) in cases {
            assert_eq!(nearest(name, candidates.iter().copied()), *want, "{name}");
        }
        assert_eq!(
            did_you_mean("uri", attrs).as_deref(),
            Some("did you mean \"url\"?")
        );
    }
}
