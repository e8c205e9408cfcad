//! The build report next to the outputs: `report.json` for machines and `report.md` for a pull
//! request comment: image, digests, sizes, kernel, every module with its vermagic, MOFED and
//! NVIDIA versions, packages added per layer, time per role, cache hits, and verify's checks.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::boot_record::BootRecord;
use crate::build::outcome::{BuildOnlyRemoval, BuildReport};

/// One layer in the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayerEntry {
    /// The role (or `base`).
    pub role: String,
    /// Compressed digest.
    pub digest: String,
    /// Compressed size.
    pub size: u64,
    /// Reused from the cache.
    pub cached: bool,
    /// Taken from the registry cache (`--cache-from`).
    pub from_registry: bool,
    /// Seconds spent.
    pub seconds: f64,
    /// Why it was rebuilt.
    pub why: Vec<String>,
    /// Debian packages this layer installed.
    pub packages_added: Vec<String>,
    /// When a cached layer was first built (RFC 3339), and how long that took.
    pub built_at: Option<String>,
    /// Seconds its build took.
    pub built_seconds: f64,
    /// What each task of the role cost when the layer was built.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<engine::costs::TaskCost>,
    /// What the role's compiles found in the compile cache when the layer was built.
    #[serde(
        default,
        skip_serializing_if = "engine::compile_cache::CompileStats::is_empty"
    )]
    pub compiles: engine::compile_cache::CompileStats,
}

/// The whole report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Image name.
    pub image: String,
    /// Manifest digest.
    pub manifest: String,
    /// Config digest.
    pub config: String,
    /// The pinned kernel.
    pub kernel: Option<String>,
    /// `mofed_version`.
    pub mofed: Option<String>,
    /// `doca_version`: DOCA-OFED in place of MOFED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doca: Option<String>,
    /// `nvidia_version`.
    pub nvidia: Option<String>,
    /// Sum of compressed layer sizes.
    pub size: u64,
    /// Seconds the build took.
    pub seconds: f64,
    /// The layers, bottom first.
    pub layers: Vec<LayerEntry>,
    /// What verify found (modules with their vermagic, checks).
    pub verify: Option<verify::Report>,
    /// What the build-only packages step removed, and the unpacked size before and after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_only: Option<BuildOnlyRemoval>,
    /// The image booted in QEMU (`build --boot`, `imgbuild boot`), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<BootRecord>,
}

/// Installed packages recorded in a layer folder's dpkg status file.
pub fn dpkg_installed(tree: &Path) -> Option<BTreeSet<String>> {
    let text = std::fs::read_to_string(tree.join("var/lib/dpkg/status")).ok()?;
    Some(
        text.split("\n\n")
            .filter(|stanza| {
                stanza
                    .lines()
                    .any(|l| l.starts_with("Status: ") && l.ends_with(" ok installed"))
            })
            .filter_map(|stanza| {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix("Package: "))
                    .map(str::to_owned)
            })
            .collect(),
    )
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The report as Markdown.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    summary_table(&mut out, report);
    layer_table(&mut out, &report.layers);
    let _ = writeln!(
        out,
        "\nWhere the time went, drawn: [timeline.svg](timeline.svg)."
    );
    time_went(&mut out, &report.layers);
    if let Some(b) = report.build_only.as_ref().filter(|b| !b.removed.is_empty()) {
        let _ = writeln!(
            out,
            "\n<details><summary>build-only packages removed ({})</summary>\n\n{}\n\n</details>",
            b.removed.len(),
            b.removed.join(", ")
        );
    }
    if let Some(v) = &report.verify {
        verify_checks(&mut out, v);
        verify_modules(&mut out, v);
    }
    if let Some(boot) = &report.boot {
        out.push_str(&boot.markdown());
    }
    out
}

/// The heading (the image and its verdict) and the table of what the image is.
fn summary_table(out: &mut String, report: &Report) {
    let verdict = match &report.verify {
        Some(v) if v.ok => "verify passed",
        Some(_) => "**verify FAILED**",
        None => "not verified",
    };
    let _ = writeln!(out, "### {}: {verdict}\n", report.image);
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(out, "| manifest | `{}` |", report.manifest);
    let _ = writeln!(
        out,
        "| kernel | `{}` |",
        report.kernel.as_deref().unwrap_or("-")
    );
    let _ = writeln!(
        out,
        "| MOFED | {} |",
        report.mofed.as_deref().unwrap_or("-")
    );
    if let Some(doca) = &report.doca {
        let _ = writeln!(out, "| DOCA | {doca} |");
    }
    let _ = writeln!(
        out,
        "| NVIDIA | {} |",
        report.nvidia.as_deref().unwrap_or("-")
    );
    let _ = writeln!(
        out,
        "| size | {} in {} layers |",
        megabytes(report.size),
        report.layers.len()
    );
    if let Some(b) = &report.build_only {
        let _ = writeln!(
            out,
            "| build-only packages | {} removed; unpacked {} before, {} after ({} less); the {} modules no package owns kept |",
            b.removed.len(),
            megabytes(b.bytes_before),
            megabytes(b.bytes_after),
            megabytes(b.bytes_before.saturating_sub(b.bytes_after)),
            b.modules_kept.len()
        );
    }
    let _ = writeln!(out, "| build time | {:.1} s |\n", report.seconds);
}

