//! The kernel settings that turn unprivileged user namespaces off.

use crate::error::RootlessError;

/// Each setting, the value that turns user namespaces off, and the one that allows them.
const SETTINGS: [(&str, &str, &str, &str); 3] = [
    // Debian's and Ubuntu's own switch.
    (
        "/proc/sys/kernel/unprivileged_userns_clone",
        "kernel.unprivileged_userns_clone",
        "0",
        "1",
    ),
    // EL's: zero namespaces allowed.
    (
        "/proc/sys/user/max_user_namespaces",
        "user.max_user_namespaces",
        "0",
        "28633",
    ),
    // Ubuntu 24.04's AppArmor restriction.
    (
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "kernel.apparmor_restrict_unprivileged_userns",
        "1",
        "0",
    ),
];

/// Refuses when a setting turns user namespaces off (a setting the kernel lacks is no refusal).
pub fn check_user_namespaces() -> Result<(), RootlessError> {
    check_in(std::path::Path::new("/"))
}

fn check_in(root: &std::path::Path) -> Result<(), RootlessError> {
    for (file, setting, off, wanted) in SETTINGS {
        let path = root.join(file.trim_start_matches('/'));
        let Ok(value) = std::fs::read_to_string(path) else {
            continue;
        };
        if value.trim() == off {
            return Err(RootlessError::NamespacesOff {
                setting,
                value: value.trim().to_owned(),
                wanted,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_switch_that_is_off_is_named() {
        let dir = tempfile::tempdir().expect("tmp");
        assert!(check_in(dir.path()).is_ok(), "no setting: no refusal");
        let write = |file: &str, value: &str| {
            let path = dir.path().join(file.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(path, value).expect("write");
        };
        write("/proc/sys/user/max_user_namespaces", "0\n");
        let message = check_in(dir.path()).expect_err("off").to_string();
        assert!(
            message.contains("user.max_user_namespaces is 0"),
            "{message}"
        );
        assert!(
            message.contains("sysctl -w user.max_user_namespaces=28633"),
            "{message}"
        );
        write("/proc/sys/user/max_user_namespaces", "100\n");
        write(
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1\n",
        );
        let message = check_in(dir.path()).expect_err("apparmor").to_string();
        assert!(
            message.contains("apparmor_restrict_unprivileged_userns=0"),
            "{message}"
        );
    }
}
