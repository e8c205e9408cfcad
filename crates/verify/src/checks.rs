//! The checks of a good compute-node image (design.md §8), each with an id, a verdict and a
//! detail a person can act on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::modinfo::{is_module, read_module, Modinfo};

/// What the image should hold (from the recipe, the image's labels or the command line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expect {
    /// The pinned kernel; found from `/boot` when not given.
    pub kernel: Option<String>,
    /// `mofed_version`: MOFED checks run when set.
    pub mofed: Option<String>,
    /// `nvidia_version`: NVIDIA checks run when set.
    pub nvidia: Option<String>,
    /// The recipe builds an initramfs.
    pub initramfs: bool,
}

/// One check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Stable id.
    pub id: String,
    /// Passed.
    pub ok: bool,
    /// What was found, and what to do when it failed.
    pub detail: String,
}

/// A kernel module of the image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleRecord {
    /// Its path in the image.
    pub path: String,
    /// Its vermagic (empty when unreadable).
    pub vermagic: String,
    /// The modules it depends on.
    pub depends: Vec<String>,
}

/// All checks of an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The image (or folder) checked.
    pub image: String,
    /// The kernel the checks were made against.
    pub kernel: Option<String>,
    /// Every check passed.
    pub ok: bool,
    /// The checks.
    pub checks: Vec<Check>,
    /// Every kernel module found.
    pub modules: Vec<ModuleRecord>,
}

const MOFED_MODULES: &[&str] = &[
    "mlx5_core",
    "mlx5_ib",
    "ib_core",
    "ib_uverbs",
    "rdma_cm",
    "ib_ipoib",
];
const NVIDIA_MODULES: &[&str] = &["nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-peermem"];
const FOUR_GIB: u64 = 4 << 30;

fn check(id: &'static str, ok: bool, detail: impl Into<String>) -> Check {
    Check {
        id: id.to_owned(),
        ok,
        detail: detail.into(),
    }
}

/// A module's name from its file name (`nvidia-peermem.ko.xz` → `nvidia_peermem`).
fn module_name(file: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    let stem = base.split(".ko").next().unwrap_or(base);
    stem.replace('-', "_")
}

fn list_dir(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every file below `dir` (not following symlinks), relative to it.
fn walk(dir: &Path, rel: &Path, out: &mut Vec<(PathBuf, std::fs::Metadata)>) {
    for name in list_dir(&dir.join(rel)) {
        let rel_path = rel.join(&name);
        let Ok(meta) = std::fs::symlink_metadata(dir.join(&rel_path)) else {
            continue;
        };
        if meta.is_dir() {
            walk(dir, &rel_path, out);
        } else {
            out.push((rel_path, meta));
        }
    }
}

/// A path inside the rootfs, following symlinks inside it (absolute ones against the root).
fn resolve(root: &Path, path: &str, depth: usize) -> Option<PathBuf> {
    if depth > 16 {
        return None;
    }
    let mut current = PathBuf::from("/");
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        match *part {
            "." => continue,
            ".." => {
                current.pop();
                continue;
            }
            _ => {}
        }
        current.push(part);
        let host = root.join(current.strip_prefix("/").ok()?);
        let meta = std::fs::symlink_metadata(&host).ok()?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&host).ok()?;
            let target = target.to_string_lossy();
            let base = if target.starts_with('/') {
                String::new()
            } else {
                current.parent()?.to_string_lossy().into_owned()
            };
            let rest = parts[i + 1..].join("/");
            return resolve(root, &format!("{base}/{target}/{rest}"), depth + 1);
        }
    }
    Some(root.join(current.strip_prefix("/").ok()?))
}

/// `modules.dep`: module file (relative to `/lib/modules/K`) → its dependencies' files.
fn modules_dep(root: &Path, kernel: &str) -> Option<BTreeMap<String, Vec<String>>> {
    let text =
        std::fs::read_to_string(root.join("lib/modules").join(kernel).join("modules.dep")).ok()?;
    Some(
        text.lines()
            .filter_map(|line| {
                let (file, deps) = line.split_once(':')?;
                Some((
                    file.trim().to_owned(),
                    deps.split_whitespace().map(str::to_owned).collect(),
                ))
            })
            .collect(),
    )
}

