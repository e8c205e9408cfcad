//! What `imgbuild --version` says beside the version: the commit the binary was built from and
//! that commit's date, when it was built from a git checkout ("unknown" otherwise, as from a
//! source tarball).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = git(&["show", "-s", "--format=%cs", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=IMGBUILD_COMMIT={commit}");
    println!("cargo:rustc-env=IMGBUILD_COMMIT_DATE={date}");
    // A new commit changes what --version says.
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(refs) = git(&["rev-parse", "--git-path", "refs/heads"]) {
        println!("cargo:rerun-if-changed={refs}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
