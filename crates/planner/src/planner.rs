//! The entry point: a recipe, its roles and the project's `mirror.toml` in, a [`Plan`] out.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{json, Value as Json};
use spec::BaseKind;

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::facts::{self, Distro};
use crate::plan::{Plan, Step};
use crate::recipe::{Project, Recipe, RoleRef};
use crate::roles::{find_role, role_default, role_meta, var_layer, yaml_file};
use crate::source::Sources;
use crate::tags::TagFilter;
use crate::task_context::{role_magic, Ctx};
use crate::template::{PythonPlugins, Templar};
use crate::vars::{layer_from, Layer, Scope, VarValue};

/// A handler that cannot be planned (a keyword image builds do not run, such as `delegate_to`,
/// or an include of tasks that do not plan): refused only if a task notifies it, as Ansible
/// reads and runs a handler only then.
#[derive(Debug)]
pub struct RefusedHandler {
    /// Its name and `listen` topics.
    pub names: Vec<String>,
    /// Why it cannot be planned.
    pub error: PlanError,
}

/// A role's handler by a qualified name.
#[derive(Debug, Clone)]
pub struct HandlerAlias {
    /// `<role> : <handler>`.
    pub alias: String,
    /// The handler's own name.
    pub name: String,
    /// Where the role's handlers are in the plan's handlers.
    pub steps: std::ops::Range<usize>,
}

/// What the command line adds to a plan.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// `-e KEY=VALUE`, the highest precedence.
    pub extra_vars: IndexMap<String, Json>,
    /// `--tags` and `--skip-tags`.
    pub tags: TagFilter,
    /// `--mirror URL`: overrides `mirror.toml` and the recipe.
    pub mirror: Option<String>,
    /// Skip the recipe lints (`--no-lint`), for tests of what they prevent.
    pub no_lint: bool,
    /// The vault passwords (`--vault-password-file`, `--vault-id`) for vaulted YAML.
    pub vault: crate::vault::Vault,
}

/// The state of one plan being made.
pub(crate) struct Planner<'a> {
    pub project: &'a Project,
    pub opts: &'a PlanOptions,
    pub templar: Templar,
    pub sources: Sources,
    /// `set_fact` and `register` results so far.
    pub facts_set: Arc<Layer>,
    /// The defaults, then the vars, of roles imported with `import_role` (or included with
    /// `public: true`) so far: Ansible exposes them to the play's later tasks.
    pub exposed: [Arc<Layer>; 2],
    /// The inventory as `group_by` and `add_host` left it.
    pub inventory: crate::inventory::PlanInventory,
    pub warnings: Vec<crate::plan::Warning>,
    pub notified: Vec<(String, Location)>,
    pub handlers: Vec<Step>,
    pub handler_names: Vec<String>,
    /// Notified names no handler has (see [`Plan::missing_handlers`]).
    pub missing_handlers: Vec<String>,
    /// A role's handlers by `<role> : <handler>` (the role's short and full names), which a
    /// notify may use as Ansible allows.
    pub handler_aliases: Vec<HandlerAlias>,
    /// Handlers with a keyword image builds do not run: refused when a task notifies one.
    pub refused_handlers: Vec<RefusedHandler>,
    pub handler_roles: Vec<PathBuf>,
    /// Roles run so far with their parameters, for Ansible's run-once rule.
    pub roles_run: Vec<(PathBuf, String)>,
    /// Every tag a task or include carries, selected or not (to check `--tags` against).
    pub tags_seen: std::collections::BTreeSet<String>,
}

/// The distribution, version and base of a recipe, without planning its roles.
#[derive(Debug, Clone)]
pub struct RecipeFacts {
    /// The loaded recipe.
    pub recipe: Recipe,
    /// `ansible_*` facts.
    pub facts: IndexMap<String, Json>,
    /// The scope of recipe-level variables (mirror, facts, recipe vars, `-e`).
    pub scope: Scope,
    /// The names `group_vars/` and `host_vars/` beside the recipe define.
    pub inventory_names: Vec<String>,
}

