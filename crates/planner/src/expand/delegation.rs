//! `delegate_to:`: where a delegated task runs in an image build. Naming the image itself, the
//! task runs in the image as any other. Naming the controller (`localhost`), a task of a file
//! or download module works in the build's controller folder, a scratch folder the build keeps
//! for the play, where roles download and unpack a release before copying it into the image
//! (`copy: src: /abs/path` then reads it there). Anything else has no host to run on.

use super::*;

/// The modules that, delegated to the controller, work in the build's controller folder (their
/// spec's `controller_folder`).
fn controller_folder_modules() -> Vec<&'static str> {
    crate::modules::ALL
        .iter()
        .filter(|spec| spec.controller_folder)
        .map(|spec| spec.name)
        .collect()
}

/// Where a delegated task runs.
enum Delegation {
    /// In the image (delegated to the image itself).
    Image,
    /// In the build's controller folder.
    ControllerFolder,
    /// Nowhere an image build has.
    Refused(PlanError),
}

/// The names Ansible's implicit localhost answers to.
fn is_controller(host: &Json) -> bool {
    matches!(host.as_str(), Some("localhost" | "127.0.0.1" | "::1"))
}

/// The module a task runs, when the plan knows it.
fn module_of(action: &Action) -> Option<&'static ModuleSpec> {
    match action {
        Action::Module { spec, .. } => Some(spec),
        _ => None,
    }
}

/// Whether the task says `ignore_unreachable: true` (as written: a boolean or its words).
fn tolerates_unreachable(def: &TaskDef) -> bool {
    match &def.ignore_unreachable {
        Some(Json::Bool(b)) => *b,
        Some(Json::String(s)) => crate::template::ansible_bool_str(s),
        _ => false,
    }
}

impl Planner<'_> {
    /// Judges `def`'s `delegate_to` (or its block's): marks a task that works in the
    /// controller folder, returns the refusal of one that cannot run anywhere.
    pub(super) fn judge_delegation(
        &mut self,
        def: &mut TaskDef,
        ctx: &Ctx,
        scope: &Scope,
    ) -> Option<PlanError> {
        let runs_module = matches!(
            def.action,
            Action::Module { .. } | Action::TemplatedModule(_)
        );
        if runs_module && def.delegate_to.is_none() {
            def.delegate_to = ctx.delegate_to.clone();
        }
        // A block's delegate_to is its tasks': each is judged by its own module.
        let (host, line) = def.delegate_to.clone().filter(|_| runs_module)?;
        let at = Location::new(&ctx.file, line);
        match self.delegation(&host, &def.action, scope, &at) {
            Delegation::Image => None,
            Delegation::ControllerFolder => {
                def.on_controller = true;
                None
            }
            Delegation::Refused(_) if !is_controller(&host) && tolerates_unreachable(def) => {
                def.unreachable = Some(format!(
                    "Failed to connect to the host '{}': an image build reaches no host but the image (ignore_unreachable)",
                    host.as_str().map_or_else(|| host.to_string(), str::to_owned)
                ));
                None
            }
            Delegation::Refused(error) => Some(error),
        }
    }

    /// Where a task delegated to `raw` runs (see the module's documentation).
    fn delegation(
        &mut self,
        raw: &Json,
        action: &Action,
        scope: &Scope,
        at: &Location,
    ) -> Delegation {
        let full = self.full(scope);
        let host = self.templar.render(raw, &full).ok().flatten();
        let image = self
            .templar
            .render(&Json::from("{{ inventory_hostname }}"), &full);
        let spec = module_of(action);
        if spec.is_some_and(|s| s.runs() == crate::modules::Runs::Controller) {
            // set_fact, assert, debug...: imgbuild runs them itself wherever they are sent.
            return Delegation::Image;
        }
        let module = spec.map(|s| s.name);
        let works_in_folder = spec.is_some_and(|s| s.controller_folder);
        match (host, image) {
            (Some(host), Ok(Some(image))) if host == image => {
                self.warn(
                    at,
                    format!(
                        "delegate_to names the image itself ({image}); the task runs in the image"
                    ),
                );
                Delegation::Image
            }
            (Some(host), _) if is_controller(&host) && works_in_folder => {
                Delegation::ControllerFolder
            }
            (host, _) => {
                let named = match host {
                    Some(Json::String(h)) => h,
                    Some(other) => other.to_string(),
                    None => raw.as_str().map_or_else(|| raw.to_string(), str::to_owned),
                };
                let why = if is_controller(&Json::from(named.as_str())) {
                    format!(
                        "it names host '{named}', where {} would run on the machine running the build, which an image build never does; delegated to localhost, only file and download modules run, in the build's controller folder ({}); run the step in the image instead",
                        module.map_or_else(|| "a task".to_owned(), |m| format!("module '{m}'")),
                        controller_folder_modules().join(", ")
                    )
                } else {
                    format!("it names host '{named}', and an image build has no host but the image; what the task makes or reads there (a shared key, a file) is a site value: give it to the image through the recipe's vars or a file of a role, or run the step in the rootfs")
                };
                Delegation::Refused(PlanError::new(
                    at.clone(),
                    ErrorKind::Unsupported {
                        key: "delegate_to".into(),
                        why,
                    },
                ))
            }
        }
    }
}
