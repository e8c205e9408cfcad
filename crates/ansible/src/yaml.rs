//! YAML with source lines and Ansible's (PyYAML's) YAML 1.1 scalar rules.
//!
//! Roles are written for Ansible, which reads YAML 1.1: plain `yes`/`on` are booleans, `0644` is
//! octal and `8.10` is a float. yaml-rust2 resolves YAML 1.2, so this module takes its event
//! stream (which carries each scalar's raw text, style and line) and builds a [`Node`] tree,
//! resolving plain scalars the way PyYAML does. Where yaml-rust2 is stricter than PyYAML about
//! indentation (see [`relax`]) the text is re-indented, keeping its lines, and parsed again.
//! A `!vault` scalar is decrypted with the vault given to [`parse_with_vault`].

mod relax;

use std::borrow::Cow;
use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::vault::{Vault, VaultError};

/// One YAML value with the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// 1-based line of the value's first character.
    pub line: usize,
    /// The scalar exactly as written, for plain scalars (used to warn about `mode: 644`).
    pub raw: Option<String>,
}

/// A YAML value: scalars resolved with YAML 1.1 rules, mappings in document order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `~`, `null` or nothing.
    Null,
    /// `true`, `yes`, `on`, ... (PyYAML's set).
    Bool(bool),
    /// Decimal, octal (`0644`), hex, binary or sexagesimal integer.
    Int(i64),
    /// A float (`8.10` is the float 8.1, as in Ansible).
    Float(f64),
    /// Any other scalar, and every quoted or block scalar.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping with string keys, in document order.
    Map(Vec<(Key, Node)>),
}

/// A mapping key with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The key as a string (non-string keys are written out as YAML would).
    pub name: String,
    /// 1-based line of the key.
    pub line: usize,
}

/// A YAML syntax error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {col}: {message}")]
pub struct YamlError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What the parser found wrong.
    pub message: String,
    /// A `!vault` value that could not be decrypted (the message says why), not a syntax error.
    pub vault: bool,
}

/// Parses one YAML document; an empty document gives `Value::Null` on line 1. A `!vault`
/// value is an error (no password reaches this YAML).
pub fn parse(text: &str) -> Result<Node, YamlError> {
    parse_with_vault(text, &Vault::default())
}

/// Parses one YAML document, decrypting `!vault` values with `vault`.
pub fn parse_with_vault(text: &str, vault: &Vault) -> Result<Node, YamlError> {
    let mut text = Cow::Borrowed(text);
    let mut relaxed = relax::Relaxed::default();
    loop {
        let mut builder = Builder {
            vault: Some(vault),
            ..Builder::default()
        };
        let mut parser = Parser::new_from_str(&text);
        if let Err(e) = parser.load(&mut builder, false) {
            let (line, col) = (e.marker().line(), e.marker().col());
            match relaxed.fix(&text, e.info(), line, col) {
                Some(fixed) => {
                    text = Cow::Owned(fixed);
                    continue;
                }
                None => {
                    return Err(YamlError {
                        line,
                        col: relaxed.original_col(line, col) + 1,
                        message: e.info().to_owned(),
                        vault: false,
                    })
                }
            }
        }
        if let Some(mut error) = builder.error {
            error.col = relaxed.original_col(error.line, error.col - 1) + 1;
            return Err(error);
        }
        return Ok(builder.root.unwrap_or(Node {
            value: Value::Null,
            line: 1,
            raw: None,
        }));
    }
}

impl Node {
    /// The mapping entries, if this is a mapping.
    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The items, if this is a sequence; nothing otherwise.
    pub fn value_seq(&self) -> &[Node] {
        match &self.value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    /// The string, if this is a string scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Looks up a key in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v)
    }

    /// A short name of the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// Converts to JSON (lines are dropped).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(J::Number)
                .unwrap_or_else(|| J::String(f.to_string())),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Resolves a plain scalar as PyYAML's YAML 1.1 resolver does.
pub fn resolve_plain(raw: &str) -> Value {
    match raw {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true)
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false)
        }
        _ => {}
    }
    if let Some(i) = resolve_int(raw) {
        return Value::Int(i);
    }
    if let Some(f) = resolve_float(raw) {
        return Value::Float(f);
    }
    Value::Str(raw.to_owned())
}

