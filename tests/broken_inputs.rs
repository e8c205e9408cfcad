//! The broken-input corpus: every `tests/broken/*.case` is a small project with one mistake.
//! Planning it must exit 2 with an error naming the file and line and saying what is wrong,
//! without a panic.
//!
//! A case file holds `# error: PATH[:LINE]` (the location the error must name), `# message:`
//! (text the error must contain), optionally `# args:` (default `plan broken`) and `# exit:`,
//! then `=== path` sections with the files to write. `images/broken.yml` (a Rocky 9.5 recipe
//! with the single role `r`) is written unless the case brings its own. In `# args:`, `{root}`
//! is a Debian bookworm rootfs shared by the cases that run tasks (`apply`; needs root), and
//! `{project}` the case's project folder.

use crate::common;

use std::path::Path;

const DEFAULT_RECIPE: &str = "- hosts: localhost
  vars:
    build_from: \"docker.io/rockylinux/rockylinux:9.5\"
    kernel_version: \"5.14.0-503.40.1.el9_5.x86_64\"
  roles: [r]
";

struct Case {
    name: String,
    location: Option<String>,
    message: String,
    args: Vec<String>,
    exit: i32,
    files: Vec<(String, String)>,
}

fn parse_case(name: &str, text: &str) -> Case {
    let mut case = Case {
        name: name.to_owned(),
        location: None,
        message: String::new(),
        args: vec!["plan".into(), "broken".into()],
        exit: 2,
        files: Vec::new(),
    };
    let mut current: Option<(String, String)> = None;
    for line in text.split_inclusive('\n') {
        if let Some(path) = line.strip_prefix("=== ") {
            if let Some(file) = current.take() {
                case.files.push(file);
            }
            current = Some((path.trim().to_owned(), String::new()));
        } else if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
        } else if let Some(v) = line.strip_prefix("# error: ") {
            case.location = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("# message: ") {
            case.message = v.trim().to_owned();
        } else if let Some(v) = line.strip_prefix("# args: ") {
            case.args = v.split_whitespace().map(str::to_owned).collect();
        } else if let Some(v) = line.strip_prefix("# exit: ") {
            case.exit = v.trim().parse().expect("exit code");
        }
    }
    if let Some(file) = current.take() {
        case.files.push(file);
    }
    assert!(
        !case.message.is_empty(),
        "{name}: a case needs '# message:'"
    );
    case
}

fn run_case(case: &Case) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = dir.path();
    std::fs::create_dir_all(root.join("images")).map_err(|e| e.to_string())?;
    if !case.files.iter().any(|(p, _)| p == "images/broken.yml") {
        std::fs::write(root.join("images/broken.yml"), DEFAULT_RECIPE)
            .map_err(|e| e.to_string())?;
    }
    for (path, body) in &case.files {
        let target = root.join(path);
        std::fs::create_dir_all(target.parent().unwrap_or(Path::new(".")))
            .map_err(|e| e.to_string())?;
        std::fs::write(&target, body).map_err(|e| e.to_string())?;
    }
    // `{root}`: the shared rootfs; `{project}`: the case's project folder.
    let rootfs = if case.args.iter().any(|a| a.contains("{root}")) {
        shared_rootfs().to_string_lossy().into_owned()
    } else {
        String::new()
    };
    let owned: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            a.replace("{root}", &rootfs)
                .replace("{project}", &root.to_string_lossy())
        })
        .collect();
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let out = common::imgbuild(root, &args);
    let err = common::stderr(&out);
    let mut problems = Vec::new();
    if out.status.code() != Some(case.exit) {
        problems.push(format!(
            "exit {:?}, expected {}",
            out.status.code(),
            case.exit
        ));
    }
    if err.contains("panicked") {
        problems.push("panicked".into());
    }
    if let Some(location) = &case.location {
        let prefix = format!("error: {location}");
        let line_matches = err.lines().any(|l| {
            l.starts_with(&prefix) && (location.contains(':') || l[prefix.len()..].starts_with(':'))
        });
        if !line_matches {
            problems.push(format!("no line starting with '{prefix}'"));
        }
    }
    if !err.contains(&case.message) {
        problems.push(format!("message lacks '{}'", case.message));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}\n  stderr: {}",
            case.name,
            problems.join("; "),
            err.trim()
        ))
    }
}

/// A bookworm rootfs for the cases that run tasks, made once and kept in the test cache.
fn shared_rootfs() -> std::path::PathBuf {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let root = common::test_cache().join("broken-cases-root");
        if !root.join("etc/os-release").is_file() {
            let _ = std::fs::remove_dir_all(&root);
            common::bookworm_rootfs(&root);
        }
        root
    })
    .clone()
}

#[test]
fn every_broken_input_gives_exit_2_and_a_located_error() {
    let dir = common::repo_root().join("tests/broken");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/broken")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "case"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 25,
        "the corpus must hold at least 25 cases, has {}",
        paths.len()
    );
    let failures: Vec<String> = paths
        .iter()
        .map(|p| {
            let name = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("?")
                .to_owned();
            let text = std::fs::read_to_string(p).expect("read case");
            run_case(&parse_case(&name, &text))
        })
        .filter_map(Result::err)
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}

#[test]
fn a_case_with_a_fixed_mistake_plans() {
    // The harness itself: the unknown-module case, mended, must plan (exit 0).
    let text =
        std::fs::read_to_string(common::repo_root().join("tests/broken/unknown_module.case"))
            .expect("case");
    let mut case = parse_case("mended", &text.replace("shel:", "shell:"));
    case.exit = 0;
    case.location = None;
    case.message = String::new();
    let result = run_case(&case);
    assert!(result.is_ok(), "{result:?}");
}