/// Plans `image` of `project`.
pub fn plan(project: &Project, image: &str, opts: &PlanOptions) -> Result<Plan> {
    let base = Templar::new();
    let plugins = PythonPlugins::for_project(&project.root, &base)
        .map_err(|e| PlanError::new(Location::file(Path::new("roles")), ErrorKind::Recipe(e)))?;
    let templar = match &plugins {
        Some(plugins) => base.with_python_plugins(plugins),
        None => base,
    };
    let mut planner = Planner {
        project,
        opts,
        templar,
        sources: Sources::new(&project.root).with_vault(opts.vault.clone()),
        facts_set: Arc::new(Layer::new()),
        exposed: [Arc::new(Layer::new()), Arc::new(Layer::new())],
        inventory: Default::default(),
        warnings: Vec::new(),
        notified: Vec::new(),
        handlers: Vec::new(),
        handler_names: Vec::new(),
        missing_handlers: Vec::new(),
        handler_aliases: Vec::new(),
        refused_handlers: Vec::new(),
        handler_roles: Vec::new(),
        roles_run: Vec::new(),
        tags_seen: Default::default(),
    };
    for skipped in plugins.iter().flat_map(|p| p.skipped()) {
        let at = Location::file(Path::new("roles"));
        planner.warn(
            &at,
            format!("skipping a plugin file that does not load, as Ansible does: {skipped}"),
        );
    }
    let base = recipe_facts(project, &mut planner.sources, &planner.templar, image, opts)?;
    if !opts.no_lint {
        lint_role_order(&base.recipe)?;
    }
    planner.run(base)
}

/// `nvidia` must come after `mofed`: the NVIDIA installer builds nvidia-peermem against MOFED's
/// RDMA API only when MOFED is already installed, and otherwise silently without it.
fn lint_role_order(recipe: &Recipe) -> Result<()> {
    let position = |name: &str| recipe.roles.iter().position(|r| r.name == name);
    if let (Some(mofed), Some(nvidia)) = (position("mofed"), position("nvidia")) {
        if nvidia < mofed {
            return Err(PlanError::new(
                Location::new(&recipe.path, recipe.roles[nvidia].line),
                ErrorKind::Recipe(
                    "role nvidia comes before mofed: nvidia-peermem must be built against MOFED's RDMA API (ib_register_peer_memory_client), and the NVIDIA installer silently builds it without GPUDirect RDMA when MOFED is not installed yet; move nvidia after mofed".into(),
                ),
            ));
        }
    }
    Ok(())
}

/// Loads a recipe and works out its facts and recipe-level scope (used by `matrix` and `list`).
pub fn recipe_facts(
    project: &Project,
    sources: &mut Sources,
    templar: &Templar,
    image: &str,
    opts: &PlanOptions,
) -> Result<RecipeFacts> {
    let recipe = Recipe::load(project, sources, image)?;
    let mirror = site_mirror(sources)?;
    let mut mirror_layer = Layer::new();
    if let Some(url) = &mirror.url {
        mirror_layer.insert(
            "mirror_server".into(),
            VarValue::Raw(Json::String(url.clone())),
        );
    }
    let mut extra = opts.extra_vars.clone();
    if let Some(url) = &opts.mirror {
        extra.insert("mirror_server".into(), Json::String(url.clone()));
    }
    let recipe_layer = layer_from(&recipe.vars);
    // ansible-playbook's precedence: group_vars and host_vars above role defaults and
    // mirror.toml, below facts and the play's vars.
    let recipe_dir = recipe.path.parent().unwrap_or(Path::new(""));
    let inventory =
        crate::inventory_vars::inventory_vars(sources, &project.root, recipe_dir, image)?;
    let inventory_layer = layer_from(&inventory);
    let pre = Scope::new(layer_from(&extra))
        .with_layer(Arc::new(mirror_layer.clone()))
        .with_layer(inventory_layer.clone())
        .with_layer(recipe_layer.clone());
    let at = Location::file(&recipe.path);
    let text = |name: &str| recipe_text(templar, &pre, name, &at);
    let bootstrap = match text("bootstrap")? {
        Some(word) => BaseKind::parse(&word)
            .map_err(|e| PlanError::new(at.clone(), ErrorKind::Recipe(e.to_string())))?,
        None => BaseKind::default(),
    };
    let build_from = text("build_from")?;
    let distro = distro_of(&recipe, bootstrap, build_from.as_deref(), &at)?;
    if !facts::is_known_distribution(&distro.name) {
        return Err(PlanError::new(at, ErrorKind::Recipe(format!(
            "distribution '{}' is not known; imgbuild knows Rocky, AlmaLinux, RedHat, CentOS, Ubuntu and Debian",
            distro.name
        ))));
    }
    let (facts, mut fact_layer) = fact_layer(&recipe, &distro);
    for (k, v) in crate::magic_vars::run_vars(&recipe, &opts.tags) {
        fact_layer.insert(k, VarValue::Raw(v));
    }
    let scope = Scope::new(layer_from(&extra))
        .with_layer(Arc::new(mirror_layer))
        .with_layer(inventory_layer)
        .with_layer(Arc::new(fact_layer))
        .with_layer(recipe_layer);
    Ok(RecipeFacts {
        recipe,
        facts,
        scope,
        inventory_names: inventory.keys().cloned().collect(),
    })
}

