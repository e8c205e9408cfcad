//! `imgbuild affected --since REV`: the images whose inputs changed since a git revision.
//!
//! An image's inputs are the files its plan read (recipe, `mirror.toml`, every role file reached
//! through includes, templates and `copy` sources) and the `mirror.lock` pins of the artifacts
//! it downloads. Where a changed file no longer exists, the image is also planned as it was at
//! the revision, so that a deleted input still counts. With `--json`, the layer stages the
//! affected images share and the order to build them in (`fan_out`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use image::build::Stage;
use planner::{PlanOptions, Project};
use serde_json::json;

use super::fan_out::fan_out;
use crate::{git, Failure};

const LOCK_FILE: &str = "mirror.lock";

/// What one image read and downloads, as far as the plan knows.
#[derive(Debug, Default, Clone)]
struct ImageInputs {
    files: Vec<String>,
    /// URL paths of the artifacts it downloads (the keys of `mirror.lock`).
    artifacts: Vec<String>,
    /// Whether it downloads something whose URL only the build knows.
    unknown_artifacts: bool,
    /// The planning error, if the image does not plan.
    error: Option<String>,
    /// Its layer stages, as its plan predicts them (none when it does not plan).
    stages: Vec<Stage>,
}

/// What `image` reads and downloads; with `lock`, its layer stages too.
fn image_inputs(project: &Project, image: &str, lock: Option<&mirror::Lock>) -> ImageInputs {
    match planner::plan(project, image, &PlanOptions::default()) {
        Ok(plan) => ImageInputs {
            stages: lock
                .and_then(|lock| {
                    let pin = |url: &str| lock.get(url).map(|p| p.sha256.clone());
                    image::build::stages(&plan, &project.root, &pin).ok()
                })
                .unwrap_or_default(),
            files: plan.inputs.clone(),
            artifacts: plan
                .downloads()
                .into_iter()
                .map(|(url, _)| mirror::url_path(&url))
                .collect(),
            unknown_artifacts: plan.all_tasks().iter().any(|t| t.downloads_unknown_url()),
            error: None,
        },
        Err(e) => ImageInputs {
            error: Some(e.to_string()),
            ..ImageInputs::default()
        },
    }
}

/// The reasons an image with `inputs` is affected by `changed` files and `changed_pins`.
fn reasons(
    inputs: &ImageInputs,
    changed: &BTreeSet<String>,
    changed_pins: &BTreeSet<String>,
) -> Vec<String> {
    let mut out: Vec<String> = changed
        .iter()
        .filter(|file| {
            inputs.files.iter().any(|input| {
                *file == input || file.starts_with(&format!("{}/", input.trim_end_matches('/')))
            })
        })
        .map(|file| format!("{file} changed"))
        .collect();
    out.extend(
        inputs
            .artifacts
            .iter()
            .filter(|path| changed_pins.contains(*path))
            .map(|path| format!("{LOCK_FILE}: the pin of {path} changed")),
    );
    if inputs.unknown_artifacts && !changed_pins.is_empty() {
        out.push(format!(
            "{LOCK_FILE} changed and the image downloads a URL known only at build time"
        ));
    }
    if let Some(error) = &inputs.error {
        if !changed.is_empty() {
            out.push(format!("it does not plan: {error}"));
        }
    }
    out
}

/// The `mirror.lock` paths whose pins differ between `rev` and the working tree.
fn changed_pins(project: &Project, rev: &str) -> Result<BTreeSet<String>, Failure> {
    let now = super::session::load_lock(&project.root)?;
    let then = match git::file_at(&project.root, rev, LOCK_FILE)? {
        Some(text) => mirror::Lock::parse(&text, Path::new(&format!("{rev}:{LOCK_FILE}")))
            .map_err(|e| Failure::Input(anyhow!(e)))?,
        None => mirror::Lock::default(),
    };
    Ok(then.changed_paths(&now).into_iter().collect())
}

/// An affected image: why, and its layer stages.
struct Affected {
    why: Vec<String>,
    stages: Vec<Stage>,
}

