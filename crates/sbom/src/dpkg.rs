//! dpkg's database in the image: `/var/lib/dpkg/status` (every package with its version,
//! architecture and source) and `/var/lib/dpkg/info/*.list` (which package put which file).

use std::collections::BTreeMap;

use verify::Snapshot;

/// The status file.
pub const STATUS: &str = "/var/lib/dpkg/status";
const INFO: &str = "/var/lib/dpkg/info";

/// One package dpkg has installed (or half-installed: anything but `not-installed` and
/// `config-files`, as `dpkg-query -W` shows them with a version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// `Package:`.
    pub name: String,
    /// `Version:`.
    pub version: String,
    /// `Architecture:`.
    pub arch: String,
    /// `Source:` (its name, and its version when it differs), else the package's name.
    pub source: String,
    /// The third word of `Status:` (`installed`, `half-configured`, ...).
    pub state: String,
}

/// The packages of the status text, in its order.
pub fn parse_status(text: &str) -> Vec<Package> {
    let mut packages = Vec::new();
    for paragraph in text.split("\n\n") {
        let field = |key: &str| {
            paragraph.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k == key).then(|| v.trim().to_owned())
            })
        };
        let (Some(name), Some(version)) = (field("Package"), field("Version")) else {
            continue;
        };
        let state = field("Status")
            .and_then(|s| s.split_whitespace().nth(2).map(str::to_owned))
            .unwrap_or_default();
        if state == "not-installed" || state == "config-files" {
            continue;
        }
        packages.push(Package {
            source: field("Source").unwrap_or_else(|| name.clone()),
            arch: field("Architecture").unwrap_or_default(),
            name,
            version,
            state,
        });
    }
    packages
}

/// The packages of the image's dpkg database; `None` when it has none.
pub fn packages(snapshot: &Snapshot) -> Option<Vec<Package>> {
    snapshot.read_text(STATUS).map(|text| parse_status(&text))
}

/// Which package owns each file under a folder that `keep` accepts, by the file's path with
/// symlinks followed inside the image (a merged-/usr image lists `/lib/modules/...` that is
/// really `/usr/lib/modules/...`).
pub fn owners(snapshot: &Snapshot, keep: impl Fn(&str) -> bool) -> BTreeMap<String, String> {
    let mut owners = BTreeMap::new();
    for list in snapshot.list(INFO) {
        let Some(package) = list.strip_suffix(".list") else {
            continue;
        };
        let package = package.split(':').next().unwrap_or(package);
        let Some(text) = snapshot.read_text(&format!("{INFO}/{list}")) else {
            continue;
        };
        for line in text.lines().filter(|l| keep(l)) {
            let path = snapshot.resolve(line).unwrap_or_else(|| line.to_owned());
            owners.insert(path, package.to_owned());
        }
    }
    owners
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_packages_are_read_and_removed_ones_left_out() {
        let text = "Package: libc6\nStatus: install ok installed\nArchitecture: amd64\nSource: glibc\nVersion: 2.36-9+deb12u4\nDescription: x\n continued: line\n\nPackage: gone\nStatus: deinstall ok config-files\nVersion: 1\n\nPackage: bash\nStatus: install ok installed\nArchitecture: amd64\nVersion: 5.2.15-2+b2\n";
        let packages = parse_status(text);
        assert_eq!(packages.len(), 2);
        assert_eq!(packages[0].source, "glibc");
        assert_eq!(packages[1].source, "bash");
        assert_eq!(packages[1].version, "5.2.15-2+b2");
    }
}
