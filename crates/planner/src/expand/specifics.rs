//! What planning does for particular modules: templates rendered and sources found, var files
//! read, facts a module sets, and warnings about tasks that mean little in an image build.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::modules::types::Flag;
use crate::modules::{ModuleSpec, PlanTime};
use crate::plan::PlannedTask;
use crate::planner::Planner;
use crate::template::TemplateError;
use crate::vars::VarValue;

use super::{Ctx, Pass};

impl Planner<'_> {
    /// `set_fact`'s variable names rendered, as Ansible renders them
    /// (`"{{ item.key }}": "{{ item.value }}"`); other modules' arguments as they are. A name
    /// only the build knows stays a template, which the build renders (and after which any
    /// name may be defined: see `module_specifics`).
    pub(super) fn rendered_fact_names<'a>(
        &self,
        spec: &ModuleSpec,
        raw_args: &'a serde_json::Map<String, Json>,
        pass: &Pass,
        at: &Location,
        label: Option<&str>,
    ) -> Result<std::borrow::Cow<'a, serde_json::Map<String, Json>>> {
        if spec.plan_time != PlanTime::SetFacts {
            return Ok(std::borrow::Cow::Borrowed(raw_args));
        }
        let mut named = serde_json::Map::new();
        for (key, value) in raw_args {
            let name = if crate::template::is_template(key) {
                match self.render(&Json::String(key.clone()), &pass.scope, at, label)? {
                    Some(Json::String(name)) => name,
                    Some(other) => other.to_string(),
                    None => key.clone(),
                }
            } else {
                key.clone()
            };
            named.insert(name, value.clone());
        }
        Ok(std::borrow::Cow::Owned(named))
    }

    /// What a module needs at plan time, as its spec's [`PlanTime`] says: project files,
    /// rendered templates, facts, warnings.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn module_specifics(
        &mut self,
        spec: &ModuleSpec,
        task: &mut PlannedTask,
        pass: &Pass,
        ctx: &Ctx,
        at: &Location,
        label: Option<&str>,
    ) -> Result<()> {
        for read in crate::template::lookups::take_reads() {
            self.sources.record(&read);
        }
        match spec.plan_time {
            PlanTime::Nothing => {}
            PlanTime::RenderTemplate => self.plan_template(task, pass, ctx, at, label)?,
            PlanTime::PushSource => self.push_source_unless_remote(task, ctx, at)?,
            PlanTime::PushArchive => {
                self.push_source_unless_remote(task, ctx, at)?;
                Self::archive_code(task, at)?;
            }
            PlanTime::PushSourceWhenNotRemote => {
                // remote_src defaults to yes: only `remote_src: no` reads the role's files/.
                if task.args.get("src").is_some_and(Json::is_string)
                    && !flag(task, "remote_src", true)
                {
                    self.push_source(task, ctx, at)?;
                }
            }
            PlanTime::PushScript => self.push_script(task, ctx, at)?,
            PlanTime::PushPatch => {
                if let Some(src) = known_arg(task, "src") {
                    let path = self.local_file(&src, "files", ctx, at, "patch")?;
                    self.record_local_file(task, path);
                }
            }
            PlanTime::Synchronize => self.synchronize_source(task, ctx, at)?,
            PlanTime::RoleModule => self.plan_role_module(task, pass, ctx, at)?,
            PlanTime::SetFacts => self.plan_set_fact(task, pass),
            PlanTime::IncludeVars => self.include_vars(task, ctx, at)?,
            PlanTime::Inventory => self.plan_inventory(task, pass),
            PlanTime::GatherFacts => {
                if crate::modules::host_only::gathers_local_facts(&task.args) {
                    // Local facts come from the image's /etc/ansible/facts.d, which a task may
                    // have filled (a fact script runs in the image): known once the build
                    // gathers them.
                    Arc::make_mut(&mut self.facts_set)
                        .insert("ansible_local".into(), VarValue::Deferred);
                }
            }
            PlanTime::FactsAtBuild(names) => self.facts_known_at_build(pass, names),
            PlanTime::GetentFacts => {
                if let Some(database) = task.args.get("database").and_then(Json::as_str) {
                    self.facts_known_at_build(pass, &[&format!("getent_{database}")]);
                }
            }
            PlanTime::RunsCommand => self.warn_of_uname(task, at),
            PlanTime::ManagesServices => {
                if task.args.get("state").is_some() {
                    self.warn(at, "state: started/stopped/restarted changes nothing in an image build (nothing runs while it is built, as Ansible's systemd module in a chroot); enabled: decides what starts when the node boots");
                }
            }
        }
        Ok(())
    }

    /// `template`: the role's template rendered now, or, when its name is known only at build
    /// time, the folders the build looks in.
    fn plan_template(
        &mut self,
        task: &mut PlannedTask,
        pass: &Pass,
        ctx: &Ctx,
        at: &Location,
        label: Option<&str>,
    ) -> Result<()> {
        let Some(src) = known_arg(task, "src") else {
            if is_deferred(task, "src") {
                task.local_search = self.search_dirs("templates", ctx);
            }
            return Ok(());
        };
        let path = self.local_file(&src, "templates", ctx, at, "template")?;
        let text = self.sources.read_text(&path)?;
        let dest = known_arg(task, "dest");
        let fullpath = self.sources.root().join(&path);
        let scope = self
            .full(&pass.scope)
            .with_layer(crate::template::template_vars(
                &src,
                &fullpath,
                dest.as_deref(),
            ));
        let options = crate::modules::template::file_options(&task.args);
        task.rendered = self
            .templar
            .render_file_at(&path, &text, &scope, options)
            .map_err(|e| {
                // The template file's own line, when the error has one.
                let file_at = match &e {
                    TemplateError::Other { line: Some(n), .. } => Location::new(&path, *n),
                    _ => Location::file(&path),
                };
                self.template_error(&file_at, label, e)
            })?;
        // What its imports and includes read is an input too.
        for read in crate::template::lookups::take_reads() {
            self.sources.record(&read);
        }
        task.local_file = Some(path.display().to_string());
        Ok(())
    }

    /// `src`, a project file pushed into the image (copy, unarchive, assemble): found in the
    /// role's `files/` now, or, when its name is known only at build time, the folders the
    /// build looks in.
    fn push_source(&mut self, task: &mut PlannedTask, ctx: &Ctx, at: &Location) -> Result<()> {
        if is_deferred(task, "src") {
            task.local_search = self.search_dirs("files", ctx);
        } else if let Some(src) = task
            .args
            .get("src")
            .and_then(Json::as_str)
            .map(str::to_owned)
        {
            let path = self.local_file(&src, "files", ctx, at, "file")?;
            self.record_local_file(task, path);
        }
        Ok(())
    }

    /// `script`: the script its command line starts with, from the role's `files/`.
    fn push_script(&mut self, task: &mut PlannedTask, ctx: &Ctx, at: &Location) -> Result<()> {
        let deferred = is_deferred(task, "cmd");
        match crate::modules::local_source(&task.module, &task.args) {
            Some(script) if !deferred => {
                let path = self.local_file(&script, "files", ctx, at, "script")?;
                self.record_local_file(task, path);
            }
            _ if deferred => task.local_search = self.search_dirs("files", ctx),
            _ => {}
        }
        Ok(())
    }

    /// The project file a task reads, recorded among the plan's sources.
    fn record_local_file(&mut self, task: &mut PlannedTask, path: std::path::PathBuf) {
        self.sources.record(&path);
        task.local_file = Some(path.display().to_string());
    }

    /// `set_fact`: the facts it names are known from here on (deferred when the build
    /// decides them); a name only the build knows makes any name possible.
    fn plan_set_fact(&mut self, task: &mut PlannedTask, pass: &Pass) {
        let deferred_task = task.when.is_some() || task.loop_over.is_some();
        if task.item.as_ref().is_some_and(|i| i.from_lookup) {
            // Ansible's lookup items are unsafe, and so is what is templated from them: the
            // facts keep their text (`foo{{ v }}` from hostvars stays so). The build marks the
            // values only it renders.
            if let Json::Object(facts) = &mut task.args {
                facts
                    .iter_mut()
                    .filter(|(name, _)| name.as_str() != "cacheable")
                    .filter(|(name, _)| !task.deferred.contains(name))
                    .for_each(|(_, value)| crate::template::mark_unsafe(value));
            }
        }
        let Json::Object(facts) = &task.args else {
            return;
        };
        let mut named_at_build = Vec::new();
        for (name, value) in facts {
            if name == "cacheable" {
                continue;
            }
            if crate::template::is_template(name) {
                // A name only the build knows (`"{{ item }}": x` over a registered result):
                // the build renders it, and any name may be set from here.
                named_at_build.push(name.clone());
                continue;
            }
            let var = if deferred_task || task.deferred.contains(name) {
                VarValue::Deferred
            } else {
                VarValue::Raw(value.clone())
            };
            Arc::make_mut(&mut self.facts_set).insert(name.clone(), var);
        }
        if !named_at_build.is_empty() {
            task.deferred.extend(named_at_build);
            self.facts_known_at_build(pass, &[crate::vars::ANY_OTHER_NAME]);
        }
    }

    /// `src`, a project file pushed into the image, unless `remote_src` (or unarchive's
    /// `copy: no`) says it is in the image already.
    fn push_source_unless_remote(
        &mut self,
        task: &mut PlannedTask,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<()> {
        let remote =
            flag(task, "remote_src", false) || task.args.get("copy") == Some(&Json::Bool(false));
        let in_project = |src: &str| !src.starts_with('/') && !src.contains("://");
        let push = match task.args.get("src").and_then(Json::as_str) {
            Some(src) => !remote && (is_deferred(task, "src") || in_project(src)),
            None => false,
        };
        if push {
            self.push_source(task, ctx, at)?;
        }
        Ok(())
    }

    /// An archive Ansible's own unarchive module extracts (a zip, or a tar with GNU tar's
    /// options): where that module comes from and its digest in the task's arguments, as for
    /// any module run with Ansible's code, so that another ansible-core rebuilds the layer.
    /// Nothing when the machine has none: the build then says so.
    fn archive_code(task: &mut PlannedTask, at: &Location) -> Result<()> {
        let by_ansible = crate::modules::unarchive::extracted_by_ansible(&task.args);
        let found = by_ansible
            .then(|| crate::modules::ansible_code::host().ok())
            .flatten()
            .and_then(|host| host.builtin_module(crate::modules::unarchive::SPEC.name));
        let Some(found) = found else {
            return Ok(());
        };
        let module = task.module.clone();
        stamp_ansible_code(task, &module, &found.origin, &found.path, at)
    }

    /// A module run with Ansible's own code: its file (a project file is recorded as an input;
    /// one of the machine's ansible-core or collections puts where it comes from and its
    /// digest in the task's arguments, so the layer key changes with it), and, when it may
    /// return facts, any fact known from here on only at build time.
    fn plan_role_module(
        &mut self,
        task: &mut PlannedTask,
        pass: &Pass,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<()> {
        let name = task
            .args
            .get("module")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(found) = self.ansible_module(&name, ctx) else {
            return Ok(());
        };
        let path = found.path;
        let text = match found.host {
            None => {
                self.sources.record(&path);
                self.sources.read_text(&path)?
            }
            Some(origin) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| unreadable_code(&name, &path, at, e))?;
                stamp_ansible_code(task, &name, &origin, &path, at)?;
                text
            }
        };
        if returns_facts(&text) {
            // A module that may return facts: which, the build tells; Ansible makes each a
            // variable too.
            self.facts_known_at_build(pass, &[crate::vars::ANY_OTHER_NAME]);
        }
        if found.action {
            // Run by ansible-playbook, not staged in the image (see `modules::ansible_action`).
            task.args["ansible_action"] = Json::Bool(true);
        }
        if task.name == crate::modules::role_module::MODULE {
            task.name = name;
        }
        task.local_file = Some(path.display().to_string());
        Ok(())
    }

    /// A command line that asks `uname` learns the build host's kernel, not the image's.
    fn warn_of_uname(&mut self, task: &PlannedTask, at: &Location) {
        let text = match (
            task.args.get("cmd").and_then(Json::as_str),
            task.args.get("argv"),
        ) {
            (Some(cmd), _) => cmd.to_owned(),
            (None, Some(argv)) => argv.to_string(),
            _ => String::new(),
        };
        if text.contains("uname") {
            self.warn(
                at,
                "uname reports the build host's kernel, not the image's; use {{ kernel_version }}",
            );
        }
    }

    /// After a module that returns facts only the build knows: `names` are known then, and so
    /// is any fact not known now; the facts known now stay known (`ansible_facts` is open).
    fn facts_known_at_build(&mut self, pass: &Pass, names: &[&str]) {
        let open = match self.full(&pass.scope).get("ansible_facts") {
            Some(VarValue::Raw(known) | VarValue::Open(known)) => {
                let mut known = known.clone();
                if let Json::Object(map) = &mut known {
                    for name in names {
                        map.remove(*name);
                    }
                }
                VarValue::Open(known)
            }
            _ => VarValue::Deferred,
        };
        let layer = Arc::make_mut(&mut self.facts_set);
        for name in names {
            layer.insert((*name).to_owned(), VarValue::Deferred);
        }
        layer.insert("ansible_facts".into(), open);
    }

    /// `synchronize`'s source: a file or folder of the role pushed into the image, or, with
    /// `delegate_to` naming the image itself, a path in the image (Ansible then runs rsync
    /// there from path to path). What would read or write the machine running the build is
    /// refused.
    fn synchronize_source(
        &mut self,
        task: &mut PlannedTask,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<()> {
        let known = |name: &str| {
            task.args
                .get(name)
                .and_then(Json::as_str)
                .filter(|_| !task.deferred.iter().any(|d| d == name))
                .map(str::to_owned)
        };
        let refuse = |message: String| {
            PlanError::new(
                at.clone(),
                ErrorKind::Module {
                    module: "synchronize".into(),
                    message,
                },
            )
        };
        if task.delegated_to_image {
            for name in ["src", "dest"] {
                if let Some(path) = known(name).filter(|p| !p.starts_with('/')) {
                    return Err(refuse(format!(
                        "{name} '{path}' is relative: with delegate_to naming the image both paths are in the image, where Ansible would look for the role's files/{path}; give an absolute path"
                    )));
                }
            }
            return Ok(());
        }
        if task.args.get("mode").and_then(Json::as_str) == Some("pull") {
            return Err(refuse(
                "mode: pull copies from the image to the machine running the build, which an image build never writes to; to copy within the image, add delegate_to: \"{{ inventory_hostname }}\"".into(),
            ));
        }
        if let Some(dest) = known("dest").filter(|d| !d.starts_with('/')) {
            return Err(refuse(format!(
                "dest '{dest}' is relative; give an absolute path in the image"
            )));
        }
        match known("src") {
            Some(src) if src.starts_with('/') => Err(refuse(format!(
                "src '{src}' is a path on the machine running the build, outside the project; imgbuild pushes only the role's own files: put it in the role's files/, or, for a copy within the image, add delegate_to: \"{{{{ inventory_hostname }}}}\""
            ))),
            Some(src) => {
                let path = self.local_file(src.trim_end_matches('/'), "files", ctx, at, "file")?;
                self.sources.record(&path);
                task.local_file = Some(path.display().to_string());
                Ok(())
            }
            None => {
                if task.deferred.iter().any(|d| d == "src") {
                    task.local_search = self.search_dirs("files", ctx);
                }
                Ok(())
            }
        }
    }
}

