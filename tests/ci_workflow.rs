//! The GitHub Actions workflows, for image pull requests and for imgbuild's releases: valid
//! YAML of the right shape, shell steps that parse, and (where installed) clean under
//! actionlint.

use crate::common;

use std::process::Command;

use common::repo_root;
use serde_json::Value;

/// Every workflow of the repository, by file name.
const WORKFLOWS: [&str; 3] = ["images.yml", "build-image.yml", "release.yml"];

fn workflow() -> (String, Value) {
    workflow_named("images.yml")
}

fn workflow_named(name: &str) -> (String, Value) {
    let path = repo_root().join(".github/workflows").join(name);
    let text = std::fs::read_to_string(&path).expect("the workflow exists");
    let doc = yaml(&text).expect("the workflow is YAML");
    (text, doc)
}

/// A YAML document as JSON, read as GitHub and GitLab read it (YAML 1.2: `on` is a key, not
/// `true` as PyYAML's YAML 1.1 would have it).
fn yaml(text: &str) -> Result<Value, String> {
    registry::yaml::parse(text)
}

/// A job's steps (none for a job that calls another workflow).
fn steps(job: &Value) -> Vec<&Value> {
    job["steps"]
        .as_array()
        .map(|steps| steps.iter().collect())
        .unwrap_or_default()
}

fn runs(job: &Value) -> String {
    steps(job)
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn workflow_has_the_affected_matrix_build_report_and_push() {
    let (_, doc) = workflow();
    assert!(doc["on"]["pull_request"].is_object() || doc["on"]["pull_request"].is_null());
    assert_eq!(doc["on"]["push"]["branches"][0], "main");

    let affected = &doc["jobs"]["affected"];
    let affected_runs = runs(affected);
    assert!(
        affected_runs.contains("imgbuild affected --since"),
        "{affected_runs}"
    );
    assert!(affected_runs.contains("--json"), "{affected_runs}");
    assert!(
        affected_runs.contains("gh release download")
            && affected_runs.contains("sha256sum --check --ignore-missing SHA256SUMS"),
        "imgbuild comes from a release, checked against its sums: {affected_runs}"
    );
    assert!(affected_runs.contains("matrix --diff"), "{affected_runs}");
    let checkout = steps(affected)
        .into_iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/checkout"))
        })
        .expect("checkout");
    assert_eq!(
        checkout["with"]["fetch-depth"], 0,
        "affected needs the base revision"
    );

    // The images through the layer stages several share go first, then the rest: both call
    // build-image.yml, one job per image.
    let first = &doc["jobs"]["first"];
    assert_eq!(first["needs"], "affected");
    assert_eq!(
        first["strategy"]["matrix"],
        "${{ fromJSON(needs.affected.outputs.first) }}"
    );
    let rest = &doc["jobs"]["build"];
    assert_eq!(rest["needs"], serde_json::json!(["affected", "first"]));
    assert_eq!(
        rest["strategy"]["matrix"],
        "${{ fromJSON(needs.affected.outputs.matrix) }}"
    );
    for job in [first, rest] {
        assert_eq!(job["uses"], "./.github/workflows/build-image.yml");
        assert_eq!(job["with"]["image"], "${{ matrix.image }}");
    }
    assert!(
        affected_runs.contains("jq -c .first") && affected_runs.contains("jq -c .then"),
        "the fan-out of affected --json: {affected_runs}"
    );
    let (_, called) = workflow_named("build-image.yml");
    assert!(called["on"]["workflow_call"]["inputs"]["image"]["required"] == true);
    let build = &called["jobs"]["build"];
    let build_runs = runs(build);
    assert!(
        build_runs.contains("imgbuild build \"$IMAGE\" --locked"),
        "{build_runs}"
    );
    for flag in ["--cache-from", "--cache-to"] {
        assert!(
            build_runs.contains(&format!(
                "cache+=({flag} \"docker://$REGISTRY/imgbuild-cache\")"
            )),
            "the registry layer cache: {build_runs}"
        );
    }
    let uploads: Vec<&Value> = steps(build)
        .into_iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .collect();
    assert!(uploads.iter().any(|s| s["with"]["path"]
        .as_str()
        .is_some_and(|p| p.contains("report.json"))));
    let push = steps(build)
        .into_iter()
        .find(|s| s["run"].as_str().is_some_and(|r| r.contains("skopeo copy")))
        .expect("a push step");
    assert!(push["if"]
        .as_str()
        .is_some_and(|c| c.contains("refs/heads/main")));
}

