//! The process's resident set size, from /proc/self/statm (pages).

/// Resident bytes now, or `None` without /proc.
pub fn current() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for unknown names only.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_plausible_rss() {
        let rss = super::current().expect("/proc/self/statm");
        assert!(rss > 1 << 20 && rss < 64 << 30, "{rss}");
    }
}
