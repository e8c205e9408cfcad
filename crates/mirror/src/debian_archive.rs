//! The Debian archive the build host itself uses, read from its apt sources (never written in
//! the project: bases built with debootstrap use whatever archive the host is set up with).

use std::path::Path;

/// One apt source: its URIs, suites and components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AptSource {
    /// Archive URLs.
    pub uris: Vec<String>,
    /// Suites (`bookworm`, `bookworm-updates`, ...).
    pub suites: Vec<String>,
    /// Components (`main`, ...).
    pub components: Vec<String>,
}

/// Parses one-line `deb URL suite components...` entries.
pub fn parse_list(text: &str) -> Vec<AptSource> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("deb ") || l.starts_with("deb\t"))
        .filter_map(|line| {
            let mut words = line.split_whitespace().skip(1).peekable();
            if words.peek().is_some_and(|w| w.starts_with('[')) {
                for w in words.by_ref() {
                    if w.ends_with(']') {
                        break;
                    }
                }
            }
            let uri = words.next()?.to_owned();
            let suite = words.next()?.to_owned();
            Some(AptSource {
                uris: vec![uri],
                suites: vec![suite],
                components: words.map(str::to_owned).collect(),
            })
        })
        .collect()
}

/// Parses deb822 `.sources` stanzas.
pub fn parse_sources(text: &str) -> Vec<AptSource> {
    text.split("\n\n")
        .filter_map(|stanza| {
            let field = |name: &str| -> Vec<String> {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
                    .map(|v| v.split_whitespace().map(str::to_owned).collect())
                    .unwrap_or_default()
            };
            let types = field("Types");
            if !types.iter().any(|t| t == "deb") || field("Enabled").iter().any(|e| e == "no") {
                return None;
            }
            Some(AptSource {
                uris: field("URIs"),
                suites: field("Suites"),
                components: field("Components"),
            })
        })
        .collect()
}

/// Every source configured in `etc_apt` (normally `/etc/apt`).
pub fn host_sources(etc_apt: &Path) -> Vec<AptSource> {
    let mut sources = Vec::new();
    if let Ok(text) = std::fs::read_to_string(etc_apt.join("sources.list")) {
        sources.extend(parse_list(&text));
    }
    let mut files: Vec<_> = std::fs::read_dir(etc_apt.join("sources.list.d"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        match file.extension().and_then(|e| e.to_str()) {
            Some("list") => sources.extend(parse_list(&text)),
            Some("sources") => sources.extend(parse_sources(&text)),
            _ => {}
        }
    }
    sources
}

/// The archive URL that serves `suite` with `main`, from the given sources.
pub fn archive_for(sources: &[AptSource], suite: &str) -> Option<String> {
    sources
        .iter()
        .filter(|s| s.suites.iter().any(|x| x == suite) && s.components.iter().any(|c| c == "main"))
        .flat_map(|s| s.uris.iter())
        .find(|u| u.starts_with("http://") || u.starts_with("https://"))
        .cloned()
}

/// The build host's archive for `suite` (from `/etc/apt`).
pub fn host_archive(suite: &str) -> Option<String> {
    archive_for(&host_sources(Path::new("/etc/apt")), suite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats() {
        let list = parse_list("# c\ndeb [arch=amd64 signed-by=/k.gpg] http://archive.example/debian bookworm main contrib\ndeb-src http://x/ bookworm main\n");
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].uris, vec!["http://archive.example/debian"]);
        let sources = parse_sources("Types: deb\nURIs: http://archive.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\nComponents: main\n");
        assert_eq!(
            archive_for(&sources, "bookworm").as_deref(),
            Some("http://archive.example/debian")
        );
        assert_eq!(
            archive_for(&sources, "bookworm-security").as_deref(),
            Some("http://security.example/debian-security")
        );
        assert_eq!(archive_for(&sources, "trixie"), None);
    }
}
