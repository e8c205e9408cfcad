//! Facts known at plan time, from the recipe: the distribution from the `build_from` reference
//! (or debootstrap suite, or an explicit `facts:` map), and `ansible_kernel` = the pinned kernel.
//!
//! The build checks them against the rootfs's `/etc/os-release`, so they follow its
//! `ID`/`VERSION_ID` (Debian 12 is version `12`, Rocky 8.10 is `8.10`).

use indexmap::IndexMap;
use serde_json::{json, Value as Json};

/// The distribution an image is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distro {
    /// `Rocky`, `Ubuntu`, `Debian`, ...
    pub name: String,
    /// `8.10`, `22.04`, `12`.
    pub version: String,
}

struct Known {
    name: &'static str,
    family: &'static str,
    pkg_mgr: &'static str,
    /// Repository names (last path component of an image reference) for this distribution.
    repos: &'static [&'static str],
}

const KNOWN: &[Known] = &[
    Known {
        name: "Rocky",
        family: "RedHat",
        pkg_mgr: "dnf",
        repos: &["rockylinux", "rocky", "rockylinux-minimal"],
    },
    Known {
        name: "AlmaLinux",
        family: "RedHat",
        pkg_mgr: "dnf",
        repos: &["almalinux"],
    },
    Known {
        name: "RedHat",
        family: "RedHat",
        pkg_mgr: "dnf",
        repos: &["ubi8", "ubi9", "ubi"],
    },
    Known {
        name: "CentOS",
        family: "RedHat",
        pkg_mgr: "dnf",
        repos: &["centos", "stream9", "stream8"],
    },
    Known {
        name: "Ubuntu",
        family: "Debian",
        pkg_mgr: "apt",
        repos: &["ubuntu"],
    },
    Known {
        name: "Debian",
        family: "Debian",
        pkg_mgr: "apt",
        repos: &["debian"],
    },
];

/// Debian and Ubuntu suites debootstrap knows, with their distribution and version.
const SUITES: &[(&str, &str, &str)] = &[
    ("bullseye", "Debian", "11"),
    ("bookworm", "Debian", "12"),
    ("trixie", "Debian", "13"),
    ("focal", "Ubuntu", "20.04"),
    ("jammy", "Ubuntu", "22.04"),
    ("noble", "Ubuntu", "24.04"),
];

fn known(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name.eq_ignore_ascii_case(name))
}

