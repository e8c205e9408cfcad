//! What Ansible's `apt` module does before anything else, each time it runs: it needs apt's
//! Python bindings in one of the image's Pythons, and when none can import them it installs
//! `python3-apt` (after `apt-get update`, unless the task says `update_cache: false`), or, in
//! check mode, fails. `apt` and `package` on apt do the same here, so an image gets the
//! package where Ansible's module would have put it. An image with no Python at all is left
//! as it is: Ansible could run no module there, and imgbuild's apt needs none.

use super::api::{ModuleCtx, ModuleError};
use super::package_cmd::{failed, run, APT_ENV};
use crate::target::Cmd;
use std::path::Path;

/// The interpreters Ansible's apt module probes for the bindings, in its order.
const INTERPRETERS: [&str; 3] = ["/usr/bin/python3", "/usr/bin/python2", "/usr/bin/python"];

/// The package of the bindings for the Python 3 that runs Ansible's modules.
const PACKAGE: &str = "python3-apt";

/// What the probe found.
#[derive(Debug, PartialEq, Eq)]
enum Bindings {
    /// An interpreter imports `apt`.
    Found,
    /// Interpreters are there, and none imports `apt`.
    Missing,
    /// No interpreter at all.
    NoPython,
}

/// Ansible's `probe_interpreters_for_module(..., 'apt')`: each interpreter that exists is asked
/// to import `apt`.
fn probe(ctx: &ModuleCtx) -> Result<Bindings, ModuleError> {
    let mut any = false;
    for interpreter in INTERPRETERS {
        if !ctx.target.fs().exists(Path::new(interpreter))? {
            continue;
        }
        any = true;
        let out = ctx
            .target
            .run(&Cmd::new(&[interpreter, "-c", "import apt"]))?;
        if out.rc == 0 {
            return Ok(Bindings::Found);
        }
    }
    Ok(if any {
        Bindings::Missing
    } else {
        Bindings::NoPython
    })
}

/// Makes sure the bindings are there as Ansible's apt module does; returns its warnings.
/// `update_cache` is the task's, `None` when not given.
pub(super) fn ensure(
    ctx: &ModuleCtx,
    update_cache: Option<bool>,
) -> Result<Vec<String>, ModuleError> {
    if probe(ctx)? != Bindings::Missing {
        return Ok(Vec::new());
    }
    if ctx.check {
        return Err(ModuleError::new(format!(
            "{PACKAGE} must be installed to use check mode. If run normally this module can auto-install it."
        )));
    }
    let mut warnings = Vec::new();
    if update_cache == Some(false) {
        warnings.push(format!(
            "Auto-installing missing dependency without updating cache: {PACKAGE}"
        ));
    } else {
        warnings.push(format!(
            "Updating cache and auto-installing missing dependency: {PACKAGE}"
        ));
        let out = run(ctx, vec!["apt-get".into(), "update".into()], APT_ENV)?;
        if out.rc != 0 {
            return Err(failed("apt-get update", &out));
        }
    }
    let install: Vec<String> = ["apt-get", "install", "--no-install-recommends", PACKAGE]
        .into_iter()
        .chain(["-y", "-q"])
        .map(str::to_owned)
        .collect();
    let out = run(ctx, install, APT_ENV)?;
    if out.rc != 0 {
        return Err(failed(&format!("apt-get install {PACKAGE}"), &out));
    }
    if probe(ctx)? != Bindings::Found {
        return Err(ModuleError::new(format!(
            "{PACKAGE} must be installed and visible from {}.",
            INTERPRETERS[0]
        )));
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{DownloadError, Downloader};
    use crate::rootfs::RootFs;
    use crate::target::{CmdOutput, Target, TargetError};
    use std::cell::RefCell;

    struct NoDownloads;

    impl Downloader for NoDownloads {
        fn fetch(&self, url: &str, _: Option<&str>) -> Result<std::path::PathBuf, DownloadError> {
            Err(DownloadError {
                message: format!("no download of {url} here"),
                status: None,
            })
        }
    }

    /// An image whose Python imports `apt` once `apt-get install` ran; records the commands.
    struct Image {
        fs: RootFs,
        ran: RefCell<Vec<String>>,
    }

    impl Target for Image {
        fn run(&self, cmd: &Cmd) -> Result<CmdOutput, TargetError> {
            let line = cmd.argv.join(" ");
            let installed = self
                .ran
                .borrow()
                .iter()
                .any(|l| l.starts_with("apt-get install"));
            let rc = i32::from(line.ends_with("import apt") && !installed);
            self.ran.borrow_mut().push(line);
            Ok(CmdOutput {
                rc,
                ..CmdOutput::default()
            })
        }
        fn fs(&self) -> &RootFs {
            &self.fs
        }
    }

    /// Runs `ensure` on an image with the given interpreters; its result and the commands run.
    fn ensure_on(
        pythons: &[&str],
        check: bool,
        update_cache: Option<bool>,
    ) -> (Result<Vec<String>, ModuleError>, Vec<String>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("usr/bin")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("scratch")).expect("mkdir");
        for python in pythons {
            std::fs::write(root.join(python.trim_start_matches('/')), "").expect("python");
        }
        let image = Image {
            fs: RootFs::new(&root, &dir.path().join("scratch")).expect("fs"),
            ran: RefCell::new(Vec::new()),
        };
        let ctx = ModuleCtx {
            target: &image,
            check,
            diff: false,
            project_root: &root,
            local_file: None,
            rendered: None,
            env: &[],
            pkg_mgr: "apt",
            downloads: &NoDownloads,
            controller: None,
        };
        let result = ensure(&ctx, update_cache);
        (result, image.ran.into_inner())
    }

    #[test]
    fn an_image_without_python_is_left_alone_even_in_check_mode() {
        let (result, ran) = ensure_on(&[], true, None);
        assert!(result.expect("nothing to do").is_empty());
        assert!(ran.is_empty(), "{ran:?}");
    }

    #[test]
    fn check_mode_fails_as_ansibles_module_does_without_the_bindings() {
        let (result, ran) = ensure_on(&["/usr/bin/python3"], true, None);
        let error = result.expect_err("check mode cannot install");
        assert!(error
            .msg
            .contains("If run normally this module can auto-install it."));
        assert_eq!(ran, ["/usr/bin/python3 -c import apt"]);
    }

    #[test]
    fn the_bindings_are_installed_after_an_update_unless_the_task_says_no_update() {
        let (result, ran) = ensure_on(&["/usr/bin/python3"], false, None);
        assert_eq!(result.expect("installed").len(), 1);
        assert_eq!(ran[1], "apt-get update");
        assert!(ran[2].starts_with("apt-get install --no-install-recommends python3-apt"));
        let (result, ran) = ensure_on(&["/usr/bin/python3"], false, Some(false));
        assert!(result.expect("installed")[0].contains("without updating cache"));
        assert!(ran.iter().all(|l| l != "apt-get update"), "{ran:?}");
    }
}
