//! Which file `modprobe NAME` would load in the image, resolved as kmod resolves it: the
//! `alias` lines of modprobe.d first, then `modules.dep` (where depmod already chose among
//! copies by the depmod.d search order), then `install` commands, then `modules.alias`, then
//! `modules.builtin`. An `install` line for the resolved name runs instead of loading it.

use std::collections::{BTreeMap, BTreeSet};

use crate::snapshot::Snapshot;

/// The folders modprobe.d files are read from; a file name in an earlier folder hides the same
/// name in a later one.
const MODPROBE_DIRS: &[&str] = &[
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/local/lib/modprobe.d",
    "/lib/modprobe.d",
    "/usr/lib/modprobe.d",
];

/// What `modprobe NAME` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Loads this file (relative to `/lib/modules/K/`), reached through these aliases.
    File {
        /// The module file, relative to the kernel's module folder.
        file: String,
        /// The names it was reached through (`nvidia-peermem` → `nvidia-current-peermem`).
        via: Vec<String>,
    },
    /// Part of the kernel itself (`modules.builtin`).
    Builtin,
    /// An `install` line of modprobe.d runs this command instead.
    Install(String),
    /// Nothing of that name.
    Missing,
}

/// Module names as kmod compares them: `-` and `_` are the same.
pub fn canonical(name: &str) -> String {
    name.replace('-', "_")
}

/// The module name of a module file (`extra/nvidia-peermem.ko.xz` → `nvidia_peermem`).
pub fn name_of_file(file: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    canonical(base.split(".ko").next().unwrap_or(base))
}

/// The modprobe configuration and module indexes of one kernel in one image.
#[derive(Debug, Default)]
pub struct Resolver {
    aliases: Vec<(String, String)>,
    installs: BTreeMap<String, String>,
    blacklist: BTreeSet<String>,
    dep: BTreeMap<String, String>,
    module_aliases: Vec<(String, String)>,
    builtin: BTreeSet<String>,
}

/// modprobe.d files in the order kmod reads them: by file name, the first folder's copy winning.
fn config_files(image: &Snapshot) -> Vec<String> {
    let mut by_name: BTreeMap<String, String> = BTreeMap::new();
    for dir in MODPROBE_DIRS {
        for name in image.list(dir) {
            if name.ends_with(".conf") {
                by_name
                    .entry(name.clone())
                    .or_insert_with(|| format!("{dir}/{name}"));
            }
        }
    }
    by_name.into_values().collect()
}

/// Lines of a config file with comments dropped and `\` continuations joined.
fn config_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            continue;
        }
        pending.push_str(line);
        let whole = std::mem::take(&mut pending);
        if !whole.trim_start().starts_with('#') && !whole.trim().is_empty() {
            lines.push(whole);
        }
    }
    lines
}

/// Whether a kmod alias pattern (fnmatch: `*`, `?`, `[...]`) matches `name`.
fn pattern_matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some(('[', rest)) => {
                let Some(close) = rest.iter().position(|c| *c == ']') else {
                    return n.first() == Some(&'[') && go(rest, &n[1..]);
                };
                let Some((c, tail)) = n.split_first() else {
                    return false;
                };
                let set = &rest[..close];
                let (negate, set) = match set.split_first() {
                    Some(('!' | '^', s)) => (true, s),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= (set[i]..=set[i + 2]).contains(c);
                        i += 3;
                    } else {
                        hit |= set[i] == *c;
                        i += 1;
                    }
                }
                hit != negate && go(&rest[close + 1..], tail)
            }
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

