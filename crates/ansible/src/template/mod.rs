//! Templating with minijinja and Ansible's behaviour: lazy recursive variables with cycle
//! detection, strict undefined naming the variable, native types for `"{{ expr }}"`, and
//! deferred results for what only the build can know.

mod backslashes;
mod context;
mod file_tests;
pub mod filters;
mod human_filters;
mod jinja_tests;
mod literal;
mod lookup_files;
mod lookup_lists;
mod lookup_plugins;
mod lookup_sequence;
mod lookup_template;
mod lookup_url;
pub mod lookups;
mod math_filters;
pub mod now;
pub use now::{days_from_civil, BUILD_TIME};
mod printf;
mod pymethods;
mod pyrandom;
mod pyrepr;
mod python_filters;
mod python_regex;
mod random_filters;
mod result_tests;
mod select_filters;
mod set_filters;
mod url_filters;

use std::sync::{Arc, Mutex};

use minijinja::{Environment, UndefinedBehavior, Value};
use serde_json::Value as Json;

use crate::vars::Scope;
use context::{LazyContext, ResolveState};
pub use filters::{ansible_bool_str, OMIT};
pub use jinja_tests::compare_versions;

/// Why a template could not be rendered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    /// A variable that is not defined; `chain` lists the variables whose values needed it.
    #[error("undefined variable '{name}'")]
    Undefined {
        /// The missing name.
        name: String,
        /// Outermost first.
        chain: Vec<String>,
    },
    /// Variables referencing each other, as `a -> b -> a`.
    #[error("variable cycle: {0}")]
    Cycle(String),
    /// Syntax errors, unknown filters, bad filter arguments, ...
    #[error("{message}")]
    Other {
        /// The line of the template it is on, when minijinja says.
        line: Option<usize>,
        /// The template text.
        template: String,
        /// What minijinja said.
        message: String,
    },
}

impl TemplateError {
    /// A lookup's own failure in the plugin's words, what Ansible reports for the task, when
    /// this is one.
    pub fn lookup_failure(&self) -> Option<String> {
        let TemplateError::Other { message, .. } = self else {
            return None;
        };
        let words = message.strip_suffix(": the lookup failed")?;
        Some(
            words
                .strip_prefix("invalid operation: ")
                .unwrap_or(words)
                .to_owned(),
        )
    }
}

/// The outcome of evaluating a condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Known at plan time.
    Known(bool),
    /// Depends on build-time results.
    Deferred,
    /// Known, but not a boolean: the value's text, and its truth as ansible-core 2.14 takes it
    /// (Jinja2's: a non-empty text, list or mapping, a non-zero number). 2.19 refuses it.
    NotBoolean(String, bool),
}

/// The shared minijinja environment with Ansible's filters and tests.
#[derive(Debug, Clone)]
pub struct Templar {
    env: Arc<Environment<'static>>,
}

impl Default for Templar {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `s` holds any Jinja syntax.
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

/// The inner expression of a string that is exactly one `{{ ... }}`.
pub fn single_expression(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let inner = inner.strip_suffix('-').unwrap_or(inner);
    if inner.contains("{{") || inner.contains("}}") || inner.contains("{%") || inner.contains("{#")
    {
        return None;
    }
    Some(inner)
}

impl Templar {
    /// The environment: strict undefined, Ansible's filters and tests, Python string methods.
    pub fn new() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Jinja2 drops one final newline; Ansible then adds back as many as the source ended
        // with (see `render_to_string_in`).
        env.set_keep_trailing_newline(false);
        env.set_trim_blocks(true);
        env.set_unknown_method_callback(pymethods::unknown_method);
        env.set_formatter(python_formatter);
        env.add_global("omit", OMIT);
        filters::register(&mut env);
        set_filters::register(&mut env);
        select_filters::register(&mut env);
        python_filters::register(&mut env);
        math_filters::register(&mut env);
        jinja_tests::register(&mut env);
        file_tests::register(&mut env);
        result_tests::register(&mut env);
        url_filters::register(&mut env);
        random_filters::register(&mut env);
        human_filters::register(&mut env);
        env.add_filter("format", printf::format);
        env.add_filter("subelements", lookup_lists::subelements_filter);
        env.add_function("lookup", lookups::lookup);
        env.add_function("now", now::now);
        env.add_function("query", lookups::query);
        env.add_function("q", lookups::query);
        Self { env: Arc::new(env) }
    }

