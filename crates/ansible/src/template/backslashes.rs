//! Ansible's `_escape_backslashes`: in a template written in a YAML value (not a template
//! file), the backslashes of a string literal inside `{{ }}` are doubled before Jinja reads it,
//! so Jinja's own unescaping gives them back and `'\1'` stays a backslash and a 1
//! (`regex_replace('^(.*)$', '\1')`, after YAML has read `"\\1"`), as the author wrote it.
//! Statements (`{% %}`) and the text outside `{{ }}` are left as they are.

use std::borrow::Cow;

/// `template` with the backslashes of every string literal inside `{{ }}` doubled.
pub fn escape_backslashes(template: &str) -> Cow<'_, str> {
    if !template.contains('\\') || !template.contains("{{") {
        return Cow::Borrowed(template);
    }
    let mut out = String::with_capacity(template.len() + 8);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start + 2]);
        rest = &rest[start + 2..];
        let end = copy_expression(rest, &mut out);
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Copies the inside of one `{{ }}` into `out`, doubling backslashes in string literals (a
/// backslash and the character after it are one escape, as Jinja's lexer reads them); returns
/// how much of `expr` it took, up to and including the closing `}}` outside any string.
fn copy_expression(expr: &str, out: &mut String) -> usize {
    let mut quote: Option<char> = None;
    let mut chars = expr.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match quote {
            None if c == '\'' || c == '"' => quote = Some(c),
            None if expr[i..].starts_with("}}") => {
                out.push_str("}}");
                return i + 2;
            }
            None => {}
            Some(_) if c == '\\' => {
                out.push_str("\\\\");
                if let Some((_, next)) = chars.next() {
                    if next == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(next);
                    }
                }
                continue;
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
        }
        out.push(c);
    }
    expr.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_literals_inside_expressions_keep_their_backslashes() {
        assert_eq!(
            escape_backslashes(r"{{ x | regex_replace('^(.*)$', '\1') }}"),
            r"{{ x | regex_replace('^(.*)$', '\\1') }}"
        );
        assert_eq!(
            escape_backslashes(r#"a\b {{ "x\\y" ~ 'it\'s' }} c\d"#),
            r#"a\b {{ "x\\\\y" ~ 'it\\'s' }} c\d"#
        );
        assert_eq!(
            escape_backslashes(r"{% if x == '\n' %}{{ '\t' }}{% endif %}"),
            r"{% if x == '\n' %}{{ '\\t' }}{% endif %}"
        );
        assert_eq!(escape_backslashes(r"{{ '}}\1' }}"), r"{{ '}}\\1' }}");
        assert!(matches!(
            escape_backslashes(r"no\template"),
            Cow::Borrowed(_)
        ));
    }
}
