//! The workspace's `rust-version` is honest: no locked dependency asks for a newer Rust.

use crate::common;

use std::process::Command;

/// `1.88` or `1.88.0` as comparable numbers.
fn version(text: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = text.split('.').filter_map(|p| p.parse().ok()).collect();
    parts.resize(3, 0);
    parts
}

#[test]
fn no_locked_dependency_needs_a_newer_rust_than_the_workspace_claims() {
    let root = common::repo_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let claimed = manifest
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = "))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .expect("the workspace names a rust-version");
    // This machine's target only: the packages the build fetched (no other platform's).
    let rustc = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .expect("rustc names its host");
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--filter-platform",
            &host,
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata");
    let resolved: Vec<&str> = metadata["resolve"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["id"].as_str())
        .collect();
    let newer: Vec<String> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| resolved.contains(&id)))
        .filter_map(|p| {
            let needs = p["rust_version"].as_str()?;
            (version(needs) > version(&claimed))
                .then(|| format!("{} {} needs {needs}", p["name"], p["version"]))
        })
        .collect();
    assert!(
        newer.is_empty(),
        "rust-version = \"{claimed}\" in Cargo.toml, but: {}",
        newer.join("; ")
    );
}
