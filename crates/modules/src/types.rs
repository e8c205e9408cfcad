//! Parameter types that read what Ansible accepts and keep templates that the build resolves.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use ansible::template::is_template;

/// A boolean: `true`, `yes`, `on`, `y`, `1` (any case) and their opposites, or a deferred template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flag {
    /// Known now.
    Known(bool),
    /// A template the build renders.
    Deferred(String),
}

impl Flag {
    /// The value, or `default` while deferred.
    pub fn or(&self, default: bool) -> bool {
        match self {
            Flag::Known(b) => *b,
            Flag::Deferred(_) => default,
        }
    }
}

/// Ansible's `boolean()`: the strings it accepts.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "yes" | "on" | "1" | "true" | "y" | "t" | "1.0" => Some(true),
        "no" | "off" | "0" | "false" | "n" | "f" | "0.0" | "" => Some(false),
        _ => None,
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(b) => Ok(Flag::Known(b)),
            serde_json::Value::Number(n) if n.as_i64() == Some(0) || n.as_i64() == Some(1) => {
                Ok(Flag::Known(n.as_i64() == Some(1)))
            }
            serde_json::Value::String(s) if is_template(&s) => Ok(Flag::Deferred(s)),
            serde_json::Value::String(s) => parse_bool(&s).map(Flag::Known).ok_or_else(|| {
                de::Error::custom(format!(
                    "'{s}' is not a boolean; write yes/no or true/false"
                ))
            }),
            other => Err(de::Error::custom(format!(
                "{other} is not a boolean; write yes/no or true/false"
            ))),
        }
    }
}

impl Serialize for Flag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Flag::Known(b) => s.serialize_bool(*b),
            Flag::Deferred(t) => s.serialize_str(t),
        }
    }
}

/// Text: strings, and numbers or booleans written where text is expected (as Ansible converts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

impl Text {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn scalar_text(value: serde_json::Value) -> Result<String, String> {
    match value {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Bool(b) => Ok(if b { "True" } else { "False" }.to_owned()),
        serde_json::Value::Null => Err("null where text is expected".into()),
        other => Err(format!("expected text, found {}", json_type(&other))),
    }
}

/// A short name of a JSON value's type.
pub fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        scalar_text(serde_json::Value::deserialize(d)?)
            .map(Text)
            .map_err(de::Error::custom)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// A file's content: text as given; a mapping or list written as JSON, the way Ansible's
/// `copy` writes it (`json.dumps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content(pub String);

impl Content {
    /// The text written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            value @ (serde_json::Value::Array(_) | serde_json::Value::Object(_)) => {
                Ok(Content(ansible::pyjson::Dumps::default().dumps(&value)))
            }
            other => scalar_text(other).map(Content).map_err(de::Error::custom),
        }
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// An integer, from a number or numeric text, or a deferred template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Int {
    /// Known now.
    Known(i64),
    /// A template the build renders.
    Deferred(String),
}

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) => n
                .as_i64()
                .map(Int::Known)
                .ok_or_else(|| de::Error::custom(format!("{n} is not a whole number"))),
            serde_json::Value::String(s) if is_template(&s) => Ok(Int::Deferred(s)),
            serde_json::Value::String(s) => s
                .trim()
                .parse()
                .map(Int::Known)
                .map_err(|_| de::Error::custom(format!("'{s}' is not a whole number"))),
            other => Err(de::Error::custom(format!(
                "expected a whole number, found {}",
                json_type(&other)
            ))),
        }
    }
}

impl Serialize for Int {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Int::Known(n) => s.serialize_i64(*n),
            Int::Deferred(t) => s.serialize_str(t),
        }
    }
}

