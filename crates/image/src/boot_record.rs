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
    /// The kernel refused its signature (Secure Boot's enforcement).
    Rejected,
}

/// The boot's Secure Boot side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecureBootRecord {
    /// The firmware had Secure Boot on and the kernel said so.
    pub enabled: bool,
    /// The kernel's lockdown mode.
    pub lockdown: String,
    /// The subject of the certificate enrolled as the MOK.
    pub mok: Option<String>,
    /// The kernel loaded that certificate.
    pub mok_loaded: bool,
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
    /// Secure Boot, when the boot went through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_boot: Option<SecureBootRecord>,
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
        if let Some(sb) = &self.secure_boot {
            let _ = writeln!(md, "\n{}\n", sb.describe());
        }
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
            ModuleOutcome::Rejected => format!("REFUSED for its signature: {}", self.message),
        }
    }
}

impl SecureBootRecord {
    /// One line: Secure Boot, lockdown, the MOK and whether the kernel loaded it.
    pub fn describe(&self) -> String {
        format!(
            "Secure Boot {} (shim, GRUB), lockdown {}, MOK {}",
            if self.enabled { "on" } else { "**off**" },
            if self.lockdown.is_empty() {
                "unknown"
            } else {
                &self.lockdown
            },
            match (&self.mok, self.mok_loaded) {
                (None, _) => "none enrolled".to_owned(),
                (Some(mok), true) => format!("{mok}, loaded by the kernel"),
                (Some(mok), false) => format!("{mok}, **not loaded by the kernel**"),
            }
        )
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
            secure_boot: None,
            console_log: "boot-console.log".into(),
        }
    }

    #[test]
    fn a_secure_boot_is_described_with_its_refused_modules() {
        let mut booted = record(false);
        booted.secure_boot = Some(SecureBootRecord {
            enabled: true,
            lockdown: "integrity".into(),
            mok: Some("CN=site".into()),
            mok_loaded: true,
        });
        booted.modules[1].outcome = ModuleOutcome::Rejected;
        booted.modules[1].message = "Key was rejected by service".into();
        let md = booted.markdown();
        assert!(
            md.contains("Secure Boot on (shim, GRUB), lockdown integrity, MOK CN=site, loaded by the kernel"),
            "{md}"
        );
        assert!(md.contains("| stray | REFUSED for its signature: Key was rejected by service |"));
        let json = serde_json::to_string(&booted).expect("JSON");
        assert_eq!(
            serde_json::from_str::<BootRecord>(&json).expect("back"),
            booted
        );
        // A report written before Secure Boot reads (no such member).
        let old = json.replace(r#","secure_boot":{"enabled":true,"lockdown":"integrity","mok":"CN=site","mok_loaded":true}"#, "");
        assert!(!old.contains("secure_boot"));
        assert!(serde_json::from_str::<BootRecord>(&old)
            .expect("old")
            .secure_boot
            .is_none());
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
