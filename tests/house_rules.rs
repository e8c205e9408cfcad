//! The house's rules, checked on the workspace's own sources: no import circle between the
//! modules of a crate, no function over 80 lines, no file over 800 lines of code.
//!
//! Rust is read as text, as a reader of the code meets it: a module's arrows are the paths it
//! names (`crate::a::b`, `super::x`, a child's `x::`), not its `mod` lines or `pub use`
//! re-exports; code from a `#[cfg(test)]` line to the end of its file is test code and is not
//! measured; a function runs from its `fn` line to the brace that closes it.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const FUNCTION_LIMIT: usize = 80;
const FILE_LIMIT: usize = 800;

/// A module's path inside its crate (`["expand", "emit"]`; the crate root is empty).
type ModulePath = Vec<String>;

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The file's lines before `#[cfg(test)]`, with comments, strings and character literals
/// blanked out.
fn code_lines(text: &str) -> Vec<String> {
    let cut = text
        .lines()
        .position(|l| l.trim_start().starts_with("#[cfg(test)]"))
        .unwrap_or(usize::MAX);
    let mut state = Strip::default();
    text.lines().take(cut).map(|l| state.strip(l)).collect()
}

/// Where the reader is across lines: inside a block comment or a (raw) string.
#[derive(Default)]
struct Strip {
    block_comment: bool,
    string: bool,
    raw_hashes: Option<usize>,
}

impl Strip {
    /// `line` with comments, strings and character literals removed.
    fn strip(&mut self, line: &str) -> String {
        let chars: Vec<char> = line.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        while i < chars.len() {
            let rest: String = chars[i..].iter().collect();
            if self.block_comment {
                match rest.find("*/") {
                    Some(end) => {
                        self.block_comment = false;
                        i += rest[..end].chars().count() + 2;
                        continue;
                    }
                    None => break,
                }
            }
            if let Some(hashes) = self.raw_hashes {
                let close = format!("\"{}", "#".repeat(hashes));
                match rest.find(&close) {
                    Some(end) => {
                        self.raw_hashes = None;
                        i += rest[..end].chars().count() + close.len();
                        continue;
                    }
                    None => break,
                }
            }
            if self.string {
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                if i >= chars.len() {
                    break;
                }
                self.string = false;
                i += 1;
                continue;
            }
            let previous_is_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
            if rest.starts_with("//") {
                break;
            } else if rest.starts_with("/*") {
                self.block_comment = true;
                i += 2;
            } else if let Some(hashes) = raw_string_start(&rest).filter(|_| !previous_is_word) {
                self.raw_hashes = Some(hashes.1);
                i += hashes.0;
            } else if chars[i] == '"' {
                self.string = true;
                i += 1;
            } else if let Some(length) = char_literal(&chars[i..]) {
                i += length;
            } else {
                out.push(chars[i]);
                i += 1;
            }
        }
        out
    }
}

/// `r"`, `r#"`, `br"`...: the opening's length in characters and its number of `#`.
fn raw_string_start(rest: &str) -> Option<(usize, usize)> {
    let body = rest.strip_prefix('b').unwrap_or(rest);
    let after_r = body.strip_prefix('r')?;
    let hashes = after_r.chars().take_while(|c| *c == '#').count();
    after_r[hashes..].starts_with('"').then(|| {
        let prefix = rest.len() - body.len() + 1;
        (prefix + hashes + 1, hashes)
    })
}

/// The length of a character literal (`'a'`, `'\n'`, `'\u{a0}'`) starting here.
fn char_literal(chars: &[char]) -> Option<usize> {
    if chars.first() != Some(&'\'') {
        return None;
    }
    match chars.get(1)? {
        '\\' => {
            let end = chars.iter().skip(2).position(|c| *c == '\'')? + 2;
            (end <= 12).then_some(end + 1)
        }
        '\'' => None,
        _ => (chars.get(2) == Some(&'\'')).then_some(3),
    }
}

