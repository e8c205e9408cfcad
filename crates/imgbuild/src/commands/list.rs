//! `imgbuild list`: the images, one line each.

use std::process::ExitCode;

use planner::{PlanOptions, Project};
use serde_json::{json, Value as Json};

use crate::Failure;

/// Lists the images with their OS and pinned kernel.
pub fn run(project: &Project, json: bool) -> Result<ExitCode, Failure> {
    let rows = planner::matrix::matrix(project, &PlanOptions::default())?;
    if json {
        let list: Vec<Json> = rows
            .iter()
            .map(|r| json!({"image": r.image, "os": r.os, "os_version": r.os_version, "kernel": r.kernel}))
            .collect();
        println!("{}", Json::Array(list));
        return Ok(ExitCode::SUCCESS);
    }
    let width = rows.iter().map(|r| r.image.len()).max().unwrap_or(0);
    for row in rows {
        let os = format!("{} {}", row.os, row.os_version);
        println!(
            "{:<width$}  {:<13} {}",
            row.image,
            os,
            row.kernel.as_deref().unwrap_or("(no kernel pinned)")
        );
    }
    Ok(ExitCode::SUCCESS)
}
