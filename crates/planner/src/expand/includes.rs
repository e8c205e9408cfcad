//! Where `include_tasks`/`import_tasks` find their file, and roles included or imported by a
//! task (`include_role`, `import_role`).

use super::*;

impl Planner<'_> {
    pub(super) fn include_path(&self, name: &str, ctx: &Ctx, at: &Location) -> Result<PathBuf> {
        if ctx.depth >= MAX_INCLUDE_DEPTH {
            return Err(PlanError::new(at.clone(), ErrorKind::Recipe(format!(
                "includes nested {MAX_INCLUDE_DEPTH} deep: a file includes itself; break the include loop"
            ))));
        }
        if Path::new(name).is_absolute()
            || name.split('/').any(|part| part == "..") && ctx.role_dir.is_none()
        {
            return Err(PlanError::new(
                at.clone(),
                ErrorKind::Recipe(format!(
                    "include file '{name}' must be a path inside the project"
                )),
            ));
        }
        let here = ctx.file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut candidates = vec![here.join(name)];
        if let Some(role_dir) = &ctx.role_dir {
            candidates.push(role_dir.join("tasks").join(name));
            // `include_tasks: tasks/x.yml`: Ansible also looks from the role's own folder.
            candidates.push(role_dir.join(name));
        }
        // A path a lookup found (`lookup('first_found', ...)` names files from the project's
        // root, where Ansible's names them absolutely).
        candidates.push(PathBuf::from(name));
        candidates.dedup();
        candidates
            .iter()
            .find(|c| self.sources.is_file(c))
            .cloned()
            .ok_or_else(|| {
                PlanError::new(
                    at.clone(),
                    ErrorKind::MissingFile {
                        what: "include file",
                        name: name.to_owned(),
                        searched: candidates
                            .iter()
                            .map(|c| c.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                )
            })
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn plan_included_role(
        &mut self,
        name: &str,
        froms: [Option<&str>; 3],
        public: bool,
        task_vars: Arc<Layer>,
        ctx: &Ctx,
        at: &Location,
        out: &mut Vec<Step>,
    ) -> Result<()> {
        let [tasks_from, defaults_from, vars_from] = froms;
        let role_dir = find_role(&self.sources, &self.project.root, name, at.clone())?;
        let defaults = var_layer(
            &mut self.sources,
            &role_dir,
            "defaults",
            defaults_from.unwrap_or("main"),
        )?;
        let vars = var_layer(
            &mut self.sources,
            &role_dir,
            "vars",
            vars_from.unwrap_or("main"),
        )?;
        if public {
            for (exposed, layer) in self.exposed.iter_mut().zip([&defaults, &vars]) {
                let mut merged = (**exposed).clone();
                merged.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
                *exposed = Arc::new(merged);
            }
        }
        let scope = ctx
            .scope
            .with_bottom_layer(defaults)
            .with_layer(vars)
            // The including task's `vars:` are task vars, above the role's own (precedence
            // 17 over 15): prometheus.prometheus's roles hand `_common` its values so.
            .with_layer(task_vars)
            .with_layer(parent_roles(ctx))
            .with_layer(role_magic(name, &role_dir));
        let tasks_from = tasks_from.unwrap_or("main");
        let file =
            yaml_file(&self.sources, &role_dir.join("tasks"), tasks_from).ok_or_else(|| {
                PlanError::new(
                    at.clone(),
                    ErrorKind::MissingFile {
                        what: "role task file",
                        name: tasks_from.to_owned(),
                        searched: role_dir
                            .join("tasks")
                            .join(format!("{tasks_from}.yml"))
                            .display()
                            .to_string(),
                    },
                )
            })?;
        let child = Ctx {
            scope,
            role_dir: Some(role_dir.clone()),
            ..ctx.clone()
        };
        self.plan_file(&file, &child, out)?;
        // After the tasks: handlers see what they set (see plan_role).
        self.plan_role_handlers(&role_dir, &child)
    }
}

/// `ansible_parent_role_names` and `ansible_parent_role_paths` of a role included or imported
/// by a role's task: the including role first, then those that included it, as ansible-core's
/// `IncludeRole` gives them (none for a role included from the recipe's own tasks).
fn parent_roles(ctx: &Ctx) -> Arc<Layer> {
    let mut layer = Layer::new();
    if ctx.role_dir.is_none() {
        return Arc::new(layer);
    }
    for (list, own) in [
        ("ansible_parent_role_names", "ansible_role_name"),
        ("ansible_parent_role_paths", "role_path"),
    ] {
        let mut values = Vec::new();
        if let Some(VarValue::Raw(parent)) = ctx.scope.get(own) {
            values.push(parent.clone());
        }
        if let Some(VarValue::Raw(Json::Array(above))) = ctx.scope.get(list) {
            values.extend(above.iter().cloned());
        }
        layer.insert(list.into(), VarValue::Raw(Json::Array(values)));
    }
    Arc::new(layer)
}
