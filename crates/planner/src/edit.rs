//! Editing a recipe's `vars:` in place, touching only the characters of the changed values.
//!
//! A bot that bumps `mofed_version` must produce a one-line diff: comments, quoting style, key
//! order and blank lines stay exactly as they were. yaml-rust2's events carry the position of
//! every scalar, so the edit replaces that span and nothing else.

use std::path::Path;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error::{suggest, ErrorKind, Location, PlanError, Result};
use crate::yaml::{self, Value};

/// A recipe variable as written: where its value is and how it is quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarSpan {
    /// The variable name.
    pub name: String,
    /// Byte offset of the value's first character (its opening quote, if quoted).
    pub start: usize,
    /// 1-based line of the value.
    pub line: usize,
    /// The value's style, `None` for a mapping or sequence (not editable).
    style: Option<TScalarStyle>,
}

/// Every scalar variable under the `vars:` of each play of a recipe, in document order.
pub fn recipe_vars(text: &str, file: &Path) -> Result<Vec<VarSpan>> {
    let mut finder = VarFinder::default();
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut finder, false).map_err(|e| {
        PlanError::new(
            Location::new(file, e.marker().line()),
            ErrorKind::Yaml(e.info().to_owned()),
        )
    })?;
    let offsets = CharOffsets::new(text);
    Ok(finder
        .found
        .into_iter()
        .map(|(name, mark, style)| VarSpan {
            name,
            start: offsets.byte(mark.index()),
            line: mark.line(),
            style,
        })
        .collect())
}

/// Sets `name` to `value` in the recipe text `text` (read from `file`, for errors), keeping
/// everything else byte for byte. The value keeps its quoting; a plain value that YAML 1.1 would
/// read as something else (`8.10` is a float) is written in double quotes.
pub fn set_recipe_var(text: &str, file: &Path, name: &str, value: &str) -> Result<String> {
    let vars = recipe_vars(text, file)?;
    let matching: Vec<&VarSpan> = vars.iter().filter(|v| v.name == name).collect();
    if matching.is_empty() {
        return Err(PlanError::new(
            Location::file(file),
            ErrorKind::UnknownKey {
                context: "recipe variable",
                key: name.to_owned(),
                suggestion: suggest(name, vars.iter().map(|v| v.name.as_str())),
            },
        ));
    }
    if value.contains(['\n', '\r']) {
        return Err(unsupported(
            file,
            matching[0].line,
            name,
            "the new value spans lines",
        ));
    }
    let mut out = text.to_owned();
    // Replace from the end so that earlier offsets stay valid.
    for var in matching.iter().rev() {
        let style = var
            .style
            .ok_or_else(|| unsupported(file, var.line, name, "its value is a mapping or a list"))?;
        let end = scalar_end(text, var.start, style).ok_or_else(|| {
            unsupported(
                file,
                var.line,
                name,
                "its value is a block or multi-line scalar",
            )
        })?;
        let old = &text[var.start..end];
        let written = write_scalar(old, style, value);
        out.replace_range(var.start..end, &written);
    }
    check_round_trip(&out, file, name, value)?;
    Ok(out)
}

fn unsupported(file: &Path, line: usize, name: &str, why: &str) -> PlanError {
    PlanError::new(
        Location::new(file, line),
        ErrorKind::Unsupported {
            key: format!("matrix set {name}"),
            why: format!("{why}; edit the recipe by hand"),
        },
    )
}

/// The new value written in the old value's style.
fn write_scalar(old: &str, style: TScalarStyle, value: &str) -> String {
    match style {
        TScalarStyle::SingleQuoted => format!("'{}'", value.replace('\'', "''")),
        TScalarStyle::DoubleQuoted => double_quoted(value),
        _ => {
            if plain_keeps_kind(old, value) {
                value.to_owned()
            } else {
                double_quoted(value)
            }
        }
    }
}

fn double_quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Whether `value` written plain reads back as the same kind of value as `old` did: a string
/// that stays the same string, or a number replacing a number.
fn plain_keeps_kind(old: &str, value: &str) -> bool {
    let read = |text: &str| -> Option<Value> {
        let node = yaml::parse(&format!("k: {text}\n")).ok()?;
        match node.value {
            Value::Map(mut entries) if entries.len() == 1 => Some(entries.remove(0).1.value),
            _ => None,
        }
    };
    match (read(old), read(value)) {
        (_, Some(Value::Str(s))) => s == value,
        (Some(Value::Int(_)), Some(Value::Int(_))) => true,
        (Some(Value::Float(_)), Some(Value::Float(_))) => true,
        _ => false,
    }
}

