//! Commands that build, as an ordinary user: re-run in a user namespace (see the `rootless`
//! crate), after the refusals that need no work: the machine cannot, or the cache folder is
//! another user's.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;

use crate::cli::Command;
use crate::Failure;

/// Whether `command` writes root filesystems or the cache's trees (owned by the image's ids):
/// `boot` too, which applies the image's layers before it packs them.
fn builds(command: &Command) -> bool {
    matches!(
        command,
        Command::Build(_) | Command::Apply(_) | Command::Cache(_) | Command::Boot(_)
    )
}

/// For an ordinary user's building command: runs it in a user namespace and gives its exit code.
/// `None` where the command runs here as it is (root, the namespace's own run, or a command
/// that builds nothing).
pub fn run_inside_if_needed(command: &Command) -> Result<Option<ExitCode>, Failure> {
    if rootless::is_root() || !builds(command) {
        return Ok(None);
    }
    let mapping = rootless::check().map_err(|e| Failure::Input(e.into()))?;
    refuse_foreign_cache(&crate::settings::cache_dir().value)?;
    let code = rootless::run_inside(&mapping).map_err(|e| Failure::Run(e.into()))?;
    Ok(Some(ExitCode::from(u8::try_from(code).unwrap_or(1))))
}

/// The cache folder must be this user's: imgbuild never changes an owner to make it so.
fn refuse_foreign_cache(cache: &Path) -> Result<(), Failure> {
    let uid = rustix::process::getuid().as_raw();
    let owner = std::fs::metadata(cache).ok().map(|m| m.uid());
    match owner {
        Some(owner) if owner != uid => Err(Failure::Input(anyhow!(
            "the cache folder {} belongs to uid {owner}, not to you (uid {uid}); imgbuild never changes its owner: give a folder of your own with IMGBUILD_CACHE (or cache_dir in ~/.config/imgbuild/config.toml)",
            cache.display()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_folder_of_another_user_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        assert!(refuse_foreign_cache(&dir.path().join("not-yet")).is_ok());
        assert!(refuse_foreign_cache(dir.path()).is_ok(), "our own");
        if rootless::is_root() {
            std::os::unix::fs::chown(dir.path(), Some(12345), None).expect("chown");
            let Err(Failure::Input(e)) = refuse_foreign_cache(dir.path()) else {
                panic!("a foreign cache folder is bad input");
            };
            assert!(e.to_string().contains("belongs to uid 12345"), "{e}");
        }
    }
}