/// A file mode: octal (`0644`, `'0644'`), symbolic (`u+rwx,g-w`), `preserve`, or deferred.
///
/// An unquoted YAML `644` is the decimal number 644, which Ansible applies as mode `0o1204`;
/// that is matched here, and the planner warns about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Permission bits.
    Octal(u32),
    /// Symbolic mode or `preserve`.
    Symbolic(String),
    /// A template the build renders.
    Deferred(String),
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bad = |s: &str| {
            de::Error::custom(format!(
                "'{s}' is not a file mode; write it quoted in octal, such as '0644'"
            ))
        };
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) => match n.as_u64() {
                Some(bits) if bits <= 0o7777 => Ok(Mode::Octal(bits as u32)),
                _ => Err(bad(&n.to_string())),
            },
            serde_json::Value::String(s) if is_template(&s) => Ok(Mode::Deferred(s)),
            // Digits are octal, as Python's int(mode, 8) reads them (`0o` prefix allowed).
            serde_json::Value::String(s)
                if !s.is_empty()
                    && s.strip_prefix("0o")
                        .unwrap_or(&s)
                        .chars()
                        .all(|c| c.is_ascii_digit()) =>
            {
                u32::from_str_radix(s.strip_prefix("0o").unwrap_or(&s), 8)
                    .ok()
                    .filter(|bits| *bits <= 0o7777)
                    .map(Mode::Octal)
                    .ok_or_else(|| bad(&s))
            }
            serde_json::Value::String(s) if s == "preserve" || is_symbolic_mode(&s) => {
                Ok(Mode::Symbolic(s))
            }
            serde_json::Value::String(s) => Err(bad(&s)),
            other => Err(de::Error::custom(format!(
                "expected a file mode, found {}",
                json_type(&other)
            ))),
        }
    }
}

/// `u=rwx,g+s,o-w`, `u+rwX-x`: comma-separated clauses of users `[ugoa]*`, then one or more
/// operations `[-+=]` `[rwxXstugo]*`, as Ansible's symbolic modes are.
fn is_symbolic_mode(text: &str) -> bool {
    let is_op = |c: char| matches!(c, '-' | '+' | '=');
    !text.is_empty()
        && text.split(',').all(|part| {
            let who_end = part.find(is_op).unwrap_or(part.len());
            let (who, ops) = part.split_at(who_end);
            who.chars().all(|c| "ugoa".contains(c))
                && !ops.is_empty()
                && ops.chars().all(|c| is_op(c) || "rwxXstugo".contains(c))
        })
}

impl Serialize for Mode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Mode::Octal(bits) => s.serialize_str(&format!("{bits:04o}")),
            Mode::Symbolic(t) | Mode::Deferred(t) => s.serialize_str(t),
        }
    }
}

/// A list of text: a YAML list, or a string that Ansible splits on commas.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextList(pub Vec<String>);

impl<'de> Deserialize<'de> for TextList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Array(items) => items
                .into_iter()
                .map(scalar_text)
                .collect::<Result<Vec<_>, _>>()
                .map(TextList)
                .map_err(de::Error::custom),
            serde_json::Value::String(s) if is_template(&s) => Ok(TextList(vec![s])),
            serde_json::Value::String(s) => Ok(TextList(
                s.split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect(),
            )),
            other => scalar_text(other)
                .map(|s| TextList(vec![s]))
                .map_err(de::Error::custom),
        }
    }
}

impl Serialize for TextList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A closed set of words a parameter accepts.
pub trait Choices: Copy + FromStr<Err = String> + 'static {
    /// The parameter's accepted words.
    const ALL: &'static [&'static str];
    /// The word for this value.
    fn as_str(self) -> &'static str;
}

/// One of a parameter's accepted words, or a deferred template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice<C> {
    /// Known now.
    Known(C),
    /// A template the build renders.
    Deferred(String),
}

impl<'de, C: Choices> Deserialize<'de> for Choice<C> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ChoiceVisitor<C>(PhantomData<C>);
        impl<C: Choices> Visitor<'_> for ChoiceVisitor<C> {
            type Value = Choice<C>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "one of: {}", C::ALL.join(", "))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                if is_template(s) {
                    return Ok(Choice::Deferred(s.to_owned()));
                }
                s.parse().map(Choice::Known).map_err(E::custom)
            }
        }
        d.deserialize_str(ChoiceVisitor(PhantomData))
    }
}