    /// This templar with `loader` finding what `{% include %}` and `{% import %}` name.
    pub(super) fn with_loader<F>(&self, loader: F) -> Templar
    where
        F: Fn(&str) -> Result<Option<String>, minijinja::Error> + Send + Sync + 'static,
    {
        let mut env = (*self.env).clone();
        env.set_loader(loader);
        Templar { env: Arc::new(env) }
    }

    /// Whether `name` is a function or value of the template language itself (`lookup`,
    /// `range`, `omit`), which a variable of that name would hide.
    pub(super) fn is_global(&self, name: &str) -> bool {
        self.env.globals().any(|(global, _)| global == name)
    }

    fn context(&self, scope: &Scope) -> Arc<LazyContext> {
        Arc::new(LazyContext {
            scope: scope.clone(),
            templar: self.clone(),
            state: Mutex::new(ResolveState::default()),
        })
    }

    fn finish<T>(ctx: &LazyContext, result: Result<T, TemplateError>) -> Result<T, TemplateError> {
        if let Some(fatal) = ctx.lock().fatal.take() {
            return Err(fatal);
        }
        result
    }

    /// Renders every string inside `raw`. `Ok(None)`: it depends on build-time results.
    pub fn render(&self, raw: &Json, scope: &Scope) -> Result<Option<Json>, TemplateError> {
        if !contains_template(raw) {
            return Ok(Some(raw.clone()));
        }
        let _rendering = lookups::Rendering::enter(self, scope);
        let ctx = self.context(scope);
        let result = self.render_json_in(raw, &ctx);
        Self::finish(&ctx, result)
    }

    /// Renders a string to a string (templates files, `name:`). `Ok(None)`: deferred.
    pub fn render_text(&self, text: &str, scope: &Scope) -> Result<Option<String>, TemplateError> {
        if !is_template(text) {
            return Ok(Some(text.to_owned()));
        }
        let _rendering = lookups::Rendering::enter(self, scope);
        let ctx = self.context(scope);
        let result = self.render_to_string_in(text, &ctx);
        Self::finish(&ctx, result)
    }

    /// Renders a role's template file as Ansible's `template` module does: the module's
    /// `trim_blocks`/`lstrip_blocks`, then a first line `#jinja2: key: value, ...` overriding
    /// them (and taken out of the output). `Ok(None)`: deferred.
    pub fn render_file(
        &self,
        text: &str,
        scope: &Scope,
        options: FileOptions,
    ) -> Result<Option<String>, TemplateError> {
        let (options, body) = options.with_header(text)?;
        if options == FileOptions::default() {
            return self.render_text(body, scope);
        }
        let mut env = (*self.env).clone();
        env.set_trim_blocks(options.trim_blocks.unwrap_or(true));
        env.set_lstrip_blocks(options.lstrip_blocks.unwrap_or(false));
        let templar = Templar { env: Arc::new(env) };
        templar.render_text(body, scope)
    }

    /// Evaluates a bare expression (`when:`, `loop:` without braces). `Ok(None)`: deferred.
    pub fn eval(&self, expr: &str, scope: &Scope) -> Result<Option<Json>, TemplateError> {
        let _rendering = lookups::Rendering::enter(self, scope);
        let ctx = self.context(scope);
        let result = self.eval_in(expr, &ctx);
        Self::finish(&ctx, result)
    }

    /// Evaluates a `when:` condition.
    pub fn condition(&self, expr: &str, scope: &Scope) -> Result<Condition, TemplateError> {
        // Ansible accepts a condition wrapped in {{ }} (with a warning); unwrap it.
        let expr = single_expression(expr.trim()).unwrap_or(expr);
        Ok(match self.eval(expr, scope)? {
            None => Condition::Deferred,
            Some(Json::Bool(b)) => Condition::Known(b),
            Some(other) => {
                let truth = match &other {
                    Json::Null => false,
                    Json::String(s) => !s.is_empty(),
                    Json::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
                    Json::Array(a) => !a.is_empty(),
                    Json::Object(m) => !m.is_empty(),
                    Json::Bool(b) => *b,
                };
                Condition::NotBoolean(other.to_string(), truth)
            }
        })
    }

