//! The build's controller folder: what a task delegated to `localhost` works in. Roles
//! download and unpack a release on the controller (`delegate_to: localhost`, then `copy:
//! src: /tmp/...` into the host); an image build runs nothing on the machine that builds it,
//! so the controller is a scratch folder of the build, with the files those tasks write and
//! nothing of the building machine. It goes when the build ends.

use std::path::PathBuf;

use crate::modules::ModuleError;
use crate::target::DirTarget;

/// The folder and the target its tasks act on.
pub(crate) struct ControllerFolder {
    /// Removed when the build ends.
    _dir: tempfile::TempDir,
    target: DirTarget,
}

impl ControllerFolder {
    /// A new, empty controller folder under the temporary folder (`TMPDIR`), with a root user
    /// and group for modules that look owners up.
    pub(crate) fn new() -> Result<Self, ModuleError> {
        let failed = |e: std::io::Error| {
            ModuleError::new(format!("making the build's controller folder: {e}"))
        };
        let dir = tempfile::Builder::new()
            .prefix("imgbuild-controller-")
            .tempdir()
            .map_err(failed)?;
        let root: PathBuf = dir.path().join("root");
        let scratch = dir.path().join("tmp");
        for folder in [root.join("etc"), root.join("tmp"), scratch.clone()] {
            std::fs::create_dir_all(folder).map_err(failed)?;
        }
        std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")
            .and_then(|()| std::fs::write(root.join("etc/group"), "root:x:0:\n"))
            .map_err(failed)?;
        let target = DirTarget::new(&root, &scratch).map_err(failed)?;
        Ok(Self { _dir: dir, target })
    }

    /// The target a delegated task acts on.
    pub(crate) fn target(&self) -> &DirTarget {
        &self.target
    }
}