#[test]
fn a_tag_releases_the_static_binary_packages_sbom_and_sums() {
    let (_, doc) = workflow_named("release.yml");
    assert_eq!(doc["on"]["push"]["tags"][0], "v*");
    assert_eq!(doc["permissions"]["contents"], "write");
    let release = &doc["jobs"]["release"];
    let script = runs(release);
    for needed in [
        "bash scripts/static-binary",
        "bash scripts/package",
        "--example cargo_sbom -- Cargo.lock imgbuild",
        "--filter-platform x86_64-unknown-linux-musl",
        ">SHA256SUMS",
        "gh release create \"$GITHUB_REF_NAME\"",
    ] {
        assert!(script.contains(needed), "{needed}: {script}");
    }
    // The notes step's awk takes the tag's CHANGELOG section, and the section is there.
    let notes = steps(release)
        .into_iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("CHANGELOG.md"))
        .expect("a notes step");
    let version = std::fs::read_to_string(repo_root().join("Cargo.toml"))
        .expect("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .map(|v| v.trim_end_matches('"').to_owned())
        .expect("a version");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("target/dist")).expect("dist");
    std::fs::copy(
        repo_root().join("CHANGELOG.md"),
        dir.path().join("CHANGELOG.md"),
    )
    .expect("changelog");
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", notes])
        .current_dir(dir.path())
        .env("GITHUB_REF_NAME", format!("v{version}"))
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(dir.path().join("target/dist/notes.md")).expect("notes");
    assert!(written.contains("### Added"), "{written}");
    assert!(
        !written.contains(&format!("## {version}")),
        "no heading: {written}"
    );
    assert!(!written.contains("## Unreleased"), "{written}");
}

#[test]
fn every_run_step_is_valid_shell() {
    for file in WORKFLOWS {
        let (_, doc) = workflow_named(file);
        every_run_step_parses(&doc);
    }
}

fn every_run_step_parses(doc: &Value) {
    let jobs = doc["jobs"].as_object().expect("jobs");
    for (name, job) in jobs {
        for step in steps(job) {
            let Some(script) = step["run"].as_str() else {
                continue;
            };
            // Expressions are substituted by Actions before the shell sees the script.
            let script = regex_free_expressions(script);
            let out = Command::new("bash")
                .args(["-n", "-c", &script])
                .output()
                .expect("bash");
            assert!(
                out.status.success(),
                "job {name:?}: {}\n{script}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Replaces `${{ ... }}` with a plain word.
fn regex_free_expressions(script: &str) -> String {
    let mut out = String::new();
    let mut rest = script;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        match rest[start..].find("}}") {
            Some(end) => {
                out.push_str("EXPR");
                rest = &rest[start + end + 2..];
            }
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn actionlint_where_installed() {
    let Ok(out) = Command::new("actionlint")
        .args(WORKFLOWS.map(|w| repo_root().join(".github/workflows").join(w)))
        .output()
    else {
        eprintln!("actionlint is not installed; the YAML and shell checks above still ran");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn the_docs_gitlab_equivalent_is_valid_yaml() {
    let readme = std::fs::read_to_string(repo_root().join("docs/matrix-and-ci.md"))
        .expect("docs/matrix-and-ci.md");
    let block = readme
        .split("The same in GitLab CI:\n\n```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a GitLab CI block in docs/matrix-and-ci.md");
    let doc: Value = yaml(block).expect("valid YAML");
    let script: Vec<&str> = doc["affected"]["script"]
        .as_array()
        .expect("script")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(script
        .iter()
        .any(|l| l.contains("imgbuild affected --since")));
    assert!(script
        .iter()
        .any(|l| l.contains("imgbuild build \\(.image) --locked")));
    assert_eq!(doc["build"]["trigger"]["strategy"], "depend");
}