    /// The variable names a template (or, with `expression`, a bare expression) refers to.
    pub fn referenced_names(&self, text: &str, expression: bool) -> Vec<String> {
        let names = if expression {
            self.env
                .compile_expression(text)
                .map(|e| e.undeclared_variables(false))
                .unwrap_or_default()
        } else {
            self.env
                .template_from_str(text)
                .map(|t| t.undeclared_variables(false))
                .unwrap_or_default()
        };
        let mut names: Vec<String> = names.into_iter().collect();
        names.sort();
        names
    }

    /// Checks that `expr` compiles (for build-time expressions such as `changed_when`).
    pub fn check_expression(&self, expr: &str) -> Result<(), TemplateError> {
        self.env
            .compile_expression(expr)
            .map(|_| ())
            .map_err(|e| TemplateError::Other {
                line: None,
                template: expr.to_owned(),
                message: describe(&e),
            })
    }

    /// Checks that a template string compiles.
    pub fn check_template(&self, text: &str) -> Result<(), TemplateError> {
        self.env
            .template_from_str(text)
            .map(|_| ())
            .map_err(|e| TemplateError::Other {
                line: None,
                template: text.to_owned(),
                message: describe(&e),
            })
    }

    fn render_json_in(
        &self,
        raw: &Json,
        ctx: &Arc<LazyContext>,
    ) -> Result<Option<Json>, TemplateError> {
        Ok(Some(match raw {
            Json::String(s) => return self.render_string_in(s, ctx),
            Json::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match self.render_json_in(item, ctx)? {
                        Some(v) => out.push(v),
                        None => return Ok(None),
                    }
                }
                Json::Array(out)
            }
            Json::Object(map) => {
                let mut out = serde_json::Map::with_capacity(map.len());
                for (k, v) in map {
                    match self.render_json_in(v, ctx)? {
                        Some(v) => {
                            out.insert(k.clone(), v);
                        }
                        None => return Ok(None),
                    }
                }
                Json::Object(out)
            }
            other => other.clone(),
        }))
    }

    /// Runs `f` with the deferred flag cleared, and reports whether `f` used a deferred name.
    fn tracking_deferred<T>(ctx: &LazyContext, f: impl FnOnce() -> T) -> (T, bool) {
        let outer = std::mem::take(&mut ctx.lock().deferred);
        let out = f();
        let mut state = ctx.lock();
        let inner = state.deferred;
        state.deferred = outer || inner;
        (out, inner)
    }

    fn render_string_in(
        &self,
        s: &str,
        ctx: &Arc<LazyContext>,
    ) -> Result<Option<Json>, TemplateError> {
        if !is_template(s) {
            return Ok(Some(Json::String(s.to_owned())));
        }
        // A template written in a YAML value: its string literals keep their backslashes.
        let s = &backslashes::escape_backslashes(s);
        if let Some(expr) = single_expression(s) {
            // Ansible's templar turns text that reads as a list, mapping or boolean into one
            // (`ansible_eval_concat`), whatever gave it: a lookup's JSON, a variable's text.
            let keeps_text = literal::keeps_text(s);
            return Ok(self.eval_in(expr, ctx)?.map(|value| match value {
                Json::String(text) if !keeps_text => {
                    literal::convert(&text).unwrap_or(Json::String(text))
                }
                other => other,
            }));
        }
        Ok(self
            .render_to_string_in(s, ctx)?
            .map(|text| match literal::keeps_text(s) {
                true => Json::String(text),
                false => literal::convert(&text).unwrap_or(Json::String(text)),
            }))
    }

    fn render_to_string_in(
        &self,
        s: &str,
        ctx: &Arc<LazyContext>,
    ) -> Result<Option<String>, TemplateError> {
        let root = Value::from_dyn_object(ctx.clone());
        let source = plain_spaces_in_tags(s);
        let (result, deferred) =
            Self::tracking_deferred(ctx, || self.env.render_str(&source, root));
        match result {
            Ok(_) if deferred => Ok(None),
            Ok(text) => Ok(Some(with_trailing_newlines(s, text))),
            Err(e) => self.explain(s, &e, ctx, deferred).map(|()| None),
        }
    }

    fn eval_in(&self, expr: &str, ctx: &Arc<LazyContext>) -> Result<Option<Json>, TemplateError> {
        // Jinja2 takes a no-break space inside an expression as a space; so does imgbuild.
        let expr = expr.replace('\u{a0}', " ");
        let compiled = self
            .env
            .compile_expression(&expr)
            .map_err(|e| TemplateError::Other {
                line: None,
                template: expr.to_owned(),
                message: describe(&e),
            })?;
        let root = Value::from_dyn_object(ctx.clone());
        let (result, deferred) = Self::tracking_deferred(ctx, || compiled.eval(root));
        match result {
            Ok(_) if deferred => Ok(None),
            Ok(value) if value.is_undefined() => {
                let err = minijinja::Error::from(minijinja::ErrorKind::UndefinedError);
                self.explain(&expr, &err, ctx, false).map(|()| None)
            }
            // Ansible fails a task whose value holds an undefined item (`map(attribute=)` over
            // items without it); Jinja2 would print each as nothing.
            Ok(value) if holds_undefined(&value) => Err(TemplateError::Other {
                line: None,
                template: expr.to_owned(),
                message: "an undefined variable: the value holds an item or attribute that does not exist".into(),
            }),
            Ok(value) => serde_json::to_value(&value)
                .map(Some)
                .map_err(|e| TemplateError::Other {
                    line: None,
                    template: expr.to_owned(),
                    message: e.to_string(),
                }),
            Err(e) => self.explain(&expr, &e, ctx, deferred).map(|()| None),
        }
    }

    /// Turns a minijinja error into ours: `Ok(())` means "deferred, not an error".
    fn explain(
        &self,
        text: &str,
        e: &minijinja::Error,
        ctx: &LazyContext,
        deferred: bool,
    ) -> Result<(), TemplateError> {
        let mut state = ctx.lock();
        if let Some(fatal) = state.fatal.take() {
            return Err(fatal);
        }
        if deferred {
            return Ok(());
        }
        // An undefined variable also shows as an operation on `undefined` (`x / 4`).
        let undefined = e.kind() == minijinja::ErrorKind::UndefinedError
            || (e.kind() == minijinja::ErrorKind::InvalidOperation
                && e.detail().is_some_and(|d| d.contains("undefined")));
        if undefined {
            if let Some((name, chain)) = state.missing.last().cloned() {
                return Err(TemplateError::Undefined { name, chain });
            }
        }
        Err(TemplateError::Other {
            line: e.line(),
            template: excerpt(text, e.line()),
            message: describe(e),
        })
    }
}

