//! Compiles in the identity of the code that makes layers (src/code_identity.rs).

#[path = "src/code_identity.rs"]
#[allow(dead_code)]
mod code_identity;

use std::path::PathBuf;

fn main() {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dirs: Vec<PathBuf> = ["engine/src", "modules/src", "planner/src", "ansible/src"]
        .iter()
        .map(|dir| crates.join(dir))
        .collect();
    for dir in &dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    let digest = code_identity::tree_digest(&dirs).unwrap_or_else(|e| {
        panic!("reading the engine's, modules', planner's and Ansible language's sources for the layer code identity: {e}")
    });
    println!("cargo:rustc-env=IMGBUILD_LAYER_CODE={digest}");
}