fn split_sign(raw: &str) -> (i64, &str) {
    match raw.as_bytes().first() {
        Some(b'-') => (-1, &raw[1..]),
        Some(b'+') => (1, &raw[1..]),
        _ => (1, raw),
    }
}

fn resolve_int(raw: &str) -> Option<i64> {
    let (sign, body) = split_sign(raw);
    if body.is_empty() {
        return None;
    }
    let digits = |s: &str, radix: u32| -> Option<i64> {
        let cleaned: String = s.chars().filter(|c| *c != '_').collect();
        if cleaned.is_empty() || !s.chars().all(|c| c == '_' || c.is_digit(radix)) {
            return None;
        }
        i64::from_str_radix(&cleaned, radix).ok()
    };
    let magnitude = if let Some(bin) = body.strip_prefix("0b") {
        digits(bin, 2)?
    } else if let Some(hex) = body.strip_prefix("0x") {
        digits(hex, 16)?
    } else if body == "0" {
        0
    } else if let Some(oct) = body.strip_prefix('0') {
        digits(oct, 8)?
    } else if body.contains(':') {
        // Sexagesimal (base 60), as PyYAML still resolves `22:30` to 1350.
        let mut parts = body.split(':');
        let first = parts.next()?;
        if !first.starts_with(|c: char| ('1'..='9').contains(&c)) {
            return None;
        }
        let mut total = digits(first, 10)?;
        for part in parts {
            if part.is_empty() || part.len() > 2 || !part.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let n: i64 = part.parse().ok()?;
            if n > 59 {
                return None;
            }
            total = total.checked_mul(60)?.checked_add(n)?;
        }
        total
    } else if body.starts_with(|c: char| ('1'..='9').contains(&c)) {
        digits(body, 10)?
    } else {
        return None;
    };
    magnitude.checked_mul(sign)
}

fn resolve_float(raw: &str) -> Option<f64> {
    let (sign, body) = split_sign(raw);
    match body {
        ".inf" | ".Inf" | ".INF" => return Some(sign as f64 * f64::INFINITY),
        ".nan" | ".NaN" | ".NAN" if sign == 1 && !raw.starts_with('+') => return Some(f64::NAN),
        _ => {}
    }
    // PyYAML: [-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)?  (a dot is required)
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let dot = mantissa.find('.')?;
    let (int_part, frac_part) = (&mantissa[..dot], &mantissa[dot + 1..]);
    let int_ok = int_part.is_empty()
        || (int_part.starts_with(|c: char| c.is_ascii_digit())
            && int_part.chars().all(|c| c.is_ascii_digit() || c == '_'));
    if !int_ok {
        return None;
    }
    if !frac_part.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    if let Some(exp) = exponent {
        let digits = exp.strip_prefix(['+', '-'])?;
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
    }
    let cleaned: String = body.chars().filter(|c| *c != '_').collect();
    // "1.2.3" matches PyYAML's pattern but is no number; PyYAML would fail too. Keep a string.
    let value: f64 = cleaned.parse().ok()?;
    Some(sign as f64 * value)
}

enum Frame {
    Seq {
        items: Vec<Node>,
        line: usize,
        anchor: usize,
    },
    Map {
        entries: Vec<(Key, Node)>,
        merged: Vec<(Key, Node)>,
        pending_key: Option<Key>,
        line: usize,
        anchor: usize,
    },
}

#[derive(Default)]
struct Builder<'v> {
    stack: Vec<Frame>,
    root: Option<Node>,
    anchors: HashMap<usize, Node>,
    error: Option<YamlError>,
    vault: Option<&'v Vault>,
}