/// The table of layers: each one's digest, size, time, cache use and packages added.
fn layer_table(out: &mut String, layers: &[LayerEntry]) {
    let _ = writeln!(
        out,
        "| layer | digest | size | time | cache | packages added |\n|---|---|---|---|---|---|"
    );
    for l in layers {
        let cache = if l.from_registry {
            match &l.built_at {
                Some(at) => format!("registry (built {at} in {:.1} s)", l.built_seconds),
                None => "registry".to_owned(),
            }
        } else if l.cached {
            match &l.built_at {
                Some(at) => format!("hit (built {at} in {:.1} s)", l.built_seconds),
                None => "hit".to_owned(),
            }
        } else if l.why.is_empty() {
            "built".to_owned()
        } else {
            format!("rebuilt: {}", l.why.join("; "))
        };
        let packages = if l.packages_added.len() > 8 {
            format!(
                "{} and {} more",
                l.packages_added[..8].join(", "),
                l.packages_added.len() - 8
            )
        } else {
            l.packages_added.join(", ")
        };
        let short = l
            .digest
            .trim_start_matches("sha256:")
            .get(..12)
            .unwrap_or(&l.digest);
        let _ = writeln!(
            out,
            "| {} | `{short}` | {} | {:.1} s | {cache} | {packages} |",
            l.role,
            megabytes(l.size),
            l.seconds
        );
    }
}

/// Verify's checks, passed, failed and skipped, as a table.
fn verify_checks(out: &mut String, v: &verify::Report) {
    let _ = writeln!(out, "\n| check | | detail |\n|---|---|---|");
    for c in &v.checks {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            c.id,
            if c.ok { "ok" } else { "**FAIL**" },
            c.detail.replace('|', "\\|")
        );
    }
    for skipped in &v.skipped {
        let _ = writeln!(
            out,
            "| {} | skipped | {} |",
            skipped.id,
            skipped.reason.replace('|', "\\|")
        );
    }
}

/// Verify's kernel modules: the out-of-tree ones, and any a failed check names, listed.
fn verify_modules(out: &mut String, v: &verify::Report) {
    // The kernel's own modules are counted; out-of-tree ones (and any that failed a check
    // by name) are listed. report.json keeps them all. A pull-request comment holds 65536
    // characters at most.
    let listed: Vec<&verify::ModuleRecord> = v
        .modules
        .iter()
        .filter(|m| m.out_of_tree || v.checks.iter().any(|c| !c.ok && c.detail.contains(&m.path)))
        .collect();
    let _ = writeln!(
        out,
        "\n<details><summary>{} kernel modules: {} listed (out-of-tree, or named by a failed check), {} more of the kernel's own in report.json</summary>\n\n| module | vermagic | depends |\n|---|---|---|",
        v.modules.len(),
        listed.len(),
        v.modules.len() - listed.len()
    );
    for m in listed {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            m.path,
            m.vermagic,
            m.depends.join(", ")
        );
    }
    let _ = writeln!(out, "\n</details>");
}

/// How many of the slowest tasks "where the time went" lists.
const SLOWEST_TASKS: usize = 8;

/// The slowest tasks of the layers (each as its layer's own build measured it), with the dpkg
/// phases of those that installed packages.
fn time_went(out: &mut String, layers: &[LayerEntry]) {
    let mut tasks: Vec<(&str, &engine::costs::TaskCost)> = layers
        .iter()
        .flat_map(|l| l.costs.iter().map(move |c| (l.role.as_str(), c)))
        .collect();
    if tasks.is_empty() {
        return;
    }
    tasks.sort_by(|a, b| b.1.seconds.total_cmp(&a.1.seconds));
    let _ = writeln!(
        out,
        "\n<details><summary>where the time went: the {} slowest tasks (as each layer's build measured them)</summary>\n\n| role | task | time | packages: fetching (apt's lists, downloads), unpacking, configuring (slowest), triggers |\n|---|---|---|---|",
        tasks.len().min(SLOWEST_TASKS)
    );
    for (role, cost) in tasks.iter().take(SLOWEST_TASKS) {
        let phases = cost.packages.as_ref().map_or(String::new(), |p| {
            let slowest: Vec<String> = p
                .slowest
                .iter()
                .map(|(name, s)| format!("{name} {s:.0} s"))
                .collect();
            let slowest = if slowest.is_empty() {
                String::new()
            } else {
                format!(" ({})", slowest.join(", "))
            };
            let removal = if p.remove > 0.0 {
                format!(", removing {:.0} s", p.remove)
            } else {
                String::new()
            };
            format!(
                "{:.0} s, {:.0} s, {:.0} s{slowest}, {:.0} s{removal}",
                p.download, p.unpack, p.configure, p.triggers
            )
        });
        let _ = writeln!(
            out,
            "| {role} | {} (`{}`) | {:.1} s | {phases} |",
            cost.task.replace('|', "\\|"),
            cost.source,
            cost.seconds
        );
    }
    let _ = writeln!(out, "\n</details>");
}

