//! The build-only packages step: when a recipe names `build_only_packages`, the plan ends with
//! one more layer that removes them (and what only they needed), so the tree a node unpacks
//! into RAM carries no compiler, kernel headers or DKMS. The modules they built stay.

use serde_json::json;

use crate::error::{ErrorKind, Location, PlanError};
use crate::intent::ImageIntent;
use crate::plan::{PlannedTask, Step};

/// The layer's name in the plan, reports and image history.
pub const ROLE: &str = "build-only-removal";
/// The engine's module for it (not a module a role can name).
pub use crate::modules::build_only::MODULE;
/// The variable its result is registered as (kept with the cached layer, read by the report).
pub const REGISTER: &str = "imgbuild_build_only";

/// The step that removes the build-only packages, when the recipe names any. `pkg_mgr` is the
/// image's `ansible_pkg_mgr`; `at` is where `build_only_packages` is set.
pub fn step(
    intent: &ImageIntent,
    pkg_mgr: Option<&str>,
    roles: &[String],
    at: &Location,
) -> Result<Option<Step>, PlanError> {
    if intent.build_only.is_empty() {
        return Ok(None);
    }
    let refuse = |message: String| Err(PlanError::new(at.clone(), ErrorKind::Recipe(message)));
    if pkg_mgr != Some("apt") {
        return refuse(format!(
            "build_only_packages is supported on apt images (Debian, Ubuntu) so far; this image's package manager is {}: leave the build tools out of the node with /etc/warewulf/excludes (Warewulf skips those paths when it packs the image) or drop build_only_packages",
            pkg_mgr.unwrap_or("unknown")
        ));
    }
    if roles.iter().any(|r| r == ROLE) {
        return refuse(format!(
            "the recipe has a role named {ROLE}, the name of the step that removes build_only_packages; rename the role"
        ));
    }
    Ok(Some(Step::Task(Box::new(PlannedTask {
        role: ROLE.to_owned(),
        name: "remove the build-only packages (the modules they built stay)".to_owned(),
        module: MODULE.to_owned(),
        args: json!({ "patterns": intent.build_only }),
        tags: vec!["always".to_owned()],
        source: at.to_string(),
        register: Some(REGISTER.to_owned()),
        ..PlannedTask::default()
    }))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(build_only: &[&str]) -> ImageIntent {
        ImageIntent {
            kernel: Some("6.1.0-50-amd64".into()),
            build_only: build_only.iter().map(|s| (*s).to_owned()).collect(),
            ..ImageIntent::default()
        }
    }

    #[test]
    fn no_step_without_build_only_packages() {
        let at = Location::new("images/x.yml", 7);
        assert!(step(&intent(&[]), Some("apt"), &[], &at)
            .expect("plans")
            .is_none());
    }

    #[test]
    fn the_step_names_the_patterns_and_where_they_are_set() {
        let at = Location::new("images/x.yml", 7);
        let Some(Step::Task(task)) =
            step(&intent(&["gcc", "linux-headers-*"]), Some("apt"), &[], &at).expect("plans")
        else {
            panic!("no task");
        };
        assert_eq!(task.role, ROLE);
        assert_eq!(task.module, MODULE);
        assert_eq!(task.source, "images/x.yml:7");
        assert_eq!(task.args, json!({"patterns": ["gcc", "linux-headers-*"]}));
        assert_eq!(task.register.as_deref(), Some(REGISTER));
    }

    #[test]
    fn other_package_managers_and_a_clashing_role_are_refused_at_the_variable() {
        let at = Location::new("images/x.yml", 7);
        let e = step(&intent(&["gcc"]), Some("dnf"), &[], &at).expect_err("dnf");
        assert!(e.to_string().contains("images/x.yml:7"), "{e}");
        assert!(e.to_string().contains("package manager is dnf"), "{e}");
        let e = step(&intent(&["gcc"]), Some("apt"), &[ROLE.to_owned()], &at).expect_err("clash");
        assert!(e.to_string().contains("rename the role"), "{e}");
    }
}
