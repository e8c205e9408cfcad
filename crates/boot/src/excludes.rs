//! `/etc/warewulf/excludes` matched as Warewulf matches it when it packs an image: each line
//! (`#` comments left out) trimmed of its leading and trailing `/`, then matched with Go's
//! `filepath.Match` against each path relative to the image's root; a folder that matches is
//! left out with everything below it.

use std::path::Path;

/// The patterns of an excludes file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Excludes(Vec<String>);

impl Excludes {
    /// The image's own excludes file, if it has one.
    pub fn of_tree(root: &Path) -> Excludes {
        let text = std::fs::read_to_string(root.join("etc/warewulf/excludes")).unwrap_or_default();
        Excludes::parse(&text)
    }

    /// Reads the file's text.
    pub fn parse(text: &str) -> Excludes {
        Excludes(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| l.trim_matches('/').to_owned())
                .filter(|l| !l.is_empty())
                .collect(),
        )
    }

    /// Whether `path` (absolute in the image, `/usr/share/doc`) is left out: it, or a folder
    /// above it, matches a pattern.
    pub fn excludes(&self, path: &str) -> bool {
        let relative = path.trim_start_matches('/');
        let mut ends: Vec<usize> = relative.match_indices('/').map(|(i, _)| i).collect();
        ends.push(relative.len());
        ends.iter().any(|&end| {
            let prefix = &relative[..end];
            self.0.iter().any(|pattern| go_match(pattern, prefix))
        })
    }
}

/// Go's `filepath.Match`: `*` is any run of characters but `/`, `?` one such character,
/// `[...]` a class (`^` negates, `a-z` ranges), `\` quotes; a malformed pattern matches
/// nothing (Warewulf ignores the error).
pub fn go_match(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    matches_from(&pattern, &name)
}

fn matches_from(pattern: &[char], name: &[char]) -> bool {
    match pattern.first() {
        None => name.is_empty(),
        Some('*') => (0..=name.len())
            .take_while(|&i| i == 0 || name[i - 1] != '/')
            .any(|i| matches_from(&pattern[1..], &name[i..])),
        Some(_) => {
            let Some((&c, rest)) = name.split_first() else {
                return false;
            };
            match single(pattern, c) {
                Some((true, used)) => matches_from(&pattern[used..], rest),
                _ => false,
            }
        }
    }
}

/// Whether the pattern's first element (not `*`) matches `c`, and how many pattern
/// characters it took; `None` for a malformed pattern.
fn single(pattern: &[char], c: char) -> Option<(bool, usize)> {
    match pattern[0] {
        '?' => Some((c != '/', 1)),
        '\\' => pattern.get(1).map(|&q| (q == c, 2)),
        '[' => class(pattern, c),
        literal => Some((literal == c, 1)),
    }
}

fn class(pattern: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negated = pattern.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut ranges = 0;
    loop {
        if pattern.get(i) == Some(&']') && ranges > 0 {
            return Some((matched != negated, i + 1));
        }
        ranges += 1;
        let (lo, next) = escaped(pattern, i)?;
        i = next;
        let hi = if pattern.get(i) == Some(&'-') {
            let (hi, next) = escaped(pattern, i + 1)?;
            i = next;
            hi
        } else {
            lo
        };
        matched |= lo <= c && c <= hi;
    }
}

/// The class character at `i`, unquoting `\\`, and the index after it; `None` where Go's
/// `getEsc` finds the pattern malformed (a bare `-` or `]`, or the class unclosed).
fn escaped(pattern: &[char], mut i: usize) -> Option<(char, usize)> {
    match pattern.get(i)? {
        '-' | ']' => return None,
        '\\' => i += 1,
        _ => {}
    }
    let c = *pattern.get(i)?;
    (i + 1 < pattern.len()).then_some((c, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_filepath_match() {
        for (pattern, name, want) in [
            ("abc", "abc", true),
            ("*", "abc", true),
            ("*c", "abc", true),
            ("a*", "a", true),
            ("a*/b", "abc/b", true),
            ("a*", "ab/c", false),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", true),
            ("a*b?c*x", "abxbbxdbxebxczzx", true),
            ("ab[c]", "abc", true),
            ("ab[b-d]", "abc", true),
            ("ab[e-g]", "abc", false),
            ("ab[^c]", "abc", false),
            ("ab[^e-g]", "abc", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "ab", false),
            ("a?b", "a/b", false),
            ("[", "a", false),
            ("a[", "a", false),
            ("*x", "xxx", true),
        ] {
            assert_eq!(go_match(pattern, name), want, "{pattern} {name}");
        }
    }

    #[test]
    fn excludes_read_as_warewulf_reads_them() {
        let excludes = Excludes::parse("# comment\n/usr/share/doc/\n/tmp/*\n/var/log/*.log\n");
        assert!(excludes.excludes("/usr/share/doc"));
        assert!(
            excludes.excludes("/usr/share/doc/bash/README"),
            "below a folder left out"
        );
        assert!(!excludes.excludes("/usr/share/docs"));
        assert!(excludes.excludes("/tmp/x"));
        assert!(!excludes.excludes("/tmp"), "the folder itself stays");
        assert!(excludes.excludes("/var/log/dpkg.log"));
        assert!(!excludes.excludes("/var/log/apt/term.log"), "* stops at /");
        assert!(!excludes.excludes("/usr/bin/bash"));
        // Not a prefix: Warewulf keeps /boot2 when it excludes /boot.
        let boot = Excludes::parse("/boot\n");
        assert!(boot.excludes("/boot/vmlinuz") && !boot.excludes("/boot2"));
        // A leading ./ is not a prefix Warewulf takes off: the pattern matches nothing.
        assert!(!Excludes::parse("./var/cache\n").excludes("/var/cache/apt"));
    }
}
