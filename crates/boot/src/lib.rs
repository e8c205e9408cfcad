//! `imgbuild boot`: the image booted as Warewulf boots a node. Its own kernel
//! (`/boot/vmlinuz-<K>`) starts in QEMU with the image's root filesystem as the initramfs,
//! packed as `wwctl image build` packs it (newc cpio, `/etc/warewulf/excludes` honoured,
//! compressed), plus a probe of ours in a second archive. The probe loads the image's
//! out-of-tree modules and reports on the serial console, which is kept beside the report.
//! With Secure Boot the kernel is started as a Secure Boot node starts it, through the firmware,
//! shim and GRUB, with the module-signing certificate enrolled as a MOK (`secure_boot`).

mod error;
mod excludes;
mod initrd;
mod input;
mod pack;
mod probe;
pub mod qemu;
mod secure_boot;
mod varstore;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

pub use error::BootError;
pub use excludes::{go_match, Excludes};
pub use pack::{pack_tree, Codec, Encoder, Packed};
pub use probe::{Findings, ModuleResult, Outcome, SecureBootState};
pub use qemu::{available as qemu_available, Accel, Chosen};
pub use secure_boot::{boot_files as secure_boot_files, BootFile, Mok};
pub use varstore::{enroll_mok, variables, VarStoreError, Variable};

/// What to boot and how.
#[derive(Debug, Clone)]
pub struct BootRequest {
    /// A rootfs folder, an `out/<image>` folder or an OCI layout.
    pub input: PathBuf,
    /// VM memory; default sized from the image.
    pub memory_mb: Option<u64>,
    /// How long the boot may take before it is killed.
    pub timeout: Duration,
    /// The accelerator.
    pub accel: Accel,
    /// Where the console log is written.
    pub console_log: PathBuf,
    /// Folders sent after the image as more archives, as Warewulf sends a node its system
    /// and runtime overlays.
    pub overlays: Vec<PathBuf>,
    /// Units (shell patterns) expected to fail without the site's overlays, beside those the
    /// image's `io.imgbuild.boot-expect-failed` label names.
    pub expect_failed: Vec<String>,
    /// Boot through Secure Boot firmware, shim and GRUB instead of starting the kernel.
    pub secure_boot: Option<SecureBootRequest>,
}

/// How to boot under Secure Boot.
#[derive(Debug, Clone, Default)]
pub struct SecureBootRequest {
    /// The certificate to enrol as the MOK; else the image's module-signer label's.
    pub mok_cert: Option<PathBuf>,
    /// Enrol no MOK, whatever the image's label says.
    pub no_mok: bool,
}

/// The boot's Secure Boot side: what it booted through and what it enrolled.
#[derive(Debug, Clone, Serialize)]
pub struct SecureBootReport {
    /// The firmware, shim and GRUB, with their digests.
    pub files: Vec<BootFile>,
    /// The certificate enrolled as the MOK, if any.
    pub mok: Option<Mok>,
}

/// One check on what the probe found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Its name.
    pub id: &'static str,
    /// Whether it passed.
    pub ok: bool,
    /// What was found.
    pub detail: String,
}

/// The boot's result.
#[derive(Debug, Clone, Serialize)]
pub struct BootReport {
    /// The kernel in the image (the one that must run).
    pub kernel: String,
    /// The accelerator used and why.
    pub accel: String,
    /// Why that accelerator.
    pub accel_reason: String,
    /// VM memory.
    pub memory_mb: u64,
    /// Seconds packing the image and the probe into the initramfs.
    pub pack_seconds: f64,
    /// Seconds from QEMU's start to the probe's end.
    pub seconds: f64,
    /// What the archive held.
    pub packed_entries: u64,
    /// What the probe found.
    pub findings: Findings,
    /// The overlays sent after the image.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlays: Vec<PathBuf>,
    /// The units expected to fail without the site's overlays (patterns).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expect_failed: Vec<String>,
    /// What it booted through under Secure Boot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secure_boot: Option<SecureBootReport>,
    /// The checks.
    pub checks: Vec<Check>,
    /// Every check passed.
    pub ok: bool,
    /// The serial console's log.
    pub console_log: PathBuf,
}