/// The context of a part of the play (`layer`: a role, `pre_tasks`, `tasks`, `post_tasks`).
fn play_ctx(
    recipe: &Recipe,
    scope: &Scope,
    environment: &[IndexMap<String, Json>],
    layer: &str,
) -> Ctx {
    Ctx {
        layer: Arc::from(layer),
        role_dir: None,
        file: recipe.path.clone(),
        scope: scope.clone(),
        when: Vec::new(),
        tags: recipe.tags.clone(),
        environment: environment.to_vec(),
        module_defaults: recipe.module_defaults.iter().cloned().collect(),
        ignore_errors: None,
        become_keywords: crate::task::BecomeKeywords::default(),
        check_mode: None,
        diff: None,
        handlers: false,
        rescued: false,
        depth: 0,
        delegate_to: None,
        loaded_at_run: false,
    }
}

/// The project's `mirror.toml`, or no mirror when there is none. A mirror.toml that exists
/// but is not a readable file is an error, not "no mirror".
fn site_mirror(sources: &mut Sources) -> Result<mirror::MirrorConfig> {
    let mirror_path = Path::new("mirror.toml");
    if !sources.exists(mirror_path) {
        return Ok(mirror::MirrorConfig::default());
    }
    let text = sources.read_text(mirror_path)?;
    mirror::MirrorConfig::parse(&text, mirror_path)
        .map_err(|e| PlanError::new(Location::file(mirror_path), ErrorKind::Mirror(e)))
}

/// Recipe variable `name` rendered as text (`None` when it is not set or only the build
/// knows it).
fn recipe_text(
    templar: &Templar,
    pre: &Scope,
    name: &str,
    at: &Location,
) -> Result<Option<String>> {
    if pre.get(name).is_none() {
        return Ok(None);
    }
    match templar.render(&json!(format!("{{{{ {name} }}}}")), pre) {
        Ok(Some(Json::String(s))) => Ok(Some(s)),
        Ok(Some(other)) => Ok(Some(other.to_string())),
        Ok(None) => Ok(None),
        Err(e) => Err(PlanError::new(
            at.clone(),
            ErrorKind::Template {
                template: name.to_owned(),
                message: e.to_string(),
            },
        )),
    }
}