/// Puts where a module of the machine's Ansible comes from (`ansible-core 2.14.18`, a
/// collection) and its file's digest in the task's arguments, so that another version
/// rebuilds the layer.
fn stamp_ansible_code(
    task: &mut PlannedTask,
    module: &str,
    origin: &str,
    path: &std::path::Path,
    at: &Location,
) -> Result<()> {
    let digest = crate::modules::ansible_code::file_digest(path)
        .map_err(|e| unreadable_code(module, path, at, e))?;
    task.args["ansible_code"] =
        serde_json::json!({"from": origin, "file": path.display().to_string(), "digest": digest});
    Ok(())
}

/// The error for a file of Ansible's code that cannot be read.
fn unreadable_code(
    module: &str,
    path: &std::path::Path,
    at: &Location,
    error: std::io::Error,
) -> PlanError {
    PlanError::new(
        at.clone(),
        ErrorKind::Module {
            module: module.to_owned(),
            message: format!("reading Ansible's code at {}: {error}", path.display()),
        },
    )
}

/// Whether the build, not the plan, knows argument `name` of `task`.
fn is_deferred(task: &PlannedTask, name: &str) -> bool {
    task.deferred.iter().any(|d| d == name)
}

/// Argument `name` of `task` as text, when the plan knows it.
fn known_arg(task: &PlannedTask, name: &str) -> Option<String> {
    task.args
        .get(name)
        .and_then(Json::as_str)
        .filter(|_| !is_deferred(task, name))
        .map(str::to_owned)
}