impl BootReport {
    /// The boot as the build report records it.
    pub fn record(&self) -> image::boot_record::BootRecord {
        use image::boot_record::{BootCheck, BootModule, BootRecord, ModuleOutcome};
        BootRecord {
            ok: self.ok,
            kernel: self.kernel.clone(),
            accel: self.accel.clone(),
            memory_mb: self.memory_mb,
            seconds: self.seconds,
            modules: self
                .findings
                .modules
                .iter()
                .map(|module| BootModule {
                    name: module.name.clone(),
                    outcome: match module.outcome {
                        Outcome::Loaded => ModuleOutcome::Loaded,
                        Outcome::NoDevice => ModuleOutcome::NoDevice,
                        Outcome::Failed => ModuleOutcome::Failed,
                        Outcome::Rejected => ModuleOutcome::Rejected,
                    },
                    message: module.message.clone(),
                })
                .collect(),
            failed_units: self.findings.failed_units.clone(),
            checks: self
                .checks
                .iter()
                .map(|check| BootCheck {
                    id: check.id.to_owned(),
                    ok: check.ok,
                    detail: check.detail.clone(),
                })
                .collect(),
            secure_boot: self.secure_boot_record(),
            console_log: self.console_log.clone(),
        }
    }

    fn secure_boot_record(&self) -> Option<image::boot_record::SecureBootRecord> {
        let asked = self.secure_boot.as_ref()?;
        let state = self.findings.secure_boot.clone().unwrap_or_default();
        Some(image::boot_record::SecureBootRecord {
            enabled: state.enabled(),
            lockdown: state.lockdown,
            mok: asked.mok.as_ref().map(|m| m.subject.clone()),
            mok_loaded: asked
                .mok
                .as_ref()
                .is_some_and(|m| mok_line(&state.keys, m).is_some()),
        })
    }
}

/// Boots the image and checks what the probe reports.
pub fn boot(request: &BootRequest) -> Result<BootReport, BootError> {
    let work = tempfile::Builder::new()
        .prefix("imgbuild-boot-")
        .tempdir_in(std::env::temp_dir())
        .map_err(|e| BootError::io(&std::env::temp_dir(), e))?;
    check_overlays(&request.overlays)?;
    // What Secure Boot needs is there, and the certificate reads, before anything is unpacked.
    let secure_boot = match &request.secure_boot {
        Some(asked) => Some(SecureBootReport {
            files: secure_boot::boot_files()?,
            mok: mok_of(asked, &request.input)?,
        }),
        None => None,
    };
    let unpacked = work.path().join("rootfs");
    let root = input::root_of(&request.input, &unpacked)?;
    let (kernel, vmlinuz) = input::kernel_of(&root)?;
    let mut expect_failed = input::expected_failures(&request.input);
    expect_failed.extend(request.expect_failed.iter().cloned());
    // QEMU and the accelerator first: a machine that cannot boot says so before the packing.
    let chosen = qemu::choose(request.accel, &vmlinuz, work.path())?;
    let initrd = work.path().join("initrd");
    let packing = Instant::now();
    let codec = secure_boot
        .is_none()
        .then(|| Codec::for_kernel(&root, &kernel));
    let packed = initrd::pack_initrd(&root, &request.overlays, &initrd, codec)?;
    let (vmlinuz, removal) = clear_while_booting(&root, &unpacked, &vmlinuz, work.path())?;
    let compressed = std::fs::metadata(&initrd).map_or(0, |m| m.len());
    let memory_mb = request
        .memory_mb
        .unwrap_or_else(|| sized_memory(packed.bytes, compressed));
    let _ = std::fs::remove_file(&request.console_log);
    // An image with RDMA tools (SoftRoCE) gets a network card to run RDMA over.
    let network = root.join("usr/bin/ib_write_bw").exists();
    let machine = Machine {
        accel: chosen.accel,
        memory_mb,
        network,
    };
    let (finished, started) = machine.boot(
        secure_boot.as_ref(),
        work.path(),
        &vmlinuz,
        &initrd,
        request,
    )?;
    let pack_seconds = started.duration_since(packing).as_secs_f64();
    if let Some(removal) = removal {
        let _ = removal.join();
    }
    let console = std::fs::read_to_string(&request.console_log).unwrap_or_default();
    let findings = probe::parse(&console);
    let mut checks = checks(&kernel, &findings);
    checks.push(units_check(&findings, &expect_failed));
    if let Some(sb) = &secure_boot {
        checks.extend(secure_boot_checks(sb, &findings));
    }
    if !finished {
        checks.insert(0, unfinished(&console, request.timeout));
    }
    Ok(BootReport {
        ok: checks.iter().all(|c| c.ok),
        kernel,
        accel: chosen.accel.to_owned(),
        accel_reason: chosen.why,
        memory_mb,
        pack_seconds,
        seconds: started.elapsed().as_secs_f64(),
        packed_entries: packed.entries,
        findings,
        overlays: request.overlays.clone(),
        expect_failed,
        secure_boot,
        checks,
        console_log: request.console_log.clone(),
    })
}

