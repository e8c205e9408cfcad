//! One initramfs per image: the builds a package manager's hooks ask for while a role installs
//! packages (the kernel's postinst, DKMS, `update-initramfs` and dracut triggers) are deferred,
//! and the image's initramfs is built once, by the recipe's own step (a `dracut` or
//! `update-initramfs` task after them) or, for a recipe that relies on the hooks, by the hooks
//! themselves at the end of the last role.
//!
//! An `apt` task gives dpkg [`package_path`] as its `PATH` (apt's `DPkg::Path`: apt sets
//! dpkg's `PATH` itself): shims named `update-initramfs` and `dracut`, first in it, write what
//! they were asked to [`REQUESTS`] and answer success. rpm gives its scriptlets a `PATH` of its
//! own, so on an EL image nothing is deferred yet. The shims live on the sandbox's `/run` tmpfs
//! and never enter a layer; any other task sees no shim, so a recipe's own build runs for real.
//!
//! A deferred build that would have created an initramfs leaves it in place, empty, with the
//! mode its builder gives a new one, as the real build would have: a later build over it keeps
//! that mode (dracut copies into an existing file) and a later `dracut` without `--force`
//! refuses it, as both do after the real build.

use std::path::Path;

use crate::rootfs::RootFs;
use crate::target::{Cmd, Target};

/// The folder of the shims inside the sandbox; [`package_path`] puts it first.
pub use modules::shims::{package_path, INITRAMFS_SHIM_DIR as SHIM_DIR};
/// Where the shims write each deferred request, one line each (`name args...`).
pub const REQUESTS: &str = "/run/imgbuild/initramfs-requests";
/// The programs that build an initramfs, as hooks call them.
const BUILDERS: [&str; 2] = ["update-initramfs", "dracut"];
/// The kernel hooks that build the initramfs, run once for a recipe that relies on them.
const HOOKS: [&str; 2] = [
    "/etc/kernel/postinst.d/initramfs-tools",
    "/etc/kernel/postinst.d/dracut",
];

/// Where a shim looks for the real builder: it defers only a builder the image has.
const SEARCH: &str = "/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin";

