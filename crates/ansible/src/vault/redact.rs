//! Keeping decrypted values and vault passwords out of every output.
//!
//! The list is process-wide, as the secrets must be masked in everything the process prints or
//! hashes (errors, warnings, the plan, build events, layer cache keys), also by crates that never
//! see where a value came from. Each clear text is replaced by its marker,
//! `<vault:0123456789abcdef>` (from the SHA-256 of the vault text, so a changed value gives a
//! changed marker, and a cache key that hashes it changes too), the passwords by
//! [`PASSWORD_MARKER`].

use std::sync::Mutex;

use serde_json::Value as Json;
use sha2::{Digest, Sha256};

/// What a vault password is replaced with.
pub const PASSWORD_MARKER: &str = "<vault password>";

struct Revealed {
    clear: String,
    marker: String,
}

/// Clear texts, longest first.
static REVEALED: Mutex<Vec<Revealed>> = Mutex::new(Vec::new());

/// The marker of a vault text: `<vault:` the first 16 hex digits of the SHA-256 of the text
/// without its whitespace (the envelope as written, whatever its indentation) `>`.
pub fn marker(vault_text: &str) -> String {
    let compact: String = vault_text.split_whitespace().collect();
    let digest = Sha256::digest(compact.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("<vault:{hex}>")
}

/// Registers a clear text (and its trimmed form) to be replaced by `marker` in every output.
pub fn reveal(clear: &str, marker: &str) {
    let mut revealed = REVEALED.lock().unwrap_or_else(|e| e.into_inner());
    for text in [clear, clear.trim()] {
        if !text.is_empty() && !revealed.iter().any(|r| r.clear == text) {
            revealed.push(Revealed {
                clear: text.to_owned(),
                marker: marker.to_owned(),
            });
        }
    }
    revealed.sort_by_key(|r| std::cmp::Reverse(r.clear.len()));
}

/// Whether `text` is a value a vault text opened to (not a password): what Ansible's
/// `vault_encrypted` test finds a vaulted variable to be.
pub fn is_vault_value(text: &str) -> bool {
    let revealed = REVEALED.lock().unwrap_or_else(|e| e.into_inner());
    revealed
        .iter()
        .any(|r| r.clear == text && r.marker != PASSWORD_MARKER)
}

/// `text` with every registered clear text replaced by its marker (longest first, in one pass,
/// so a marker is never rewritten).
pub fn redact(text: &str) -> String {
    let revealed = REVEALED.lock().unwrap_or_else(|e| e.into_inner());
    if revealed.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        match revealed.iter().find(|r| rest.starts_with(&r.clear)) {
            Some(found) => {
                out.push_str(&found.marker);
                rest = &rest[found.clear.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// Redacts every string (keys too) of a JSON value, and a number that is a clear text.
pub fn redact_json(value: &mut Json) {
    match value {
        Json::String(s) => *s = redact(s),
        Json::Number(n) => {
            let text = n.to_string();
            let redacted = redact(&text);
            if redacted != text {
                *value = Json::String(redacted);
            }
        }
        Json::Array(items) => items.iter_mut().for_each(redact_json),
        Json::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                redact_json(&mut item);
                map.insert(redact(&key), item);
            }
        }
        Json::Null | Json::Bool(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clear_texts_become_markers_longest_first() {
        reveal("redact-unit-secret", "<vault:1111111111111111>");
        assert!(is_vault_value("redact-unit-secret"));
        assert!(!is_vault_value("redact-unit-other"));
        reveal("redact-unit-secret-longer", "<vault:2222222222222222>");
        assert_eq!(
            redact("a redact-unit-secret-longer and redact-unit-secret."),
            "a <vault:2222222222222222> and <vault:1111111111111111>."
        );
        assert_eq!(redact("nothing here"), "nothing here");
    }

    #[test]
    fn json_strings_keys_and_numbers_are_redacted() {
        reveal("redact-unit-json\n\"quoted\"", "<vault:3333333333333333>");
        reveal("987654321987", "<vault:4444444444444444>");
        let mut value = json!({
            "k": ["redact-unit-json\n\"quoted\"", 987654321987_u64, 5],
            "redact-unit-json\n\"quoted\"": true,
        });
        redact_json(&mut value);
        assert_eq!(
            value,
            json!({
                "k": ["<vault:3333333333333333>", "<vault:4444444444444444>", 5],
                "<vault:3333333333333333>": true,
            })
        );
    }

    #[test]
    fn a_marker_depends_on_the_ciphertext_not_its_layout() {
        let one = marker("$ANSIBLE_VAULT;1.1;AES256\n3031\n3233\n");
        assert_eq!(one, marker("  $ANSIBLE_VAULT;1.1;AES256\n  30313233\n"));
        assert_ne!(one, marker("$ANSIBLE_VAULT;1.1;AES256\n30313234\n"));
        assert!(one.starts_with("<vault:") && one.len() == "<vault:>".len() + 16);
    }

    #[test]
    fn the_trimmed_form_is_redacted_too() {
        reveal("redact-unit-trim\n", "<vault:5555555555555555>");
        assert_eq!(redact("x=redact-unit-trim;"), "x=<vault:5555555555555555>;");
    }
}
