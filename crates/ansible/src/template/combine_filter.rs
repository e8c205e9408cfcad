//! `combine`, as Ansible's filter and its `merge_hash` combine mappings: the terms flattened one
//! level (`[a, b] | combine(c)`, `None | combine` is `{}`), later mappings over earlier ones,
//! recursively with `recursive=True`, lists per `list_merge` (`replace`, `keep`, `append`,
//! `prepend`, `append_rp`, `prepend_rp`).

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Error, ErrorKind, Value};
use serde_json::{Map, Value as Json};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// How two lists under one key combine.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ListMerge {
    Replace,
    Keep,
    Append,
    Prepend,
    AppendRp,
    PrependRp,
}

impl ListMerge {
    fn parse(word: &str) -> Result<Self, Error> {
        Ok(match word {
            "replace" => Self::Replace,
            "keep" => Self::Keep,
            "append" => Self::Append,
            "prepend" => Self::Prepend,
            "append_rp" => Self::AppendRp,
            "prepend_rp" => Self::PrependRp,
            _ => return Err(invalid(
                "merge_hash: 'list_merge' argument can only be equal to 'replace', 'keep', 'append', 'prepend', 'append_rp' or 'prepend_rp'",
            )),
        })
    }

    /// `x`'s list and `y`'s under one key.
    fn lists(self, x: &[Json], y: &[Json]) -> Vec<Json> {
        let x_not_in_y = || x.iter().filter(|z| !y.contains(z)).cloned();
        match self {
            Self::Replace => y.to_vec(),
            Self::Keep => x.to_vec(),
            Self::Append => x.iter().chain(y).cloned().collect(),
            Self::Prepend => y.iter().chain(x).cloned().collect(),
            Self::AppendRp => x_not_in_y().chain(y.iter().cloned()).collect(),
            Self::PrependRp => y.iter().cloned().chain(x_not_in_y()).collect(),
        }
    }
}

/// `combine(*terms, recursive=False, list_merge='replace')`.
pub(super) fn combine(value: Value, others: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let recursive: Option<bool> = kwargs.get("recursive")?;
    let list_merge: Option<String> = kwargs.get("list_merge")?;
    if kwargs.args().any(|k| k != "recursive" && k != "list_merge") {
        return Err(invalid(
            "'recursive' and 'list_merge' are the only valid keyword arguments",
        ));
    }
    let list_merge = ListMerge::parse(list_merge.as_deref().unwrap_or("replace"))?;
    let mut terms = Vec::new();
    for term in std::iter::once(&value).chain(others.iter()) {
        match term.kind() {
            ValueKind::Seq => terms.extend(term.try_iter()?.filter(|t| !t.is_none())),
            ValueKind::None => {}
            _ => terms.push(term.clone()),
        }
    }
    // Ansible checks every term is defined through and through (`recursive_check_defined`): an
    // undefined value inside a mapping is the render's undefined variable, never a null.
    let undefined = |t: &Value| t.is_undefined() || super::templar::holds_undefined(t);
    if terms.iter().any(undefined) {
        return Err(Error::from(ErrorKind::UndefinedError));
    }
    let mut terms = terms
        .iter()
        .map(|t| serde_json::to_value(t).map_err(|e| invalid(format!("combine: {e}"))))
        .collect::<Result<Vec<Json>, Error>>()?
        .into_iter()
        .rev();
    let Some(mut result) = terms.next() else {
        return Ok(Value::from_serialize(Map::new()));
    };
    for dictionary in terms {
        result = merge_hash(dictionary, result, recursive.unwrap_or(false), list_merge)?;
    }
    Ok(Value::from_serialize(&result))
}

/// Ansible's `merge_hash(x, y)`: `y` over `x`.
fn merge_hash(x: Json, y: Json, recursive: bool, list_merge: ListMerge) -> Result<Json, Error> {
    let (Json::Object(mut x), Json::Object(y)) = (x, y) else {
        return Err(invalid(
            "failed to combine variables, expected dicts but got something else",
        ));
    };
    if x.is_empty() || x == y {
        return Ok(Json::Object(y));
    }
    for (key, y_value) in y {
        let slot = match x.entry(key) {
            serde_json::map::Entry::Vacant(vacant) => {
                vacant.insert(y_value);
                continue;
            }
            serde_json::map::Entry::Occupied(occupied) => occupied.into_mut(),
        };
        *slot = match (slot.take(), y_value) {
            (x_value @ Json::Object(_), y_value @ Json::Object(_)) if recursive => {
                merge_hash(x_value, y_value, recursive, list_merge)?
            }
            (Json::Array(x_list), Json::Array(y_list)) => {
                Json::Array(list_merge.lists(&x_list, &y_list))
            }
            (_, y_value) => y_value,
        };
    }
    Ok(Json::Object(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str) -> String {
        let mut env = minijinja::Environment::new();
        env.add_filter("combine", combine);
        env.render_str(template, ())
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn terms_flatten_one_level_and_later_mappings_win() {
        assert_eq!(render("{{ [{'a': 1}] | combine }}"), r#"{"a": 1}"#);
        assert_eq!(render("{{ none | combine }}"), "{}");
        assert_eq!(
            render("{{ [{'a': 1, 'k': 1}, {'k': 2}] | combine({'k': 3}) }}"),
            r#"{"a": 1, "k": 3}"#
        );
        assert!(render("{{ [{'a': 1}, [{'b': 2}]] | combine({'c': 3}) }}")
            .contains("failed to combine variables, expected dicts"));
        assert!(render("{{ {'a': 1} | combine({'b': nothing}) }}").contains("undefined"));
        assert!(render("{{ {'a': 1} | combine({'b': {'c': [nothing]}}) }}").contains("undefined"));
        assert!(render("{{ {} | combine(foo='bar') }}")
            .contains("'recursive' and 'list_merge' are the only valid keyword arguments"));
    }

    #[test]
    fn recursive_merges_mappings_and_list_merge_merges_lists() {
        let x = "{'a': {'x': 1, 'l': [1, 2]}, 'b': [1, 1, 2, 3]}";
        let y = "{'a': {'y': 2, 'l': [2]}, 'b': [3, 4, 4]}";
        assert_eq!(
            render(&format!(
                "{{{{ {x} | combine({y}, recursive=True, list_merge='append_rp') }}}}"
            )),
            r#"{"a": {"x": 1, "l": [1, 2], "y": 2}, "b": [1, 1, 2, 3, 4, 4]}"#
        );
        assert_eq!(
            render(&format!(
                "{{{{ {x} | combine({y}, list_merge='prepend') }}}}"
            )),
            r#"{"a": {"y": 2, "l": [2]}, "b": [3, 4, 4, 1, 1, 2, 3]}"#
        );
        assert_eq!(
            render(&format!("{{{{ {x} | combine({y}, list_merge='keep') }}}}")),
            r#"{"a": {"y": 2, "l": [2]}, "b": [1, 1, 2, 3]}"#
        );
    }
}
