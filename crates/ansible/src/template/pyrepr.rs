//! Python's `repr` of template values, as Jinja2 under Ansible prints a list or a mapping, and
//! the tuple type minijinja lacks: what `zip`, `zip_longest` and `splitext` return prints as
//! `('a', 'b')`, not `['a', 'b']`.

use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectRepr, Rest, Value, ValueKind};
use minijinja::{Error, ErrorKind};

/// A Python tuple: a sequence that prints in parentheses.
#[derive(Debug)]
pub struct Tuple(Vec<Value>);

impl Object for Tuple {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.0.get(key.as_usize()?).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.len())
    }
}

/// A tuple of `items`.
pub fn tuple(items: Vec<Value>) -> Value {
    Value::from_object(Tuple(items))
}

/// `zip(other...)`: tuples of the items at each index, as long as the shortest input.
pub fn zip(first: Value, others: Rest<Value>) -> Result<Value, Error> {
    let lists: Vec<Vec<Value>> = std::iter::once(first)
        .chain(others.iter().cloned())
        .map(|l| l.try_iter().map(Iterator::collect))
        .collect::<Result<_, _>>()?;
    let shortest = lists.iter().map(Vec::len).min().unwrap_or(0);
    Ok(Value::from(
        (0..shortest)
            .map(|i| tuple(lists.iter().map(|l| l[i].clone()).collect()))
            .collect::<Vec<_>>(),
    ))
}

/// `value` as Python's `repr` writes it, into `out`.
pub fn write_repr(value: &Value, out: &mut String) -> Result<(), Error> {
    match value.kind() {
        ValueKind::Seq | ValueKind::Iterable => {
            let is_tuple = value.downcast_object_ref::<Tuple>().is_some();
            out.push(if is_tuple { '(' } else { '[' });
            let mut count = 0;
            for item in value.try_iter()? {
                if count > 0 {
                    out.push_str(", ");
                }
                write_repr(&item, out)?;
                count += 1;
            }
            if is_tuple && count == 1 {
                out.push(',');
            }
            out.push(if is_tuple { ')' } else { ']' });
        }
        ValueKind::Map => {
            out.push('{');
            for (i, key) in value.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(&key, out)?;
                out.push_str(": ");
                write_repr(&value.get_item(&key)?, out)?;
            }
            out.push('}');
        }
        _ => {
            let json = serde_json::to_value(value)
                .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
            out.push_str(&crate::pyjson::repr(&json));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(value: &Value) -> String {
        let mut out = String::new();
        write_repr(value, &mut out).expect("repr");
        out
    }

    #[test]
    fn tuples_print_in_parentheses_lists_in_brackets() {
        let pairs = zip(
            Value::from(vec![1, 2, 3]),
            Rest(vec![Value::from(vec!["a", "b"])]),
        )
        .expect("zip");
        assert_eq!(repr(&pairs), "[(1, 'a'), (2, 'b')]");
        assert_eq!(repr(&tuple(vec![Value::from("x")])), "('x',)");
        assert_eq!(repr(&tuple(vec![])), "()");
        let map = Value::from_serialize(serde_json::json!({"k": [1.5, null, true]}));
        assert_eq!(repr(&map), "{'k': [1.5, None, True]}");
    }

    #[test]
    fn a_tuple_indexes_and_unpacks_as_a_list_does() {
        let pair = tuple(vec![Value::from("/etc/a"), Value::from(".conf")]);
        assert_eq!(
            pair.get_item(&Value::from(1)).ok(),
            Some(Value::from(".conf"))
        );
        assert_eq!(pair.len(), Some(2));
    }
}
