//! The Python that runs Ansible on the machine running the build: the `ansible` command's
//! interpreter (its `#!` line) first, then the system's. Ansible's own code runs with it: the
//! module_utils staged for modules imgbuild does not implement, and the Python filter and test
//! plugins of a project.

/// The Pythons to try, in order.
pub fn interpreters() -> Vec<String> {
    let ansible_python = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("ansible"))
        .find(|exe| exe.is_file())
        .and_then(|exe| std::fs::read_to_string(exe).ok())
        .and_then(|text| {
            let line = text.lines().next()?.strip_prefix("#!")?.trim().to_owned();
            line.split_whitespace().last().map(str::to_owned)
        });
    ansible_python
        .into_iter()
        .chain(["/usr/bin/python3".to_owned(), "python3".to_owned()])
        .collect()
}

/// This run's folder for Ansible's controller temporary files, when the run made one.
static RUN_LOCAL_TEMP: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Makes this run's folder for Ansible's controller temporary files (when the site sets no
/// `ANSIBLE_LOCAL_TEMP`), in the machine's temporary folder: each Python that imports
/// ansible-core makes an `ansible-local-*` folder in it, which a helper stopped with the build
/// never removes. The caller holds the folder for the whole run; dropping it removes them all.
pub fn hold_local_temp() -> Option<tempfile::TempDir> {
    if std::env::var_os("ANSIBLE_LOCAL_TEMP").is_some() {
        return None;
    }
    let folder = tempfile::Builder::new()
        .prefix("imgbuild-ansible-")
        .tempdir()
        .ok()?;
    RUN_LOCAL_TEMP.set(folder.path().to_owned()).ok()?;
    Some(folder)
}

/// Where Ansible keeps its controller's temporary files, when the site sets no
/// `ANSIBLE_LOCAL_TEMP`: this run's folder ([`hold_local_temp`]), or else the machine's
/// temporary folder. Ansible's default is under `$HOME`, which a service account, a CI job or
/// `runuser` may not have; importing ansible-core makes that folder, and fails without it.
pub fn local_temp() -> Option<(&'static str, std::path::PathBuf)> {
    std::env::var_os("ANSIBLE_LOCAL_TEMP").is_none().then(|| {
        let folder = RUN_LOCAL_TEMP.get().cloned();
        (
            "ANSIBLE_LOCAL_TEMP",
            folder.unwrap_or_else(std::env::temp_dir),
        )
    })
}