/// Every overlay is a folder.
fn check_overlays(overlays: &[PathBuf]) -> Result<(), BootError> {
    match overlays.iter().find(|o| !o.is_dir()) {
        Some(overlay) => Err(BootError::Input(format!(
            "--overlay {}: not a folder (an overlay is a folder whose files are laid over the image, as Warewulf renders a node's overlays)",
            overlay.display()
        ))),
        None => Ok(()),
    }
}

/// The VM's accelerator, memory and network.
struct Machine {
    accel: &'static str,
    memory_mb: u64,
    network: bool,
}

impl Machine {
    /// Boots the kernel with the initrd, or under Secure Boot the firmware with a variable
    /// store and a system partition made now; whether the probe finished, and when the VM
    /// started.
    fn boot(
        &self,
        secure_boot: Option<&SecureBootReport>,
        work: &Path,
        vmlinuz: &Path,
        initrd: &Path,
        request: &BootRequest,
    ) -> Result<(bool, Instant), BootError> {
        let run = |start: &qemu::Start, initrd: Option<&Path>| {
            let started = Instant::now();
            let finished = qemu::boot(
                self.accel,
                start,
                initrd,
                self.memory_mb,
                &request.console_log,
                request.timeout,
                self.network,
            )?;
            Ok((finished, started))
        };
        let Some(sb) = secure_boot else {
            let start = qemu::Start::Kernel {
                kernel: vmlinuz,
                cmdline: qemu::CMDLINE,
            };
            return run(&start, Some(initrd));
        };
        let vars = secure_boot::variable_store(work, sb.mok.as_ref())?;
        let esp = secure_boot::system_partition(work, vmlinuz, initrd, qemu::CMDLINE)?;
        let _ = std::fs::remove_file(initrd);
        let start = qemu::Start::Firmware {
            code: Path::new(secure_boot::OVMF_CODE),
            vars: &vars,
            esp: &esp,
        };
        run(&start, None)
    }
}

/// The `boot` check of a VM that stopped, or ran out of time, before the probe's end.
fn unfinished(console: &str, timeout: Duration) -> Check {
    let tail: Vec<&str> = console.lines().rev().take(15).collect();
    // Debian's signed GRUB places the initrd below 1 GiB: a larger one does not load.
    let grub = if console.contains("imgbuild: GRUB loads")
        && console.contains("error: out of memory")
    {
        "GRUB could not load the initrd (Debian's signed GRUB places it below 1 GiB, where about 500 MB of compressed image fit; a larger image boots without --secure-boot); "
    } else {
        ""
    };
    Check {
        id: "boot",
        ok: false,
        detail: format!(
            "{grub}the VM stopped, or {} s passed, before the probe finished; the console's last lines:\n{}",
            timeout.as_secs(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ),
    }
}

/// The MOK to enrol: `--mok-cert FILE`, else the certificate the image's label names as its
/// modules' signer, else none.
fn mok_of(asked: &SecureBootRequest, input: &Path) -> Result<Option<Mok>, BootError> {
    if asked.no_mok {
        return Ok(None);
    }
    if let Some(path) = &asked.mok_cert {
        return Mok::from_file(path).map(Some);
    }
    match verify::Expect::of_labels(&input::labels(input)).signer_cert {
        Some(cert) if cert.der.is_empty() => Err(BootError::Input(format!(
            "{}: its {} label does not read as a certificate; give the certificate with --mok-cert FILE",
            input.display(),
            spec::labels::MODULE_SIGNER_CERT
        ))),
        Some(cert) => Ok(Some(Mok::of(
            &cert,
            format!("the image's {} label", spec::labels::MODULE_SIGNER_CERT),
        ))),
        None => Ok(None),
    }
}

/// The kernel's line for the enrolled certificate among the keys it loaded.
fn mok_line<'a>(keys: &'a [String], mok: &Mok) -> Option<&'a String> {
    let name = format!("'{}: ", mok.kernel_name());
    keys.iter().find(|line| line.contains(&name))
}

