//! Ansible's `random` and `shuffle` filters: with `seed=`, the picks Python's
//! `random.Random(seed)` makes (so `random(seed=inventory_hostname)` gives what Ansible gives);
//! without, fresh randomness each time.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use super::pyrandom::{system_below, PyRandom, Seed};

fn filter_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// The generator `seed` asks for (`None`: no seed, use the system's randomness).
fn generator(seed: Option<Value>) -> Result<Option<PyRandom>, Error> {
    let Some(seed) = seed.filter(|s| !s.is_none()) else {
        return Ok(None);
    };
    let generator = match seed.kind() {
        ValueKind::String => PyRandom::new(Seed::Text(seed.as_str().unwrap_or_default())),
        ValueKind::Number | ValueKind::Bool => match i128::try_from(seed.clone()) {
            Ok(n) => PyRandom::new(Seed::Int(n)),
            Err(_) => {
                return Err(filter_error(format!(
                    "random: seed {seed} is not an integer or text, which imgbuild seeds as Python does"
                )))
            }
        },
        _ => {
            return Err(filter_error(
                "The only supported seed types are: None, int, float, str, bytes, and bytearray.",
            ))
        }
    };
    Ok(Some(generator))
}

fn below(generator: &mut Option<PyRandom>, n: u64) -> u64 {
    match generator {
        Some(r) => r.below(n),
        None => system_below(n),
    }
}

/// `end | random(start=0, step=1, seed=None)`: Python's `randrange`; `list | random`: `choice`.
fn random(
    end: Value,
    start: Option<i64>,
    step: Option<i64>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let start = kwargs.get::<Option<i64>>("start")?.or(start);
    let step = kwargs.get::<Option<i64>>("step")?.or(step);
    let mut generator = generator(kwargs.get("seed")?)?;
    kwargs.assert_all_used()?;
    if end.kind() == ValueKind::Number && end.is_integer() {
        let end = i64::try_from(end)?;
        let start = start.filter(|s| *s != 0).unwrap_or(0);
        let step = step.filter(|s| *s != 0).unwrap_or(1);
        let width = end - start;
        // Python's floor division.
        let floor_div = |a: i64, b: i64| {
            let q = a / b;
            if (a % b != 0) && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            }
        };
        let n = if step > 0 {
            floor_div(width + step - 1, step)
        } else {
            floor_div(width + step + 1, step)
        };
        if n <= 0 {
            return Err(filter_error(format!(
                "empty range for randrange() ({start}, {end}, {})",
                end - start
            )));
        }
        let pick = below(&mut generator, n as u64) as i64;
        return Ok(Value::from(start + step * pick));
    }
    if matches!(
        end.kind(),
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map | ValueKind::String
    ) {
        if start.is_some_and(|s| s != 0) || step.is_some_and(|s| s != 0) {
            return Err(filter_error(
                "start and step can only be used with integer values",
            ));
        }
        let items: Vec<Value> = match end.as_str() {
            Some(text) => text.chars().map(|c| Value::from(c.to_string())).collect(),
            None => end.try_iter()?.collect(),
        };
        if items.is_empty() {
            return Err(filter_error("Cannot choose from an empty sequence"));
        }
        let pick = below(&mut generator, items.len() as u64) as usize;
        return Ok(items[pick].clone());
    }
    Err(filter_error(
        "random can only be used on sequences and integers",
    ))
}

/// `list | shuffle(seed=None)`: the items in a random order (Python's `shuffle`).
fn shuffle(items: Value, seed: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let seed = kwargs.get::<Option<Value>>("seed")?.or(seed);
    kwargs.assert_all_used()?;
    let Ok(iter) = items.try_iter() else {
        return Ok(items);
    };
    let mut list: Vec<Value> = iter.collect();
    // Ansible seeds only with a truthy seed.
    match generator(seed.filter(|s| s.is_true()))? {
        Some(mut r) => r.shuffle(&mut list),
        None => {
            for i in (1..list.len()).rev() {
                let j = system_below(i as u64 + 1) as usize;
                list.swap(i, j);
            }
        }
    }
    Ok(Value::from(list))
}

/// Registers these filters on `env`.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_filter("random", random);
    env.add_filter("shuffle", shuffle);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw(pairs: Vec<(&str, Value)>) -> Kwargs {
        Kwargs::from_iter(pairs)
    }

    #[test]
    fn seeded_random_picks_what_python_picks() {
        // python3 -c 'import random; print(random.Random(1337).randrange(0, 100))' -> 79
        let got = random(
            Value::from(100),
            None,
            None,
            kw(vec![("seed", Value::from(1337))]),
        );
        assert_eq!(got.ok(), Some(Value::from(79)));
        let got = random(Value::from(20), Some(10), Some(2), kw(vec![])).expect("random");
        let n = i64::try_from(got).unwrap_or(-1);
        assert!((10..20).contains(&n) && n % 2 == 0);
    }

    #[test]
    fn random_refuses_as_ansible() {
        let err = random(Value::from(()), None, None, kw(vec![])).expect_err("none");
        assert!(err.to_string().contains("random can only be used on"));
        let err = random(Value::from(vec![1, 2]), Some(2), None, kw(vec![])).expect_err("start");
        assert!(err.to_string().contains("start and step can only be used"));
    }

    #[test]
    fn seeded_shuffle_matches_python() {
        // python3 -c 'import random; x=list(range(6)); random.Random(5).shuffle(x); print(x)'
        let got = shuffle(
            Value::from(vec![0, 1, 2, 3, 4, 5]),
            Some(Value::from(5)),
            kw(vec![]),
        );
        assert_eq!(got.ok(), Some(Value::from(vec![1, 0, 3, 5, 2, 4])));
    }
}