/// Assembles the report of a build.
pub fn assemble(
    build: &BuildReport,
    trees: &[(String, std::path::PathBuf)],
    kernel: Option<String>,
    (mofed, doca): (Option<String>, Option<String>),
    nvidia: Option<String>,
    verify: Option<verify::Report>,
) -> Report {
    let mut known: BTreeSet<String> = BTreeSet::new();
    let layers = build
        .layers
        .iter()
        .map(|l| {
            let tree = trees
                .iter()
                .find(|(d, _)| *d == l.digest)
                .map(|(_, t)| t.clone());
            let installed = tree.and_then(|t| dpkg_installed(&t));
            let added: Vec<String> = match installed {
                Some(set) => {
                    let added = set.difference(&known).cloned().collect();
                    known = set;
                    added
                }
                None => Vec::new(),
            };
            LayerEntry {
                role: l.role.clone(),
                digest: l.digest.clone(),
                size: l.size,
                cached: l.cached,
                from_registry: l.from_registry,
                seconds: l.seconds,
                why: l.why.clone(),
                packages_added: added,
                built_at: (l.built_at > 0).then(|| crate::oci::rfc3339(l.built_at)),
                built_seconds: l.built_seconds,
                costs: l.costs.clone(),
                compiles: l.compiles,
            }
        })
        .collect();
    Report {
        image: build.image.clone(),
        manifest: build.manifest.clone(),
        config: build.config.clone(),
        kernel,
        mofed,
        doca,
        nvidia,
        size: build.layers.iter().map(|l| l.size).sum(),
        seconds: build.seconds,
        layers,
        verify,
        build_only: build.build_only.clone(),
        boot: None,
    }
}

/// The report `write` left in `dir`.
pub fn read(dir: &Path) -> std::io::Result<Report> {
    let bytes = std::fs::read(dir.join("report.json"))?;
    serde_json::from_slice(&bytes).map_err(std::io::Error::other)
}

