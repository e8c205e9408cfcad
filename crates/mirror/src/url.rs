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

/// Joins `base` and `path` with exactly one `/` between them.
pub fn join_url(base: &str, path: &str) -> String {
    collapse_path_slashes(&format!("{base}/{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