/// The image's facts for `distro` (with the recipe's overrides), and the variable layer
/// they make: `ansible_*` names, magic variables, and the image facts only the build knows.
fn fact_layer(recipe: &Recipe, distro: &Distro) -> (IndexMap<String, Json>, Layer) {
    let overrides: IndexMap<String, Json> = recipe
        .facts
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.trim_start_matches("ansible_"),
                "distribution" | "distribution_version"
            )
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let facts = facts::facts_for(distro, json!("{{ kernel_version }}"), &overrides);
    let mut fact_layer: Layer = facts
        .iter()
        .map(|(k, v)| (k.clone(), VarValue::Raw(v.clone())))
        .collect();
    for (k, v) in crate::magic_vars::magic_vars(recipe) {
        fact_layer.insert(k, VarValue::Raw(v));
    }
    for name in facts::IMAGE_FACTS {
        fact_layer
            .entry(format!("ansible_{name}"))
            .or_insert(VarValue::Deferred);
    }
    // Under `ansible_facts` the image's facts are keys the build adds: the keys known now
    // resolve, any other is left to the build (`ansible_facts.python_version`).
    if let Some(VarValue::Raw(known)) = fact_layer.get("ansible_facts") {
        let open = VarValue::Open(known.clone());
        fact_layer.insert("ansible_facts".into(), open);
    }
    // `now()` is the time the task runs: the plan leaves it to the build.
    fact_layer.insert(crate::template::BUILD_TIME.into(), VarValue::Deferred);
    (facts, fact_layer)
}

fn distro_of(
    recipe: &Recipe,
    bootstrap: BaseKind,
    build_from: Option<&str>,
    at: &Location,
) -> Result<Distro> {
    let explicit = |key: &str| {
        recipe
            .facts
            .get(key)
            .or_else(|| recipe.facts.get(&format!("ansible_{key}")))
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string())
            })
    };
    if let (Some(name), Some(version)) =
        (explicit("distribution"), explicit("distribution_version"))
    {
        return Ok(Distro { name, version });
    }
    let Some(build_from) = build_from else {
        return Err(PlanError::new(at.clone(), ErrorKind::Recipe(
            "the recipe has no build_from; set vars.build_from (an image reference, or a suite with bootstrap: debootstrap)".into(),
        )));
    };
    let found = match bootstrap {
        BaseKind::Docker | BaseKind::Oci | BaseKind::Archive => {
            facts::distro_from_reference(build_from)
        }
        BaseKind::Debootstrap => facts::distro_from_suite(build_from),
        // The repositories say which distribution it is; the play's facts must.
        BaseKind::Dnf => None,
    };
    found.ok_or_else(|| {
        PlanError::new(at.clone(), ErrorKind::Recipe(format!(
            "cannot tell the distribution from build_from '{build_from}' (bootstrap: {bootstrap}); add to the play: facts: {{distribution: Rocky, distribution_version: '9.5'}}"
        )))
    })
}