/// The value of `name` in the first play's `vars:` that sets it, as text (`None` if no play
/// sets it). Plain numbers read as written (`slurm_version: 24` gives `24`).
pub fn recipe_var_value(text: &str, file: &Path, name: &str) -> Result<Option<(String, usize)>> {
    let node = yaml::parse(text)
        .map_err(|e| PlanError::new(Location::new(file, e.line), ErrorKind::Yaml(e.message)))?;
    let Value::Seq(plays) = &node.value else {
        return Ok(None);
    };
    Ok(plays
        .iter()
        .filter_map(|play| play.get("vars")?.get(name))
        .map(|found| {
            let text = match &found.value {
                Value::Str(s) => s.clone(),
                _ => found.raw.clone().unwrap_or_default(),
            };
            (text, found.line)
        })
        .next())
}

/// Re-reads the edited text: the variable must now hold exactly `value`.
fn check_round_trip(text: &str, file: &Path, name: &str, value: &str) -> Result<()> {
    match recipe_var_value(text, file, name)? {
        Some((read, line)) if read != value => Err(unsupported(
            file,
            line,
            name,
            &format!("after the edit it reads back as '{read}', not '{value}'"),
        )),
        _ => Ok(()),
    }
}

/// The byte offset just past the scalar that starts at `start`, or `None` for styles this
/// editor leaves alone (block scalars, plain scalars continued on the next line).
fn scalar_end(text: &str, start: usize, style: TScalarStyle) -> Option<usize> {
    let rest = &text[start..];
    match style {
        TScalarStyle::SingleQuoted => {
            let mut chars = rest.char_indices().skip(1).peekable();
            while let Some((i, c)) = chars.next() {
                if c == '\n' {
                    return None;
                }
                if c == '\'' {
                    if chars.peek().map(|(_, c)| *c) == Some('\'') {
                        chars.next();
                        continue;
                    }
                    return Some(start + i + 1);
                }
            }
            None
        }
        TScalarStyle::DoubleQuoted => {
            let mut chars = rest.char_indices().skip(1);
            while let Some((i, c)) = chars.next() {
                match c {
                    '\n' => return None,
                    '\\' => {
                        chars.next();
                    }
                    '"' => return Some(start + i + 1),
                    _ => {}
                }
            }
            None
        }
        TScalarStyle::Plain => {
            let line_end = rest.find('\n').unwrap_or(rest.len());
            let line = &rest[..line_end];
            let value_end = line
                .match_indices(" #")
                .chain(line.match_indices("\t#"))
                .map(|(i, _)| i)
                .min()
                .unwrap_or(line.len());
            let value = line[..value_end].trim_end();
            if continues_on_next_line(&rest[line_end..], text, start) {
                return None;
            }
            Some(start + value.len())
        }
        _ => None,
    }
}

/// Whether the line after a plain scalar is indented deeper than the scalar's key (a plain
/// scalar folded over several lines).
fn continues_on_next_line(after: &str, text: &str, start: usize) -> bool {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let key_indent = text[line_start..].len() - text[line_start..].trim_start().len();
    let Some(next) = after.strip_prefix('\n').and_then(|t| t.lines().next()) else {
        return false;
    };
    let trimmed = next.trim_start();
    let indent = next.len() - trimmed.len();
    !trimmed.is_empty() && !trimmed.starts_with('#') && indent > key_indent
}

/// Character index → byte offset (yaml-rust2 markers count characters).
struct CharOffsets {
    bytes: Vec<usize>,
    len: usize,
}

impl CharOffsets {
    fn new(text: &str) -> Self {
        Self {
            bytes: text.char_indices().map(|(i, _)| i).collect(),
            len: text.len(),
        }
    }

    fn byte(&self, char_index: usize) -> usize {
        self.bytes.get(char_index).copied().unwrap_or(self.len)
    }
}

/// Walks the events of a playbook: sequence of plays → `vars` → name → scalar.
#[derive(Default)]
struct VarFinder {
    /// Open collections: true for a mapping, false for a sequence.
    stack: Vec<Collection>,
    found: Vec<(String, Marker, Option<TScalarStyle>)>,
}

struct Collection {
    is_map: bool,
    /// For mappings: whether the next scalar is a key.
    expect_key: bool,
    /// For mappings: the last key read.
    key: Option<String>,
}

impl VarFinder {
    /// Whether the current position is the value slot of a key directly under a play's `vars`.
    /// Stack: [plays seq, play map, vars map].
    fn in_vars_map(&self) -> bool {
        self.stack.len() == 3
            && !self.stack[0].is_map
            && self.stack[1].is_map
            && self.stack[1].key.as_deref() == Some("vars")
            && self.stack[2].is_map
    }

    /// Records a value at the current position; returns nothing.
    fn value(&mut self, mark: Marker, style: Option<TScalarStyle>) {
        if self.in_vars_map() {
            if let Some(top) = self.stack.last() {
                if let Some(key) = &top.key {
                    self.found.push((key.clone(), mark, style));
                }
            }
        }
        if let Some(top) = self.stack.last_mut() {
            if top.is_map {
                top.expect_key = true;
            }
        }
    }
}