/// A shim: a builder that is not installed stays missing; one that is records the request and
/// leaves the file a create would have made (module doc).
fn shim() -> String {
    format!(
        r#"#!/bin/sh
# imgbuild: the image's initramfs is built once; this build, asked for by a package's hook, waits.
name=${{0##*/}}
found=
for dir in {SEARCH}; do
    if [ -x "$dir/$name" ]; then found=$dir/$name; break; fi
done
if [ -z "$found" ]; then
    echo "$name: not found" >&2
    exit 127
fi
printf '%s\n' "$name $*" >> {REQUESTS}
echo "imgbuild: '$name $*' deferred: the image's initramfs is built once, after the packages" >&2
placeholder() {{
    [ -e "$1" ] || [ ! -d "${{1%/*}}" ] || (umask "$2" && : > "$1")
}}
case $name in
update-initramfs)
    create= version= dir=/boot
    while [ $# -gt 0 ]; do
        case $1 in
            -c) create=1 ;;
            -k) shift; version=$1 ;;
            -b) shift; dir=$1 ;;
        esac
        [ $# -gt 0 ] && shift
    done
    if [ -n "$create" ] && [ -n "$version" ] && [ "$version" != all ]; then
        mask=$(sed -n 's/^UMASK=//p' /etc/initramfs-tools/initramfs.conf /etc/initramfs-tools/conf.d/* 2>/dev/null | tail -n 1)
        placeholder "$dir/initrd.img-$version" "${{mask:-0022}}"
    fi ;;
dracut)
    # dracut [options] <image> <kernel version>, as the kernel hooks call it
    image= version=
    for arg; do image=$version; version=$arg; done
    case $image in
        /*"$version"*) placeholder "$image" 0077 ;;
    esac ;;
esac
exit 0
"#
    )
}

/// Writes the shims under `run` (the sandbox's `/run`, seen from outside the chroot).
pub fn install_shims(run: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = run.join(SHIM_DIR.trim_start_matches("/run/"));
    let fail = |e: std::io::Error| format!("writing the initramfs shims in {}: {e}", dir.display());
    std::fs::create_dir_all(&dir).map_err(fail)?;
    for name in BUILDERS {
        let file = dir.join(name);
        std::fs::write(&file, shim()).map_err(fail)?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).map_err(fail)?;
    }
    Ok(())
}

/// What `/boot`'s initramfs files are (name, size, times, inode), to see a task rebuild one.
fn boot_stamp(fs: &RootFs) -> Vec<(String, u64, i64, i64, u64)> {
    let names = fs.list(Path::new("/boot")).unwrap_or_default();
    names
        .into_iter()
        .filter(|n| n.starts_with("initrd.img-") || n.starts_with("initramfs-"))
        .filter_map(|name| {
            let meta = fs.meta(&Path::new("/boot").join(&name)).ok()??;
            Some((name, meta.size, meta.mtime, meta.nsecs[0], meta.ino))
        })
        .collect()
}

/// The initramfs builds deferred and not yet done, across roles.
#[derive(Debug, Default)]
pub struct Deferred {
    /// The requests since the last build, in order.
    pending: Vec<String>,
    /// `/boot` when the role started or the last request came.
    stamp: Vec<(String, u64, i64, i64, u64)>,
}

/// What [`Deferred::after_task`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Seen {
    /// Nothing about the initramfs.
    Nothing,
    /// The task's packages asked for builds, now deferred.
    Deferred(Vec<String>),
    /// The task built the initramfs itself: the deferred builds are done.
    Built(Vec<String>),
}

impl Deferred {
    /// The deferred requests not yet built (kept with a cached layer).
    pub fn pending(&self) -> &[String] {
        &self.pending
    }

    /// Takes back the requests a cached layer left pending.
    pub fn restore(&mut self, pending: Vec<String>) {
        self.pending = pending;
    }

    /// A role starts on `fs`: what `/boot` holds now, to see a task of it rebuild the initramfs.
    pub fn begin_role(&mut self, fs: &RootFs) {
        if !self.pending.is_empty() {
            self.stamp = boot_stamp(fs);
        }
    }

    /// After a task: takes the requests its packages' hooks made, or sees that it rebuilt an
    /// initramfs while builds were deferred.
    pub fn after_task(&mut self, fs: &RootFs) -> Seen {
        let requests = fs
            .read_text_opt(Path::new(REQUESTS))
            .ok()
            .flatten()
            .unwrap_or_default();
        let requests: Vec<String> = requests.lines().map(str::to_owned).collect();
        if !requests.is_empty() {
            let _ = fs.remove_all(Path::new(REQUESTS));
            self.pending.extend(requests.iter().cloned());
            self.stamp = boot_stamp(fs);
            return Seen::Deferred(requests);
        }
        if self.pending.is_empty() || boot_stamp(fs) == self.stamp {
            return Seen::Nothing;
        }
        Seen::Built(std::mem::take(&mut self.pending))
    }

    /// At the end of the last role: builds the initramfs the deferred requests asked for, once,
    /// by the kernel hooks the image has (for each kernel in `/boot`). Returns what it ran, or
    /// `None` when nothing was pending.
    pub fn finish(&mut self, target: &dyn Target) -> Option<Result<String, String>> {
        if self.pending.is_empty() {
            return None;
        }
        let hooks = HOOKS.join(" ");
        let script = format!(
            "set -e\nfor image in /boot/vmlinuz-*; do\n  [ -e \"$image\" ] || continue\n  version=${{image#/boot/vmlinuz-}}\n  for hook in {hooks}; do\n    if [ -x \"$hook\" ]; then echo \"imgbuild: $hook $version\"; \"$hook\" \"$version\" \"$image\"; fi\n  done\ndone\n"
        );
        let cmd = Cmd::shell(&script);
        let requests = std::mem::take(&mut self.pending).join("; ");
        Some(match target.run(&cmd) {
            Ok(out) if out.rc == 0 => Ok(format!(
                "{} (deferred: {requests})",
                out.stdout.lines().collect::<Vec<_>>().join("; ")
            )),
            Ok(out) => Err(format!(
                "building the initramfs the packages' hooks asked for (deferred: {requests}) failed (exit {}): {}",
                out.rc,
                out.stderr.trim()
            )),
            Err(e) => Err(format!("building the deferred initramfs: {e}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a shim as a hook would, in a folder standing for the sandbox's `/run`, where the
    /// builders `sh`, `update-initramfs` and `dracut` stand for installed ones.
    fn run_shim(name: &str, args: &[&str], run: &Path) -> std::process::Output {
        use std::os::unix::fs::PermissionsExt;
        let installed = run.join("installed");
        std::fs::create_dir_all(&installed).expect("installed");
        for builder in ["sh", "update-initramfs", "dracut"] {
            let file = installed.join(builder);
            std::fs::write(&file, "#!/bin/sh\nexit 1\n").expect("builder");
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("x");
        }
        let script = shim()
            .replace(REQUESTS, &run.join("requests").to_string_lossy())
            .replace(SEARCH, &installed.to_string_lossy())
            .replace(
                "/etc/initramfs-tools/",
                &run.join("conf/").to_string_lossy(),
            );
        let file = run.join(name);
        std::fs::write(&file, script).expect("shim");
        std::process::Command::new("/bin/sh")
            .arg(&file)
            .args(args)
            .output()
            .expect("sh")
    }

    fn mode(file: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(file)
            .expect("placeholder")
            .permissions()
            .mode()
            & 0o7777
    }

    #[test]
    fn a_deferred_create_leaves_the_file_empty_with_the_builders_mode() {
        let run = tempfile::tempdir().expect("tempdir");
        let boot = run.path().join("boot");
        std::fs::create_dir_all(&boot).expect("boot");
        let boot_arg = boot.to_string_lossy().into_owned();
        let out = run_shim(
            "update-initramfs",
            &["-c", "-k", "6.1.0-50-amd64", "-b", &boot_arg],
            run.path(),
        );
        assert!(out.status.success(), "{out:?}");
        let initrd = boot.join("initrd.img-6.1.0-50-amd64");
        assert_eq!(std::fs::read(&initrd).expect("created"), b"");
        assert_eq!(mode(&initrd), 0o644, "mkinitramfs's umask");

        let image = boot.join("initramfs-6.1.0-51-amd64.img");
        let image_arg = image.to_string_lossy().into_owned();
        let out = run_shim(
            "dracut",
            &["-q", "--force", &image_arg, "6.1.0-51-amd64"],
            run.path(),
        );
        assert!(out.status.success(), "{out:?}");
        assert_eq!(mode(&image), 0o600, "dracut's umask");
    }

    #[test]
    fn a_deferred_build_leaves_an_existing_initramfs_and_an_update_creates_none() {
        use std::os::unix::fs::PermissionsExt;
        let run = tempfile::tempdir().expect("tempdir");
        let boot = run.path().join("boot");
        std::fs::create_dir_all(&boot).expect("boot");
        let initrd = boot.join("initrd.img-6.1.0-50-amd64");
        std::fs::write(&initrd, "cpio").expect("initrd");
        std::fs::set_permissions(&initrd, std::fs::Permissions::from_mode(0o640)).expect("mode");
        let initrd_arg = initrd.to_string_lossy().into_owned();
        let out = run_shim(
            "dracut",
            &["--force", &initrd_arg, "6.1.0-50-amd64"],
            run.path(),
        );
        assert!(out.status.success());
        assert_eq!(std::fs::read(&initrd).expect("kept"), b"cpio");
        assert_eq!(mode(&initrd), 0o640);

        let boot_arg = boot.to_string_lossy().into_owned();
        let out = run_shim(
            "update-initramfs",
            &["-u", "-k", "6.1.0-52-amd64", "-b", &boot_arg],
            run.path(),
        );
        assert!(out.status.success());
        assert!(!boot.join("initrd.img-6.1.0-52-amd64").exists());
        // A site's UMASK in initramfs.conf is the mode mkinitramfs gives.
        std::fs::create_dir_all(run.path().join("conf")).expect("conf");
        std::fs::write(
            run.path().join("conf/initramfs.conf"),
            "MODULES=most\nUMASK=0077\n",
        )
        .expect("conf");
        let out = run_shim(
            "update-initramfs",
            &["-c", "-k", "6.1.0-52-amd64", "-b", &boot_arg],
            run.path(),
        );
        assert!(out.status.success());
        assert_eq!(mode(&boot.join("initrd.img-6.1.0-52-amd64")), 0o600);
        let requests = std::fs::read_to_string(run.path().join("requests")).expect("requests");
        assert_eq!(requests.lines().count(), 3);
    }

    #[test]
    fn a_shim_records_the_request_of_an_installed_builder_and_answers_success() {
        let run = tempfile::tempdir().expect("tempdir");
        // `sh` is installed on any build host: stands in for an installed builder's name.
        let out = run_shim("sh", &["-c", "-k", "6.1.0-50-amd64"], run.path());
        assert!(out.status.success());
        let requests = std::fs::read_to_string(run.path().join("requests")).expect("requests");
        assert_eq!(requests, "sh -c -k 6.1.0-50-amd64\n");
        assert!(String::from_utf8_lossy(&out.stderr).contains("deferred"));
    }

    #[test]
    fn a_shim_for_a_builder_that_is_not_installed_is_not_found() {
        let run = tempfile::tempdir().expect("tempdir");
        let out = run_shim("no-such-initramfs-builder", &["-u"], run.path());
        assert_eq!(out.status.code(), Some(127));
        assert!(!run.path().join("requests").exists());
    }

    #[test]
    fn requests_are_pending_until_a_task_rebuilds_the_initramfs() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join("run/imgbuild")).expect("run");
        std::fs::create_dir_all(root.path().join("boot")).expect("boot");
        let fs = RootFs::plain(root.path()).expect("rootfs");
        let mut deferred = Deferred::default();
        assert_eq!(deferred.after_task(&fs), Seen::Nothing);
        let requests = root.path().join(REQUESTS.trim_start_matches('/'));
        std::fs::write(&requests, "update-initramfs -c -k 6.1.0-50-amd64\n").expect("write");
        assert_eq!(
            deferred.after_task(&fs),
            Seen::Deferred(vec!["update-initramfs -c -k 6.1.0-50-amd64".into()])
        );
        assert!(!requests.exists(), "taken");
        assert_eq!(deferred.pending().len(), 1);
        // A task that changes nothing in /boot leaves them pending.
        assert_eq!(deferred.after_task(&fs), Seen::Nothing);
        // The recipe's own build writes the initramfs: done.
        std::fs::write(root.path().join("boot/initrd.img-6.1.0-50-amd64"), "cpio").expect("w");
        assert_eq!(
            deferred.after_task(&fs),
            Seen::Built(vec!["update-initramfs -c -k 6.1.0-50-amd64".into()])
        );
        assert!(deferred.pending().is_empty());
        assert_eq!(deferred.after_task(&fs), Seen::Nothing);
    }
}
