//! What Ansible's templar does with a template's text output: one that looks like a list or a
//! mapping (it starts with `[` or `{`), or is `True`/`False`, is read as a Python literal
//! (`ast.literal_eval`, JSON's `null`/`true`/`false` taken as Python's), and stays text if it
//! is not one.

use serde_json::{Map, Number, Value as Json};

/// Filters whose text Ansible never converts (its `STRING_TYPE_FILTERS`).
const STRING_TYPE_FILTERS: &[&str] = &[
    "string",
    "to_json",
    "to_nice_json",
    "to_yaml",
    "to_nice_yaml",
    "ppretty",
    "json",
];

/// Whether `template` is one expression (Jinja2 drops one final newline) whose last filter is
/// one Ansible keeps text: `"{{ facts | to_nice_json }}\n"` stays text.
pub fn keeps_text(template: &str) -> bool {
    let source = template.strip_suffix('\n').unwrap_or(template);
    let Some(expr) = super::expression::single_expression(source) else {
        return false;
    };
    let Some((_, last)) = expr.trim().rsplit_once('|') else {
        return false;
    };
    let name = last.trim().split('(').next().unwrap_or_default().trim();
    STRING_TYPE_FILTERS.contains(&name)
}

/// The value `text` stands for, if Ansible would convert it; `None` keeps it text.
pub fn convert(text: &str) -> Option<Json> {
    match text {
        "True" => return Some(Json::Bool(true)),
        "False" => return Some(Json::Bool(false)),
        _ if !text.starts_with(['[', '{']) => return None,
        _ => {}
    }
    let mut reader = Reader { text, at: 0 };
    let value = reader.value()?;
    reader.space();
    (reader.at == text.len()).then_some(value)
}

/// A cursor over the text being read.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.space();
        if self.rest().starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Json> {
        self.space();
        match self.rest().chars().next()? {
            '[' => self.sequence('[', ']'),
            '(' => self.sequence('(', ')'),
            '{' => self.mapping(),
            '\'' | '"' => self.string().map(Json::String),
            _ => self.word(),
        }
    }

    /// Items between `open` and `close`, a trailing comma allowed.
    fn sequence(&mut self, open: char, close: char) -> Option<Json> {
        self.eat(open);
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Some(Json::Array(items));
            }
            items.push(self.value()?);
            if !self.eat(',') {
                return self.eat(close).then_some(Json::Array(items));
            }
        }
    }

    fn mapping(&mut self) -> Option<Json> {
        self.eat('{');
        let mut map = Map::new();
        loop {
            if self.eat('}') {
                return Some(Json::Object(map));
            }
            let key = match self.value()? {
                Json::String(s) => s,
                Json::Number(n) => n.to_string(),
                Json::Bool(b) => if b { "True" } else { "False" }.to_owned(),
                Json::Null => "None".to_owned(),
                // Lists and mappings are not keys Python can hash.
                _ => return None,
            };
            if !self.eat(':') {
                return None;
            }
            map.insert(key, self.value()?);
            if !self.eat(',') {
                return self.eat('}').then_some(Json::Object(map));
            }
        }
    }

    /// A quoted string, with Python's escapes; adjacent literals join as Python joins them.
    fn string(&mut self) -> Option<String> {
        let mut out = String::new();
        loop {
            let quote = self.rest().chars().next()?;
            let mut chars = self.rest().char_indices().skip(1);
            loop {
                let (i, c) = chars.next()?;
                match c {
                    c if c == quote => {
                        self.at += i + 1;
                        break;
                    }
                    '\\' => {
                        let (_, escaped) = chars.next()?;
                        match escaped {
                            'n' => out.push('\n'),
                            't' => out.push('\t'),
                            'r' => out.push('\r'),
                            '0' => out.push('\0'),
                            'x' | 'u' => {
                                let width = if escaped == 'x' { 2 } else { 4 };
                                let hex: String = (0..width)
                                    .filter_map(|_| chars.next().map(|c| c.1))
                                    .collect();
                                let code = u32::from_str_radix(&hex, 16).ok()?;
                                out.push(char::from_u32(code)?);
                            }
                            '\n' => {}
                            '\\' | '\'' | '"' => out.push(escaped),
                            other => {
                                out.push('\\');
                                out.push(other);
                            }
                        }
                    }
                    '\n' => return None,
                    c => out.push(c),
                }
            }
            self.space();
            if !self.rest().starts_with(['\'', '"']) {
                return Some(out);
            }
        }
    }

    /// A number or one of the names Python (or JSON) gives a constant.
    fn word(&mut self) -> Option<Json> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+')))
            .unwrap_or(rest.len());
        let word = &rest[..len];
        let value = match word {
            "True" | "true" => Json::Bool(true),
            "False" | "false" => Json::Bool(false),
            "None" | "null" => Json::Null,
            _ => number(word)?,
        };
        self.at += len;
        Some(value)
    }
}

fn number(word: &str) -> Option<Json> {
    let plain = word.replace('_', "");
    if let Ok(int) = plain.parse::<i64>() {
        return Some(Json::from(int));
    }
    if plain.contains(['.', 'e', 'E']) && !plain.contains("inf") && !plain.contains("nan") {
        return plain
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Json::Number);
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::convert;

    #[test]
    fn python_and_json_literals_convert() {
        assert_eq!(
            convert(r#"{"null": null, "true": true, "false": false}"#),
            Some(json!({"null": null, "true": true, "false": false}))
        );
        assert_eq!(
            convert("['a', \"b\\n\", 1, -2.5, None, (1,), {'k': [True]},]"),
            Some(json!(["a", "b\n", 1, -2.5, null, [1], {"k": [true]}]))
        );
        assert_eq!(convert("True"), Some(json!(true)));
        assert_eq!(convert("{1: 'x'}"), Some(json!({"1": "x"})));
    }

    #[test]
    fn string_type_filters_keep_their_text() {
        assert!(super::keeps_text("{{ facts | to_nice_json }}\n"));
        assert!(super::keeps_text("{{ x | to_json(indent=2) }}"));
        assert!(!super::keeps_text("{{ x | list }}\n"));
        assert!(!super::keeps_text("{{ '' }}[1, 2]\n"));
    }

    #[test]
    fn text_that_is_no_literal_stays_text() {
        for text in [
            "[a, b]",
            "{x}",
            "[1, 2] and more",
            "true",
            "plain",
            "[1 2]",
            "{'a': }",
        ] {
            assert_eq!(convert(text), None, "{text}");
        }
    }
}