impl Builder<'_> {
    fn fail(&mut self, mark: Marker, message: String) {
        if self.error.is_none() {
            self.error = Some(YamlError {
                line: mark.line(),
                col: mark.col() + 1,
                message,
                vault: false,
            });
        }
    }

    /// A `!vault` value: its clear text (registered for redaction), or an error.
    fn vaulted(&mut self, text: &str, mark: Marker) -> Value {
        let opened = match self.vault {
            Some(vault) => vault.decrypt_text(text),
            None => Err(VaultError::NoSecrets),
        };
        match opened {
            Ok(clear) => Value::Str(clear),
            Err(e) => {
                // The key's line: a block scalar's mark is its first content line.
                let line = match self.stack.last() {
                    Some(Frame::Map {
                        pending_key: Some(key),
                        ..
                    }) => key.line,
                    _ => mark.line(),
                };
                if self.error.is_none() {
                    self.error = Some(YamlError {
                        line,
                        col: mark.col() + 1,
                        message: format!("vault-encrypted value: {e}"),
                        vault: true,
                    });
                }
                Value::Null
            }
        }
    }

    fn scalar(
        &mut self,
        text: String,
        style: TScalarStyle,
        tag: Option<Tag>,
        mark: Marker,
    ) -> Node {
        let line = mark.line();
        // A block scalar with no content lines (`content: |` and nothing under it) is empty,
        // as PyYAML reads it; the event gives a lone line break.
        let text = if matches!(style, TScalarStyle::Literal | TScalarStyle::Folded) && text == "\n"
        {
            String::new()
        } else {
            text
        };
        let tag_suffix = tag.as_ref().map(|t| t.suffix.as_str());
        match tag_suffix {
            Some("vault") => {
                return Node {
                    value: self.vaulted(&text, mark),
                    line,
                    raw: None,
                };
            }
            // Ansible never templates an `!unsafe` value: its braces stay text.
            Some("unsafe") if crate::template::is_template(&text) && !text.contains("endraw") => {
                return Node {
                    value: Value::Str(format!("{{% raw %}}{text}{{% endraw %}}")),
                    line,
                    raw: None,
                };
            }
            Some("str") | Some("unsafe") | Some("binary") => {
                return Node {
                    value: Value::Str(text),
                    line,
                    raw: None,
                };
            }
            _ => {}
        }
        if style == TScalarStyle::Plain {
            let value = match tag_suffix {
                Some("int") => resolve_int(&text).map(Value::Int),
                Some("float") => resolve_float(&text)
                    .or_else(|| resolve_int(&text).map(|i| i as f64))
                    .map(Value::Float),
                Some("bool") => match resolve_plain(&text) {
                    b @ Value::Bool(_) => Some(b),
                    _ => None,
                },
                _ => Some(resolve_plain(&text)),
            };
            match value {
                Some(value) => Node {
                    value,
                    line,
                    raw: Some(text),
                },
                None => {
                    self.fail(mark, format!("'{text}' does not match its tag"));
                    Node {
                        value: Value::Null,
                        line,
                        raw: None,
                    }
                }
            }
        } else {
            Node {
                value: Value::Str(text),
                line,
                raw: None,
            }
        }
    }

    fn push_value(&mut self, node: Node, anchor: usize, mark: Marker) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                merged: merged_entries,
                pending_key,
                ..
            }) => match pending_key.take() {
                None => {
                    let name = match &node.value {
                        Value::Str(s) => s.clone(),
                        Value::Null => "null".into(),
                        Value::Bool(b) => b.to_string(),
                        Value::Int(i) => i.to_string(),
                        Value::Float(f) => f.to_string(),
                        Value::Seq(_) | Value::Map(_) => {
                            self.fail(mark, "a mapping key must be a scalar".into());
                            return;
                        }
                    };
                    *pending_key = Some(Key {
                        name,
                        line: node.line,
                    });
                }
                Some(key) if key.name == "<<" => {
                    let merged: Vec<Node> = match node.value {
                        Value::Map(_) => vec![node],
                        Value::Seq(items) => items,
                        _ => {
                            self.fail(
                                mark,
                                "merge key '<<' needs a mapping or a list of mappings".into(),
                            );
                            return;
                        }
                    };
                    // Earlier sources win over later ones; explicit keys win over all (at the end).
                    for source in merged {
                        if let Value::Map(source_entries) = source.value {
                            for (k, v) in source_entries {
                                if !merged_entries.iter().any(|(e, _)| e.name == k.name) {
                                    merged_entries.push((k, v));
                                }
                            }
                        }
                    }
                }
                Some(key) => {
                    if let Some((first, _)) = entries.iter().find(|(k, _)| k.name == key.name) {
                        let message = format!(
                            "duplicate key '{}' (first on line {}); remove one of them",
                            key.name, first.line
                        );
                        self.fail(mark, message);
                        return;
                    }
                    entries.push((key, node));
                }
            },
        }
    }
}