/// Each function of the file: its name, first line and length in lines.
fn functions(lines: &[String]) -> Vec<(String, usize, usize)> {
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = function_name(line) else {
            continue;
        };
        let (mut depth, mut opened) = (0i64, false);
        for (offset, body) in lines[start..].iter().enumerate() {
            if !opened && body.contains(';') && !body.contains('{') {
                break;
            }
            for c in body.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                found.push((name.clone(), start + 1, offset + 1));
                break;
            }
        }
    }
    found
}

/// The name of the function a line starts, after its qualifiers (`pub(crate) async fn x`).
fn function_name(line: &str) -> Option<String> {
    let mut words = line.split_whitespace().peekable();
    while let Some(word) = words.next() {
        let qualifier = word == "pub"
            || word.starts_with("pub(")
            || matches!(word, "const" | "async" | "unsafe" | "extern" | "\"C\"");
        if word == "fn" {
            let name: String = words
                .next()?
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            return (!name.is_empty()).then_some(name);
        }
        if !qualifier {
            return None;
        }
    }
    None
}

/// The module a source file holds, relative to the crate's `src/`.
fn module_of(src: &Path, file: &Path) -> ModulePath {
    let relative = file.strip_prefix(src).expect("a file under src/");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| matches!(l.as_str(), "lib" | "main" | "mod"))
    {
        parts.pop();
    }
    parts
}

/// The path a text starting after `prefix::` names, and, for a group (`{a, b::c}`), each
/// path of the group.
fn expand(prefix: &ModulePath, rest: &str, out: &mut Vec<ModulePath>) {
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut item = String::new();
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(prefix, std::mem::take(&mut item).trim(), out);
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        expand(prefix, item.trim(), out);
        return;
    }
    let mut path = prefix.clone();
    let mut rest = rest;
    loop {
        let word: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() {
            break;
        }
        rest = &rest[word.len()..];
        if word != "self" {
            path.push(word);
        }
        match rest.strip_prefix("::") {
            Some(after) if after.starts_with('{') => return expand(&path, after, out),
            Some(after) => rest = after,
            None => break,
        }
    }
    out.push(path);
}

/// Whether the text before an index ends in a word character (or one of `extra`).
fn after_word(text: &str, extra: &[char]) -> bool {
    text.ends_with(|c: char| c.is_alphanumeric() || c == '_' || extra.contains(&c))
}

/// The paths a module's code names, as module paths of the crate (not yet resolved).
fn named_paths(module: &ModulePath, code: &str, children: &[&ModulePath]) -> Vec<ModulePath> {
    let mut targets = Vec::new();
    for (index, _) in code.match_indices("crate::") {
        if !after_word(&code[..index], &['$', ':']) {
            expand(&Vec::new(), &code[index + "crate::".len()..], &mut targets);
        }
    }
    for (index, _) in code.match_indices("super::") {
        if code[..index].ends_with("super::") || after_word(&code[..index], &[]) {
            continue;
        }
        let mut rest = &code[index..];
        let mut ups = 0;
        while let Some(after) = rest.strip_prefix("super::") {
            ups += 1;
            rest = after;
        }
        let base: ModulePath = module[..module.len().saturating_sub(ups)].to_vec();
        expand(&base, rest, &mut targets);
    }
    for child in children {
        let name = format!("{}::", child.last().expect("a child module has a name"));
        let named = code.match_indices(&name).any(|(index, _)| {
            let after = &code[index + name.len()..];
            !after_word(&code[..index], &[':']) && !after.starts_with(' ')
        });
        if named {
            targets.push((*child).clone());
        }
    }
    targets
}

