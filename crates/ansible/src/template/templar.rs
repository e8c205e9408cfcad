//! Rendering with Ansible's behaviour: lazy recursive variables with cycle detection (the
//! render's context resolves a variable only when a template uses it, with the same context),
//! strict undefined naming the variable, native types for `"{{ expr }}"`, and deferred results
//! for what only the build can know.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use minijinja::value::{Enumerator, Object, ObjectRepr};
use minijinja::{Environment, Value};
use serde_json::Value as Json;

use super::error::{Condition, TemplateError, UNDEFINED_NAME};
use super::expression::{contains_template, is_template, single_expression};
use super::file_options::FileOptions;
use crate::vars::{Scope, VarValue};

/// The shared minijinja environment with Ansible's filters and tests.
#[derive(Debug, Clone)]
pub struct Templar {
    env: Arc<Environment<'static>>,
}

impl Templar {
    /// A templar rendering with `env`.
    pub(super) fn from_environment(env: Arc<Environment<'static>>) -> Self {
        Self { env }
    }
}

impl Templar {
    /// The environment it renders with.
    pub(super) fn environment(&self) -> &Environment<'static> {
        &self.env
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
        let _rendering = Rendering::enter(self, scope);
        let ctx = self.context(scope);
        let result = self.render_json_in(raw, &ctx);
        Self::finish(&ctx, result).map(|r| r.map(super::project_paths::relative_json))
    }

    /// Renders a string to a string (templates files, `name:`). `Ok(None)`: deferred.
    pub fn render_text(&self, text: &str, scope: &Scope) -> Result<Option<String>, TemplateError> {
        if !is_template(text) {
            return Ok(Some(text.to_owned()));
        }
        self.render_any_text(text, scope)
    }

    /// A text rendered with a template file's options (no `#jinja2:` line read).
    pub(super) fn render_with_options(
        &self,
        text: &str,
        scope: &Scope,
        options: &FileOptions,
    ) -> Result<Option<String>, TemplateError> {
        self.with_options(options)?
            .render_file_text(text, scope, options)
    }

    /// A template file's text: with other delimiters, rendered whether or not it holds Jinja's.
    fn render_file_text(
        &self,
        text: &str,
        scope: &Scope,
        options: &FileOptions,
    ) -> Result<Option<String>, TemplateError> {
        if options.has_delimiters() {
            self.render_any_text(text, scope)
        } else {
            self.render_text(text, scope)
        }
    }

    /// [`Self::render_text`] for a text whose delimiters may be other than Jinja's own.
    fn render_any_text(&self, text: &str, scope: &Scope) -> Result<Option<String>, TemplateError> {
        let _rendering = Rendering::enter(self, scope);
        let ctx = self.context(scope);
        let result = self.render_to_string_in(text, &ctx);
        Self::finish(&ctx, result).map(|r| r.map(super::project_paths::relative_text))
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
        self.with_options(&options)?
            .render_file_text(body, scope, &options)
    }

    /// [`Self::render_file`] for the file at `path` (relative to the project root) while a
    /// task is planned: what its `{% import %}`, `{% from %}` and `{% include %}` name is found
    /// as Ansible's template action finds it, beside the file, then in the task's search path
    /// (the role's `templates/` and the rest), each file read an input of the image.
    pub fn render_file_at(
        &self,
        path: &std::path::Path,
        text: &str,
        scope: &Scope,
        options: FileOptions,
    ) -> Result<Option<String>, TemplateError> {
        let (options, body) = options.with_header(text)?;
        let beside = path
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        self.with_options(&options)?
            .with_loader(super::lookup_state::include_loader(beside))
            .render_file_text(body, scope, &options)
    }

    /// This templar with a template file's options (`trim_blocks`, `lstrip_blocks`, other
    /// delimiters).
    fn with_options(&self, options: &FileOptions) -> Result<Templar, TemplateError> {
        if *options == FileOptions::default() {
            return Ok(self.clone());
        }
        let mut env = (*self.env).clone();
        options.apply(&mut env)?;
        Ok(Templar { env: Arc::new(env) })
    }

    /// Evaluates a bare expression (`when:`, `loop:` without braces). `Ok(None)`: deferred.
    pub fn eval(&self, expr: &str, scope: &Scope) -> Result<Option<Json>, TemplateError> {
        let _rendering = Rendering::enter(self, scope);
        let ctx = self.context(scope);
        let result = self.eval_in(expr, &ctx);
        Self::finish(&ctx, result).map(|r| r.map(super::project_paths::relative_json))
    }

    /// Evaluates a `when:` condition.
    pub fn condition(&self, expr: &str, scope: &Scope) -> Result<Condition, TemplateError> {
        // Ansible accepts a condition wrapped in {{ }} (with a warning); unwrap it. Text around
        // a {{ }} (`not {{ x }}`) is templated first, and what it gives evaluated, as Ansible's
        // Conditional does.
        let rendered;
        let expr = match single_expression(expr.trim()) {
            Some(inner) => inner,
            None if is_template(expr) => match self.render_text(expr, scope)? {
                Some(text) => {
                    rendered = text;
                    rendered.as_str()
                }
                None => return Ok(Condition::Deferred),
            },
            None => expr,
        };
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
    pub(super) fn tracking_deferred<T>(ctx: &LazyContext, f: impl FnOnce() -> T) -> (T, bool) {
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
        let s = &super::backslashes::escape_backslashes(s);
        if let Some(expr) = single_expression(s) {
            // Ansible's templar turns text that reads as a list, mapping or boolean into one
            // (`ansible_eval_concat`), whatever gave it: a lookup's JSON, a variable's text.
            let keeps_text = super::literal::keeps_text(s);
            let bare_name = is_bare_name(expr) && ctx.scope.get(expr.trim()).is_some();
            return Ok(self.eval_in(expr, ctx)?.map(|value| match value {
                Json::String(text) if !keeps_text => {
                    super::literal::convert(&text).unwrap_or(Json::String(text))
                }
                // Ansible's finalize renders None as '', except for `{{ name }}` alone, which
                // its templar gives as the variable's own value.
                Json::Null if !bare_name => Json::String(String::new()),
                other => other,
            }));
        }
        Ok(self
            .render_to_string_in(s, ctx)?
            .map(|text| match super::literal::keeps_text(s) {
                true => Json::String(text),
                false => super::literal::convert(&text).unwrap_or(Json::String(text)),
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
            Err(e) => {
                let retried = self.chained_retry(s, ctx, deferred, &e, |env| {
                    env.render_str(&source, Value::from_dyn_object(ctx.clone()))
                });
                match retried {
                    Some(text) => Ok(Some(with_trailing_newlines(s, text))),
                    None => self.explain(s, &e, ctx, deferred).map(|()| None),
                }
            }
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
            Err(e) => {
                let retried = self.chained_retry(&expr, ctx, deferred, &e, |env| {
                    let compiled = env.compile_expression(&expr)?;
                    let value = compiled.eval(Value::from_dyn_object(ctx.clone()))?;
                    serde_json::to_value(&value).map_err(|e| {
                        minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
                    })
                });
                match retried {
                    Some(value) => Ok(Some(value)),
                    None => self.explain(&expr, &e, ctx, deferred).map(|()| None),
                }
            }
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
        let mut message = describe(e);
        if message.contains(UNDEFINED_NAME) {
            let name = state.missing.last().map(|(name, _)| format!("'{name}' "));
            message = message.replace(UNDEFINED_NAME, &name.unwrap_or_default());
        }
        Err(TemplateError::Other {
            line: e.line(),
            template: excerpt(text, e.line()),
            message,
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

/// Whether an expression is one name (Ansible's `SINGLE_VAR`, which then looks the name up
/// among the variables).
fn is_bare_name(expr: &str) -> bool {
    let name = expr.trim();
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
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

/// Ansible's `preserve_trailing_newlines`: the output ends with at least as many newlines as
/// the template did.
fn with_trailing_newlines(source: &str, mut text: String) -> String {
    let count = |s: &str| s.bytes().rev().take_while(|b| *b == b'\n').count();
    let missing = count(source).saturating_sub(count(&text));
    text.push_str(&"\n".repeat(missing));
    text
}

/// Whether a list or mapping holds an undefined value at any depth.
pub(super) fn holds_undefined(value: &Value) -> bool {
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

// The render's lazy variable context.
//
// The lazy variable context handed to minijinja.
//
// A variable's raw value is templated only when a template uses it, with the same context, so
// variables may reference each other in any order (as in Ansible). A name being resolved while
// it is already on the resolution stack is a cycle. A deferred name (known only at build time)
// marks the whole render as deferred instead of failing it.

#[derive(Debug, Default)]
pub(super) struct ResolveState {
    /// Names being resolved, outermost first.
    stack: Vec<String>,
    /// Names already resolved in this render; `None` means deferred.
    cache: HashMap<String, Option<Value>>,
    /// A deferred name was used.
    pub(super) deferred: bool,
    /// Names looked up but not defined, with the chain that needed each.
    pub(super) missing: Vec<(String, Vec<String>)>,
    /// An error that must win over whatever minijinja reports (a cycle, an inner undefined).
    pub(super) fatal: Option<TemplateError>,
}

/// The variables of one render, resolved on demand.
#[derive(Debug)]
pub(super) struct LazyContext {
    pub(super) scope: Scope,
    pub(super) templar: Templar,
    pub(super) state: Mutex<ResolveState>,
}

impl LazyContext {
    /// The variables of this render, where `raw` is one expression naming them (`vars`,
    /// `hostvars[...]`).
    fn variables_view(self: &Arc<Self>, raw: &serde_json::Value) -> Option<Value> {
        let expr = super::expression::single_expression(raw.as_str()?)?.trim();
        if expr != "vars" && !expr.starts_with("hostvars[") {
            return None;
        }
        let compiled = self.templar.env.compile_expression(expr).ok()?;
        let value = compiled.eval(Value::from_dyn_object(self.clone())).ok()?;
        LazyContext::of_view(&value)?;
        Some(value)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, ResolveState> {
        // A poisoned lock only means a panic elsewhere in this render; the state is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn resolve(self: &Arc<Self>, name: &str) -> Option<Value> {
        if let Some(known) = self.cached_or_cycle(name) {
            return Some(known);
        }
        let raw = match self.scope.get(name) {
            None => return self.not_in_scope(name),
            Some(VarValue::Deferred) => {
                let mut state = self.lock();
                state.deferred = true;
                state.cache.insert(name.to_owned(), None);
                return Some(Value::UNDEFINED);
            }
            Some(VarValue::Open(known)) => {
                // Not cached: the mapping holds this context, which must not hold it back.
                return Some(self.open_mapping(known));
            }
            Some(VarValue::Known(value)) => {
                let value = super::project_paths::absolute_folder(name, value)
                    .unwrap_or_else(|| Value::from_serialize(value));
                self.lock()
                    .cache
                    .insert(name.to_owned(), Some(value.clone()));
                return Some(value);
            }
            Some(VarValue::Raw(raw)) => match super::project_paths::absolute_folder(name, raw) {
                Some(absolute) => {
                    let mut state = self.lock();
                    state.cache.insert(name.to_owned(), Some(absolute.clone()));
                    return Some(absolute);
                }
                None => raw,
            },
        };
        if let Some(view) = self.variables_view(raw) {
            // `all_vars: "{{ hostvars[inventory_hostname] }}"`: the variables themselves, as
            // Ansible's lazy hostvars are, not a copy (which would hold `all_vars` again).
            self.lock()
                .cache
                .insert(name.to_owned(), Some(view.clone()));
            return Some(view);
        }
        Some(self.render_variable(name, raw))
    }

    /// `name`'s value already resolved in this render (undefined when deferred), or undefined
    /// with the cycle recorded when `name` is being resolved already; `None` otherwise.
    fn cached_or_cycle(&self, name: &str) -> Option<Value> {
        let mut state = self.lock();
        if let Some(cached) = state.cache.get(name) {
            let cached = cached.clone();
            if cached.is_none() {
                state.deferred = true;
            }
            return Some(cached.unwrap_or(Value::UNDEFINED));
        }
        if state.stack.iter().any(|n| n == name) {
            let mut chain = state.stack.clone();
            chain.push(name.to_owned());
            let chain = chain
                .iter()
                .skip_while(|n| n.as_str() != name)
                .cloned()
                .collect::<Vec<_>>()
                .join(" -> ");
            state.fatal.get_or_insert(TemplateError::Cycle(chain));
            return Some(Value::UNDEFINED);
        }
        None
    }

    /// A name the scope does not hold: `vars` and `hostvars` (this context itself), a fact
    /// the build may return, or a missing variable (`None`, recorded with its chain).
    fn not_in_scope(self: &Arc<Self>, name: &str) -> Option<Value> {
        if name == "vars" {
            return Some(self.vars_view());
        }
        if name == "hostvars" {
            return Some(self.hostvars());
        }
        if self.templar.is_global(name) {
            // A function (`lookup`, `range`, ...): minijinja finds it beside the variables.
            return None;
        }
        let mut state = self.lock();
        if self.scope.get(crate::vars::ANY_OTHER_NAME).is_some() {
            // It may be a fact the build's role module returns.
            state.deferred = true;
            return Some(Value::UNDEFINED);
        }
        let chain = state.stack.clone();
        state.missing.push((name.to_owned(), chain));
        None
    }

    /// Variable `name`'s raw value templated with this context (undefined when deferred or
    /// failed, the failure kept to be reported), and cached.
    fn render_variable(self: &Arc<Self>, name: &str, raw: &Json) -> Value {
        self.lock().stack.push(name.to_owned());
        let result = self.templar.render_json_in(raw, self);
        let mut state = self.lock();
        state.stack.pop();
        match result {
            Ok(Some(json)) => {
                let value = Value::from_serialize(&json);
                state.cache.insert(name.to_owned(), Some(value.clone()));
                value
            }
            Ok(None) => {
                state.deferred = true;
                state.cache.insert(name.to_owned(), None);
                Value::UNDEFINED
            }
            Err(error) => {
                state.fatal.get_or_insert(error);
                Value::UNDEFINED
            }
        }
    }
}

impl Object for LazyContext {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.resolve(key.as_str()?)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let names: Vec<Value> = self.scope.names().into_iter().map(Value::from).collect();
        Enumerator::Values(names)
    }
}

thread_local! {
    /// The templar and variables of the renders under way (innermost last), for
    /// `lookup('template')`, which renders a file with the variables of the task using it.
    static CURRENT: RefCell<Vec<(Templar, Scope)>> = const { RefCell::new(Vec::new()) };
}

/// Marks a render under way until dropped.
pub struct Rendering(());

impl Rendering {
    /// Records that `templar` renders with `scope` now.
    pub fn enter(templar: &Templar, scope: &Scope) -> Self {
        CURRENT.with(|c| c.borrow_mut().push((templar.clone(), scope.clone())));
        Rendering(())
    }
}

impl Drop for Rendering {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

/// The templar and variables of the innermost render under way.
pub(super) fn current_render() -> Option<(Templar, Scope)> {
    CURRENT.with(|c| c.borrow().last().cloned())
}