impl MarkedEventReceiver for Builder<'_> {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let node = self.scalar(text, style, tag, mark);
                self.push_value(node, anchor, mark);
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq {
                items: Vec::new(),
                line: mark.line(),
                anchor,
            }),
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                entries: Vec::new(),
                merged: Vec::new(),
                pending_key: None,
                line: mark.line(),
                anchor,
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Frame::Seq {
                        items,
                        line,
                        anchor,
                    }) => (
                        Node {
                            value: Value::Seq(items),
                            line,
                            raw: None,
                        },
                        anchor,
                    ),
                    Some(Frame::Map {
                        mut entries,
                        merged,
                        line,
                        anchor,
                        ..
                    }) => {
                        for (k, v) in merged {
                            if !entries.iter().any(|(e, _)| e.name == k.name) {
                                entries.push((k, v));
                            }
                        }
                        (
                            Node {
                                value: Value::Map(entries),
                                line,
                                raw: None,
                            },
                            anchor,
                        )
                    }
                    None => return,
                };
                self.push_value(node, anchor, mark);
            }
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(mut node) => {
                    node.line = mark.line();
                    self.push_value(node, 0, mark);
                }
                None => self.fail(mark, "alias to an unknown anchor".into()),
            },
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::vault::fixtures::{vault, V11, V12};

    #[test]
    fn an_empty_block_scalar_is_empty_text() {
        let node = parse("a: |\nb: >\n").expect("yaml");
        assert_eq!(node.get("a").and_then(Node::as_str), Some(""));
        assert_eq!(node.get("b").and_then(Node::as_str), Some(""));
    }
    use super::*;

    fn value(text: &str) -> Value {
        parse(text).expect("valid yaml").value
    }

    #[test]
    fn yaml11_booleans_like_pyyaml() {
        assert_eq!(value("yes"), Value::Bool(true));
        assert_eq!(value("Off"), Value::Bool(false));
        assert_eq!(value("ON"), Value::Bool(true));
        // PyYAML does not resolve y/n: they stay strings (typed fields accept them).
        assert_eq!(value("y"), Value::Str("y".into()));
        assert_eq!(value("'yes'"), Value::Str("yes".into()));
    }

    #[test]
    fn yaml11_numbers_like_pyyaml() {
        assert_eq!(value("0644"), Value::Int(0o644));
        assert_eq!(value("640"), Value::Int(640));
        assert_eq!(value("0x1F"), Value::Int(31));
        assert_eq!(value("0b101"), Value::Int(5));
        assert_eq!(value("1_000"), Value::Int(1000));
        assert_eq!(value("22:30"), Value::Int(22 * 60 + 30));
        assert_eq!(value("8.10"), Value::Float(8.1));
        assert_eq!(value("08"), Value::Str("08".into()));
        assert_eq!(value("4.18.0-553"), Value::Str("4.18.0-553".into()));
        assert_eq!(value("1.2.3"), Value::Str("1.2.3".into()));
        assert_eq!(value("\"0644\""), Value::Str("0644".into()));
        assert_eq!(value("~"), Value::Null);
    }

    #[test]
    fn lines_are_kept() {
        let node = parse("# c\n- name: a\n  shell: x\n\n- name: b\n").expect("valid");
        let Value::Seq(items) = &node.value else {
            panic!("seq")
        };
        assert_eq!(items[0].line, 2);
        assert_eq!(items[1].line, 5);
        let entries = items[0].as_map().expect("map");
        assert_eq!(entries[1].0.line, 3);
    }

    #[test]
    fn anchors_and_merge_keys() {
        let node = parse("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n").expect("valid");
        let other = node.get("other").expect("other");
        assert_eq!(other.get("x").map(|n| &n.value), Some(&Value::Int(1)));
        assert_eq!(other.get("y").map(|n| &n.value), Some(&Value::Int(3)));
    }

    #[test]
    fn duplicate_keys_are_errors_with_both_lines() {
        let err = parse("a: 1\nb: 2\na: 3\n").expect_err("duplicate");
        assert!(err.message.contains("first on line 1"), "{err}");
        assert_eq!(err.line, 3);
    }

    #[test]
    fn syntax_error_has_line() {
        let err = parse("a: [1, 2\nb: 3\n").expect_err("unclosed");
        assert!(err.line >= 1);
    }

    #[test]
    fn a_vault_value_without_a_password_is_an_error_on_its_line() {
        let text = format!("a: 1\nsecret: !vault |\n{}", indent(V11));
        let err = parse(&text).expect_err("vault");
        assert!(err.vault, "{err}");
        assert_eq!(err.line, 2, "{err}");
        assert!(err.message.contains("--vault-password-file"), "{err}");
    }

    fn indent(text: &str) -> String {
        text.lines().map(|l| format!("  {l}\n")).collect()
    }

    #[test]
    fn vault_values_are_decrypted_with_a_password() {
        let text = format!(
            "one: !vault |\n{}two: !vault |\n{}",
            indent(V11),
            indent(V12)
        );
        let node = parse_with_vault(&text, &vault("prod")).expect("decrypted");
        assert_eq!(
            node.get("one").and_then(Node::as_str),
            Some("unit-clear-1.1")
        );
        assert_eq!(
            node.get("two").and_then(Node::as_str),
            Some("unit-clear-1.2")
        );
        let shown = crate::vault::redact("unit-clear-1.1 unit-clear-1.2");
        assert!(
            !shown.contains("unit-clear"),
            "registered for redaction: {shown}"
        );
    }

    #[test]
    fn a_wrong_vault_password_is_one_line() {
        let text = format!("x: !vault |\n{}", indent(V11));
        let wrong = crate::vault::Vault::new(vec![crate::vault::VaultSecret::new(
            "default",
            b"yaml-unit-wrong".to_vec(),
        )]);
        let err = parse_with_vault(&text, &wrong).expect_err("wrong password");
        assert!(err.message.contains("Decryption failed"), "{err}");
        assert!(!err.message.contains('\n'), "{err}");
    }

    fn pyyaml(text: &str, expected: serde_json::Value) {
        let node = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(node.to_json(), expected, "{text:?}");
    }

    // Each expected value is what `yaml.safe_load` (PyYAML 6) gives for the text.
    #[test]
    fn a_flow_collection_may_close_at_column_1_as_pyyaml_reads_it() {
        pyyaml(
            "foo: {\n  a: 1,\n  b: [\n    2\n  ]\n}\nnext: 3\n",
            serde_json::json!({"foo": {"a": 1, "b": [2]}, "next": 3}),
        );
        pyyaml(
            "e: {\n}\nf: [\n\"x\",\ny z\n]\n",
            serde_json::json!({"e": {}, "f": ["x", "y z"]}),
        );
        let node = parse("foo: {\n  a: 1\n}\n\nbar: 2\n").expect("valid");
        assert_eq!(
            node.as_map().map(|m| m[1].0.line),
            Some(5),
            "lines are kept"
        );
    }

    #[test]
    fn multi_line_quoted_scalars_fold_as_pyyaml_folds_them() {
        pyyaml(
            "a: \"one\ntwo\n\n  three \\\n  four\"\nb:\n  c: 'it''s\nlong'\nd: 1\n",
            serde_json::json!({"a": "one two\nthree four", "b": {"c": "it's long"}, "d": 1}),
        );
        pyyaml("- \"x\n y\"\n", serde_json::json!(["x y"]));
        pyyaml(
            "a:\n  - b: \"x\n y\n\n z\"\n",
            serde_json::json!({"a": [{"b": "x y\nz"}]}),
        );
        let node = parse("a: \"x\ny\"\nb: 1\n").expect("valid");
        assert_eq!(node.get("b").map(|n| n.line), Some(3));
    }

    #[test]
    fn errors_after_a_relaxed_line_keep_their_line_and_column() {
        let err = parse("a: {\n}\nb: 1\nb: 2\n").expect_err("duplicate");
        assert_eq!((err.line, err.message.contains("duplicate")), (4, true));
        let err = parse("a: [\n1 ]]\n").expect_err("syntax");
        assert_eq!(err.line, 2, "{err}");
        assert!(err.col <= 5, "the column as written: {err}");
    }

    #[test]
    fn empty_document_is_null() {
        assert_eq!(value(""), Value::Null);
        assert_eq!(value("# only a comment\n"), Value::Null);
    }

    #[test]
    fn unsafe_text_is_never_templated() {
        let templar = crate::template::Templar::new();
        let node = parse("a: !unsafe '{{ foo }}'\nb: !unsafe plain\n").expect("valid");
        let raw = node.get("a").map(|n| n.to_json()).expect("a");
        let scope = crate::vars::Scope::default();
        assert_eq!(
            templar.render(&raw, &scope),
            Ok(Some(serde_json::json!("{{ foo }}")))
        );
        assert_eq!(
            node.get("b").map(|n| n.to_json()),
            Some(serde_json::json!("plain"))
        );
    }
}