/// The template with every no-break space inside `{{ }}`, `{% %}` and `{# #}` made a plain
/// space, as Jinja2 under Ansible reads it (text outside the tags keeps its own).
fn plain_spaces_in_tags(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{a0}') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut inside = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match (c, next) {
            ('{', Some('{' | '%' | '#')) if !inside => inside = true,
            ('}' | '%' | '#', Some('}')) if inside => inside = false,
            _ => {}
        }
        out.push(if inside && c == '\u{a0}' { ' ' } else { c });
    }
    std::borrow::Cow::Owned(out)
}

/// Where in a template an error is: the line it names (and its number in a template of several
/// lines), not the whole text.
fn excerpt(text: &str, line: Option<usize>) -> String {
    let short = |s: &str| {
        let s = s.trim();
        match s.char_indices().nth(160) {
            Some((cut, _)) => format!("`{}...`", &s[..cut]),
            None => format!("`{s}`"),
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    match (lines.len(), line) {
        (0 | 1, _) => short(text),
        (_, Some(n)) if n >= 1 && n <= lines.len() => format!("line {n} {}", short(lines[n - 1])),
        _ => short(text),
    }
}

/// How a template file is rendered, as the `template` module's options say (`None`: Ansible's
/// default, trim_blocks on and lstrip_blocks off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileOptions {
    /// Drop the newline after a block tag.
    pub trim_blocks: Option<bool>,
    /// Strip spaces before a block tag.
    pub lstrip_blocks: Option<bool>,
}

impl FileOptions {
    /// These options with a `#jinja2:` first line applied, and the text without that line.
    fn with_header(self, text: &str) -> Result<(Self, &str), TemplateError> {
        let Some(rest) = text.strip_prefix("#jinja2:") else {
            return Ok((self, text));
        };
        let (line, body) = rest.split_once('\n').unwrap_or((rest, ""));
        let mut options = self;
        for pair in line.split(',') {
            let (key, value) = pair.split_once(':').ok_or_else(|| TemplateError::Other {
                line: None,
                template: "#jinja2:".into(),
                message: format!("the '#jinja2:' line: '{pair}' is not 'key: value'"),
            })?;
            let value = match value.trim() {
                "True" | "true" => true,
                "False" | "false" => false,
                other => {
                    return Err(TemplateError::Other {
                        line: None,
                        template: "#jinja2:".into(),
                        message: format!(
                            "the '#jinja2:' line: {}: '{other}' is not True or False",
                            key.trim()
                        ),
                    })
                }
            };
            match key.trim() {
                "trim_blocks" => options.trim_blocks = Some(value),
                "lstrip_blocks" => options.lstrip_blocks = Some(value),
                other => {
                    return Err(TemplateError::Other { line: None, template: "#jinja2:".into(), message: format!(
                        "the '#jinja2:' line sets '{other}', which imgbuild does not support (trim_blocks, lstrip_blocks)"
                    ) })
                }
            }
        }
        Ok((options, body))
    }
}

/// Ansible's `preserve_trailing_newlines`: the output ends with at least as many newlines as
/// the template did.
fn with_trailing_newlines(source: &str, mut text: String) -> String {
    let count = |s: &str| s.bytes().rev().take_while(|b| *b == b'\n').count();
    let missing = count(source).saturating_sub(count(&text));
    text.push_str(&"\n".repeat(missing));
    text
}

/// Prints a value as Jinja2 under Ansible does: nothing for None, Python's `repr` for lists and
/// mappings, `True`/`False` for booleans.
fn python_formatter(
    out: &mut minijinja::Output,
    state: &minijinja::State,
    value: &Value,
) -> Result<(), minijinja::Error> {
    use minijinja::value::ValueKind;
    match value.kind() {
        ValueKind::None => Ok(()),
        ValueKind::Bool => out
            .write_str(if value.is_true() { "True" } else { "False" })
            .map_err(minijinja::Error::from),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => {
            let mut text = String::new();
            pyrepr::write_repr(value, &mut text)?;
            out.write_str(&text).map_err(minijinja::Error::from)
        }
        _ => minijinja::escape_formatter(out, state, value),
    }
}

/// Whether any string inside `raw` is a template.
pub fn contains_template(raw: &Json) -> bool {
    match raw {
        Json::String(s) => is_template(s),
        Json::Array(items) => items.iter().any(contains_template),
        Json::Object(map) => map.values().any(contains_template),
        _ => false,
    }
}

/// Whether a list or mapping holds an undefined value at any depth.
fn holds_undefined(value: &Value) -> bool {
    match value.kind() {
        minijinja::value::ValueKind::Seq | minijinja::value::ValueKind::Iterable => value
            .try_iter()
            .is_ok_and(|mut items| items.any(|item| item.is_undefined() || holds_undefined(&item))),
        minijinja::value::ValueKind::Map => value.try_iter().is_ok_and(|mut keys| {
            keys.any(|key| {
                value
                    .get_item(&key)
                    .is_ok_and(|item| item.is_undefined() || holds_undefined(&item))
            })
        }),
        _ => false,
    }
}

fn describe(e: &minijinja::Error) -> String {
    let mut message = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    if e.kind() == minijinja::ErrorKind::UndefinedError && e.detail().is_none() {
        message = "undefined value (an attribute or key that does not exist)".into();
    }
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        message.push_str(&format!(": {inner}"));
        source = inner.source();
    }
    message
}

#[cfg(test)]
mod unit_tests;
