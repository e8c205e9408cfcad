//! The lookups that reshape the values they are given, as ansible-core 2.14's do: `dict`,
//! `indexed_items`, `items`, `list`, `together`, `nested`, `subelements`, `random_choice`, and
//! `varnames` (the names of the variables in scope). Their errors carry Ansible's words, which
//! roles and ansible-core's own tests look for in a failed result's `msg`.

use minijinja::value::ValueKind;
use minijinja::{Error, State, Value};
use serde_json::Value as Json;

use super::lookup_state::lookup_failed;

/// Python's `'%s' % value`: text as it is, anything else as its `repr`.
pub(super) fn py_str(value: &Value) -> String {
    if let Some(s) = value.as_str() {
        return s.to_owned();
    }
    let mut out = String::new();
    match super::pyrepr::write_repr(value, &mut out) {
        Ok(()) => out,
        Err(_) => value.to_string(),
    }
}

/// Python's `type(value)` as `str` prints it (`<class 'int'>`).
pub(super) fn py_type(value: &Value) -> &'static str {
    match value.kind() {
        ValueKind::Bool => "<class 'bool'>",
        ValueKind::Number if value.is_integer() => "<class 'int'>",
        ValueKind::Number => "<class 'float'>",
        ValueKind::String => "<class 'str'>",
        ValueKind::Seq | ValueKind::Iterable => "<class 'list'>",
        ValueKind::Map => "<class 'dict'>",
        ValueKind::None => "<class 'NoneType'>",
        _ => "<class 'object'>",
    }
}

/// Ansible's `listify_lookup_plugin_terms` of a rendered term: text or a scalar becomes a
/// one-item list; a list stays; a mapping gives its keys (what iterating it gives in Python).
fn listify(term: &Value) -> Vec<Value> {
    match term.kind() {
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map => {
            term.try_iter().map(Iterator::collect).unwrap_or_default()
        }
        _ => vec![term.clone()],
    }
}

/// `LookupBase._flatten`: lists among the terms give their items, one level deep.
fn flatten(terms: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for term in terms {
        if matches!(term.kind(), ValueKind::Seq | ValueKind::Iterable) {
            out.extend(listify(term));
        } else {
            out.push(term.clone());
        }
    }
    out
}

/// `lookup('dict', mapping, ...)` / `with_dict`: `{key, value}` for each entry of each mapping.
pub fn dict(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for term in terms {
        if term.kind() != ValueKind::Map {
            return Err(lookup_failed("with_dict expects a dict"));
        }
        for key in term.try_iter()? {
            let value = term.get_item(&key)?;
            out.push(Value::from_iter([("key", key), ("value", value)]));
        }
    }
    Ok(out)
}

/// `with_indexed_items`: `[index, item]` over the flattened terms. `with_indexed_items:` of a
/// mapping reaches here as one mapping term, which Ansible refuses.
pub fn indexed_items(terms: &[Value]) -> Result<Vec<Value>, Error> {
    if let [only] = terms {
        if only.kind() == ValueKind::Map {
            return Err(lookup_failed("with_indexed_items expects a list"));
        }
    }
    Ok(flatten(terms)
        .into_iter()
        .enumerate()
        .map(|(i, item)| Value::from(vec![Value::from(i), item]))
        .collect())
}

/// `with_items`: the terms, lists among them flattened one level.
pub fn items(terms: &[Value]) -> Vec<Value> {
    flatten(terms)
}

/// `with_together`: the i-th item of every list together, `None` where a list is shorter.
pub fn together(terms: &[Value]) -> Result<Vec<Value>, Error> {
    if terms.is_empty() {
        return Err(lookup_failed(
            "with_together requires at least one element in each list",
        ));
    }
    let lists: Vec<Vec<Value>> = terms.iter().map(listify).collect();
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    Ok((0..longest)
        .map(|i| {
            let row: Vec<Value> = lists
                .iter()
                .map(|l| l.get(i).cloned().unwrap_or(Value::from(())))
                .collect();
            Value::from(flatten(&row))
        })
        .collect())
}