/// The distribution named by an image reference such as `docker.io/rockylinux/rockylinux:8.10`.
pub fn distro_from_reference(reference: &str) -> Option<Distro> {
    let reference = reference.split('@').next().unwrap_or(reference);
    let reference = reference.strip_prefix("docker://").unwrap_or(reference);
    let last = reference.rsplit('/').next()?;
    let (repo, tag) = last.split_once(':')?;
    let distro = KNOWN.iter().find(|k| k.repos.contains(&repo))?;
    if let Some((_, name, version)) = SUITES.iter().find(|(suite, _, _)| *suite == tag) {
        return (*name == distro.name).then(|| Distro {
            name: (*name).into(),
            version: (*version).into(),
        });
    }
    // Rocky's dated tags (9.5.20241118) and patch tags keep major.minor; Debian keeps major.
    let numeric: Vec<&str> = tag
        .split(['.', '-'])
        .take_while(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let keep = if distro.name == "Debian" { 1 } else { 2 };
    let version = numeric
        .iter()
        .take(keep)
        .copied()
        .collect::<Vec<_>>()
        .join(".");
    (!version.is_empty()).then(|| Distro {
        name: distro.name.into(),
        version,
    })
}

/// The distribution of a debootstrap suite (`bookworm`).
pub fn distro_from_suite(suite: &str) -> Option<Distro> {
    SUITES
        .iter()
        .find(|(s, _, _)| *s == suite)
        .map(|(_, name, version)| Distro {
            name: (*name).into(),
            version: (*version).into(),
        })
}

/// Facts Ansible reads from the host's Python and userspace (without `ansible_`): an image has
/// them, but only the image knows them, so the plan leaves them to the build, which gathers
/// them with the image's own interpreter when its first role runs.
pub const IMAGE_FACTS: &[&str] = &[
    "python",
    "python_version",
    "userspace_bits",
    "userspace_architecture",
    "selinux",
    "selinux_python_present",
];

/// Facts Ansible gathers from a running host that an image does not have: hardware, memory,
/// network. The name without `ansible_` when `name` is one.
pub fn host_only(name: &str) -> Option<&str> {
    const PREFIXES: &[&str] = &[
        "product_",
        "memtotal",
        "memfree",
        "memory_mb",
        "swaptotal",
        "swapfree",
        "processor",
        "default_ipv",
        "all_ipv",
        "interfaces",
        "hostname",
        "fqdn",
        "nodename",
        "domain",
        "mounts",
        "devices",
        "device_links",
        "machine_id",
        "bios_",
        "board_",
        "chassis_",
        "system_vendor",
        "uptime_seconds",
        "eth",
        "ens",
        "eno",
        "enp",
        "ib",
        "lo",
        "dns",
        "lvm",
        "date_time",
        "cmdline",
        "proc_cmdline",
        "apparmor",
    ];
    let short = name.strip_prefix("ansible_")?;
    PREFIXES
        .iter()
        .any(|p| short.starts_with(p))
        .then_some(short)
}

/// The `ansible_*` facts for `distro`, with `ansible_kernel` taken from `kernel` (which may be
/// a template such as `{{ kernel_version }}`), each also under `ansible_facts`.
pub fn facts_for(
    distro: &Distro,
    kernel: Json,
    overrides: &IndexMap<String, Json>,
) -> IndexMap<String, Json> {
    let info = known(&distro.name);
    let major = distro
        .version
        .split('.')
        .next()
        .unwrap_or(&distro.version)
        .to_owned();
    let release = SUITES
        .iter()
        .find(|(_, name, version)| *name == distro.name && *version == distro.version)
        .map(|(suite, _, _)| *suite)
        .unwrap_or("");
    let mut facts: IndexMap<String, Json> = IndexMap::new();
    facts.insert(
        "distribution".into(),
        json!(info.map(|k| k.name).unwrap_or(&distro.name)),
    );
    facts.insert("distribution_version".into(), json!(distro.version));
    facts.insert("distribution_major_version".into(), json!(major));
    facts.insert("distribution_release".into(), json!(release));
    facts.insert(
        "os_family".into(),
        json!(info.map(|k| k.family).unwrap_or(&distro.name)),
    );
    facts.insert(
        "pkg_mgr".into(),
        json!(info.map(|k| k.pkg_mgr).unwrap_or("unknown")),
    );
    facts.insert("architecture".into(), json!("x86_64"));
    facts.insert("machine".into(), json!("x86_64"));
    facts.insert("system".into(), json!("Linux"));
    facts.insert("service_mgr".into(), json!("systemd"));
    facts.insert("kernel".into(), kernel);
    // What Ansible gathers inside a container, where sites run their image playbooks today:
    // roles skip what only a booted host can do (set its running hostname, load a module).
    facts.insert("virtualization_type".into(), json!("container"));
    facts.insert("virtualization_role".into(), json!("guest"));
    facts.insert("virtualization_tech_guest".into(), json!(["container"]));
    facts.insert("virtualization_tech_host".into(), json!([]));
    // Local facts (/etc/ansible/facts.d) of a fresh image: none yet.
    facts.insert("local".into(), json!({}));
    // Tasks run as root inside the image (the chroot connection's user).
    facts.insert("user_id".into(), json!("root"));
    facts.insert("user_uid".into(), json!(0));
    facts.insert("user_gid".into(), json!(0));
    facts.insert("user_gecos".into(), json!("root"));
    facts.insert("user_dir".into(), json!("/root"));
    facts.insert("user_shell".into(), json!("/bin/bash"));
    // The environment every task's command runs with in the sandbox (engine::sandbox's,
    // without the build's own shims in PATH), where Ansible's chroot connection passes on
    // the controller's.
    facts.insert(
        "env".into(),
        json!({
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "PATH": crate::modules::target::BASE_PATH,
            "SYSTEMD_IN_CHROOT": "1",
            "container": "imgbuild",
        }),
    );
    for (name, value) in overrides {
        let name = name.strip_prefix("ansible_").unwrap_or(name);
        facts.insert(name.to_owned(), value.clone());
    }
    let mut out: IndexMap<String, Json> = facts
        .iter()
        .map(|(k, v)| (format!("ansible_{k}"), v.clone()))
        .collect();
    out.insert(
        "ansible_facts".into(),
        Json::Object(facts.into_iter().collect()),
    );
    out
}

/// Whether imgbuild knows the family and package manager of this distribution.
pub fn is_known_distribution(name: &str) -> bool {
    known(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &str, version: &str) -> Option<Distro> {
        Some(Distro {
            name: name.into(),
            version: version.into(),
        })
    }

    #[test]
    fn references() {
        assert_eq!(
            distro_from_reference("docker.io/rockylinux/rockylinux:8.10"),
            d("Rocky", "8.10")
        );
        assert_eq!(
            distro_from_reference("quay.io/rockylinux/rockylinux:9.5.20241118"),
            d("Rocky", "9.5")
        );
        assert_eq!(distro_from_reference("ubuntu:22.04"), d("Ubuntu", "22.04"));
        assert_eq!(
            distro_from_reference("docker.io/library/debian:12.8"),
            d("Debian", "12")
        );
        assert_eq!(distro_from_reference("debian:bookworm"), d("Debian", "12"));
        assert_eq!(
            distro_from_reference("ubuntu:22.04@sha256:abc"),
            d("Ubuntu", "22.04")
        );
        assert_eq!(distro_from_reference("example/custom:1"), None);
        assert_eq!(distro_from_reference("ubuntu:latest"), None);
    }

    #[test]
    fn suites() {
        assert_eq!(distro_from_suite("bookworm"), d("Debian", "12"));
        assert_eq!(distro_from_suite("noble"), d("Ubuntu", "24.04"));
        assert_eq!(distro_from_suite("sid"), None);
    }

    #[test]
    fn facts_mirror_ansible_names() {
        let facts = facts_for(
            &Distro {
                name: "Rocky".into(),
                version: "9.5".into(),
            },
            json!("5.14.0"),
            &IndexMap::new(),
        );
        assert_eq!(facts["ansible_distribution"], json!("Rocky"));
        assert_eq!(facts["ansible_distribution_major_version"], json!("9"));
        assert_eq!(facts["ansible_os_family"], json!("RedHat"));
        assert_eq!(facts["ansible_pkg_mgr"], json!("dnf"));
        assert_eq!(facts["ansible_kernel"], json!("5.14.0"));
        assert_eq!(facts["ansible_env"]["HOME"], json!("/root"));
        assert!(facts["ansible_facts"]["env"]["PATH"]
            .as_str()
            .is_some_and(|p| p.ends_with(":/usr/bin:/sbin:/bin")));
        assert_eq!(facts["ansible_facts"]["distribution_version"], json!("9.5"));
        assert_eq!(
            facts["ansible_facts"]["virtualization_type"],
            json!("container")
        );
        assert_eq!(host_only("ansible_virtualization_type"), None);
    }
}
