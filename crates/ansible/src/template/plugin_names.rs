//! The filter, test and lookup names a project's text uses, read before planning so that those
//! imgbuild has no implementation of can be found with Ansible's own loaders (minijinja knows a
//! filter only by registration, never by a callback on an unknown name).
//!
//! What counts: a name after `|` (a filter) or `is` (a test), and a lookup's name in
//! `lookup('…'`, `query('…'`, `q('…'` and `with_…:`, anywhere (bare expressions in `when:` and
//! `that:` have no braces). Words that are not plugins (a shell pipe's `grep`, prose after
//! "is") are asked of Ansible's loaders too, which find nothing of those names.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

/// The kinds of Jinja plugins a name can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PluginKind {
    Filter,
    Test,
    Lookup,
}

impl PluginKind {
    /// The name Ansible gives the kind (`filter`, `test`, `lookup`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Filter => "filter",
            Self::Test => "test",
            Self::Lookup => "lookup",
        }
    }
}

/// Files larger than this are not read: no recipe, role or template is this large.
const MAX_TEXT: u64 = 1 << 20;

/// At most this many folder entries are looked at (a link to a large tree is not walked whole).
const MAX_ENTRIES: usize = 100_000;

static FILTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\|[ \t]*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)").expect("a valid pattern")
});
static TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bis[ \t]+(?:not[ \t]+)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
        .expect("a valid pattern")
});
static LOOKUP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:\blookup|\bquery|\bq)\(\s*['"]([A-Za-z_][\w.]*)['"]|(?m:^[ \t-]*with_([A-Za-z_][\w.]*)[ \t]*:)"#)
        .expect("a valid pattern")
});
/// The names `text` uses, added to `found`.
pub fn scan_text(text: &str, found: &mut BTreeSet<(PluginKind, String)>) {
    for (kind, pattern) in [(PluginKind::Filter, &*FILTER), (PluginKind::Test, &*TEST)] {
        for name in pattern.captures_iter(text).filter_map(|c| c.get(1)) {
            found.insert((kind, name.as_str().to_owned()));
        }
    }
    for captures in LOOKUP.captures_iter(text) {
        if let Some(name) = captures.get(1).or_else(|| captures.get(2)) {
            found.insert((PluginKind::Lookup, name.as_str().to_owned()));
        }
    }
}

/// The folders of a project that hold what Ansible reads: recipes and their variables
/// (`images/`), roles and collections.
const ANSIBLE_FOLDERS: &[&str] = &["images", "roles", "collections", "group_vars", "host_vars"];

/// The names the text files of the project at `root` use (its [`ANSIBLE_FOLDERS`], hidden
/// folders left out). Links are followed (`plan --role` links the role into its project), each
/// folder read once.
pub fn used(root: &Path) -> BTreeSet<(PluginKind, String)> {
    let mut found = BTreeSet::new();
    let mut seen = std::collections::HashSet::new();
    let mut folders: Vec<std::path::PathBuf> =
        ANSIBLE_FOLDERS.iter().map(|f| root.join(f)).collect();
    let mut looked_at = 0;
    while let Some(folder) = folders.pop() {
        let Ok(real) = folder.canonicalize() else {
            continue;
        };
        if !seen.insert(real) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            looked_at += 1;
            if looked_at > MAX_ENTRIES {
                return found;
            }
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            // The kind of what a link leads to.
            let Ok(meta) = std::fs::metadata(entry.path()) else {
                continue;
            };
            if meta.is_dir() {
                folders.push(entry.path());
            } else if meta.is_file() && meta.len() <= MAX_TEXT {
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    scan_text(&text, &mut found);
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<(PluginKind, String)> {
        let mut found = BTreeSet::new();
        scan_text(text, &mut found);
        found.into_iter().collect()
    }

    #[test]
    fn filters_and_tests_in_templates_and_bare_expressions() {
        let text = "shell: ls | grep x\n\
                    when: users | community.general.json_query('[*]') is ns.c.odd\n\
                    msg: \"{{ x | to_nice | b.c.d }} {% if y is not even %}{% endif %}\"\n\
                    content: |\n  prose\n";
        assert_eq!(
            names(text),
            vec![
                (PluginKind::Filter, "b.c.d".into()),
                (PluginKind::Filter, "community.general.json_query".into()),
                (PluginKind::Filter, "grep".into()),
                (PluginKind::Filter, "to_nice".into()),
                (PluginKind::Test, "even".into()),
                (PluginKind::Test, "ns.c.odd".into()),
            ]
        );
    }

    #[test]
    fn linked_folders_are_read_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let role = dir.path().join("elsewhere/role/tasks");
        std::fs::create_dir_all(dir.path().join("project/src")).expect("mkdir");
        std::fs::write(dir.path().join("project/src/x.rs"), "a | not.ansible.f").expect("src");
        std::fs::create_dir_all(&role).expect("mkdir");
        std::fs::write(role.join("main.yml"), "x: \"{{ a | ns.c.f }}\"\n").expect("tasks");
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join("roles")).expect("mkdir");
        std::os::unix::fs::symlink(dir.path().join("elsewhere/role"), project.join("roles/r"))
            .expect("link");
        // A link back up must not loop.
        std::os::unix::fs::symlink(&project, project.join("roles/up")).expect("link");
        let found = used(&project);
        assert!(
            found.contains(&(PluginKind::Filter, "ns.c.f".to_owned())),
            "{found:?}"
        );
    }

    #[test]
    fn lookups_by_call_and_by_loop() {
        let text = "x: \"{{ lookup('community.general.flattened', a) + query(\"site\", b) }}\"\n\
                    - debug: var=item\n  with_community.general.cartesian:\n    - [1]\n\
                    with_items: [1]\n";
        assert_eq!(
            names(text),
            vec![
                (PluginKind::Lookup, "community.general.cartesian".into()),
                (PluginKind::Lookup, "community.general.flattened".into()),
                (PluginKind::Lookup, "items".into()),
                (PluginKind::Lookup, "site".into()),
            ]
        );
    }
}