/// `with_nested`: every combination of one item of each list, the first list outermost.
pub fn nested(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut lists = terms.iter().map(listify);
    let Some(first) = lists.next() else {
        return Err(lookup_failed(
            "with_nested requires at least one element in the nested list",
        ));
    };
    let mut result = first;
    for list in lists {
        let mut combined = Vec::with_capacity(result.len() * list.len());
        for x in &result {
            for y in &list {
                combined.push(Value::from(flatten(&[x.clone(), y.clone()])));
            }
        }
        result = combined;
    }
    Ok(result
        .iter()
        .map(|x| Value::from(flatten(std::slice::from_ref(x))))
        .collect())
}

/// `with_random_choice`: one of the terms, picked at random (none of none).
pub fn random_choice(terms: &[Value]) -> Vec<Value> {
    if terms.is_empty() {
        return Vec::new();
    }
    let index = super::pyrandom::system_below(terms.len() as u64) as usize;
    vec![terms[index].clone()]
}

/// `lookup('varnames', regex, ...)`: the names of the variables in scope any regex finds.
pub fn varnames(state: &State, terms: &[Value]) -> Result<Vec<Value>, Error> {
    let names: Vec<String> = match state.lookup("vars") {
        Some(vars) if vars.kind() == ValueKind::Map => vars
            .try_iter()?
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect(),
        _ => return Err(lookup_failed("No variables available to search")),
    };
    let mut out = Vec::new();
    for term in terms {
        let Some(pattern) = term.as_str() else {
            return Err(lookup_failed(format!(
                "Invalid setting identifier, \"{}\" is not a string, it is a {}",
                py_str(term),
                py_type(term)
            )));
        };
        let regex = super::python_regex::compile(pattern).map_err(|e| {
            lookup_failed(format!(
                "Unable to use \"{pattern}\" as a search parameter: {e}"
            ))
        })?;
        out.extend(
            names
                .iter()
                .filter(|n| regex.is_match(n))
                .map(|n| Value::from(n.as_str())),
        );
    }
    Ok(out)
}

fn json_str(value: &Json) -> String {
    py_str(&Value::from_serialize(value))
}

fn subelements_usage(detail: &str) -> Error {
    lookup_failed(format!(
        "subelements lookup expects a list of two or three items, {detail}"
    ))
}

/// The `subelements(subelements, skip_missing=False)` filter: `(item, subitem)` for each item
/// of a list (or the values of a mapping) and each subitem of the list its keys lead to (a
/// dotted string or a list of keys), failing in Ansible's words.
pub fn subelements_filter(
    items: Value,
    path: Value,
    skip_missing: Option<bool>,
    kwargs: minijinja::value::Kwargs,
) -> Result<Value, Error> {
    let skip_missing = kwargs
        .get::<Option<bool>>("skip_missing")?
        .or(skip_missing)
        .unwrap_or(false);
    kwargs.assert_all_used()?;
    let elements: Vec<Value> = match items.kind() {
        ValueKind::Map => items
            .try_iter()?
            .map(|k| items.get_item(&k))
            .collect::<Result<_, _>>()?,
        ValueKind::Seq | ValueKind::Iterable => items.try_iter()?.collect(),
        _ => {
            return Err(lookup_failed(
                "obj must be a list of dicts or a nested dict",
            ))
        }
    };
    let keys: Vec<Value> = match (path.as_str(), path.kind()) {
        (Some(text), _) => text.split('.').map(Value::from).collect(),
        (None, ValueKind::Seq) => path.try_iter()?.collect(),
        _ => return Err(lookup_failed("subelements must be a list or a string")),
    };
    let mut pairs = Vec::new();
    for element in elements {
        let Some(values) = walk_keys(&element, &keys, skip_missing)? else {
            continue;
        };
        for sub in values.try_iter()? {
            pairs.push(super::pyrepr::tuple(vec![element.clone(), sub]));
        }
    }
    Ok(Value::from(pairs))
}

