//! YAML written the way PyYAML's `yaml.dump` writes it, which is what Ansible's `to_yaml`
//! (`default_flow_style=None`: collections of plain values inline) and `to_nice_yaml` (block
//! style, four spaces) print: keys sorted, text quoted where YAML 1.1 would read it as another
//! type, sequences in a mapping not indented.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value as Json;

/// How `yaml.dump` was asked to write.
#[derive(Debug, Clone, Copy)]
pub struct Dump {
    /// Spaces per mapping level.
    pub indent: usize,
    /// `default_flow_style=False`: block style everywhere; else collections of plain values
    /// inline.
    pub block_only: bool,
    /// `sort_keys` (PyYAML's default, true): mapping keys sorted; false keeps their order.
    pub sort_keys: bool,
}

/// Text YAML 1.1 (PyYAML's resolver) reads as a boolean, null, number or timestamp.
static IMPLICIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        r"|~|null|Null|NULL|<<|=",
        r"|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0[0-7_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+",
        r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        r"|[-+]?(?:[0-9][0-9_]*)?\.[0-9.]*(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?)$"
    ))
    .expect("constant pattern") // ok: a constant
});

fn scalar(value: &Json) -> String {
    match value {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => text(s),
        other => other.to_string(),
    }
}

/// A string plain where PyYAML leaves it plain, else single-quoted.
fn text(s: &str) -> String {
    let special_start = s.starts_with([
        '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@',
        '`',
    ]);
    let plain = !s.is_empty()
        && !IMPLICIT.is_match(s)
        && !special_start
        && s.trim() == s
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !s.contains(['\n', '\t']);
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

fn is_leaf(value: &Json) -> bool {
    match value {
        Json::Array(items) => items.iter().all(|v| !v.is_array() && !v.is_object()),
        Json::Object(map) => map.values().all(|v| !v.is_array() && !v.is_object()),
        _ => true,
    }
}

fn sorted(map: &serde_json::Map<String, Json>, sort: bool) -> Vec<(&String, &Json)> {
    let mut entries: Vec<_> = map.iter().collect();
    if sort {
        entries.sort_by(|a, b| a.0.cmp(b.0));
    }
    entries
}

fn flow(value: &Json, sort: bool) -> String {
    match value {
        Json::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| flow(v, sort))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Json::Object(map) => format!(
            "{{{}}}",
            sorted(map, sort)
                .iter()
                .map(|(k, v)| format!("{}: {}", text(k), flow(v, sort)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => scalar(other),
    }
}

impl Dump {
    /// `value` as `yaml.dump` writes it, ending with a newline.
    pub fn dump(&self, value: &Json) -> String {
        let mut out = String::new();
        if self.inline(value) || !(value.is_array() || value.is_object()) {
            out.push_str(&flow(value, self.sort_keys));
            out.push('\n');
        } else {
            self.block(value, 0, &mut out);
        }
        out
    }

    fn inline(&self, value: &Json) -> bool {
        match value {
            Json::Array(a) if a.is_empty() => true,
            Json::Object(m) if m.is_empty() => true,
            Json::Array(_) | Json::Object(_) => !self.block_only && is_leaf(value),
            _ => true,
        }
    }

    /// A collection in block style at `column`; the first line's indent is already written
    /// when `column` is reached through a `- ` of a sequence.
    fn block(&self, value: &Json, column: usize, out: &mut String) {
        let pad = " ".repeat(column);
        match value {
            Json::Object(map) => {
                for (i, (key, item)) in sorted(map, self.sort_keys).into_iter().enumerate() {
                    if i > 0 || !out.ends_with(' ') {
                        out.push_str(&pad);
                    }
                    out.push_str(&text(key));
                    out.push(':');
                    if self.inline(item) {
                        out.push(' ');
                        out.push_str(&flow(item, self.sort_keys));
                        out.push('\n');
                    } else {
                        out.push('\n');
                        // Sequences in a mapping stay at the key's column (PyYAML's indentless).
                        let inner = if item.is_array() {
                            column
                        } else {
                            column + self.indent
                        };
                        self.block(item, inner, out);
                    }
                }
            }
            Json::Array(items) => {
                for item in items {
                    out.push_str(&pad);
                    out.push('-');
                    if self.inline(item) {
                        out.push(' ');
                        out.push_str(&flow(item, self.sort_keys));
                        out.push('\n');
                    } else {
                        // The item starts on the dash's line, at the next indent stop.
                        out.push_str(&" ".repeat(self.indent.saturating_sub(1).max(1)));
                        self.block(item, column + self.indent.max(2), out);
                    }
                }
            }
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn as_pyyaml_dumps_for_to_yaml() {
        let value =
            json!({"b": 1, "a": {"y": [1, 2], "x": "text"}, "c": "yes", "d": "1.0", "e": null});
        let dump = Dump {
            indent: 2,
            block_only: false,
            sort_keys: true,
        };
        assert_eq!(
            dump.dump(&value),
            "a:\n  x: text\n  y: [1, 2]\nb: 1\nc: 'yes'\nd: '1.0'\ne: null\n"
        );
        assert_eq!(dump.dump(&json!({"a": 1})), "{a: 1}\n");
    }

    #[test]
    fn as_pyyaml_dumps_for_to_nice_yaml() {
        let nice = Dump {
            indent: 4,
            block_only: true,
            sort_keys: true,
        };
        assert_eq!(
            nice.dump(&json!({"b": 1, "a": {"y": [1, 2], "x": "text"}, "c": "yes"})),
            "a:\n    x: text\n    y:\n    - 1\n    - 2\nb: 1\nc: 'yes'\n"
        );
        assert_eq!(
            nice.dump(&json!([{"a": 1, "b": [1, {"c": 2}]}, "x"])),
            "-   a: 1\n    b:\n    - 1\n    -   c: 2\n- x\n"
        );
    }

    #[test]
    fn quotes_where_yaml_1_1_would_retype() {
        for (input, expected) in [
            ("a: b", "'a: b'"),
            ("- x", "'- x'"),
            ("", "''"),
            ("08", "08"),
            ("0x1", "'0x1'"),
            ("null", "'null'"),
            ("On", "'On'"),
            ("1e3", "1e3"),
            (" lead", "' lead'"),
            ("it's", "it's"),
        ] {
            assert_eq!(text(input), expected, "{input}");
        }
    }
}
