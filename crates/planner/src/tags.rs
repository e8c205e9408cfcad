//! `--tags` and `--skip-tags` selection with Ansible's special tags
//! (`always`, `never`, `all`, `tagged`, `untagged`).

/// Which tasks a run selects by tag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagFilter {
    /// `--tags`: empty means `all`.
    pub only: Vec<String>,
    /// `--skip-tags`.
    pub skip: Vec<String>,
}

impl TagFilter {
    /// Whether a task with `tags` runs, as Ansible decides it.
    pub fn selects(&self, tags: &[String]) -> bool {
        let has = |t: &str| tags.iter().any(|x| x == t);
        let untagged = tags.is_empty();
        let only_all = self.only.is_empty() || self.only.iter().any(|t| t == "all");
        let only_has = |t: &str| self.only.iter().any(|x| x == t);
        let mut run = has("always")
            || (only_all && !has("never"))
            || tags.iter().any(|t| only_has(t))
            || (only_has("tagged") && !untagged && !has("never"))
            || (only_has("untagged") && untagged);
        if run && !self.skip.is_empty() {
            let skip_has = |t: &str| self.skip.iter().any(|x| x == t);
            if skip_has("all") {
                run = has("always") && !skip_has("always");
            } else if tags.iter().any(|t| skip_has(t))
                || (skip_has("tagged") && !untagged)
                || (skip_has("untagged") && untagged)
            {
                run = false;
            }
        }
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn filter(only: &[&str], skip: &[&str]) -> TagFilter {
        TagFilter {
            only: tags(only),
            skip: tags(skip),
        }
    }

    #[test]
    fn default_runs_all_but_never() {
        let f = TagFilter::default();
        assert!(f.selects(&tags(&[])));
        assert!(f.selects(&tags(&["build"])));
        assert!(!f.selects(&tags(&["never", "debug"])));
    }

    #[test]
    fn only_tags_and_always() {
        let f = filter(&["build"], &[]);
        assert!(f.selects(&tags(&["build"])));
        assert!(!f.selects(&tags(&["config"])));
        assert!(!f.selects(&tags(&[])));
        assert!(f.selects(&tags(&["always"])));
        assert!(filter(&["debug"], &[]).selects(&tags(&["never", "debug"])));
        assert!(filter(&["untagged"], &[]).selects(&tags(&[])));
        assert!(filter(&["tagged"], &[]).selects(&tags(&["x"])));
    }

    #[test]
    fn skip_tags() {
        assert!(!filter(&[], &["build"]).selects(&tags(&["build"])));
        assert!(filter(&[], &["build"]).selects(&tags(&["other"])));
        assert!(filter(&[], &["all"]).selects(&tags(&["always"])));
        assert!(!filter(&[], &["all", "always"]).selects(&tags(&["always"])));
    }
}