/// The list `keys` lead to from `element` (None where one is missing and `skip_missing`).
fn walk_keys(element: &Value, keys: &[Value], skip_missing: bool) -> Result<Option<Value>, Error> {
    let repr = |v: &Value| -> Result<String, Error> {
        let mut out = String::new();
        super::pyrepr::write_repr(v, &mut out)?;
        Ok(out)
    };
    let mut values = element.clone();
    for key in keys {
        if values.kind() != ValueKind::Map {
            return Err(lookup_failed(format!(
                "the key {key} should point to a dictionary, got '{}'",
                py_str(&values)
            )));
        }
        let found = values.get_item(key)?;
        match found.is_undefined() {
            false => values = found,
            true if skip_missing => return Ok(None),
            true => {
                return Err(lookup_failed(format!(
                    "could not find {} key in iterated item {}",
                    repr(key)?,
                    repr(&values)?
                )))
            }
        }
    }
    if values.kind() != ValueKind::Seq {
        return Err(lookup_failed(format!(
            "the key {} should point to a list, got {}",
            repr(keys.last().unwrap_or(&Value::UNDEFINED))?,
            repr(&values)?
        )));
    }
    Ok(Some(values))
}

/// `with_subelements: [list, 'key.subkey', {skip_missing: bool}]`: `[item, subitem]` for each
/// item of the list (or the values of a mapping) and each subitem of its `key.subkey` list.
/// As Ansible's, the item given loses that list.
pub fn subelements(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut terms: Vec<Json> = terms
        .iter()
        .map(|t| serde_json::to_value(t).map_err(|e| lookup_failed(e.to_string())))
        .collect::<Result<_, _>>()?;
    // listify_lookup_plugin_terms: a scalar first term is a list of one.
    if let Some(first) = terms.first_mut() {
        if !matches!(first, Json::Array(_) | Json::Object(_)) {
            *first = Json::Array(vec![first.take()]);
        }
    }
    if !(2..=3).contains(&terms.len()) {
        return Err(subelements_usage(""));
    }
    let Some(path) = terms[1].as_str().map(str::to_owned) else {
        return Err(subelements_usage(
            "first a dict or a list, second a string pointing to the subkey",
        ));
    };
    let elements: Vec<Json> = match &terms[0] {
        Json::Array(items) => items.clone(),
        Json::Object(map) => {
            if map.get("skipped").is_some_and(|s| s != &Json::Bool(false)) {
                return Ok(Vec::new());
            }
            map.values().cloned().collect()
        }
        _ => {
            return Err(subelements_usage(
                "first a dict or a list, second a string pointing to the subkey",
            ))
        }
    };
    let skip_missing = match terms.get(2) {
        None => false,
        Some(Json::Object(flags)) => flags.get("skip_missing").is_some_and(|f| match f {
            Json::Bool(b) => *b,
            Json::String(s) => super::filters::ansible_bool_str(s),
            Json::Number(n) => n.as_f64().is_some_and(|n| n == 1.0),
            _ => false,
        }),
        Some(_) => {
            return Err(subelements_usage(
                "the optional third item must be a dict with flags ('skip_missing',)",
            ))
        }
    };
    let keys: Vec<&str> = path.split('.').collect();
    let mut out = Vec::new();
    for element in elements {
        let Json::Object(mut item) = element else {
            return Err(lookup_failed(format!(
                "subelements lookup expects a dictionary, got '{}'",
                json_str(&element)
            )));
        };
        if item.get("skipped").is_some_and(|s| s != &Json::Bool(false)) {
            continue;
        }
        let sublist = take_sublist(&mut item, &keys, skip_missing)?;
        let item = Json::Object(item);
        for sub in sublist {
            out.push(Value::from_serialize(Json::Array(vec![item.clone(), sub])));
        }
    }
    Ok(out)
}

