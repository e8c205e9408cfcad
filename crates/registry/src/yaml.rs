//! YAML as containers/image reads it (Go's YAML 1.2 parser: `yes` and `on` are strings), into
//! JSON for serde: `registries.d` files here; GitHub's workflow files read the same way.

use serde_json::Value as Json;
use yaml_rust2::Yaml;

/// The first document of `text` as JSON (`null` for an empty text).
pub fn parse(text: &str) -> Result<Json, String> {
    let documents = yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    Ok(documents.first().map_or(Json::Null, to_json))
}

/// A YAML value as JSON: scalars as YAML 1.2's core schema types them, mapping keys as text.
pub fn to_json(yaml: &Yaml) -> Json {
    match yaml {
        Yaml::Real(text) => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Json::String(text.clone()), Json::Number),
        Yaml::Integer(i) => Json::from(*i),
        Yaml::String(text) => Json::String(text.clone()),
        Yaml::Boolean(b) => Json::Bool(*b),
        Yaml::Array(items) => Json::Array(items.iter().map(to_json).collect()),
        Yaml::Hash(entries) => Json::Object(
            entries
                .iter()
                .map(|(key, value)| (key_text(key), to_json(value)))
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Json::Null,
    }
}

/// A mapping key as text, as Go's parser gives a key it decodes into a string.
fn key_text(key: &Yaml) -> String {
    match key {
        Yaml::String(text) | Yaml::Real(text) => text.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_2_keeps_on_and_yes_as_text() {
        let json = parse(
            "on: {push: {branches: [main]}}
answer: yes
n: 3
x: 1.5
",
        )
        .expect("parses");
        assert_eq!(json["on"]["push"]["branches"][0], "main");
        assert_eq!(json["answer"], "yes");
        assert_eq!(json["n"], 3);
        assert_eq!(json["x"], 1.5);
        assert_eq!(parse("").expect("empty"), Json::Null);
        assert!(parse("a: [").is_err());
    }
}