/// The import graph of one crate: each module and the modules it names.
fn import_graph(src: &Path) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    let mut code = BTreeMap::new();
    for file in rust_files(src) {
        if file.components().any(|c| c.as_os_str() == "bin") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a source file");
        let kept: Vec<String> = code_lines(&text)
            .into_iter()
            .filter(|l| !is_reexport(l))
            .collect();
        code.insert(module_of(src, &file), kept.join("\n"));
    }
    let known: BTreeSet<ModulePath> = code.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, text) in &code {
        let children: Vec<&ModulePath> = known
            .iter()
            .filter(|k| k.len() == module.len() + 1 && k.starts_with(module))
            .collect();
        let mut arrows = BTreeSet::new();
        for target in named_paths(module, text, &children) {
            let resolved = (0..=target.len())
                .rev()
                .map(|n| target[..n].to_vec())
                .find(|prefix| known.contains(prefix));
            if let Some(resolved) = resolved.filter(|r| r != module) {
                arrows.insert(resolved);
            }
        }
        graph.insert(module.clone(), arrows);
    }
    graph
}

/// Whether a line is a `pub use` re-export (not an arrow: it only passes a name on).
fn is_reexport(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("pub use ") || (trimmed.starts_with("pub(") && trimmed.contains(") use "))
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn circles(graph: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<ModulePath>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<ModulePath, BTreeSet<ModulePath>>,
        index: BTreeMap<&'g ModulePath, usize>,
        low: BTreeMap<&'g ModulePath, usize>,
        stack: Vec<&'g ModulePath>,
        found: Vec<Vec<ModulePath>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g ModulePath) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.graph[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Each crate's `src/` folder, by crate name.
fn crate_sources() -> Vec<(String, PathBuf)> {
    let crates = common::repo_root().join("crates");
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(&crates)
        .expect("crates/")
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("src"),
            )
        })
        .filter(|(_, src)| src.is_dir())
        .collect();
    found.sort();
    found
}

fn shown(module: &ModulePath) -> String {
    if module.is_empty() {
        "<root>".into()
    } else {
        module.join("::")
    }
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut found = Vec::new();
    for (name, src) in crate_sources() {
        for circle in circles(&import_graph(&src)) {
            let modules: Vec<String> = circle.iter().map(shown).collect();
            found.push(format!("{name}: {}", modules.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn no_function_or_file_is_too_long() {
    let root = common::repo_root();
    let mut found = Vec::new();
    for (_, src) in crate_sources() {
        for file in rust_files(&src) {
            let text = std::fs::read_to_string(&file).expect("a source file");
            let lines = code_lines(&text);
            let shown = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            let code = lines.iter().filter(|l| !l.trim().is_empty()).count();
            if code > FILE_LIMIT {
                found.push(format!(
                    "{shown}: {code} lines of code (at most {FILE_LIMIT})"
                ));
            }
            for (name, line, length) in functions(&lines) {
                if length > FUNCTION_LIMIT {
                    found.push(format!(
                        "{shown}:{line}: fn {name} is {length} lines (at most {FUNCTION_LIMIT})"
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "too long:\n{}", found.join("\n"));
}

#[test]
fn the_reader_sees_arrows_functions_and_circles() {
    let lines = code_lines(
        "use super::b::X; // crate::c\nfn one() {\n    let s = \"crate::d {\";\n}\n#[cfg(test)]\nfn t() {}\n",
    );
    assert_eq!(functions(&lines), vec![("one".to_owned(), 2, 3)]);
    let module: ModulePath = vec!["a".into()];
    assert_eq!(
        named_paths(&module, &lines.join("\n"), &[]),
        vec![vec!["b".to_owned(), "X".to_owned()]]
    );
    let graph: BTreeMap<ModulePath, BTreeSet<ModulePath>> = [
        (vec!["a".into()], [vec!["b".into()]].into()),
        (vec!["b".into()], [vec!["a".into()]].into()),
        (vec!["c".into()], BTreeSet::new()),
    ]
    .into();
    assert_eq!(
        circles(&graph),
        vec![vec![vec!["a".to_owned()], vec!["b".to_owned()]]]
    );
}