impl MarkedEventReceiver for VarFinder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::Scalar(text, style, ..) => {
                let is_key = self.stack.last().is_some_and(|t| t.is_map && t.expect_key);
                if is_key {
                    if let Some(top) = self.stack.last_mut() {
                        top.key = Some(text);
                        top.expect_key = false;
                    }
                } else {
                    self.value(mark, Some(style));
                }
            }
            Event::Alias(_) => self.value(mark, None),
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let is_key = self.stack.last().is_some_and(|t| t.is_map && t.expect_key);
                if !is_key {
                    // A collection as a value: record it (not editable) before descending.
                    if self.in_vars_map() {
                        if let Some(key) = self.stack.last().and_then(|t| t.key.clone()) {
                            self.found.push((key, mark, None));
                        }
                    }
                }
                self.stack.push(Collection {
                    is_map: matches!(event, Event::MappingStart(..)),
                    expect_key: true,
                    key: None,
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                if let Some(top) = self.stack.last_mut() {
                    if top.is_map {
                        top.expect_key = true;
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = "\
# a site recipe
- name: rocky.yml
  hosts: localhost
  vars:
    distro: \"rocky9\"   # quoted
    kernel_version: 5.14.0-503.40.1.el9_5.x86_64
    mofed_version: '24.10-2.1.8.0'

    slurm_version: 24 # plain number
    packages: [a, b]
  roles:
    - mofed
";

    fn set(name: &str, value: &str) -> Result<String> {
        set_recipe_var(RECIPE, Path::new("images/r.yml"), name, value)
    }

    fn changed_lines(a: &str, b: &str) -> Vec<(String, String)> {
        assert_eq!(a.lines().count(), b.lines().count());
        a.lines()
            .zip(b.lines())
            .filter(|(x, y)| x != y)
            .map(|(x, y)| (x.to_owned(), y.to_owned()))
            .collect()
    }

    #[test]
    fn keeps_quoting_and_comments() {
        let out = set("distro", "rocky8").expect("set");
        assert_eq!(
            changed_lines(RECIPE, &out),
            [(
                "    distro: \"rocky9\"   # quoted".to_owned(),
                "    distro: \"rocky8\"   # quoted".to_owned()
            )]
        );
        let out = set("mofed_version", "25.01-0.6.0.0").expect("set");
        assert!(
            out.contains("    mofed_version: '25.01-0.6.0.0'\n"),
            "{out}"
        );
        let out = set("kernel_version", "5.14.0-1.el9").expect("set");
        assert!(out.contains("    kernel_version: 5.14.0-1.el9\n"), "{out}");
        let out = set("slurm_version", "25").expect("set");
        assert!(
            out.contains("    slurm_version: 25 # plain number\n"),
            "{out}"
        );
    }

    #[test]
    fn quotes_plain_values_that_yaml_would_retype() {
        let out = set("kernel_version", "8.10").expect("set");
        assert!(out.contains("    kernel_version: \"8.10\"\n"), "{out}");
        let out = set("kernel_version", "yes").expect("set");
        assert!(out.contains("    kernel_version: \"yes\"\n"), "{out}");
        let out = set("kernel_version", "a: b").expect("set");
        assert!(out.contains("    kernel_version: \"a: b\"\n"), "{out}");
        let out = set("mofed_version", "it's").expect("set");
        assert!(out.contains("    mofed_version: 'it''s'\n"), "{out}");
    }

    #[test]
    fn round_trip_restores_bytes() {
        let there = set("mofed_version", "x").expect("set");
        let back =
            set_recipe_var(&there, Path::new("r"), "mofed_version", "24.10-2.1.8.0").expect("back");
        assert_eq!(back, RECIPE);
    }

    #[test]
    fn refuses_unknown_and_collections() {
        let err = set("mofed_verison", "1").expect_err("unknown");
        assert!(
            err.to_string().contains("did you mean 'mofed_version'"),
            "{err}"
        );
        let err = set("packages", "1").expect_err("list");
        assert!(err.to_string().contains("images/r.yml:10"), "{err}");
        let err = set("distro", "a\nb").expect_err("newline");
        assert!(err.to_string().contains("spans lines"), "{err}");
    }

    #[test]
    fn refuses_multi_line_plain_scalars() {
        let text = "- vars:\n    long: one\n      two\n";
        let err = set_recipe_var(text, Path::new("r"), "long", "x").expect_err("multi");
        assert!(err.to_string().contains("multi-line"), "{err}");
    }

    #[test]
    fn non_ascii_text_before_the_value() {
        let text = "# café ☕\n- vars:\n    v: 'é'\n";
        let out = set_recipe_var(text, Path::new("r"), "v", "ü").expect("set");
        assert_eq!(out, "# café ☕\n- vars:\n    v: 'ü'\n");
    }
}
