//! Values written the way Python writes them, which is what Ansible writes: `json.dumps` for
//! `copy` with a mapping as `content` and the `to_json` / `to_nice_json` filters (serde_json's
//! own forms differ in separators, indentation, key order and escapes), and `repr` for a list
//! or mapping printed by a template (`['a', 'b']`, `{'k': True, 'n': None}`).

use serde_json::Value as Json;

/// The `json.dumps` options Ansible uses.
#[derive(Debug, Clone, Copy)]
pub struct Dumps {
    /// Spaces per level; `None` writes one line.
    pub indent: Option<usize>,
    /// Sort mapping keys.
    pub sort_keys: bool,
    /// Escape everything outside printable ASCII as `\uXXXX`.
    pub ensure_ascii: bool,
}

impl Default for Dumps {
    /// `json.dumps(value)`: one line, `", "` and `": "`, keys in order, ASCII only.
    fn default() -> Self {
        Self {
            indent: None,
            sort_keys: false,
            ensure_ascii: true,
        }
    }
}

impl Dumps {
    /// Ansible's `to_nice_json`: four spaces, sorted keys.
    pub fn nice(indent: usize) -> Self {
        Self {
            indent: Some(indent),
            sort_keys: true,
            ensure_ascii: true,
        }
    }

    /// `value` as Python writes it with these options.
    pub fn dumps(&self, value: &Json) -> String {
        let mut out = String::new();
        self.write(value, 0, &mut out);
        out
    }

    fn newline(&self, level: usize, out: &mut String) {
        if let Some(indent) = self.indent {
            out.push('\n');
            out.push_str(&" ".repeat(indent * level));
        }
    }

    fn write(&self, value: &Json, level: usize, out: &mut String) {
        // With an indent Python separates items with "," (the newline follows), else ", ".
        let item_sep = if self.indent.is_some() { "," } else { ", " };
        match value {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(&python_number(n)),
            Json::String(s) => self.string(s, out),
            Json::Array(items) if items.is_empty() => out.push_str("[]"),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(item_sep);
                    }
                    self.newline(level + 1, out);
                    self.write(item, level + 1, out);
                }
                self.newline(level, out);
                out.push(']');
            }
            Json::Object(map) if map.is_empty() => out.push_str("{}"),
            Json::Object(map) => {
                let mut entries: Vec<(&String, &Json)> = map.iter().collect();
                if self.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(b.0));
                }
                out.push('{');
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(item_sep);
                    }
                    self.newline(level + 1, out);
                    self.string(key, out);
                    out.push_str(": ");
                    self.write(item, level + 1, out);
                }
                self.newline(level, out);
                out.push('}');
            }
        }
    }

    fn string(&self, s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (self.ensure_ascii && !(' '..='~').contains(&c)) => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

/// `value` as Python's `str()` of it prints in a template: lists and mappings in `repr` form.
pub fn repr(value: &Json) -> String {
    let mut out = String::new();
    write_repr(value, &mut out);
    out
}

fn write_repr(value: &Json, out: &mut String) {
    match value {
        Json::Null => out.push_str("None"),
        Json::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Json::Number(n) => out.push_str(&python_number(n)),
        Json::String(s) => repr_str(s, out),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(item, out);
            }
            out.push(']');
        }
        Json::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_str(key, out);
                out.push_str(": ");
                write_repr(item, out);
            }
            out.push('}');
        }
    }
}

/// A string as Python's `repr`: single quotes unless it holds one and no double quote.
fn repr_str(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// A number as Python's `repr` writes it (`1.0`, `1e+20`).
fn python_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() => {
            if f.is_finite() && f == f.trunc() && f.abs() < 1e16 {
                format!("{f:.1}")
            } else if f.abs() >= 1e16 {
                let text = format!("{f:e}");
                match text.split_once('e') {
                    Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e:0>2}"),
                    _ => text,
                }
            } else {
                f.to_string()
            }
        }
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_line_as_json_dumps_writes_it() {
        let value = json!({"name": "app", "ports": [80, 443], "on": true, "x": null, "f": 1.5});
        assert_eq!(
            Dumps::default().dumps(&value),
            r#"{"name": "app", "ports": [80, 443], "on": true, "x": null, "f": 1.5}"#
        );
        assert_eq!(Dumps::default().dumps(&json!([])), "[]");
        assert_eq!(Dumps::default().dumps(&json!(2.0)), "2.0");
    }

    #[test]
    fn ascii_escapes_and_surrogate_pairs() {
        assert_eq!(
            Dumps::default().dumps(&json!("é \"q\" \u{1F600}\t\u{7f}")),
            r#""\u00e9 \"q\" \ud83d\ude00\t\u007f""#
        );
    }

    #[test]
    fn repr_as_python_prints_containers() {
        let value = json!({"a": [1, 2.5, "x"], "on": true, "n": null, "q": "it's", "e": "a\nb"});
        assert_eq!(
            repr(&value),
            r#"{'a': [1, 2.5, 'x'], 'on': True, 'n': None, 'q': "it's", 'e': 'a\nb'}"#
        );
        assert_eq!(repr(&json!(["both ' and \""])), r#"['both \' and "']"#);
    }

    #[test]
    fn nice_is_sorted_and_indented_by_four() {
        let value = json!({"b": [1, {}], "a": {"c": "d"}});
        assert_eq!(
            Dumps::nice(4).dumps(&value),
            "{\n    \"a\": {\n        \"c\": \"d\"\n    },\n    \"b\": [\n        1,\n        {}\n    ]\n}"
        );
    }
}