/// Boolean argument `name` of `task`, or `default` when it is not given (or not a boolean).
fn flag(task: &PlannedTask, name: &str, default: bool) -> bool {
    task.args
        .get(name)
        .and_then(|v| serde_json::from_value::<Flag>(v.clone()).ok())
        .map_or(default, |f| f.or(default))
}

/// Whether a module's Python code returns facts: it names `ansible_facts` outside its
/// `DOCUMENTATION`, `EXAMPLES` and `RETURN` texts and its comments (linux-system-roles'
/// `sr_fingerprint.py` shows `ansible_facts` only in an example, and returns none).
fn returns_facts(text: &str) -> bool {
    let mut closing: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(quote) = closing {
            if trimmed.contains(quote) {
                closing = None;
            }
            continue;
        }
        let docs = ["DOCUMENTATION", "EXAMPLES", "RETURN"].iter().any(|name| {
            trimmed.starts_with(name) && trimmed[name.len()..].trim_start().starts_with('=')
        });
        if docs {
            let quote = if trimmed.contains("\"\"\"") {
                "\"\"\""
            } else {
                "'''"
            };
            // The text ends on a later line unless it opens and closes on this one.
            if trimmed.matches(quote).count() < 2 {
                closing = Some(quote);
            }
            continue;
        }
        if !trimmed.starts_with('#') && trimmed.contains("ansible_facts") {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod returns_facts_tests {
    use super::returns_facts;

    #[test]
    fn facts_named_only_in_the_docs_or_comments_are_not_returned() {
        let example = "DOCUMENTATION = r'''\nshort_description: x\n'''\nEXAMPLES = r\"\"\"\n- debug: var=ansible_facts\n\"\"\"\n# ansible_facts are not ours\nm.exit_json(changed=False)\n";
        assert!(!returns_facts(example));
        let returning =
            format!("{example}m.exit_json(changed=False, ansible_facts={{\"x\": 1}})\n");
        assert!(returns_facts(&returning));
        assert!(returns_facts("result['ansible_facts'] = facts\n"));
    }
}
