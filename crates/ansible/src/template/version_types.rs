//! The version schemes of Ansible's `version` test beside the loose one: `strict`
//! (distutils' StrictVersion), `semver` (Ansible's SemanticVersion) and `pep440` (packaging's
//! Version), each refusing a text that is not one of its versions as the Python class does.

use std::cmp::Ordering;
use std::sync::LazyLock;

use regex::Regex;

/// A version scheme the `version` test compares by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// LooseVersion: runs of digits and of letters.
    Loose,
    /// StrictVersion: `N.N[.N][{a|b}N]`.
    Strict,
    /// Semantic versioning 2.0.0.
    Semver,
    /// PEP 440.
    Pep440,
}

impl Scheme {
    /// The scheme a `version_type` names.
    pub fn named(name: &str) -> Option<Self> {
        Some(match name {
            "loose" => Self::Loose,
            "strict" => Self::Strict,
            "semver" | "semantic" => Self::Semver,
            "pep440" => Self::Pep440,
            _ => return None,
        })
    }

    /// How `a` compares with `b` under this scheme; an error names a text that is no version.
    pub fn compare(self, a: &str, b: &str) -> Result<Ordering, String> {
        Ok(match self {
            Self::Loose => compare_versions(a, b),
            Self::Strict => strict_key(a)?.cmp(&strict_key(b)?),
            Self::Semver => compare_semver(&semver_parts(a)?, &semver_parts(b)?),
            Self::Pep440 => pep440_key(a)?.cmp(&pep440_key(b)?),
        })
    }
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Num(u64),
    Text(String),
}

/// Splits a version the way Python's `LooseVersion` does: runs of digits and of letters.
fn loose_parts(version: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut chars = version.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() {
            let mut n = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                n.push(d);
                chars.next();
            }
            parts.push(n.parse().map(Part::Num).unwrap_or(Part::Text(n)));
        } else if c.is_alphabetic() {
            let mut t = String::new();
            while let Some(a) = chars.peek().copied().filter(|c| c.is_alphabetic()) {
                t.push(a);
                chars.next();
            }
            parts.push(Part::Text(t));
        } else {
            chars.next();
        }
    }
    parts
}

/// Compares two versions loosely (numbers numerically, text lexically).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    loose_parts(a).cmp(&loose_parts(b))
}

static STRICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:([ab])(\d+))?$").expect("a valid pattern")
});

/// StrictVersion's order: the numbers, then no prerelease above any (`a` before `b`).
fn strict_key(text: &str) -> Result<(u64, u64, u64, (u8, u64)), String> {
    let caps = STRICT
        .captures(text)
        .ok_or_else(|| format!("invalid version number '{text}'"))?;
    let n = |i: usize| caps.get(i).map_or(Ok(0), |m| m.as_str().parse::<u64>());
    let bad = |_| format!("invalid version number '{text}'");
    let pre = match caps.get(4).map(|m| m.as_str()) {
        Some("a") => (0, n(5).map_err(bad)?),
        Some(_) => (1, n(5).map_err(bad)?),
        None => (2, 0),
    };
    Ok((
        n(1).map_err(bad)?,
        n(2).map_err(bad)?,
        n(3).map_err(bad)?,
        pre,
    ))
}

static SEMVER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$",
    )
    .expect("a valid pattern")
});

/// A semantic version's core numbers and prerelease identifiers (the build is not compared).
type SemverParts = ([u64; 3], Vec<String>);

fn semver_parts(text: &str) -> Result<SemverParts, String> {
    let bad = || format!("invalid semantic version '{text}'");
    let caps = SEMVER.captures(text).ok_or_else(bad)?;
    let mut core = [0u64; 3];
    for (slot, i) in core.iter_mut().zip(1..=3) {
        *slot = caps[i].parse().map_err(|_| bad())?;
    }
    let pre = caps
        .get(4)
        .map(|m| m.as_str().split('.').map(str::to_owned).collect())
        .unwrap_or_default();
    Ok((core, pre))
}

