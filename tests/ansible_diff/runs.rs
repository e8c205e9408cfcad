//! The two runs of one case: `ansible-playbook` over the `community.general.chroot` connection
//! and `imgbuild apply`, each on its own overlayfs view of one shared rootfs, mounted in a mount
//! namespace of its own (so nothing stays mounted when a run ends, however it ends).

use std::path::Path;
use std::process::{Command, Output};

pub use crate::overlay::Side;

/// What a case needs to run on either side.
pub struct Case<'a> {
    /// The case's name (its role and its recipe's name).
    pub name: &'a str,
    /// The project: `images/<name>.yml`, `roles/`.
    pub project: &'a Path,
    /// Extra variables file (`-e @file`), if the case has one.
    pub extra_vars: Option<&'a Path>,
    /// The shared rootfs.
    pub lower: &'a Path,
    /// The folder of this case's scratch files.
    pub scratch: &'a Path,
}

/// Runs the case's recipe, a playbook, with `ansible-playbook` on `side`.
pub fn ansible(case: &Case, side: &Side) -> Output {
    let home = case.scratch.join("ansible-home");
    std::fs::create_dir_all(&home).expect("ansible home");
    let inventory = case.scratch.join("inventory");
    let playbook = case.project.join(format!("images/{}.yml", case.name));
    // The image is `localhost` unless the case's play names it `image`: then `localhost` is
    // Ansible's own, the machine running the play, for cases that delegate to it.
    let text = std::fs::read_to_string(&playbook).expect("playbook");
    let host = if text.contains("hosts: image") {
        "image"
    } else {
        "localhost"
    };
    std::fs::write(
        &inventory,
        format!(
            "{host} ansible_connection=community.general.chroot ansible_host={} \
             ansible_python_interpreter=/usr/bin/python3\n",
            side.merged.display()
        ),
    )
    .expect("inventory");
    let mut command = Command::new("ansible-playbook");
    command.arg("-i").arg(&inventory).arg(&playbook);
    if let Some(file) = case.extra_vars {
        command.arg("-e").arg(format!("@{}", file.display()));
    }
    command
        .env("HOME", &home)
        .env("ANSIBLE_ROLES_PATH", case.project.join("roles"))
        .env("ANSIBLE_LOCAL_TEMP", home.join("tmp"))
        // Module files go to the play's /tmp (a tmpfs), not to /root/.ansible in the tree.
        .env("ANSIBLE_REMOTE_TMP", "/tmp/.ansible-tmp")
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
        .env("ANSIBLE_DEPRECATION_WARNINGS", "0")
        .env("ANSIBLE_COLLECTIONS_PATH", "/usr/share/ansible/collections")
        .env("LC_ALL", "C.UTF-8");
    side.run(case.lower, true, command)
}

/// Runs the case's recipe with `imgbuild apply` on `side`.
pub fn imgbuild(case: &Case, side: &Side) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_imgbuild"));
    command
        .arg("-C")
        .arg(case.project)
        .args(["apply", case.name, "--root"])
        .arg(&side.merged);
    if let Some(file) = case.extra_vars {
        command.arg("-e").arg(format!("@{}", file.display()));
    }
    command
        .env("IMGBUILD_CACHE", case.scratch.join("imgbuild-cache"))
        .env("CI", "1");
    side.run(case.lower, false, command)
}
