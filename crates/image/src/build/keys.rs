//! What identifies a role's layer in the cache (its inputs) and the image's labels.

use std::collections::BTreeMap;
use std::path::Path;

use planner::plan::Step;
use planner::Plan;
use serde_json::Value as Json;

use crate::cache::Inputs;
use crate::hashing::digest_of;
use crate::oci;

/// The role (layer) a step belongs to.
pub(super) fn role_of(step: &Step) -> &str {
    match step {
        Step::Task(t) => &t.role,
        Step::Block(b) => &b.role,
    }
}

/// The steps of `role`'s layer, in the plan's order.
pub(super) fn steps_of(plan: &Plan, role: &str) -> Vec<Step> {
    plan.tasks
        .iter()
        .filter(|s| role_of(s) == role)
        .cloned()
        .collect()
}

/// The digest of a project file or folder (names and bytes, in order).
fn file_digest(path: &Path) -> String {
    fn walk(path: &Path, out: &mut Vec<u8>) {
        if path.is_dir() {
            let mut names: Vec<_> = std::fs::read_dir(path)
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            names.sort();
            for child in names {
                out.extend_from_slice(
                    child
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                        .as_bytes(),
                );
                out.push(0);
                walk(&child, out);
            }
        } else {
            out.extend_from_slice(digest_of(&std::fs::read(path).unwrap_or_default()).as_bytes());
        }
    }
    let mut bytes = Vec::new();
    walk(path, &mut bytes);
    digest_of(&bytes)
}

pub(crate) use crate::layer_code::layer_code;

/// The inputs of a role's layer.
pub(super) fn role_inputs(
    plan: &Plan,
    steps: &[Step],
    parent: &str,
    project_root: &Path,
    registered: &Json,
    pin: &dyn Fn(&str) -> Option<String>,
) -> Inputs {
    // A vaulted value is in the key as its marker (from its ciphertext), never as clear text.
    let redacted = |value: serde_json::Result<Json>| {
        let mut value = value.unwrap_or_default();
        planner::vault::redact_json(&mut value);
        serde_json::to_vec(&value).unwrap_or_default()
    };
    let tasks_json = redacted(serde_json::to_value((steps, &plan.handlers, &plan.facts)));
    let mut files = BTreeMap::new();
    let mut artifacts = BTreeMap::new();
    for step in steps {
        for task in step.tasks() {
            if let Some(file) = &task.local_file {
                files.insert(file.clone(), file_digest(&project_root.join(file)));
            }
            for url in task.download_urls() {
                artifacts.insert(
                    mirror::url_path(&url),
                    pin(&url).unwrap_or_else(|| "unpinned".into()),
                );
            }
        }
    }
    Inputs {
        imgbuild: layer_code(),
        parent: parent.to_owned(),
        tasks: digest_of(&tasks_json),
        files,
        artifacts,
        registered: digest_of(&redacted(Ok(registered.clone()))),
        signer: None,
    }
}

/// A digest of every input file of the plan, for the `io.imgbuild.recipe-digest` label.
fn recipe_digest(plan: &Plan, project_root: &Path) -> String {
    let listing: Vec<String> = plan
        .inputs
        .iter()
        .map(|f| format!("{f} {}", file_digest(&project_root.join(f))))
        .collect();
    digest_of(listing.join("\n").as_bytes())
}

/// What the image promises, from the plan's intent and the module signer (the certificate of
/// the build's module-signing secret): the one place an intent becomes labels (and, through
/// them, verify's expectations).
pub(super) fn promised_labels(
    intent: &planner::ImageIntent,
    signer: Option<&verify::SignerCert>,
) -> spec::ImageLabels {
    let labels = spec::ImageLabels {
        kernel: intent.kernel.clone(),
        mofed: intent.mofed.clone(),
        doca: intent.doca.clone(),
        nvidia: intent.nvidia.clone(),
        nvidia_flavor: intent.nvidia_flavor,
        initramfs: intent.initramfs,
        no_build_tools: !intent.build_only.is_empty(),
        allow_opensm: intent.allow_opensm,
        boot_expect_failed: intent.boot_expect_failed.clone(),
        recipe_digest: None,
        module_signer: None,
        module_signer_cert: None,
    };
    match signer {
        Some(cert) => verify::labels::signed_by(labels, cert),
        None => labels,
    }
}

