//! The GitHub Actions workflow for image pull requests: valid YAML of the right shape, shell
//! steps that parse, and (where installed) clean under actionlint.

mod common;

use std::process::Command;

use common::repo_root;
use serde_json::Value;

fn workflow() -> (String, Value) {
    let path = repo_root().join(".github/workflows/images.yml");
    let text = std::fs::read_to_string(&path).expect("the workflow exists");
    let doc = yaml(&text).expect("the workflow is YAML");
    (text, doc)
}

/// A YAML document as JSON, read as GitHub and GitLab read it (YAML 1.2: `on` is a key, not
/// `true` as PyYAML's YAML 1.1 would have it).
fn yaml(text: &str) -> Result<Value, String> {
    registry::yaml::parse(text)
}

fn steps(job: &Value) -> Vec<&Value> {
    job["steps"].as_array().expect("steps").iter().collect()
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

    let build = &doc["jobs"]["build"];
    assert_eq!(build["needs"], "affected");
    assert_eq!(
        build["strategy"]["matrix"],
        "${{ fromJSON(needs.affected.outputs.matrix) }}"
    );
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
fn every_run_step_is_valid_shell() {
    let (_, doc) = workflow();
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
        .arg(repo_root().join(".github/workflows/images.yml"))
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