/// Semantic versioning's precedence: the core, then a prerelease below none, identifier by
/// identifier (numbers numerically and below words), a shorter list below a longer one.
fn compare_semver(a: &SemverParts, b: &SemverParts) -> Ordering {
    a.0.cmp(&b.0)
        .then_with(|| match (a.1.is_empty(), b.1.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let ident = |x: &String, y: &String| match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                };
                a.1.iter()
                    .zip(&b.1)
                    .map(|(x, y)| ident(x, y))
                    .find(|o| o.is_ne())
                    .unwrap_or_else(|| a.1.len().cmp(&b.1.len()))
            }
        })
}

static PEP440: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)^\s*v?
        (?:(\d+)!)?
        (\d+(?:\.\d+)*)
        (?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d+)?)?
        (?:-(\d+)|[-_.]?(post|rev|r)[-_.]?(\d+)?)?
        (?:[-_.]?(dev)[-_.]?(\d+)?)?
        (?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?
        \s*$",
    )
    .expect("a valid pattern")
});

/// packaging's sort key: epoch, release without trailing zeros, then prerelease, post and
/// dev releases, each placed as packaging places a missing one.
type Pep440Key = (u64, Vec<u64>, (i8, u8, u64), (i8, u64), (i8, u64));

fn pep440_key(text: &str) -> Result<Pep440Key, String> {
    let bad = || format!("Invalid version: '{text}'");
    let caps = PEP440.captures(text).ok_or_else(bad)?;
    let num = |i: usize| -> Result<u64, String> {
        caps.get(i)
            .map_or(Ok(0), |m| m.as_str().parse().map_err(|_| bad()))
    };
    let mut release: Vec<u64> = caps[2]
        .split('.')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    while release.len() > 1 && release.last() == Some(&0) {
        release.pop();
    }
    let has = |i: usize| caps.get(i).is_some();
    let pre = match caps.get(3).map(|m| m.as_str().to_ascii_lowercase()) {
        Some(letter) => {
            let rank = match letter.as_str() {
                "a" | "alpha" => 0,
                "b" | "beta" => 1,
                _ => 2,
            };
            (0, rank, num(4)?)
        }
        // A dev release of a final version sorts below its prereleases.
        None if has(8) && !has(5) && !has(6) => (-1, 0, 0),
        None => (1, 0, 0),
    };
    let post = match (caps.get(5), has(6)) {
        (Some(_), _) => (0, num(5)?),
        (None, true) => (0, num(7)?),
        (None, false) => (-1, 0),
    };
    let dev = if has(8) { (0, num(9)?) } else { (1, 0) };
    Ok((num(1)?, release, pre, post, dev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scheme_orders_as_its_python_class() {
        let lt = |s: Scheme, a: &str, b: &str| s.compare(a, b) == Ok(Ordering::Less);
        assert!(lt(Scheme::Strict, "1.0", "2.0"));
        assert!(lt(Scheme::Strict, "1.0a1", "1.0"));
        assert!(Scheme::Strict.compare("1.0", "nope").is_err());
        assert!(lt(Scheme::Semver, "1.2.3", "2.0.0"));
        assert!(lt(Scheme::Semver, "1.0.0-alpha", "1.0.0-alpha.1"));
        assert!(lt(Scheme::Semver, "1.0.0-beta.11", "1.0.0-rc.1"));
        assert!(Scheme::Semver.compare("nope", "nopenope").is_err());
        assert!(lt(Scheme::Pep440, "2.14.0rc1", "2.14.0"));
        assert!(lt(Scheme::Pep440, "1.0.dev1", "1.0a1"));
        assert!(lt(Scheme::Pep440, "1.0", "1.0.post1"));
        assert_eq!(Scheme::Pep440.compare("1.0", "1.0.0"), Ok(Ordering::Equal));
    }
}
