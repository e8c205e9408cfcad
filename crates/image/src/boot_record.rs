//! The boot's section of the build report: what `imgbuild boot` (or `build --boot`) found,
//! kept in `report.json` and printed at the end of `report.md` by the report's one writer.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What loading one out-of-tree module gave, as the report keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleOutcome {
    /// It loaded.
    Loaded,
    /// A hardware driver with no hardware (nvidia on a VM): acceptable.
    NoDevice,
    /// It did not load.
    Failed,
}

/// One module the boot loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootModule {
    /// The module's name.
    pub name: String,
    /// What loading it gave.
    pub outcome: ModuleOutcome,
    /// The kernel's reason, when it did not load.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// One of the boot's checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootCheck {
    /// Its name.
    pub id: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found.
    pub detail: String,
}

/// The boot, as the build report records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootRecord {
    /// Every check passed.
    pub ok: bool,
    /// The kernel that had to run.
    pub kernel: String,
    /// The accelerator (kvm or tcg).
    pub accel: String,
    /// VM memory.
    pub memory_mb: u64,
    /// Seconds from QEMU's start to the probe's end.
    pub seconds: f64,
    /// Each out-of-tree module and what loading it gave.
    pub modules: Vec<BootModule>,
    /// Units systemd listed as failed.
    pub failed_units: Vec<String>,
    /// The checks.
    pub checks: Vec<BootCheck>,
    /// The serial console's log.
    pub console_log: PathBuf,
}

impl BootRecord {
    /// The report's boot section in Markdown: the verdict, a table of modules, one of checks.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "\n#### boot: {} in {:.1} s (kernel {} under {}, {} MB)\n\n| module | outcome |\n|---|---|",
            if self.ok { "passed" } else { "**FAILED**" },
            self.seconds,
            self.kernel,
            self.accel,
            self.memory_mb
        );
        for module in &self.modules {
            let _ = writeln!(
                md,
                "| {} | {} |",
                module.name,
                module.describe().replace('|', "\\|")
            );
        }
        let _ = writeln!(md, "\n| check | | detail |\n|---|---|---|");
        for check in &self.checks {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                check.id,
                if check.ok { "ok" } else { "**FAIL**" },
                check.detail.replace('|', "\\|").replace('\n', " ")
            );
        }
        md
    }
}

impl BootModule {
    /// What loading it gave, in words.
    pub fn describe(&self) -> String {
        match self.outcome {
            ModuleOutcome::Loaded => "loaded".to_owned(),
            ModuleOutcome::NoDevice => "no such device (a hardware driver on a VM)".to_owned(),
            ModuleOutcome::Failed => format!("FAILED: {}", self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ok: bool) -> BootRecord {
        BootRecord {
            ok,
            kernel: "6.1.0-50-amd64".into(),
            accel: "tcg".into(),
            memory_mb: 2048,
            seconds: 61.25,
            modules: vec![
                BootModule {
                    name: "mlx5_core".into(),
                    outcome: ModuleOutcome::Loaded,
                    message: String::new(),
                },
                BootModule {
                    name: "stray".into(),
                    outcome: ModuleOutcome::Failed,
                    message: "Exec format error | disagrees".into(),
                },
            ],
            failed_units: vec![],
            checks: vec![BootCheck {
                id: "kernel".into(),
                ok,
                detail: "ran 6.1.0-50-amd64\nas pinned".into(),
            }],
            console_log: "boot-console.log".into(),
        }
    }

    #[test]
    fn the_section_names_the_verdict_each_module_and_each_check() {
        let md = record(true).markdown();
        assert!(
            md.contains("#### boot: passed in 61.2 s (kernel 6.1.0-50-amd64 under tcg, 2048 MB)"),
            "{md}"
        );
        assert!(md.contains("| mlx5_core | loaded |"), "{md}");
        assert!(
            md.contains("| stray | FAILED: Exec format error \\| disagrees |"),
            "{md}"
        );
        assert!(
            md.contains("| kernel | ok | ran 6.1.0-50-amd64 as pinned |"),
            "{md}"
        );
        assert!(record(false).markdown().contains("#### boot: **FAILED**"));
    }

    #[test]
    fn it_reads_back_what_it_wrote() {
        let json = serde_json::to_string(&record(true)).expect("JSON");
        let back: BootRecord = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, record(true));
    }
}