impl Resolver {
    /// Reads the image's modprobe.d and the module indexes of `kernel`.
    pub fn new(image: &Snapshot, kernel: &str) -> Resolver {
        let mut resolver = Resolver::default();
        for file in config_files(image) {
            let text = image.read_text(&file).unwrap_or_default();
            for line in config_lines(&text) {
                let words: Vec<&str> = line.split_whitespace().collect();
                match words.as_slice() {
                    ["alias", pattern, target, ..] => resolver
                        .aliases
                        .push((canonical(pattern), canonical(target))),
                    ["install", name, command @ ..] => {
                        resolver.installs.insert(canonical(name), command.join(" "));
                    }
                    ["blacklist", name, ..] => {
                        resolver.blacklist.insert(canonical(name));
                    }
                    _ => {}
                }
            }
        }
        let index = |name: &str| {
            image
                .read_text(&format!("/lib/modules/{kernel}/{name}"))
                .unwrap_or_default()
        };
        for line in index("modules.dep").lines() {
            if let Some((file, _)) = line.split_once(':') {
                let file = file.trim().to_owned();
                resolver.dep.entry(name_of_file(&file)).or_insert(file);
            }
        }
        for line in index("modules.alias").lines() {
            if let ["alias", pattern, module] = line.split_whitespace().collect::<Vec<_>>()[..] {
                resolver
                    .module_aliases
                    .push((canonical(pattern), canonical(module)));
            }
        }
        resolver.builtin = index("modules.builtin").lines().map(name_of_file).collect();
        resolver
    }

    /// Whether `modules.dep` was there (and listed anything).
    pub fn has_modules_dep(&self) -> bool {
        !self.dep.is_empty()
    }

    /// The file `modules.dep` lists for a module name.
    pub fn dep_file(&self, name: &str) -> Option<&str> {
        self.dep.get(&canonical(name)).map(String::as_str)
    }

    /// Whether a modprobe.d `blacklist` line names it (which stops loading by alias only).
    pub fn is_blacklisted(&self, name: &str) -> bool {
        self.blacklist.contains(&canonical(name))
    }

    /// What `modprobe name` does.
    pub fn resolve(&self, name: &str) -> Resolution {
        self.resolve_from(&canonical(name), Vec::new(), true)
    }

    fn resolve_from(&self, name: &str, mut via: Vec<String>, follow_install: bool) -> Resolution {
        via.push(name.to_owned());
        // A modprobe.d alias first (the first matching line).
        let target = self
            .aliases
            .iter()
            .find(|(pattern, _)| pattern_matches(pattern, name))
            .map(|(_, target)| target.clone());
        let target = match target {
            Some(t) if t != name => {
                via.push(t.clone());
                t
            }
            _ => name.to_owned(),
        };
        if let Some(command) = self.installs.get(&target).filter(|_| follow_install) {
            // modprobe runs the command instead; what it loads is the module the command's
            // own `modprobe -i` (or last `modprobe`) names, found without install lines.
            return match install_target(command) {
                Some(module) if module == target => self.resolve_from(&module, via, false),
                Some(module) => {
                    via.push(format!("install: {command}"));
                    self.resolve_from(&module, via, false)
                }
                None => Resolution::Install(command.clone()),
            };
        }
        if let Some(file) = self.dep.get(&target) {
            return Resolution::File {
                file: file.clone(),
                via,
            };
        }
        if let Some((_, module)) = self
            .module_aliases
            .iter()
            .find(|(pattern, _)| pattern_matches(pattern, &target))
        {
            if let Some(file) = self.dep.get(module) {
                via.push(module.clone());
                return Resolution::File {
                    file: file.clone(),
                    via,
                };
            }
            if self.builtin.contains(module) {
                return Resolution::Builtin;
            }
        }
        if self.builtin.contains(&target) {
            return Resolution::Builtin;
        }
        Resolution::Missing
    }
}