/// The list at `keys` inside `item`, taken out of it (empty where a key is missing and
/// `skip_missing` says so).
fn take_sublist(
    item: &mut serde_json::Map<String, Json>,
    keys: &[&str],
    skip_missing: bool,
) -> Result<Vec<Json>, Error> {
    let Some((last, parents)) = keys.split_last() else {
        return Ok(Vec::new());
    };
    let mut current = item;
    for key in parents {
        let shown = json_str(&Json::Object(current.clone()));
        match current.get_mut(*key) {
            None if skip_missing => return Ok(Vec::new()),
            None => {
                return Err(lookup_failed(format!(
                    "could not find '{key}' key in iterated item '{shown}'"
                )))
            }
            Some(Json::Object(inner)) => current = inner,
            Some(_) if skip_missing => return Ok(Vec::new()),
            Some(other) => {
                return Err(lookup_failed(format!(
                    "the key {key} should point to a dictionary, got '{}'",
                    json_str(other)
                )))
            }
        }
    }
    match current.get(*last) {
        None if skip_missing => Ok(Vec::new()),
        None => Err(lookup_failed(format!(
            "could not find '{last}' key in iterated item '{}'",
            json_str(&Json::Object(current.clone()))
        ))),
        Some(Json::Array(_)) => match current.shift_remove(*last) {
            Some(Json::Array(list)) => Ok(list),
            _ => Ok(Vec::new()),
        },
        Some(other) => Err(lookup_failed(format!(
            "the key {last} should point to a list, got '{}'",
            json_str(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(json: Json) -> Value {
        Value::from_serialize(json)
    }

    fn as_json(values: Vec<Value>) -> Json {
        serde_json::to_value(values).expect("json")
    }

    #[test]
    fn dict_gives_key_value_pairs_and_refuses_other_values() {
        let got = dict(&[v(json!({"a": 1, "b": {"c": 2}}))]).expect("dict");
        assert_eq!(
            as_json(got),
            json!([{"key": "a", "value": 1}, {"key": "b", "value": {"c": 2}}])
        );
        let err = dict(&[v(json!(1))]).expect_err("not a dict");
        assert!(err.to_string().contains("with_dict expects a dict"));
    }

    #[test]
    fn list_reshaping_lookups_match_ansible() {
        let terms = [v(json!(["a", "b"])), v(json!([1, 2, 3]))];
        assert_eq!(
            as_json(together(&terms).expect("together")),
            json!([["a", 1], ["b", 2], [null, 3]])
        );
        assert!(together(&[]).is_err());
        assert_eq!(
            as_json(nested(&terms[..1]).expect("nested")),
            json!([["a"], ["b"]])
        );
        assert_eq!(
            as_json(nested(&[v(json!(["a"])), v(json!([1, 2]))]).expect("nested")),
            json!([["a", 1], ["a", 2]])
        );
        assert_eq!(
            as_json(indexed_items(&[v(json!("x")), v(json!(["y"]))]).expect("indexed")),
            json!([[0, "x"], [1, "y"]])
        );
        assert!(indexed_items(&[v(json!({"a": 1}))]).is_err());
        assert_eq!(
            as_json(items(&[v(json!([1, [2]])), v(json!(3))])),
            json!([1, [2], 3])
        );
        let picked = random_choice(&terms);
        assert!(terms.contains(&picked[0]));
    }

    #[test]
    fn subelements_walks_subkeys_and_words_errors_as_ansible() {
        let users = v(json!([
            {"name": "a", "m": {"hosts": ["h1", "h2"]}},
            {"name": "b", "skipped": true, "m": {"hosts": ["h3"]}},
        ]));
        let got = subelements(&[users.clone(), v(json!("m.hosts"))]).expect("subelements");
        assert_eq!(
            as_json(got),
            json!([[{"name": "a", "m": {}}, "h1"], [{"name": "a", "m": {}}, "h2"]])
        );
        let err = subelements(&[users.clone(), v(json!("m.nope"))]).expect_err("missing");
        assert!(err.to_string().contains("could not find 'nope' key"));
        let skipped = subelements(&[
            users.clone(),
            v(json!("x.y")),
            v(json!({"skip_missing": true})),
        ]);
        assert_eq!(skipped.expect("skip").len(), 0);
        let err = subelements(&[v(json!(9001)), v(json!("g"))]).expect_err("not a dict");
        assert!(err.to_string().contains("expects a dictionary, got '9001'"));
        let err = subelements(&[v(json!(true)), users.clone()]).expect_err("not a key");
        assert!(err.to_string().contains("first a dict or a list"));
        let err = subelements(&[users, v(json!("m")), v(json!("wolves"))]).expect_err("flags");
        assert!(err
            .to_string()
            .contains("the optional third item must be a dict"));
    }
}