impl Planner<'_> {
    fn run(mut self, base: RecipeFacts) -> Result<Plan> {
        let RecipeFacts {
            recipe,
            facts,
            scope,
            inventory_names,
        } = base;
        let recipe_at = Location::file(&recipe.path);
        let (mut tasks, mut roles) = self.plan_play(&recipe, &scope, &recipe_at)?;
        // What the last tasks' lookups and plugins read is an input too.
        for read in crate::template::lookups::take_reads() {
            self.sources.record(&read);
        }
        self.check_notified()?;
        self.check_tags(&recipe, tasks.is_empty())?;
        let vars = self.pins_from_role_defaults(
            &recipe,
            self.recipe_vars(&recipe, &inventory_names, &scope),
            &scope,
        )?;
        let defined_at = |name: &str| {
            let here = |l: &Location| l.path == recipe.path;
            let found = self.sources.definitions(name);
            found
                .iter()
                .find(|l| here(l))
                .or(found.first())
                .cloned()
                .unwrap_or_else(|| recipe_at.clone())
        };
        let intent = crate::intent::ImageIntent::of(&recipe, &vars, &defined_at)?;
        let pkg_mgr = facts.get("ansible_pkg_mgr").and_then(Json::as_str);
        let at = defined_at("build_only_packages");
        if let Some(step) = crate::build_only::step(&intent, pkg_mgr, &roles, &at)? {
            roles.push(crate::build_only::ROLE.to_owned());
            tasks.push(step);
        }
        if let Some(problem) = self.sources.vault_problem() {
            return Err(problem);
        }
        Ok(Plan {
            image: recipe.image.clone(),
            recipe: recipe.path.display().to_string(),
            intent,
            // A fact that does not resolve (ansible_kernel of a recipe that pins no kernel) is
            // left out, never kept as its template.
            facts: facts
                .into_iter()
                .filter(|(k, _)| k != "ansible_facts")
                .filter_map(|(k, v)| Some((k, self.templar.render(&v, &scope).ok()??)))
                .collect(),
            vars,
            roles,
            tasks,
            handlers: self.handlers,
            missing_handlers: self.missing_handlers,
            warnings: self.warnings,
            inputs: self
                .sources
                .inputs()
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
        })
    }

    /// The play's steps in Ansible's order (pre_tasks, roles, tasks, post_tasks), with the
    /// name of each part (the image's layers).
    fn plan_play(
        &mut self,
        recipe: &Recipe,
        scope: &Scope,
        recipe_at: &Location,
    ) -> Result<(Vec<Step>, Vec<String>)> {
        let environment: Vec<IndexMap<String, Json>> = match &recipe.environment {
            Some(env) => match self.render(env, scope, recipe_at, None)? {
                Some(Json::Object(map)) => vec![map.into_iter().collect()],
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        let play_ctx = |layer: &str| play_ctx(recipe, scope, &environment, layer);
        let list = |label: &str| {
            recipe
                .task_lists
                .iter()
                .find(|(l, _)| *l == label)
                .map(|(_, n)| n.clone())
        };
        let mut tasks = Vec::new();
        let mut roles = Vec::new();
        if let Some(pre) = list("pre_tasks") {
            roles.push("pre_tasks".to_owned());
            self.plan_list(&pre, &play_ctx("pre_tasks"), &mut tasks)?;
        }
        for role in &recipe.roles {
            roles.push(role.name.clone());
            self.plan_role(role, &play_ctx(&role.name), &mut tasks)?;
        }
        for label in ["tasks", "post_tasks"] {
            if let Some(node) = list(label) {
                roles.push(label.to_owned());
                self.plan_list(&node, &play_ctx(label), &mut tasks)?;
            }
        }
        Ok((tasks, roles))
    }

    /// None of the notified handlers is refused; one that does not exist is warned of.
    fn check_notified(&mut self) -> Result<()> {
        for (name, _) in self.notified.clone() {
            self.answer_by_alias(&name);
        }
        for (name, at) in &self.notified {
            let refused = self
                .refused_handlers
                .iter()
                .position(|h| h.names.contains(name));
            if let Some(index) = refused {
                let mut error = self.refused_handlers.swap_remove(index).error;
                let because = format!("the handler runs because {at} notifies it");
                match &mut error.kind {
                    ErrorKind::Unsupported { why, .. } => *why = format!("{why}; {because}"),
                    _ => self.warnings.push(crate::plan::Warning {
                        source: at.to_string(),
                        message: because,
                    }),
                }
                return Err(error);
            }
            if !self.handler_names.iter().any(|h| h == name) {
                if !self.missing_handlers.contains(name) {
                    self.missing_handlers.push(name.clone());
                }
                // As under ansible-playbook, only a task that changes looks its handlers up:
                // the build fails then, and the plan says so now.
                self.warnings.push(crate::plan::Warning {
                    source: at.to_string(),
                    message: format!("notify '{name}' names no handler (name: or listen:), so the build fails if this task changes, as ansible-playbook does"),
                });
            }
        }
        Ok(())
    }

    /// The folder of `role`: in the roles path, or (a dependency) beside the role that needs
    /// it, as Ansible finds it.
    fn role_folder(&self, role: &RoleRef, ctx: &Ctx, at: &Location) -> Result<PathBuf> {
        match find_role(&self.sources, &self.project.root, &role.name, at.clone()) {
            Ok(dir) => Ok(dir),
            Err(e) => ctx
                .file
                .ends_with("meta/main.yml")
                .then(|| {
                    ctx.file
                        .parent()?
                        .parent()?
                        .parent()
                        .map(|d| d.join(&role.name))
                })
                .flatten()
                .filter(|beside| self.sources.is_dir(beside))
                .ok_or(e),
        }
    }

    fn plan_role(&mut self, role: &RoleRef, ctx: &Ctx, out: &mut Vec<Step>) -> Result<()> {
        let at = Location::new(&ctx.file, role.line);
        let role_dir = self.role_folder(role, ctx, &at)?;
        let meta = role_meta(&mut self.sources, &role_dir)?;
        if let Some(meta) = &meta {
            // Dependencies run first, depth first, in the dependent role's layer: what a role
            // needs to work is part of what it builds, and its cache key covers both.
            let dep_ctx = Ctx {
                file: meta.path.clone(),
                ..ctx.clone()
            };
            for dependency in &meta.dependencies {
                self.plan_role(dependency, &dep_ctx, out)?;
            }
        }
        // Ansible runs a role once per distinct set of parameters unless it allows duplicates.
        let params = serde_json::to_string(&role.vars).unwrap_or_default();
        let key = (role_dir.clone(), params);
        if self.roles_run.contains(&key) && !meta.as_ref().is_some_and(|m| m.allow_duplicates) {
            return Ok(());
        }
        self.roles_run.push(key);
        let (defaults, vars) = self.role_file_layers(&role_dir, meta.as_ref(), ctx)?;
        let scope = ctx
            .scope
            .with_bottom_layer(defaults)
            .with_layer(vars)
            .with_layer(layer_from(&role.vars))
            .with_layer(role_magic(&role.name, &role_dir));
        let mut when = ctx.when.clone();
        for cond in &role.when {
            match self.condition(cond, &scope, &at, None)? {
                Some(true) => {}
                Some(false) => return Ok(()),
                None => when.push(
                    cond.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| cond.to_string()),
                ),
            }
        }
        let environment = self.environment(ctx, role.environment.as_ref(), &scope, &at, None)?;
        let role_ctx = Ctx {
            role_dir: Some(role_dir.clone()),
            scope,
            when,
            tags: [ctx.tags.clone(), role.tags.clone()].concat(),
            environment,
            module_defaults: ctx
                .module_defaults
                .iter()
                .chain(&role.module_defaults)
                .cloned()
                .collect(),
            ..ctx.clone()
        };
        match yaml_file(&self.sources, &role_dir.join("tasks"), "main") {
            Some(file) => self.plan_file(&file, &role_ctx, out)?,
            None => self.warn(&at, format!("role '{}' has no tasks/main.yml", role.name)),
        }
        // Handlers are planned after the tasks: they see what the role's tasks set
        // (set_fact, include_vars, register), as Ansible renders them when they run.
        self.plan_role_handlers(&role_dir, &role_ctx)
    }

    /// The defaults and vars a role's tasks see from role files: those of every role it
    /// depends on, each under the next in the order Ansible's `get_all_dependencies` gives,
    /// and its own on top, as `Role.get_default_vars` and `Role.get_vars` combine them.
    fn role_file_layers(
        &mut self,
        role_dir: &Path,
        meta: Option<&crate::roles::RoleMeta>,
        ctx: &Ctx,
    ) -> Result<(Arc<Layer>, Arc<Layer>)> {
        let mut dirs = Vec::new();
        self.all_dependencies(meta, ctx, &[role_dir.to_path_buf()], &mut dirs)?;
        dirs.push(role_dir.to_path_buf());
        let (mut defaults, mut vars) = (Layer::new(), Layer::new());
        for dir in &dirs {
            for (layer, sub) in [(&mut defaults, "defaults"), (&mut vars, "vars")] {
                let own = var_layer(&mut self.sources, dir, sub, "main")?;
                layer.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        Ok((Arc::new(defaults), Arc::new(vars)))
    }

    /// The folders of the roles `meta` depends on, theirs before each (depth first), as
    /// Ansible lists them (a role named twice is there twice); a role among `ancestors` (a
    /// circle of dependencies) is not walked again.
    fn all_dependencies(
        &mut self,
        meta: Option<&crate::roles::RoleMeta>,
        ctx: &Ctx,
        ancestors: &[PathBuf],
        dirs: &mut Vec<PathBuf>,
    ) -> Result<()> {
        let Some(meta) = meta else { return Ok(()) };
        let dep_ctx = Ctx {
            file: meta.path.clone(),
            ..ctx.clone()
        };
        for dependency in &meta.dependencies {
            let at = Location::new(&meta.path, dependency.line);
            let dir = self.role_folder(dependency, &dep_ctx, &at)?;
            if ancestors.contains(&dir) {
                continue;
            }
            let inner = role_meta(&mut self.sources, &dir)?;
            let chain = [ancestors, std::slice::from_ref(&dir)].concat();
            self.all_dependencies(inner.as_ref(), &dep_ctx, &chain, dirs)?;
            dirs.push(dir);
        }
        Ok(())
    }

    /// A version a pinning role's own `defaults/main.yml` sets (deepops' `mofed` role pins
    /// `mofed_version` itself) where the recipe sets none: it is what the role installs, so it
    /// is what the image's labels and verify expect.
    fn pins_from_role_defaults(
        &mut self,
        recipe: &Recipe,
        mut vars: IndexMap<String, Json>,
        scope: &Scope,
    ) -> Result<IndexMap<String, Json>> {
        let defaulted = crate::intent::PINNED_BY
            .iter()
            .chain(crate::intent::ROLE_DEFAULTED);
        for (role, key) in defaulted {
            if vars.contains_key(*key) {
                continue;
            }
            let root = &self.project.root;
            let found = role_default(
                &mut self.sources,
                root,
                recipe,
                role,
                key,
                &self.templar,
                scope,
            )?;
            if let Some(value) = found {
                vars.insert((*key).to_owned(), value);
            }
        }
        Ok(vars)
    }

    /// The recipe-level variables (with the recipe's group_vars and host_vars), resolved where
    /// they can be (raw where they cannot).
    fn recipe_vars(
        &self,
        recipe: &Recipe,
        inventory_names: &[String],
        scope: &Scope,
    ) -> IndexMap<String, Json> {
        let mut names: Vec<String> = Vec::new();
        if scope.get("mirror_server").is_some() {
            names.push("mirror_server".into());
        }
        names.extend(inventory_names.iter().cloned());
        names.extend(recipe.vars.keys().cloned());
        names.extend(self.opts.extra_vars.keys().cloned());
        let mut out = IndexMap::new();
        for name in names {
            if out.contains_key(&name) {
                continue;
            }
            let raw = match scope.get(&name) {
                Some(VarValue::Raw(raw)) => raw.clone(),
                _ => continue,
            };
            let value = self
                .templar
                .render(&raw, scope)
                .ok()
                .flatten()
                .unwrap_or(raw);
            out.insert(name, value);
        }
        out
    }
}

/// The tags `--tags` may name besides the recipe's own.
const SPECIAL_TAGS: &[&str] = &["all", "always", "never", "tagged", "untagged"];

impl Planner<'_> {
    /// `--tags` naming a tag no task carries: a warning naming the tags there are, or an error
    /// (exit 2) when nothing is left to run.
    fn check_tags(&mut self, recipe: &Recipe, nothing_planned: bool) -> Result<()> {
        let unknown: Vec<&String> = self
            .opts
            .tags
            .only
            .iter()
            .filter(|t| !SPECIAL_TAGS.contains(&t.as_str()) && !self.tags_seen.contains(*t))
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let known: Vec<&str> = self.tags_seen.iter().map(String::as_str).collect();
        let message = format!(
            "no task has the tag {}; the recipe's tags are: {}",
            unknown
                .iter()
                .map(|t| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(", "),
            if known.is_empty() {
                "(none)".to_owned()
            } else {
                known.join(", ")
            }
        );
        let at = Location::file(&recipe.path);
        if nothing_planned {
            return Err(PlanError::new(
                at,
                ErrorKind::Recipe(format!("{message}; nothing is left to run")),
            ));
        }
        self.warn(&at, message);
        Ok(())
    }
}