/// The affected images, sorted by image.
fn affected(project: &Project, rev: &str) -> Result<BTreeMap<String, Affected>, Failure> {
    let changed = git::changed_files(&project.root, rev)?;
    let pins = if changed.contains(LOCK_FILE) {
        changed_pins(project, rev)?
    } else {
        BTreeSet::new()
    };
    let deleted = changed.iter().any(|f| !project.root.join(f).exists());
    let then = if deleted {
        Some(project_at(project, rev)?)
    } else {
        None
    };
    let lock = super::session::load_lock(&project.root)?;
    let mut out = BTreeMap::new();
    for image in project.images()? {
        let now = image_inputs(project, &image, Some(&lock));
        let mut why = reasons(&now, &changed, &pins);
        if let Some((_dir, old)) = &then {
            if old.recipe_path(&image).is_ok() {
                let before = image_inputs(old, &image, None);
                for reason in reasons(&before, &changed, &pins) {
                    if before.error.is_none() && !why.contains(&reason) {
                        why.push(reason);
                    }
                }
            }
        }
        if !why.is_empty() {
            let stages = now.stages;
            out.insert(image, Affected { why, stages });
        }
    }
    Ok(out)
}

/// The project as it was at `rev`, in a temporary folder.
fn project_at(project: &Project, rev: &str) -> Result<(tempfile::TempDir, Project), Failure> {
    let dir = tempfile::tempdir().map_err(|e| Failure::Run(anyhow!(e)))?;
    git::export_tree(&project.root, rev, dir.path())?;
    let old = Project::at(dir.path())?;
    Ok((dir, old))
}

/// Prints the affected images: names on stdout (or, as JSON, a CI matrix of them with the
/// stages they share and the order to build them in), reasons on stderr.
pub fn run(project: &Project, rev: &str, json: bool) -> Result<ExitCode, Failure> {
    let images = affected(project, rev)?;
    for (image, affected) in &images {
        for reason in &affected.why {
            eprintln!("{image}: {reason}");
        }
    }
    if json {
        let include: Vec<_> = images.keys().map(|i| json!({ "image": i })).collect();
        let stages = images
            .iter()
            .map(|(image, affected)| (image.clone(), affected.stages.clone()))
            .collect();
        let mut out = serde_json::Map::new();
        out.insert("include".into(), json!(include));
        if let serde_json::Value::Object(fan) = fan_out(&stages).to_json() {
            out.extend(fan);
        }
        println!("{}", serde_json::Value::Object(out));
    } else {
        for image in images.keys() {
            println!("{image}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn inputs() -> ImageInputs {
        ImageInputs {
            files: vec![
                "images/a.yml".into(),
                "roles/mofed/tasks/main.yml".into(),
                "roles/site/files/conf.d".into(),
            ],
            artifacts: vec!["/mofed/x.tgz".into()],
            unknown_artifacts: false,
            error: None,
            stages: Vec::new(),
        }
    }

    #[test]
    fn files_and_folders_match() {
        let none = BTreeSet::new();
        assert_eq!(
            reasons(&inputs(), &set(&["roles/mofed/tasks/main.yml"]), &none),
            ["roles/mofed/tasks/main.yml changed"]
        );
        assert_eq!(
            reasons(&inputs(), &set(&["roles/site/files/conf.d/a.conf"]), &none).len(),
            1
        );
        assert!(reasons(&inputs(), &set(&["roles/mofed/tasks/main.yml.orig"]), &none).is_empty());
        assert!(reasons(&inputs(), &set(&["roles/site/files/conf.dx"]), &none).is_empty());
        assert!(reasons(&inputs(), &set(&["roles/other/tasks/main.yml"]), &none).is_empty());
    }

    #[test]
    fn lock_pins_match_by_path() {
        let lock = set(&[LOCK_FILE]);
        assert_eq!(
            reasons(&inputs(), &lock, &set(&["/mofed/x.tgz"])),
            ["mirror.lock: the pin of /mofed/x.tgz changed"]
        );
        assert!(reasons(&inputs(), &lock, &set(&["/nvidia/y.run"])).is_empty());
        let unknown = ImageInputs {
            unknown_artifacts: true,
            ..inputs()
        };
        assert_eq!(reasons(&unknown, &lock, &set(&["/nvidia/y.run"])).len(), 1);
    }

    #[test]
    fn an_image_that_does_not_plan_is_affected_by_any_change() {
        let broken = ImageInputs {
            error: Some("images/a.yml:3: bad".into()),
            ..ImageInputs::default()
        };
        assert_eq!(
            reasons(&broken, &set(&["README.md"]), &BTreeSet::new()).len(),
            1
        );
        assert!(reasons(&broken, &BTreeSet::new(), &BTreeSet::new()).is_empty());
    }
}