impl<C: Choices> Serialize for Choice<C> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Choice::Known(c) => s.serialize_str(c.as_str()),
            Choice::Deferred(t) => s.serialize_str(t),
        }
    }
}

/// Declares a [`Choices`] enum: `choices!(State { Present => "present", Absent => "absent" })`.
#[macro_export]
macro_rules! choices {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $($text:literal)|+),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[allow(missing_docs)]
        pub enum $name { $($variant),+ }
        impl $crate::types::Choices for $name {
            const ALL: &'static [&'static str] = &[$($($text),+),+];
            fn as_str(self) -> &'static str {
                match self { $(Self::$variant => [$($text),+][0]),+ }
            }
        }
        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($($text)|+ => Ok(Self::$variant),)+
                    _ => Err(format!(
                        "'{s}' is not one of: {}",
                        <Self as $crate::types::Choices>::ALL.join(", ")
                    )),
                }
            }
        }
    };
}

choices!(
    /// What `package` (and `dnf`) does with the names.
    PackageState { Present => "present" | "installed", Latest => "latest", Absent => "absent" | "removed" }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    choices!(Color { Red => "red", Blue => "blue" | "navy" });

    #[test]
    fn flags_accept_ansible_words() {
        for (input, expected) in [
            (json!("yes"), true),
            (json!("Y"), true),
            (json!("off"), false),
            (json!(1), true),
            (json!(false), false),
        ] {
            assert_eq!(
                serde_json::from_value::<Flag>(input).expect("bool"),
                Flag::Known(expected)
            );
        }
        assert!(serde_json::from_value::<Flag>(json!("maybe")).is_err());
        assert_eq!(
            serde_json::from_value::<Flag>(json!("{{ x }}")).expect("deferred"),
            Flag::Deferred("{{ x }}".into())
        );
    }

    #[test]
    fn modes_match_ansible() {
        assert_eq!(
            serde_json::from_value::<Mode>(json!(0o644)).expect("int"),
            Mode::Octal(0o644)
        );
        assert_eq!(
            serde_json::from_value::<Mode>(json!("0644")).expect("str"),
            Mode::Octal(0o644)
        );
        assert_eq!(
            serde_json::from_value::<Mode>(json!("644")).expect("str"),
            Mode::Octal(0o644)
        );
        // Decimal 640 (unquoted `640`) is applied as 0o1200, as Ansible does.
        assert_eq!(
            serde_json::to_value(serde_json::from_value::<Mode>(json!(640)).expect("int"))
                .expect("ser"),
            json!("1200")
        );
        assert_eq!(
            serde_json::from_value::<Mode>(json!("u+x")).expect("sym"),
            Mode::Symbolic("u+x".into())
        );
        assert_eq!(
            serde_json::from_value::<Mode>(json!("u+rwX-x,g=u")).expect("sym"),
            Mode::Symbolic("u+rwX-x,g=u".into())
        );
        assert!(serde_json::from_value::<Mode>(json!("rwx-bad!")).is_err());
        assert!(serde_json::from_value::<Mode>(json!("u+q")).is_err());
    }

    #[test]
    fn text_lists_split_commas() {
        assert_eq!(
            serde_json::from_value::<TextList>(json!("a, b"))
                .expect("list")
                .0,
            vec!["a", "b"]
        );
        assert_eq!(
            serde_json::from_value::<TextList>(json!(["a", 1]))
                .expect("list")
                .0,
            vec!["a", "1"]
        );
    }

    #[test]
    fn choices_list_allowed_words() {
        assert_eq!(
            serde_json::from_value::<Choice<Color>>(json!("navy")).expect("alias"),
            Choice::Known(Color::Blue)
        );
        let err = serde_json::from_value::<Choice<Color>>(json!("green")).expect_err("bad");
        assert!(err.to_string().contains("red, blue, navy"), "{err}");
    }
}