/// Runs every check on the rootfs folder `root`.
pub fn verify(root: &Path, image: &str, expect: &Expect) -> Report {
    let mut checks = Vec::new();
    // One kernel.
    let vmlinuz: Vec<String> = list_dir(&root.join("boot"))
        .into_iter()
        .filter_map(|n| n.strip_prefix("vmlinuz-").map(str::to_owned))
        .collect();
    let module_dirs = list_dir(&root.join("lib/modules"));
    let kernel = expect
        .kernel
        .clone()
        .or_else(|| (vmlinuz.len() == 1).then(|| vmlinuz[0].clone()));
    let one_kernel = match &kernel {
        None => check("one_kernel", false, format!("expected exactly one /boot/vmlinuz-*, found {vmlinuz:?}; install exactly the pinned kernel (role kernel)")),
        Some(k) => {
            let mut problems = Vec::new();
            if vmlinuz != vec![k.clone()] {
                problems.push(format!("/boot has vmlinuz for {vmlinuz:?}, expected only {k}"));
            }
            if k.contains("+debug") {
                problems.push(format!("{k} is a debug kernel, which Warewulf does not pick"));
            }
            let others: Vec<&String> = module_dirs.iter().filter(|d| *d != k).collect();
            if !others.is_empty() {
                problems.push(format!(
                    "/lib/modules has {others:?} besides {k}: modules built for another kernel (often the build host's `uname -r`); build them with the pinned kernel's name and remove those folders"
                ));
            }
            if !module_dirs.contains(k) {
                problems.push(format!("/lib/modules/{k} is missing"));
            }
            if problems.is_empty() {
                check("one_kernel", true, format!("/boot/vmlinuz-{k} and /lib/modules/{k}, nothing else"))
            } else {
                check("one_kernel", false, problems.join("; "))
            }
        }
    };
    checks.push(one_kernel);
    let kernel_dir = kernel.as_ref().map(|k| root.join("lib/modules").join(k));
    // Every module of every /lib/modules folder, with its modinfo.
    let mut modules: Vec<(String, Result<Modinfo, String>)> = Vec::new();
    for dir in &module_dirs {
        let mut files = Vec::new();
        walk(
            &root.join("lib/modules").join(dir),
            Path::new(""),
            &mut files,
        );
        for (rel, _) in files {
            let name = rel.to_string_lossy().into_owned();
            if is_module(&name) {
                let info = read_module(&root.join("lib/modules").join(dir).join(&rel))
                    .map_err(|e| e.to_string());
                modules.push((format!("/lib/modules/{dir}/{name}"), info));
            }
        }
    }
    if let Some(k) = &kernel {
        let wrong: Vec<String> = modules
            .iter()
            .filter_map(|(path, info)| match info {
                Ok(info) if info.kernel() == Some(k.as_str()) => None,
                Ok(info) => Some(format!(
                    "{path} is built for {}",
                    info.kernel().unwrap_or("no kernel (no vermagic)")
                )),
                Err(e) => Some(format!("{path}: {e}")),
            })
            .collect();
        checks.push(if wrong.is_empty() {
            check("vermagic", true, format!("all {} modules are built for {k}", modules.len()))
        } else {
            let shown: Vec<&String> = wrong.iter().take(10).collect();
            check("vermagic", false, format!("{} modules are not built for {k}: {shown:?}; rebuild them with the pinned kernel (--kernel / --kernel-name {k})", wrong.len()))
        });
    }
    // modules.dep lists every module of the kernel.
    let dep = kernel.as_ref().and_then(|k| modules_dep(root, k));
    if let (Some(k), Some(dir)) = (&kernel, &kernel_dir) {
        match &dep {
            None => checks.push(check("modules_dep", false, format!("/lib/modules/{k}/modules.dep is missing; run depmod {k} after the last module is installed"))),
            Some(dep) => {
                // depmod lists one file per module name (the one modprobe loads); a copy it
                // shadows (an inbox module that MOFED overrides) is not listed, and need not be.
                let prefix = format!("/lib/modules/{k}/");
                let listed: BTreeSet<String> = dep.keys().map(|f| module_name(f)).collect();
                let _ = dir;
                let missing: Vec<String> = modules
                    .iter()
                    .filter_map(|(path, _)| path.strip_prefix(&prefix))
                    .filter(|rel| !listed.contains(&module_name(rel)))
                    .map(str::to_owned)
                    .collect();
                checks.push(if missing.is_empty() {
                    check("modules_dep", true, format!("modules.dep lists all {} modules", dep.len()))
                } else {
                    check("modules_dep", false, format!("modules.dep does not list {missing:?}: depmod {k} did not run after they were installed"))
                });
            }
        }
    }
    let by_name: BTreeMap<String, (String, Option<&Modinfo>)> = modules
        .iter()
        .filter(|(path, _)| {
            kernel
                .as_ref()
                .is_some_and(|k| path.starts_with(&format!("/lib/modules/{k}/")))
        })
        .map(|(path, info)| (module_name(path), (path.clone(), info.as_ref().ok())))
        .collect();
    // Module name → file, as modprobe would resolve it through modules.dep.
    let resolved: BTreeMap<String, String> = dep
        .as_ref()
        .map(|d| d.keys().map(|f| (module_name(f), f.clone())).collect())
        .unwrap_or_default();
    if let Some(version) = &expect.mofed {
        let not_mofed: Vec<String> = MOFED_MODULES
            .iter()
            .filter_map(|m| match resolved.get(*m) {
                Some(file) if file.starts_with("extra/") || file.starts_with("updates/") => None,
                Some(file) => Some(format!("{m} resolves to the inbox {file}")),
                None => Some(format!("{m} is missing")),
            })
            .collect();
        checks.push(if not_mofed.is_empty() {
            check("mofed_modules", true, format!("{} resolve to MOFED's copies in extra/", MOFED_MODULES.join(", ")))
        } else {
            check("mofed_modules", false, format!("{}; install MOFED with --add-kernel-support for the pinned kernel, then depmod", not_mofed.join("; ")))
        });
        let ofed_info = resolve(root, "/usr/bin/ofed_info", 0)
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        let wanted = format!("MLNX_OFED_LINUX-{version}");
        checks.push(if ofed_info.contains(&wanted) {
            check("ofed_info", true, format!("ofed_info -s reports {wanted}"))
        } else if ofed_info.is_empty() {
            check("ofed_info", false, "/usr/bin/ofed_info is missing: MOFED is not installed")
        } else {
            check("ofed_info", false, format!("ofed_info does not report {wanted}; the image has another MOFED than the recipe's mofed_version"))
        });
    }
    if expect.nvidia.is_some() {
        let missing: Vec<&str> = NVIDIA_MODULES
            .iter()
            .copied()
            .filter(|m| !by_name.contains_key(&m.replace('-', "_")))
            .collect();
        checks.push(if missing.is_empty() {
            check("nvidia_modules", true, format!("{} present", NVIDIA_MODULES.join(", ")))
        } else {
            check("nvidia_modules", false, format!("missing {missing:?}; install the NVIDIA driver with --kernel-name set to the pinned kernel"))
        });
        let peermem = by_name.get("nvidia_peermem").and_then(|(_, info)| *info);
        let depends: Vec<&str> = peermem.map(Modinfo::depends).unwrap_or_default();
        checks.push(if depends.contains(&"ib_core") {
            check("peermem_after_mofed", true, "nvidia-peermem depends on ib_core: built against MOFED's RDMA API")
        } else if peermem.is_some() {
            check("peermem_after_mofed", false, format!(
                "nvidia-peermem depends on {depends:?}, not ib_core: it was built without MOFED's peer-memory API (GPUDirect RDMA will not work); install MOFED before the NVIDIA driver"
            ))
        } else {
            check("peermem_after_mofed", false, "nvidia-peermem is missing")
        });
    }
    if expect.mofed.is_some() {
        let wants: BTreeSet<String> = list_dir(&root.join("etc/systemd/system"))
            .into_iter()
            .filter(|d| d.ends_with(".wants") || d.ends_with(".requires"))
            .flat_map(|d| list_dir(&root.join("etc/systemd/system").join(d)))
            .collect();
        let openibd = wants.contains("openibd.service");
        let opensmd = wants.contains("opensmd.service");
        checks.push(check(
            "openibd_enabled",
            openibd,
            if openibd { "openibd.service is enabled".to_owned() } else { "openibd.service is not enabled: enable it (role openibd) so the InfiniBand stack loads at boot".to_owned() },
        ));
        checks.push(check(
            "opensmd_disabled",
            !opensmd,
            if opensmd { "opensmd.service is enabled: a subnet manager on a compute node destabilises the fabric; disable it".to_owned() } else { "opensmd.service is not enabled".to_owned() },
        ));
    }
    if expect.initramfs {
        if let Some(k) = &kernel {
            let candidates = [
                format!("boot/initrd.img-{k}"),
                format!("boot/initramfs-{k}.img"),
            ];
            let found = candidates.iter().find(|c| root.join(c).is_file());
            checks.push(match found {
                Some(f) => check("initramfs", true, format!("/{f}")),
                None => check(
                    "initramfs",
                    false,
                    format!(
                        "no initramfs for {k} in /boot; build it last with dracut -f -N --kver {k}"
                    ),
                ),
            });
        }
    }
    let sh = resolve(root, "/bin/sh", 0).is_some_and(|p| p.is_file());
    checks.push(check(
        "bin_sh",
        sh,
        if sh {
            "/bin/sh present"
        } else {
            "/bin/sh is missing: Warewulf's init needs a shell"
        },
    ));
    let mut files = Vec::new();
    walk(root, Path::new(""), &mut files);
    let huge: Vec<String> = files
        .iter()
        .filter(|(_, m)| m.len() >= FOUR_GIB)
        .map(|(p, _)| format!("/{}", p.display()))
        .collect();
    checks.push(if huge.is_empty() {
        check(
            "no_huge_files",
            true,
            format!("no file of 4 GiB or more ({} files)", files.len()),
        )
    } else {
        check(
            "no_huge_files",
            false,
            format!(
                "{huge:?} reach 4 GiB, which cpio -H newc (Warewulf's image format) cannot hold"
            ),
        )
    });
    let ok = checks.iter().all(|c| c.ok);
    let modules = modules
        .iter()
        .map(|(path, info)| ModuleRecord {
            path: path.clone(),
            vermagic: info
                .as_ref()
                .ok()
                .and_then(|i| i.get("vermagic"))
                .unwrap_or_default()
                .trim()
                .to_owned(),
            depends: info
                .as_ref()
                .map(|i| i.depends().into_iter().map(str::to_owned).collect())
                .unwrap_or_default(),
        })
        .collect();
    Report {
        image: image.to_owned(),
        kernel,
        ok,
        checks,
        modules,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modinfo::fake_module;

    fn rootfs() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = dir.path();
        let k = "6.1.0-50-amd64";
        std::fs::create_dir_all(r.join("boot")).expect("boot");
        std::fs::write(r.join(format!("boot/vmlinuz-{k}")), "kernel").expect("vmlinuz");
        std::fs::write(r.join(format!("boot/initrd.img-{k}")), "initrd").expect("initrd");
        std::fs::create_dir_all(r.join("usr/bin")).expect("usr/bin");
        std::fs::write(r.join("usr/bin/sh"), "").expect("sh");
        std::os::unix::fs::symlink("usr/bin", r.join("bin")).expect("bin");
        std::fs::write(
            r.join("usr/bin/ofed_info"),
            "echo MLNX_OFED_LINUX-24.10-2.1.8.0:",
        )
        .expect("ofed_info");
        let m = r.join("lib/modules").join(k);
        let mut dep = String::new();
        for name in MOFED_MODULES {
            let rel = format!("extra/mlnx-ofa_kernel/{name}.ko");
            std::fs::create_dir_all(m.join("extra/mlnx-ofa_kernel")).expect("mkdir");
            std::fs::write(
                m.join(&rel),
                fake_module(&[("vermagic", &format!("{k} SMP"))]),
            )
            .expect("ko");
            dep.push_str(&format!("{rel}:\n"));
        }
        std::fs::create_dir_all(m.join("kernel/drivers/video")).expect("mkdir");
        for name in NVIDIA_MODULES {
            let rel = format!("kernel/drivers/video/{name}.ko");
            let depends = if *name == "nvidia-peermem" {
                "nvidia,ib_core"
            } else {
                ""
            };
            std::fs::write(
                m.join(&rel),
                fake_module(&[("vermagic", &format!("{k} SMP")), ("depends", depends)]),
            )
            .expect("ko");
            dep.push_str(&format!("{rel}:\n"));
        }
        std::fs::write(m.join("modules.dep"), dep).expect("dep");
        let wants = r.join("etc/systemd/system/multi-user.target.wants");
        std::fs::create_dir_all(&wants).expect("wants");
        std::os::unix::fs::symlink(
            "/usr/lib/systemd/system/openibd.service",
            wants.join("openibd.service"),
        )
        .expect("link");
        dir
    }

    fn expect() -> Expect {
        Expect {
            kernel: Some("6.1.0-50-amd64".into()),
            mofed: Some("24.10-2.1.8.0".into()),
            nvidia: Some("580.65.06".into()),
            initramfs: true,
        }
    }

    fn failed(report: &Report) -> Vec<&str> {
        report
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.id.as_str())
            .collect()
    }

    #[test]
    fn a_good_image_passes() {
        let dir = rootfs();
        let report = verify(dir.path(), "x", &expect());
        assert!(report.ok, "{:#?}", report.checks);
        assert_eq!(report.checks.len(), 12);
    }

    #[test]
    fn a_module_for_another_kernel_is_named() {
        let dir = rootfs();
        let stray = dir.path().join("lib/modules/6.1.0-50-amd64/extra/stray.ko");
        std::fs::write(&stray, fake_module(&[("vermagic", "6.18.44-host SMP")])).expect("stray");
        let report = verify(dir.path(), "x", &expect());
        assert_eq!(failed(&report), vec!["vermagic", "modules_dep"]);
        let detail = &report
            .checks
            .iter()
            .find(|c| c.id == "vermagic")
            .expect("check")
            .detail;
        assert!(
            detail.contains("/lib/modules/6.1.0-50-amd64/extra/stray.ko is built for 6.18.44-host"),
            "{detail}"
        );
    }

    #[test]
    fn a_stray_module_folder_and_peermem_without_mofed_fail() {
        let dir = rootfs();
        std::fs::create_dir_all(dir.path().join("lib/modules/6.18.44-host")).expect("mkdir");
        let peermem = dir
            .path()
            .join("lib/modules/6.1.0-50-amd64/kernel/drivers/video/nvidia-peermem.ko");
        std::fs::write(
            &peermem,
            fake_module(&[("vermagic", "6.1.0-50-amd64 SMP"), ("depends", "nvidia")]),
        )
        .expect("peermem");
        std::fs::remove_file(
            dir.path()
                .join("etc/systemd/system/multi-user.target.wants/openibd.service"),
        )
        .expect("rm");
        let report = verify(dir.path(), "x", &expect());
        assert_eq!(
            failed(&report),
            vec!["one_kernel", "peermem_after_mofed", "openibd_enabled"]
        );
    }
}
