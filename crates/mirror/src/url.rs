//! Joining the mirror's base URL with paths, the way recipes expect.

/// Collapses runs of `/` in the path part of `url` (after `scheme://host`), so that
/// `"{{ mirror_server }}/mellanox/"` joined with `"/file"` names one resource.
/// Strings that are not `http(s)://` URLs are returned unchanged.
pub fn collapse_path_slashes(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let scheme = &url[..scheme_end];
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return url.to_owned();
    }
    let rest = &url[scheme_end + 3..];
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => return url.to_owned(),
    };
    let (path, query) = match path.find(['?', '#']) {
        Some(i) => path.split_at(i),
        None => (path, ""),
    };
    let mut collapsed = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && collapsed.ends_with('/') {
            continue;
        }
        collapsed.push(c);
    }
    format!("{scheme}://{authority}{collapsed}{query}")
}

/// Replaces the password of every `scheme://user:password@host` in `text` with `***`, so that
/// a mirror token in a URL never reaches output, logs or reports.
pub fn redact_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (before, after) = rest.split_at(i + 3);
        out.push_str(before);
        // The authority ends at the first '/', whitespace, quote or end of text.
        let end = after
            .find(|c: char| c == '/' || c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>'))
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.split_once(':') {
                    Some((user, _)) => out.push_str(&format!("{user}:***")),
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Joins `base` and `path` with exactly one `/` between them.
pub fn join_url(base: &str, path: &str) -> String {
    collapse_path_slashes(&format!("{base}/{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords_in_urls_only() {
        assert_eq!(
            redact_credentials("get http://bot:t0k3n@mirror:8080/a.tgz failed; see https://h/x"),
            "get http://bot:***@mirror:8080/a.tgz failed; see https://h/x"
        );
        assert_eq!(
            redact_credentials("\"url\": \"https://user:p@ss@h/\""),
            "\"url\": \"https://user:***@h/\""
        );
        assert_eq!(redact_credentials("a@b: no url"), "a@b: no url");
        assert_eq!(redact_credentials("http://user@h/"), "http://user@h/");
    }

    #[test]
    fn collapses_repeated_slashes_in_path_only() {
        assert_eq!(
            collapse_path_slashes("http://core014.inband//mellanox/rocky8//x.tgz"),
            "http://core014.inband/mellanox/rocky8/x.tgz"
        );
    }

    #[test]
    fn keeps_query_and_non_urls() {
        assert_eq!(
            collapse_path_slashes("http://h//a?x=//y"),
            "http://h/a?x=//y"
        );
        assert_eq!(collapse_path_slashes("/tmp//x"), "/tmp//x");
        assert_eq!(collapse_path_slashes("http://h"), "http://h");
    }

    #[test]
    fn join_has_one_slash() {
        assert_eq!(
            join_url("http://m/", "/nvidia/a.run"),
            "http://m/nvidia/a.run"
        );
        assert_eq!(join_url("http://m", "nvidia"), "http://m/nvidia");
    }
}
