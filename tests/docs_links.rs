//! The README and `docs/` hold together: every relative link names a file of the repository,
//! and every `#anchor` a heading of the page it points at (as GitHub makes a heading's anchor).

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The markdown pages checked: the README, SECURITY.md and every page under docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let security = root.join("SECURITY.md");
    if security.is_file() {
        pages.push(security);
    }
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The page's lines outside fenced code blocks, with their numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((index + 1, line));
        }
    }
    out
}

/// The targets of the inline links `[text](target)` on a line, outside code spans.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code = false;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                if let Some(end) = line[i + 2..].find(')') {
                    let target = line[i + 2..i + 2 + end].split_whitespace().next();
                    targets.extend(target.map(str::to_owned));
                    i += 2 + end;
                }
            }
            _ => {}
        }
        i += 1;
    }
    targets
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter_map(|(_, line)| line.strip_prefix('#'))
        .map(|rest| anchor(rest.trim_start_matches('#')))
        .collect()
}

/// What is wrong with `target`, linked from `page`; `None` when it resolves.
fn broken(page: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
    let dir = page.parent().expect("a page's folder");
    let linked = if file.is_empty() {
        page.to_path_buf()
    } else {
        dir.join(file)
    };
    if !linked.exists() {
        return Some(format!("{target}: no file {}", linked.display()));
    }
    if fragment.is_empty() || linked.is_dir() {
        return None;
    }
    let text = std::fs::read_to_string(&linked).unwrap_or_default();
    (!anchors(&text).contains(fragment)).then(|| {
        format!(
            "{target}: {} has no heading for #{fragment}",
            linked.display()
        )
    })
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = common::repo_root();
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in pages(&root) {
        let text = std::fs::read_to_string(&page).expect("a page");
        for (number, line) in prose(&text) {
            for target in link_targets(line) {
                checked += 1;
                if let Some(problem) = broken(&page, &target) {
                    let shown = page.strip_prefix(&root).unwrap_or(&page).display();
                    problems.push(format!("{shown}:{number}: {problem}"));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the link reader broken?"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(common::repo_root().join("README.md")).expect("README");
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; the manual belongs in docs/"
    );
}

#[test]
fn the_link_reader_finds_links_and_anchors() {
    assert_eq!(
        link_targets("see [a](docs/a.md#x-y) and `[b](c)` and [d](e \"t\")"),
        vec!["docs/a.md#x-y".to_owned(), "e".to_owned()]
    );
    assert_eq!(
        anchor(" The EL path: dnf, rpm_key"),
        "the-el-path-dnf-rpm_key"
    );
}

/// The module names in the first column of docs/recipes-and-roles.md's module table.
fn documented_modules(page: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_table = false;
    for line in page.lines() {
        if line.starts_with("| module |") {
            in_table = true;
            continue;
        }
        if in_table && !line.starts_with('|') {
            break;
        }
        let Some(cell) = line.split('|').nth(1).filter(|_| in_table) else {
            continue;
        };
        names.extend(
            cell.split('`')
                .skip(1)
                .step_by(2)
                .filter(|name| !name.contains('.'))
                .map(str::to_owned),
        );
    }
    names
}

#[test]
fn every_module_of_the_registry_has_a_row_in_the_module_table() {
    let page = std::fs::read_to_string(common::repo_root().join("docs/recipes-and-roles.md"))
        .expect("docs/recipes-and-roles.md");
    let documented = documented_modules(&page);
    let unknown: Vec<&String> = documented
        .iter()
        .filter(|name| planner::modules::lookup(name).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "the table names modules imgbuild does not have: {unknown:?}"
    );
    let missing: Vec<&str> = planner::modules::ALL
        .iter()
        .map(|spec| spec.name)
        .filter(|name| !documented.iter().any(|d| d == name))
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a row in the table: {missing:?}"
    );
}
