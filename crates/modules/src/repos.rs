//! What the repository modules share (`apt_key`, `deb822_repository` and `apt_repository`, each
//! in its own file): writing a repository's or a key's file.

use std::path::Path;

use super::api::{ModuleCtx, ModuleError, ModuleResult};
use super::copy::{place, Placement};

/// Writes `content` at `path` through `place` (mode 0644), or removes the file.
pub(super) fn put(
    ctx: &ModuleCtx,
    path: &Path,
    content: Option<&str>,
) -> Result<ModuleResult, ModuleError> {
    put_with_mode(ctx, path, content, &None)
}

/// [`put`] with the task's `mode` (0644 when it gives none).
pub(super) fn put_with_mode(
    ctx: &ModuleCtx,
    path: &Path,
    content: Option<&str>,
    mode: &Option<crate::types::Mode>,
) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    match content {
        Some(content) => {
            if let Some(parent) = path.parent() {
                if !ctx.check {
                    fs.mkdir_all(parent, 0o755)?;
                }
            }
            let mode = mode.clone().or(Some(crate::types::Mode::Octal(0o644)));
            place(
                ctx,
                path,
                &Placement {
                    bytes: content.as_bytes(),
                    mode: &mode,
                    owner: &None,
                    group: &None,
                    force: true,
                    validate: None,
                    backup: false,
                },
            )
        }
        None => {
            let there = fs.exists(path)?;
            if there && !ctx.check {
                fs.remove_all(path)?;
            }
            Ok(ModuleResult::changed(there))
        }
    }
}
