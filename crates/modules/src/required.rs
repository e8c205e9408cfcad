//! A tool of the image a module cannot do without, run as Ansible's modules run what
//! `get_bin_path(name, required=True)` found: missing, the module fails in Ansible's words.

use std::path::Path;

use super::api::{ModuleCtx, ModuleError};
use crate::rootfs::{Kind, RootFs};
use crate::target::{Cmd, CmdOutput};

/// Runs `cmd`, whose program is `cmd.argv[0]`; Ansible's failure when the image lacks it.
pub fn run(ctx: &ModuleCtx, cmd: &Cmd) -> Result<CmdOutput, ModuleError> {
    let out = ctx.target.run(cmd)?;
    if out.rc == 127 {
        let program = cmd.argv.first().map_or("", String::as_str);
        return Err(missing(program));
    }
    Ok(out)
}

/// Where the image has `program` (Ansible's `get_bin_path(program, required=True)`): the first
/// executable file of that name in the sandbox's PATH; Ansible's failure when there is none.
pub fn path_of(fs: &RootFs, program: &str) -> Result<String, ModuleError> {
    for dir in crate::target::BASE_PATH.split(':') {
        let candidate = format!("{dir}/{program}");
        let meta = fs.meta_follow(Path::new(&candidate))?;
        if meta.is_some_and(|m| m.kind == Kind::File && m.mode & 0o111 != 0) {
            return Ok(candidate);
        }
    }
    Err(missing(program))
}

/// Where Ansible 2.14's interpreter discovery looks on Linux, in order.
pub const INTERPRETERS: &[&str] = &[
    "/usr/bin/python3",
    "/usr/libexec/platform-python",
    "/usr/bin/python",
    "/usr/bin/python2.7",
];

/// The image's Python as Ansible's interpreter discovery finds it (what runs its modules).
pub fn interpreter(fs: &RootFs) -> Result<String, ModuleError> {
    for candidate in INTERPRETERS {
        let meta = fs.meta_follow(Path::new(candidate))?;
        if meta.is_some_and(|m| m.kind == Kind::File && m.mode & 0o111 != 0) {
            return Ok((*candidate).to_owned());
        }
    }
    Err(ModuleError::new(format!(
        "the image has no Python (looked for {}); Ansible's modules need one",
        INTERPRETERS.join(", ")
    )))
}

/// Ansible's message for a required program the image does not have.
pub fn missing(program: &str) -> ModuleError {
    ModuleError::new(format!(
        "Failed to find required executable \"{program}\" in paths: {}",
        crate::target::BASE_PATH
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_ansibles() {
        let e = missing("ssh-keygen");
        assert!(e.msg.starts_with(
            "Failed to find required executable \"ssh-keygen\" in paths: /usr/local/sbin:"
        ));
    }
}
