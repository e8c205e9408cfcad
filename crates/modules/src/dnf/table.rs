//! The transaction dnf shows before it asks (`--assumeno` in check mode), read back as the
//! packages it would install and remove, named as dnf names them (`name-[epoch:]version-release.arch`).

use std::collections::BTreeSet;

/// What a transaction would do: packages installed (new, upgraded to, downgraded to,
/// reinstalled) and removed (removed, or the versions an upgrade or downgrade replaces).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Planned {
    /// `Installed: ` lines.
    pub installed: BTreeSet<String>,
    /// `Removed: ` lines.
    pub removed: BTreeSet<String>,
}

/// Reads dnf's transaction table; `before` is the installed packages (to name what an
/// upgrade or downgrade replaces).
pub fn read(said: &str, before: &BTreeSet<String>) -> Planned {
    let mut planned = Planned::default();
    let mut section = "";
    let mut pending = String::new();
    for line in said.lines() {
        if !line.starts_with(' ') {
            section = line.trim_end_matches(':');
            pending.clear();
            continue;
        }
        pending.push_str(line);
        pending.push(' ');
        let words: Vec<&str> = pending.split_whitespace().collect();
        if words.len() < 3 {
            // A long name wraps: the rest of its row is on the next line.
            continue;
        }
        let (name, arch, version) = (words[0].to_owned(), words[1].to_owned(), words[2]);
        let nevra = format!("{name}-{version}.{arch}");
        pending.clear();
        if section.starts_with("Removing") {
            planned.removed.insert(nevra);
        } else if section.starts_with("Installing") || section == "Reinstalling" {
            planned.installed.insert(nevra);
        } else if section == "Upgrading" || section == "Downgrading" {
            let prefix = format!("{name}-");
            planned.removed.extend(
                before
                    .iter()
                    .filter(|p| {
                        p.strip_prefix(&prefix)
                            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
                    })
                    .filter(|p| p.ends_with(&format!(".{arch}")))
                    .cloned(),
            );
            planned.installed.insert(nevra);
        }
    }
    planned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_table_reads_as_what_it_installs_and_removes() {
        let said = "Dependencies resolved.\n===\n Package   Architecture  Version  Repository  Size\n===\n\
Installing:\n el-app   noarch   1.0-1   el   6.3 k\nUpgrading:\n el-tool  noarch  2.0-1  el  6.0 k\n\
Installing dependencies:\n a-package-with-a-very-long-name-that-wraps\n          x86_64   1:2.0-3   el   1 M\n\
Removing dependent packages:\n el-old  noarch  0.1-1  @System  0\n\nTransaction Summary\n===\nInstall  2 Packages\n";
        let before: BTreeSet<String> = ["el-tool-1.0-1.noarch", "el-toolbox-1.0-1.noarch"]
            .map(str::to_owned)
            .into();
        let planned = read(said, &before);
        let installed: Vec<&str> = planned.installed.iter().map(String::as_str).collect();
        assert_eq!(
            installed,
            [
                "a-package-with-a-very-long-name-that-wraps-1:2.0-3.x86_64",
                "el-app-1.0-1.noarch",
                "el-tool-2.0-1.noarch"
            ]
        );
        let removed: Vec<&str> = planned.removed.iter().map(String::as_str).collect();
        assert_eq!(removed, ["el-old-0.1-1.noarch", "el-tool-1.0-1.noarch"]);
    }
}
