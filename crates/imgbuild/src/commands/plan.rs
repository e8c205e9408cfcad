//! `imgbuild plan`: the resolved tasks of an image.

use std::process::ExitCode;

use anyhow::anyhow;
use planner::{PlanOptions, Project};

use crate::Failure;

/// Plans `image` and prints the plan as a tree or as JSON.
pub fn run(
    project: &Project,
    image: &str,
    opts: &PlanOptions,
    json: bool,
) -> Result<ExitCode, Failure> {
    let plan = planner::plan(project, image, opts)?;
    super::print_warnings(&plan.warnings);
    if json {
        let text = serde_json::to_string_pretty(&plan)
            .map_err(|e| Failure::Run(anyhow!("cannot write JSON: {e}")))?;
        println!("{}", mirror::redact_credentials(&text));
    } else {
        print!(
            "{}",
            mirror::redact_credentials(&crate::render::plan_tree(&plan))
        );
    }
    Ok(ExitCode::SUCCESS)
}