/// Secure Boot was on and the kernel locked down; the enrolled MOK is among its keys.
fn secure_boot_checks(sb: &SecureBootReport, findings: &Findings) -> Vec<Check> {
    let state = findings.secure_boot.clone().unwrap_or_default();
    let locked = ["integrity", "confidentiality"].contains(&state.lockdown.as_str());
    let mut checks = vec![Check {
        id: "secure_boot",
        ok: state.enabled() && locked,
        detail: if findings.secure_boot.is_none() {
            "the probe found no EFI firmware: the kernel was not started by the firmware".into()
        } else {
            format!(
                "booted through shim and GRUB; the firmware's SecureBoot variable is {}, the kernel says '{}', lockdown {}",
                if state.variable.is_empty() { "unreadable" } else { &state.variable },
                state.kernel_says,
                if state.lockdown.is_empty() { "unknown" } else { &state.lockdown }
            )
        },
    }];
    checks.push(match &sb.mok {
        None => Check {
            id: "mok_loaded",
            ok: true,
            detail: "no MOK enrolled (--no-mok, or no --mok-cert and no module-signer label): modules are checked against the distribution's and the firmware's keys only".into(),
        },
        Some(mok) => match mok_line(&state.keys, mok) {
            Some(line) => Check {
                id: "mok_loaded",
                ok: true,
                detail: format!("the MOK enrolled from {} is a key the kernel trusts for modules: {line}", mok.from),
            },
            None => Check {
                id: "mok_loaded",
                ok: false,
                detail: format!(
                    "the MOK '{}' enrolled from {} is not among the keys the kernel loaded ({})",
                    mok.kernel_name(),
                    mok.from,
                    state.keys.join("; ")
                ),
            },
        },
    });
    checks
}

/// A rootfs unpacked for the boot is packed now: its kernel is moved out for QEMU and the rest
/// is removed on a thread while the VM runs (a gigabyte of small files takes a minute or more
/// to remove on a busy disk). A rootfs folder given as the input is left alone.
fn clear_while_booting(
    root: &Path,
    unpacked: &Path,
    vmlinuz: &Path,
    work: &Path,
) -> Result<(PathBuf, Option<std::thread::JoinHandle<()>>), BootError> {
    if root != unpacked {
        return Ok((vmlinuz.to_owned(), None));
    }
    let kernel = work.join("vmlinuz");
    std::fs::rename(vmlinuz, &kernel).map_err(|e| BootError::io(vmlinuz, e))?;
    let doomed = unpacked.to_owned();
    let removal = std::thread::spawn(move || {
        let _ = std::fs::remove_dir_all(doomed);
    });
    Ok((kernel, Some(removal)))
}

/// SoftRoCE moved data: its port is active and an RDMA write loopback ran.
fn rdma_check(rdma: &probe::Rdma) -> Check {
    let active = rdma.port_state == "PORT_ACTIVE";
    let moved = rdma.write_mb_per_s.filter(|bw| *bw > 0.0);
    Check {
        id: "rdma_loopback",
        ok: active && moved.is_some(),
        detail: match moved {
            Some(bw) if active => format!(
                "{} on {}: port active, ib_write_bw loopback moved {:.3} GB/s ({bw:.2} MB/s as perftest counts)",
                rdma.device,
                rdma.netdev,
                bw * 1_048_576.0 / 1e9
            ),
            _ => format!(
                "{} on {}: port {}, ib_write_bw moved {}: {}",
                rdma.device,
                rdma.netdev,
                if rdma.port_state.is_empty() { "not found" } else { &rdma.port_state },
                moved.map_or("nothing".to_owned(), |bw| format!("{bw:.2} MB/s")),
                rdma.message
            ),
        },
    }
}