/// The module an `install` command loads: the one its `modprobe -i` names (the last such),
/// else its last `modprobe`'s module; none when the command runs no modprobe (`/bin/false`).
fn install_target(command: &str) -> Option<String> {
    let mut ignoring = None;
    let mut last = None;
    for part in command.split([';', '&', '|']) {
        let words: Vec<&str> = part.split_whitespace().collect();
        let Some(at) = words
            .iter()
            .position(|w| w.rsplit('/').next() == Some("modprobe"))
        else {
            continue;
        };
        let args = &words[at + 1..];
        if args.iter().any(|a| matches!(*a, "-r" | "--remove")) {
            continue;
        }
        let Some(module) = args
            .iter()
            .find(|a| !a.starts_with('-') && !a.starts_with('$'))
        else {
            continue;
        };
        if args.iter().any(|a| matches!(*a, "-i" | "--ignore-install")) {
            ignoring = Some(canonical(module));
        }
        last = Some(canonical(module));
    }
    ignoring.or(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(files: &[(&str, &str)]) -> Snapshot {
        let mut s = Snapshot::default();
        for (path, text) in files {
            s.add_file(path, text.len() as u64, Some(text.as_bytes()))
                .expect("add");
        }
        s
    }

    const K: &str = "/lib/modules/6.1.0-50-amd64";

    #[test]
    fn a_modprobe_d_alias_leads_to_debians_renamed_module() {
        let s = image(&[
            (
                "/etc/modprobe.d/nvidia.conf",
                "# Debian\nalias nvidia-peermem nvidia-current-peermem\n",
            ),
            (
                &format!("{K}/modules.dep"),
                "updates/dkms/nvidia-current-peermem.ko: updates/dkms/nvidia-current.ko\n\
                 updates/dkms/nvidia-current.ko:\nextra/nvidia-peermem.ko:\n",
            ),
        ]);
        let r = Resolver::new(&s, "6.1.0-50-amd64");
        assert_eq!(
            r.resolve("nvidia-peermem"),
            Resolution::File {
                file: "updates/dkms/nvidia-current-peermem.ko".into(),
                via: vec!["nvidia_peermem".into(), "nvidia_current_peermem".into()],
            }
        );
    }

    #[test]
    fn debians_install_lines_lead_to_the_renamed_modules() {
        let s = image(&[
            (
                "/etc/nvidia/current/nvidia-modprobe.conf",
                "install nvidia modprobe -i nvidia-current $CMDLINE_OPTS\n\
                 install nvidia-peermem modprobe nvidia ; modprobe -i nvidia-current-peermem $CMDLINE_OPTS\n\
                 remove nvidia modprobe -r -i nvidia-drm nvidia-modeset nvidia-peermem nvidia-uvm nvidia\n",
            ),
            (
                &format!("{K}/modules.dep"),
                "updates/dkms/nvidia-current-peermem.ko: updates/dkms/nvidia-current.ko\n\
                 updates/dkms/nvidia-current.ko:\n",
            ),
        ]);
        let mut s = s;
        // Reached through a chain of links, as Debian's alternatives make it.
        s.add_symlink(
            "/etc/modprobe.d/nvidia.conf",
            "/etc/alternatives/nvidia-modprobe.conf",
        );
        s.add_symlink(
            "/etc/alternatives/nvidia-modprobe.conf",
            "/etc/nvidia/current/nvidia-modprobe.conf",
        );
        let r = Resolver::new(&s, "6.1.0-50-amd64");
        assert!(matches!(
            r.resolve("nvidia-peermem"),
            Resolution::File { file, .. } if file == "updates/dkms/nvidia-current-peermem.ko"
        ));
        assert!(matches!(
            r.resolve("nvidia"),
            Resolution::File { file, .. } if file == "updates/dkms/nvidia-current.ko"
        ));
        assert_eq!(install_target("/bin/false"), None);
    }

    #[test]
    fn install_lines_aliases_files_and_builtins() {
        let s = image(&[
            (
                "/usr/lib/modprobe.d/x.conf",
                "install mlx5_core /bin/true\n",
            ),
            // The same file name in /etc hides /usr/lib's.
            ("/etc/modprobe.d/x.conf", "blacklist nouveau\n"),
            (
                "/lib/modprobe.d/y.conf",
                "install ib_core /sbin/modprobe --ignore-install ib_core\n",
            ),
            (&format!("{K}/modules.dep"), "kernel/ib_core.ko:\n"),
            (
                &format!("{K}/modules.alias"),
                "alias pci:v000010DEd* nouveau\nalias fs-ext4 ext4\n",
            ),
            (&format!("{K}/modules.builtin"), "kernel/fs/ext4/ext4.ko\n"),
        ]);
        let r = Resolver::new(&s, "6.1.0-50-amd64");
        assert!(matches!(r.resolve("mlx5_core"), Resolution::Missing));
        assert!(matches!(r.resolve("ib-core"), Resolution::File { .. }));
        assert_eq!(r.resolve("fs-ext4"), Resolution::Builtin);
        assert!(r.is_blacklisted("nouveau"));
        assert!(pattern_matches("pci:v000010ded*", "pci:v000010ded00001234"));
        assert!(pattern_matches("a[0-9]?", "a7x"));
        assert!(!pattern_matches("a[!0-9]", "a7"));
    }
}
