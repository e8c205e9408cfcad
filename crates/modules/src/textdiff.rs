//! A small line diff for `--diff` output.

/// A unified-style diff of two texts (whole-file hunk, common prefix and suffix trimmed).
pub fn unified(path: &str, before: &str, after: &str) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let mut out = format!(
        "--- {path} (before)\n+++ {path} (after)\n@@ -{} +{} @@\n",
        prefix + 1,
        prefix + 1
    );
    for line in &a[prefix..a.len() - suffix] {
        out.push_str(&format!("-{line}\n"));
    }
    for line in &b[prefix..b.len() - suffix] {
        out.push_str(&format!("+{line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn diff_shows_only_changed_lines() {
        let d = super::unified("/etc/x", "a\nb\nc\n", "a\nB\nc\n");
        assert!(d.contains("-b\n+B\n"), "{d}");
        assert!(!d.contains("-a"), "{d}");
    }
}
