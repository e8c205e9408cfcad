//! Free-form module arguments as Ansible splits them: `key=value` words (`file: path=/x
//! state=touch`) and a command with the `key=value` words its module takes out of it. Words
//! split on whitespace outside quotes and outside `{{ }}`, `{% %}`, `{# #}`; values are
//! unquoted and their Python escapes decoded (Ansible's split_args and parse_kv).

use serde_json::{Map, Value as Json};

mod split;

pub use split::{join_args, split_args, SplitError};

/// Splits `text` on whitespace outside quotes, returning each word's byte range.
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    // Inside `{{ }}`, `{% %}` and `{# #}` spaces do not split words (Ansible's split_args).
    let mut jinja = 0usize;
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        let pair = text.get(i..i + 2).unwrap_or("");
        if quote.is_none() && matches!(pair, "{{" | "{%" | "{#") {
            jinja += 1;
        } else if quote.is_none() && jinja > 0 && matches!(pair, "}}" | "%}" | "#}") {
            jinja -= 1;
        }
        if jinja > 0 && quote.is_none() && c.is_whitespace() {
            continue;
        }
        match (quote, c) {
            (_, '\\') => {
                escaped = true;
                start.get_or_insert(i);
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => {
                quote = Some(c);
                start.get_or_insert(i);
            }
            (None, c) if c.is_whitespace() => {
                if let Some(s) = start.take() {
                    spans.push((s, i));
                }
            }
            (None, _) => {
                start.get_or_insert(i);
            }
        }
    }
    if let Some(s) = start {
        spans.push((s, text.len()));
    }
    spans
}

fn unquote(value: &str) -> String {
    let v = value.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v[1..v.len() - 1].to_owned();
        }
    }
    v.to_owned()
}

/// Python's escapes in a `key=value` word, decoded as Ansible's parse_kv does (`\n`, `\t`,
/// `\\`, quotes, `\xNN`, `\uNNNN`); other backslashes stay.
fn decode_escapes(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let simple = match chars.peek() {
            Some('n') => Some('\n'),
            Some('t') => Some('\t'),
            Some('r') => Some('\r'),
            Some('\\') => Some('\\'),
            Some('\'') => Some('\''),
            Some('"') => Some('"'),
            Some('a') => Some('\u{7}'),
            Some('b') => Some('\u{8}'),
            Some('f') => Some('\u{c}'),
            Some('v') => Some('\u{b}'),
            _ => None,
        };
        if let Some(decoded) = simple {
            chars.next();
            out.push(decoded);
            continue;
        }
        let digits = match chars.peek() {
            Some('x') => 2,
            Some('u') => 4,
            _ => 0,
        };
        let hex: String = chars.clone().skip(1).take(digits).collect();
        match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
            Some(decoded) if digits > 0 && hex.len() == digits => {
                for _ in 0..=digits {
                    chars.next();
                }
                out.push(decoded);
            }
            _ => out.push('\\'),
        }
    }
    out
}

/// The first word of `text` (kept whole inside quotes and `{{ }}`) and what follows it.
pub fn first_word(text: &str) -> Option<(&str, &str)> {
    let (start, end) = *word_spans(text).first()?;
    Some((&text[start..end], text[end..].trim_start()))
}

/// Reads `key=value` words (`file: path=/x state=touch`); `Err` names the word that is not one.
pub fn parse_key_values(text: &str) -> std::result::Result<Map<String, Json>, String> {
    let mut out = Map::new();
    for (s, e) in word_spans(text) {
        let word = &text[s..e];
        match word.split_once('=') {
            // A key may be a template (`set_fact: "{{ item }}=x"`): Ansible splits at the first
            // '=' and renders the key with the value.
            Some((k, v))
                if !k.is_empty()
                    && (k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        || k.contains("{{")) =>
            {
                out.insert(k.to_owned(), Json::String(decode_escapes(&unquote(v))));
            }
            _ => return Err(word.to_owned()),
        }
    }
    Ok(out)
}

/// Splits a free-form command into `cmd` and the `key=value` words the module takes out of it
/// (`chdir=/tmp ./install` → chdir + cmd), as Ansible does: words split and joined back as
/// `split_args` and `join_args` do (spacing and line breaks kept, a lone `\` continuing the
/// line); a taken word's value has its escapes decoded and its quotes removed; `\=` in a word
/// with no other `=` is an `=`.
pub fn parse_command(text: &str, keys: &[&str]) -> Result<Map<String, Json>, SplitError> {
    let mut out = Map::new();
    let mut raw: Vec<String> = Vec::new();
    for word in split_args(text)? {
        let decoded = decode_escapes(&word);
        // The first `=` past the word's first character and not after a backslash.
        let split = decoded
            .char_indices()
            .skip(1)
            .find(|&(i, c)| c == '=' && !decoded[..i].ends_with('\\'))
            .map(|(i, _)| i);
        match split {
            Some(i) if keys.contains(&&decoded[..i]) => {
                let value = unquote(decoded[i + 1..].trim());
                out.insert(decoded[..i].trim().to_owned(), Json::String(value));
            }
            Some(_) => raw.push(word),
            None if decoded.contains('=') => raw.push(decoded.replace("\\=", "=")),
            None => raw.push(word),
        }
    }
    out.insert("cmd".into(), Json::String(join_args(&raw)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[&str] = &["chdir", "creates", "executable"];

    // Expected values are what ansible-playbook 2.14 registered for each shell free form.
    #[test]
    fn taken_words_leave_the_command_lines() {
        let args = parse_command(
            "executable=/bin/bash\ncreates=/nonexist\necho \"test\"\n",
            KEYS,
        )
        .expect("splits");
        assert_eq!(args["cmd"], "echo \"test\"\n");
        assert_eq!(args["executable"], "/bin/bash");
        assert_eq!(args["creates"], "/nonexist");
    }

    #[test]
    fn escaped_equals_and_other_keys_stay_in_the_command() {
        let args = parse_command("echo a\\=b c=d chdir=\"/t\\tx\"", KEYS).expect("splits");
        assert_eq!(args["cmd"], "echo a=b c=d");
        assert_eq!(args["chdir"], "/t\tx");
    }

    #[test]
    fn a_free_form_ansible_cannot_split_is_refused() {
        assert!(parse_command("  echo hi", KEYS).is_err());
        assert!(parse_command("echo \"a", KEYS).is_err());
    }
}
