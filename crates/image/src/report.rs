//! The build report next to the outputs: `report.json` for machines and `report.md` for a pull
//! request comment: image, digests, sizes, kernel, every module with its vermagic, MOFED and
//! NVIDIA versions, packages added per layer, time per role, cache hits, and verify's checks.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::build::BuildReport;

/// One layer in the report.
#[derive(Debug, Clone, Serialize)]
pub struct LayerEntry {
    /// The role (or `base`).
    pub role: String,
    /// Compressed digest.
    pub digest: String,
    /// Compressed size.
    pub size: u64,
    /// Reused from the cache.
    pub cached: bool,
    /// Seconds spent.
    pub seconds: f64,
    /// Why it was rebuilt.
    pub why: Vec<String>,
    /// Debian packages this layer installed.
    pub packages_added: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
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
    let _ = writeln!(out, "| build time | {:.1} s |\n", report.seconds);
    let _ = writeln!(
        out,
        "| layer | digest | size | time | cache | packages added |\n|---|---|---|---|---|---|"
    );
    for l in &report.layers {
        let cache = if l.cached {
            "hit".to_owned()
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
    if let Some(v) = &report.verify {
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
        let _ = writeln!(out, "\n<details><summary>{} kernel modules</summary>\n\n| module | vermagic | depends |\n|---|---|---|", v.modules.len());
        for m in &v.modules {
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
    out
}

/// Assembles the report of a build.
pub fn assemble(
    build: &BuildReport,
    trees: &[(String, std::path::PathBuf)],
    kernel: Option<String>,
    mofed: Option<String>,
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
                seconds: l.seconds,
                why: l.why.clone(),
                packages_added: added,
            }
        })
        .collect();
    Report {
        image: build.image.clone(),
        manifest: build.manifest.clone(),
        config: build.config.clone(),
        kernel,
        mofed,
        nvidia,
        size: build.layers.iter().map(|l| l.size).sum(),
        seconds: build.seconds,
        layers,
        verify,
    }
}

/// Writes `report.json` and `report.md` into `dir`.
pub fn write(dir: &Path, report: &Report) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec_pretty(report).map_err(std::io::Error::other)?;
    for (name, bytes) in [
        ("report.json", json),
        ("report.md", markdown(report).into_bytes()),
    ] {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, dir.join(name))?;
    }
    Ok(())
}
