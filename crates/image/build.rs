//! Compiles in the identity of the code that makes layers (src/code_identity.rs).

#[path = "src/code_identity.rs"]
#[allow(dead_code)]
mod code_identity;

use std::path::PathBuf;

fn main() {
    // Read when the script runs, not when it was compiled: a target folder shared by clones at
    // other paths (a CI cache) may hold this script compiled for another checkout.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| {
        panic!("cargo sets CARGO_MANIFEST_DIR for a build script");
    });
    let crates = PathBuf::from(manifest_dir).join("..");
    let sources = ["engine/src", "modules/src", "planner/src", "ansible/src"];
    let dirs: Vec<PathBuf> = sources.iter().map(|dir| crates.join(dir)).collect();
    // Relative to this package, so that each checkout watches its own sources.
    for dir in sources {
        println!("cargo:rerun-if-changed=../{dir}");
    }
    let digest = code_identity::tree_digest(&dirs).unwrap_or_else(|e| {
        panic!("reading the engine's, modules', planner's and Ansible language's sources for the layer code identity: {e}")
    });
    println!("cargo:rustc-env=IMGBUILD_LAYER_CODE={digest}");
}
