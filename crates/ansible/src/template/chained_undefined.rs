//! An attribute of an undefined variable, then `default` or `is defined`
//! (`molecule_yml.driver.name | default('none')`): Ansible's undefined value hands out another
//! undefined for each attribute, so the filter or test decides. imgbuild's templates are
//! strict, and say which variable is undefined; when a strict render fails on undefined names
//! that the text only uses behind `default`/`d` or a `defined`/`undefined` test, it is rendered
//! again with undefined values that chain (printing one is still an error).

use std::sync::{Arc, LazyLock};

use minijinja::{Environment, UndefinedBehavior};

use super::templar::LazyContext;
use super::Templar;
use regex::Regex;

/// The strict environment `env` with undefined values that chain.
pub(super) fn chaining(env: &Environment<'static>) -> Arc<Environment<'static>> {
    let mut env = env.clone();
    env.set_undefined_behavior(UndefinedBehavior::Chainable);
    Arc::new(env)
}

static GUARD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\s*(?:\.\s*\w+|\[[^\]]*\]))*\s*(?:\|\s*(?:default|d)\b|is\s+(?:not\s+)?(?:defined|undefined)\b)")
        .expect("a valid pattern")
});

/// The rest of an `extract(NAME, ...)` call after NAME, and of a parenthesis around it:
/// Ansible's `extract` hands an undefined container on as undefined, so a guard after the call
/// guards NAME.
static EXTRACT_REST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:,[^()]*)?\)(?:\s*\))?").expect("a valid pattern"));

static EXTRACT_BEFORE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bextract\s*\(\s*$").expect("a valid pattern"));

static ANY_GUARD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\|\s*(?:default|d)\b|\bis\s+(?:not\s+)?(?:defined|undefined)\b")
        .expect("a valid pattern")
});

/// Whether `text` has a `default`/`d` filter or a `defined`/`undefined` test anywhere.
fn has_guard(text: &str) -> bool {
    ANY_GUARD.is_match(text)
}

/// Whether every use of `name` in `text` is behind `default`/`d` or a `defined`/`undefined`
/// test, after any attributes and subscripts (and there is at least one use).
pub(super) fn only_guarded(text: &str, name: &str) -> bool {
    let uses: Vec<usize> = text
        .match_indices(name)
        .filter(|(at, _)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after) && before != Some('.')
        })
        .map(|(at, _)| at + name.len())
        .collect();
    let guarded = |start: usize, end: usize| {
        let rest = &text[end..];
        let after_extract = EXTRACT_BEFORE
            .is_match(&text[..start])
            .then(|| EXTRACT_REST.find(rest))
            .flatten()
            .map(|call| &rest[call.end()..]);
        GUARD.is_match(rest) || after_extract.is_some_and(|rest| GUARD.is_match(rest))
    };
    !uses.is_empty() && uses.iter().all(|end| guarded(end - name.len(), *end))
}

impl Templar {
    /// After a strict render failed on undefined names: the render again with undefined
    /// values that chain, when the text uses each of those names only behind `default` or a
    /// `defined` test (see `chained_undefined`); `None` otherwise, or when that fails too. A
    /// render that failed on a key a defined value lacks (`d.missing.b | default('x')`) is
    /// rendered again so when the text has such a guard: printing or computing with an
    /// undefined value still fails there.
    pub(super) fn chained_retry<T>(
        &self,
        text: &str,
        ctx: &Arc<LazyContext>,
        deferred: bool,
        error: &minijinja::Error,
        run: impl FnOnce(&minijinja::Environment<'static>) -> Result<T, minijinja::Error>,
    ) -> Option<T> {
        let missing: Vec<String> = {
            let state = ctx.lock();
            if deferred || state.fatal.is_some() {
                return None;
            }
            state.missing.iter().map(|(name, _)| name.clone()).collect()
        };
        let guarded = match missing.is_empty() {
            true => error.kind() == minijinja::ErrorKind::UndefinedError && has_guard(text),
            false => missing.iter().all(|name| only_guarded(text, name)),
        };
        if !guarded {
            return None;
        }
        let env = chaining(self.environment());
        let (result, deferred) = Self::tracking_deferred(ctx, || run(&env));
        let state = ctx.lock();
        let clean = state.fatal.is_none()
            && state
                .missing
                .iter()
                .all(|(name, _)| only_guarded(text, name));
        result.ok().filter(|_| clean && !deferred)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_guarded_only_where_every_use_is() {
        assert!(only_guarded("{{ m.driver.name | default('x') }}", "m"));
        assert!(only_guarded("m['a'].b is not defined or m.c|d(1)", "m"));
        assert!(!only_guarded("{{ m.a | default(1) }} {{ m.b }}", "m"));
        assert!(!only_guarded("{{ m.a }}", "m"));
        assert!(!only_guarded("{{ other.m | default(1) }}", "m"));
        assert!(!only_guarded("{{ mm.a | default(1) }}", "m"));
        assert!(only_guarded("'k' | extract(m) | default('a')", "m"));
        assert!(only_guarded(
            "('k' | extract(m, 'x')).y | default('a')",
            "m"
        ));
        assert!(!only_guarded("'k' | extract(m) | length", "m"));
        assert!(!only_guarded("'k' | other(m) | default('a')", "m"));
    }
}