/// The image config's labels: its title, creation time, and the intent the image was built for
/// (`spec::ImageLabels`, which `verify` and `boot` read back).
pub(super) fn labels(
    plan: &Plan,
    project_root: &Path,
    epoch: u64,
    signer: Option<&verify::SignerCert>,
) -> BTreeMap<String, String> {
    let promised = spec::ImageLabels {
        recipe_digest: Some(recipe_digest(plan, project_root)),
        ..promised_labels(&plan.intent, signer)
    };
    let mut labels = promised.write();
    labels.insert("org.opencontainers.image.title".into(), plan.image.clone());
    labels.insert(
        "org.opencontainers.image.created".into(),
        oci::rfc3339(epoch),
    );
    labels.insert("org.opencontainers.image.vendor".into(), "imgbuild".into());
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use planner::plan::PlannedTask;

    #[test]
    fn the_layer_code_names_the_sources_it_was_compiled_from() {
        let code = super::layer_code();
        let (version, digest) = code.split_once(' ').expect("version and digest");
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        assert_eq!(digest.len(), 64);
        assert!(digest.chars().all(|c| c.is_ascii_hexdigit()));
    }

    fn plan_with(password: &str) -> (Plan, Vec<Step>) {
        let task = PlannedTask {
            role: "r".into(),
            name: "set the password".into(),
            module: "user".into(),
            args: serde_json::json!({"name": "svc", "password": password}),
            ..PlannedTask::default()
        };
        let steps = vec![Step::Task(Box::new(task))];
        let plan = Plan {
            image: "i".into(),
            recipe: "images/i.yml".into(),
            intent: Default::default(),
            facts: Default::default(),
            vars: Default::default(),
            roles: vec!["r".into()],
            tasks: steps.clone(),
            handlers: Vec::new(),
            warnings: Vec::new(),
            missing_handlers: Vec::new(),
            inputs: Vec::new(),
        };
        (plan, steps)
    }

    fn key(password: &str) -> String {
        let (plan, steps) = plan_with(password);
        let none = |_: &str| None;
        role_inputs(
            &plan,
            &steps,
            "p",
            Path::new("/nonexistent"),
            &Json::Null,
            &none,
        )
        .key()
    }

    #[test]
    fn a_vaulted_value_is_keyed_by_its_marker_not_its_clear_text() {
        let marker = "<vault:00112233445566aa>";
        planner::vault::reveal("keys-unit-clear-password", marker);
        assert_eq!(key("keys-unit-clear-password"), key(marker));
        // Another ciphertext (a changed value) gives another key.
        assert_ne!(key(marker), key("<vault:00112233445566ab>"));
    }

    /// What a role registered keys the roles above it the same whether it is the build's own
    /// result or restored from the cache's entry (JSON): a stat's ctime is a float.
    #[test]
    fn registered_floats_key_the_same_after_the_caches_round_trip() {
        let (plan, steps) = plan_with("p");
        let none = |_: &str| None;
        let registered_key = |registered: &Json| {
            role_inputs(
                &plan,
                &steps,
                "p",
                Path::new("/nonexistent"),
                registered,
                &none,
            )
            .registered
        };
        for nanos in (0..1_000_000_000u64).step_by(7_919_777) {
            let ctime = 1_795_839_840.0 + nanos as f64 / 1e9;
            let made = serde_json::json!({"tree": {"stat": {"ctime": ctime}}});
            let text = serde_json::to_string(&made).expect("json");
            let restored: Json = serde_json::from_str(&text).expect("json");
            assert_eq!(registered_key(&made), registered_key(&restored), "{text}");
        }
    }
}
