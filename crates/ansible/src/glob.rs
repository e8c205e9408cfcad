//! Shell globs of file names (`*`, `?`, `[abc]`, `[!abc]`), as `with_fileglob`, the `fileglob`
//! lookup and the `find` module use them.

/// Whether `name` matches `pattern` as a whole.
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> bool {
    match (p.first(), n.first()) {
        (None, None) => true,
        (Some('*'), _) => match_from(&p[1..], n) || (!n.is_empty() && match_from(p, &n[1..])),
        (Some('?'), Some(_)) => match_from(&p[1..], &n[1..]),
        (Some('['), Some(c)) => match class(&p[1..], *c) {
            Some((true, rest)) => match_from(rest, &n[1..]),
            Some((false, _)) => false,
            // An unclosed `[` is a literal.
            None => *c == '[' && match_from(&p[1..], &n[1..]),
        },
        (Some(a), Some(b)) => a == b && match_from(&p[1..], &n[1..]),
        _ => false,
    }
}

/// Matches `c` against the class after a `[`: whether it matched, and the pattern after `]`.
fn class(p: &[char], c: char) -> Option<(bool, &[char])> {
    let (negated, body) = match p.first() {
        Some('!') | Some('^') => (true, &p[1..]),
        _ => (false, p),
    };
    let end = body.iter().skip(1).position(|&x| x == ']')? + 1;
    let set = &body[..end];
    let mut hit = false;
    let mut i = 0;
    while i < set.len() {
        if i + 2 < set.len() && set[i + 1] == '-' {
            hit |= set[i] <= c && c <= set[i + 2];
            i += 3;
        } else {
            hit |= set[i] == c;
            i += 1;
        }
    }
    Some((hit != negated, &body[end + 1..]))
}

/// The names of the entries of the folder `dir`, sorted (none when it cannot be read).
pub fn sorted_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        assert!(matches("*.conf", "nhc.conf"));
        assert!(!matches("*.conf", "nhc.conf.bak"));
        assert!(matches("nhc-?.sh", "nhc-1.sh"));
        assert!(matches("[!.]*", "file"));
        assert!(!matches("[!.]*", ".hidden"));
        assert!(matches("v[0-9].yml", "v7.yml") && !matches("v[0-9].yml", "vx.yml"));
        assert!(matches("a.b", "a.b") && !matches("a.b", "axb"));
        assert!(matches("[x", "[x"));
    }
}