/// No unit failed but those expected to fail without the site's overlays, which are named as
/// such rather than hidden.
/// `systemd-modules-load` fails on a VM when a module the image loads at boot belongs to a
/// hardware driver with no hardware (`nvidia-peermem`, whose `nvidia` finds no GPU): accepted,
/// and said, when every module it failed on is of a driver family (`nvidia`) whose modules the
/// probe found without a device.
fn units_check(findings: &Findings, expected: &[String]) -> Check {
    let family = |name: &str| {
        name.split(['_', '-'])
            .next()
            .unwrap_or(name)
            .to_ascii_lowercase()
    };
    let no_device: Vec<String> = findings
        .modules
        .iter()
        .filter(|m| m.outcome == Outcome::NoDevice)
        .map(|m| family(&m.name))
        .collect();
    let no_device_only = !findings.modules_load_failures.is_empty()
        && findings.modules_load_failures.iter().all(|l| {
            l.split('\'')
                .nth(1)
                .is_some_and(|module| no_device.contains(&family(module)))
        });
    let is_expected = |unit: &str| {
        expected.iter().any(|p| ansible::glob::matches(p, unit))
            || (unit == "systemd-modules-load.service" && no_device_only)
    };
    let (as_expected, unexpected): (Vec<&String>, Vec<&String>) =
        findings.failed_units.iter().partition(|u| is_expected(u));
    let join = |units: &[&String]| {
        units
            .iter()
            .map(|u| u.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let detail = match (unexpected.is_empty(), as_expected.is_empty()) {
        (true, true) => "no unit failed".to_owned(),
        (true, false) => format!(
            "no unit failed but {}, which the recipe expects to fail without the site's overlays (boot_expect_failed){}",
            join(&as_expected),
            if no_device_only {
                format!(
                    "; systemd-modules-load found no device for a driver on this VM ({})",
                    findings.modules_load_failures.join("; ")
                )
            } else {
                String::new()
            }
        ),
        (false, _) => format!(
            "failed: {}{}; give the node its site files with --overlay DIR, or list a unit that needs them in the recipe's boot_expect_failed",
            join(&unexpected),
            if as_expected.is_empty() {
                String::new()
            } else {
                format!(" (and, as expected without overlays, {})", join(&as_expected))
            }
        ),
    };
    Check {
        id: "units_started",
        ok: unexpected.is_empty() && findings.done,
        detail,
    }
}

/// Memory for a VM whose root is the unpacked image in RAM: the files, the archive the kernel
/// unpacks them from, and 1 GiB for the kernel and the services.
fn sized_memory(unpacked: u64, compressed: u64) -> u64 {
    ((unpacked + compressed) >> 20) + 1024
}

/// What must hold for the node to come up with working modules.
fn checks(kernel: &str, findings: &Findings) -> Vec<Check> {
    let running = findings.kernel.clone().unwrap_or_default();
    let mut checks = vec![Check {
        id: "pinned_kernel_runs",
        ok: running == kernel,
        detail: format!("running {running}, the image's kernel is {kernel}"),
    }];
    let failed: Vec<String> = findings
        .modules
        .iter()
        .filter(|m| m.outcome == Outcome::Failed)
        .map(|m| format!("{}: {}", m.name, m.message))
        .collect();
    let rejected: Vec<String> = findings
        .modules
        .iter()
        .filter(|m| m.outcome == Outcome::Rejected)
        .map(|m| format!("{}: {}", m.name, m.message))
        .collect();
    let count = |o: Outcome| findings.modules.iter().filter(|m| m.outcome == o).count();
    let mut problems = Vec::new();
    if !rejected.is_empty() {
        problems.push(format!(
            "refused for its signature (unsigned, or signed by a key the kernel does not trust): {}",
            rejected.join("; ")
        ));
    }
    if !failed.is_empty() {
        problems.push(format!("failed to load: {}", failed.join("; ")));
    }
    checks.push(Check {
        id: "modules_load",
        ok: problems.is_empty() && findings.done,
        detail: if problems.is_empty() {
            format!(
                "{} loaded, {} found no device (hardware drivers on a VM), of {} under extra/ and updates/",
                count(Outcome::Loaded),
                count(Outcome::NoDevice),
                findings.modules.len()
            )
        } else {
            format!(
                "{} loaded of {}; {}",
                count(Outcome::Loaded),
                findings.modules.len(),
                problems.join("; ")
            )
        },
    });
    if let Some((enabled, active)) = &findings.openibd {
        if enabled != "not-found" && !enabled.is_empty() {
            checks.push(Check {
                id: "openibd_started",
                ok: enabled == "enabled" && active == "active",
                detail: format!("openibd is {enabled} and {active}"),
            });
        }
    }
    if let Some(rdma) = &findings.rdma {
        checks.push(rdma_check(rdma));
    }
    let opensm = findings.opensmd.clone().unwrap_or_default();
    checks.push(Check {
        id: "opensmd_not_running",
        ok: opensm != "active",
        detail: format!(
            "opensmd is {}",
            if opensm.is_empty() { "absent" } else { &opensm }
        ),
    });
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(failed: &[&str]) -> Findings {
        Findings {
            failed_units: failed.iter().map(|u| (*u).to_owned()).collect(),
            done: true,
            ..Findings::default()
        }
    }

    #[test]
    fn secure_boot_wants_it_on_locked_down_and_the_mok_loaded() {
        let mok = Mok {
            subject: "CN=site modules".into(),
            fingerprint: "sha256:00".into(),
            from: "--mok-cert site.pem".into(),
            der: Vec::new(),
        };
        let sb = SecureBootReport {
            files: Vec::new(),
            mok: Some(mok),
        };
        let mut found = findings(&[]);
        found.secure_boot = Some(SecureBootState {
            variable: "1".into(),
            kernel_says: "secureboot: Secure boot enabled".into(),
            lockdown: "integrity".into(),
            keys: vec!["Loaded X.509 cert 'site modules: 0a1b'".into()],
        });
        let checks = secure_boot_checks(&sb, &found);
        assert!(checks.iter().all(|c| c.ok), "{checks:?}");
        assert!(checks[1].detail.contains("--mok-cert site.pem"));
        if let Some(state) = found.secure_boot.as_mut() {
            state.keys = vec!["Loaded X.509 cert 'site modules old: 0a1b'".into()];
            state.lockdown = "none".into();
        }
        let checks = secure_boot_checks(&sb, &found);
        assert!(!checks[0].ok && !checks[1].ok, "{checks:?}");
        let direct = secure_boot_checks(&sb, &findings(&[]));
        assert!(direct[0].detail.contains("no EFI firmware"));
        let none = SecureBootReport {
            files: Vec::new(),
            mok: None,
        };
        assert!(secure_boot_checks(&none, &findings(&[]))[1]
            .detail
            .starts_with("no MOK enrolled"));
    }

    #[test]
    fn grub_out_of_memory_is_explained() {
        let console = "imgbuild: GRUB loads the image kernel\nerror: out of memory.\n";
        let check = unfinished(console, Duration::from_secs(9));
        assert!(!check.ok);
        assert!(
            check.detail.starts_with("GRUB could not load the initrd"),
            "{}",
            check.detail
        );
        assert!(!unfinished("Kernel panic", Duration::from_secs(9))
            .detail
            .contains("GRUB"));
    }

    #[test]
    fn a_module_refused_for_its_signature_fails_the_modules_check_saying_so() {
        let mut found = findings(&[]);
        found.modules.push(ModuleResult {
            name: "unsigned_mlx".into(),
            outcome: Outcome::Rejected,
            message: "Key was rejected by service".into(),
        });
        let load = &checks("6.1.0-50-amd64", &found)[1];
        assert_eq!(load.id, "modules_load");
        assert!(!load.ok);
        assert!(
            load.detail.contains("refused for its signature"),
            "{}",
            load.detail
        );
    }

    #[test]
    fn expected_failures_are_named_and_pass_and_others_fail() {
        let expected = ["munge.service".to_owned(), "sssd*.socket".to_owned()];
        let none = units_check(&findings(&[]), &expected);
        assert!(none.ok);
        assert_eq!(none.detail, "no unit failed");
        let known = units_check(
            &findings(&["munge.service", "sssd-nss.socket", "sssd-pam.socket"]),
            &expected,
        );
        assert!(known.ok, "{}", known.detail);
        assert!(known
            .detail
            .contains("munge.service, sssd-nss.socket, sssd-pam.socket, which the recipe expects"));
        let other = units_check(&findings(&["munge.service", "slurmd.service"]), &expected);
        assert!(!other.ok);
        assert!(
            other.detail.starts_with(
                "failed: slurmd.service (and, as expected without overlays, munge.service);"
            ),
            "{}",
            other.detail
        );
        let unfinished = Findings {
            done: false,
            ..findings(&[])
        };
        assert!(!units_check(&unfinished, &expected).ok);
        let mut vm = findings(&["systemd-modules-load.service"]);
        vm.modules.push(ModuleResult {
            name: "nvidia-current".into(),
            outcome: Outcome::NoDevice,
            message: "No such device".into(),
        });
        vm.modules_load_failures =
            vec!["Failed to insert module 'nvidia_peermem': Invalid argument".into()];
        let check = units_check(&vm, &expected);
        assert!(check.ok, "{}", check.detail);
        assert!(check
            .detail
            .contains("found no device for a driver on this VM"));
        vm.modules_load_failures
            .push("Failed to insert module 'stray': Exec format error".into());
        assert!(!units_check(&vm, &expected).ok);
        vm.modules_load_failures.remove(1);
        vm.modules[0].outcome = Outcome::Loaded;
        assert!(!units_check(&vm, &expected).ok);
    }
}
