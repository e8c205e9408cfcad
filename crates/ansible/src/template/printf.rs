//! Jinja2's `format` filter (Python's `%` operator) with the `%r` and `%a` conversions
//! minijinja's printf lacks: each such argument is given as its Python `repr` through `%s`.

use minijinja::value::{Rest, Value};
use minijinja::{Error, State};

/// Where each conversion of a printf format is, in order: the byte offset of its type letter.
fn conversion_types(format: &str) -> Vec<usize> {
    let bytes = format.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'%' {
            at += 1;
            continue;
        }
        at += 1;
        if bytes.get(at) == Some(&b'%') {
            at += 1;
            continue;
        }
        // `%(name)`: a mapping key, then flags, width, precision and length.
        if bytes.get(at) == Some(&b'(') {
            while at < bytes.len() && bytes[at] != b')' {
                at += 1;
            }
            at += 1;
        }
        while at < bytes.len() && b"#0- +*.0123456789hlL".contains(&bytes[at]) {
            at += 1;
        }
        if at < bytes.len() {
            found.push(at);
        }
        at += 1;
    }
    found
}

/// Python's `repr` of a value; an undefined one as Ansible's `AnsibleUndefined`.
fn repr(value: &Value) -> Result<Value, Error> {
    if value.is_undefined() {
        return Ok(Value::from("AnsibleUndefined"));
    }
    let mut out = String::new();
    super::pyrepr::write_repr(value, &mut out)?;
    Ok(Value::from(out))
}

/// `"%r and %s" | format(a, b)`: as Python formats it.
pub fn format(state: &State, format_str: &Value, args: Rest<Value>) -> Result<Value, Error> {
    let Some(text) = format_str.as_str() else {
        return minijinja::filters::format(state, format_str, args);
    };
    let types = conversion_types(text);
    let reprs: Vec<usize> = types
        .iter()
        .enumerate()
        .filter(|(_, &at)| matches!(text.as_bytes()[at], b'r' | b'a'))
        .map(|(i, _)| i)
        .collect();
    if reprs.is_empty() {
        return minijinja::filters::format(state, format_str, args);
    }
    let mut rewritten = text.as_bytes().to_vec();
    let mut values = args.0.clone();
    for i in reprs {
        rewritten[types[i]] = b's';
        if let Some(value) = values.get_mut(i) {
            *value = repr(value)?;
        }
    }
    let rewritten = String::from_utf8_lossy(&rewritten).into_owned();
    minijinja::filters::format(state, &Value::from(rewritten), Rest(values))
}

#[cfg(test)]
mod tests {
    use minijinja::{context, Environment, UndefinedBehavior};

    fn render(template: &str) -> String {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.add_filter("format", super::format);
        env.render_str(template, context! { names => vec!["a", "b"] })
            .expect("renders")
    }

    #[test]
    fn repr_conversions_print_as_python() {
        assert_eq!(render("{{ '%r|%s' | format('x', 'y') }}"), "'x'|y");
        assert_eq!(
            render("{{ '%5.1f%% %r' | format(2.25, names) }}"),
            "  2.2% ['a', 'b']"
        );
        assert_eq!(render("{{ '%r' | format(nothing) }}"), "AnsibleUndefined");
    }

    #[test]
    fn conversions_are_found_past_flags_and_literal_percents() {
        assert_eq!(super::conversion_types("%% %-5r %(k)s"), vec![6, 12]);
    }
}