/// Writes `report.json` and `report.md` into `dir`.
pub fn write(dir: &Path, report: &Report) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec_pretty(report).map_err(std::io::Error::other)?;
    for (name, bytes) in [
        ("report.json", json),
        ("report.md", markdown(report).into_bytes()),
    ] {
        // Two builds of the same image side by side each write their own temporary file.
        crate::atomic::write_file(&dir.join(name), &bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PR comment holds at most this many characters (GitHub's limit).
    const COMMENT_LIMIT: usize = 65_536;

    fn module(path: &str) -> verify::ModuleRecord {
        verify::ModuleRecord {
            path: path.to_owned(),
            vermagic: "6.1.0-50-amd64 SMP preempt mod_unload modversions".to_owned(),
            depends: vec!["ib_core".to_owned()],
            out_of_tree: !path.contains("/kernel/"),
        }
    }

    #[test]
    fn the_markdown_of_a_full_compute_image_fits_a_pull_request_comment() {
        let k = "/lib/modules/6.1.0-50-amd64";
        let mut modules: Vec<verify::ModuleRecord> = (0..4100)
            .map(|i| {
                module(&format!(
                    "{k}/kernel/drivers/net/ethernet/vendor{i}/driver{i}.ko"
                ))
            })
            .collect();
        modules.push(module(&format!("{k}/extra/mlnx-ofa_kernel/mlx5_core.ko")));
        modules.push(module(&format!("{k}/updates/dkms/nvidia-current.ko")));
        let report = Report {
            image: "debian-12-compute".into(),
            manifest: "sha256:0".into(),
            config: "sha256:1".into(),
            kernel: Some("6.1.0-50-amd64".into()),
            mofed: None,
            doca: None,
            nvidia: None,
            size: 1,
            seconds: 1.0,
            layers: vec![LayerEntry {
                role: "nvidia".into(),
                digest: "sha256:2".into(),
                size: 1,
                cached: false,
                from_registry: false,
                seconds: 230.0,
                why: Vec::new(),
                packages_added: Vec::new(),
                built_at: None,
                built_seconds: 230.0,
                costs: vec![
                    engine::costs::TaskCost {
                        task: "a copy".into(),
                        source: "roles/nvidia/tasks/main.yml:3".into(),
                        seconds: 0.1,
                        packages: None,
                    },
                    engine::costs::TaskCost {
                        task: "the driver".into(),
                        source: "roles/nvidia/tasks/Debian.yml:33".into(),
                        seconds: 212.3,
                        packages: Some(engine::costs::PackagePhases {
                            download: 12.0,
                            unpack: 8.0,
                            configure: 185.0,
                            triggers: 6.0,
                            remove: 0.0,
                            slowest: vec![("nvidia-kernel-dkms".into(), 170.0)],
                        }),
                    },
                ],
                compiles: Default::default(),
            }],
            verify: Some(verify::Report {
                image: "debian-12-compute".into(),
                kernel: Some("6.1.0-50-amd64".into()),
                kernel_source: None,
                ok: false,
                checks: vec![verify::Check {
                    id: "vermagic".into(),
                    ok: false,
                    detail: format!(
                        "{k}/kernel/drivers/net/ethernet/vendor7/driver7.ko is built for 6.18"
                    ),
                }],
                skipped: vec![verify::Skipped {
                    id: "initramfs".into(),
                    reason: "none asked for".into(),
                }],
                modules,
            }),
            build_only: Some(crate::build::BuildOnlyRemoval {
                removed: vec!["dkms".into(), "gcc-12".into()],
                bytes_before: 1_660_000_000,
                bytes_after: 1_270_000_000,
                modules_kept: vec![format!("{k}/updates/dkms/nvidia-current.ko")],
                modules_restored: Vec::new(),
            }),
            boot: None,
        };
        let md = markdown(&report);
        assert!(md.contains("| build-only packages | 2 removed; unpacked 1660.0 MB before, 1270.0 MB after (390.0 MB less); the 1 modules no package owns kept |"), "{md}");
        assert!(md.contains("build-only packages removed (2)</summary>\n\ndkms, gcc-12"));
        assert!(md.len() < COMMENT_LIMIT, "{} characters", md.len());
        assert!(md.contains("extra/mlnx-ofa_kernel/mlx5_core.ko"));
        assert!(md.contains("updates/dkms/nvidia-current.ko"));
        assert!(
            md.contains("vendor7/driver7.ko"),
            "a module a check names is listed"
        );
        assert!(!md.contains("vendor8/driver8.ko"));
        assert!(md.contains("| initramfs | skipped | none asked for |"));
        assert!(md.contains("4102 kernel modules: 3 listed"), "{md}");
        assert!(md.contains("the 2 slowest tasks"), "{md}");
        assert!(
            md.contains("| nvidia | the driver (`roles/nvidia/tasks/Debian.yml:33`) | 212.3 s | 12 s, 8 s, 185 s (nvidia-kernel-dkms 170 s), 6 s |\n| nvidia | a copy"),
            "{md}"
        );
    }

    /// `imgbuild boot` of a built image: the report read back, the boot added, written again
    /// whole, with the boot's section at the end of report.md.
    #[test]
    fn a_boot_is_a_section_of_the_report_it_reads_back_and_writes_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut report = Report {
            image: "debian-12-compute".into(),
            manifest: "sha256:0".into(),
            config: "sha256:1".into(),
            kernel: Some("6.1.0-50-amd64".into()),
            mofed: Some("24.10-2.1.8.0".into()),
            doca: None,
            nvidia: None,
            size: 1,
            seconds: 1.0,
            layers: Vec::new(),
            verify: None,
            build_only: None,
            boot: None,
        };
        write(dir.path(), &report).expect("written");
        let mut back = read(dir.path()).expect("read back");
        assert_eq!(back.mofed, report.mofed);
        assert!(back.boot.is_none());
        let boot = crate::boot_record::BootRecord {
            ok: true,
            kernel: "6.1.0-50-amd64".into(),
            accel: "tcg".into(),
            memory_mb: 1024,
            seconds: 3.0,
            modules: Vec::new(),
            failed_units: Vec::new(),
            checks: Vec::new(),
            secure_boot: None,
            console_log: "boot-console.log".into(),
        };
        back.boot = Some(boot.clone());
        write(dir.path(), &back).expect("written again");
        report = read(dir.path()).expect("read again");
        assert_eq!(report.boot, Some(boot));
        let md = std::fs::read_to_string(dir.path().join("report.md")).expect("report.md");
        assert!(
            md.starts_with("### debian-12-compute: not verified"),
            "{md}"
        );
        assert!(
            md.contains("\n#### boot: passed in 3.0 s (kernel 6.1.0-50-amd64 under tcg, 1024 MB)"),
            "{md}"
        );
    }
}
