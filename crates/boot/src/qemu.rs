//! QEMU: which accelerator, and a boot with the console captured to a file. On these machines
//! `/dev/kvm` opens but a nested KVM guest hangs before its kernel prints a line, so `auto`
//! uses KVM only after a short probe boot of the kernel prints its first line; otherwise TCG.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::BootError;

/// The accelerator asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// KVM, whatever a probe says.
    Kvm,
    /// Software emulation.
    Tcg,
    /// KVM where a probe boot proves it works, TCG otherwise.
    Auto,
}

/// The accelerator used and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// `kvm` or `tcg`.
    pub accel: &'static str,
    /// Why.
    pub why: String,
}

const QEMU: &str = "qemu-system-x86_64";

/// The VM's network card: none, or one (virtio, the guest's `enp0s2`) on QEMU's user network
/// with `restrict=on`, so nothing leaves the VM (SoftRoCE's RDMA traffic stays inside it).
fn nic(network: bool) -> &'static str {
    if network {
        "user,model=virtio-net-pci,restrict=on"
    } else {
        "none"
    }
}

fn qemu(
    accel: &str,
    kernel: &Path,
    memory_mb: u64,
    cmdline: &str,
    log: &Path,
    network: bool,
) -> Command {
    let mut command = Command::new(QEMU);
    command
        .args(["-machine", "q35", "-accel", accel, "-smp", "2"])
        .args(["-m", &memory_mb.to_string()])
        .args([
            "-display",
            "none",
            "-monitor",
            "none",
            "-no-reboot",
            "-nic",
            nic(network),
        ])
        .arg("-serial")
        .arg(format!("file:{}", log.display()))
        .arg("-kernel")
        .arg(kernel)
        .args(["-append", cmdline])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Runs `command` until it exits, `done` says the log is complete, or `timeout` passes.
fn run_until(
    mut command: Command,
    log: &Path,
    timeout: Duration,
    done: impl Fn(&str) -> bool,
) -> Result<bool, BootError> {
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => BootError::Missing(format!(
            "{QEMU} is not installed; install it (apt-get install qemu-system-x86)"
        )),
        _ => BootError::io(Path::new(QEMU), e),
    })?;
    let started = Instant::now();
    loop {
        if child
            .try_wait()
            .map_err(|e| BootError::io(Path::new(QEMU), e))?
            .is_some()
        {
            return Ok(true);
        }
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if done(&text) || started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(done(&text));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether QEMU can be started here (`qemu-system-x86_64 --version`).
pub fn available() -> Result<(), BootError> {
    match Command::new(QEMU)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(BootError::Missing(format!(
            "{QEMU} --version failed ({status}); reinstall it (apt-get install qemu-system-x86)"
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(BootError::Missing(format!(
            "{QEMU} is not installed; install it (apt-get install qemu-system-x86)"
        ))),
        Err(e) => Err(BootError::io(Path::new(QEMU), e)),
    }
}

/// Chooses the accelerator for booting `kernel`.
pub fn choose(accel: Accel, kernel: &Path, work: &Path) -> Result<Chosen, BootError> {
    available()?;
    let kvm_opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    match accel {
        Accel::Tcg => Ok(Chosen {
            accel: "tcg",
            why: "asked for (--accel tcg)".into(),
        }),
        Accel::Kvm if kvm_opens => Ok(Chosen {
            accel: "kvm",
            why: "asked for (--accel kvm)".into(),
        }),
        Accel::Kvm => Err(BootError::Missing(
            "--accel kvm: /dev/kvm cannot be opened on this machine; use --accel tcg".into(),
        )),
        Accel::Auto if !kvm_opens => Ok(Chosen {
            accel: "tcg",
            why: "/dev/kvm cannot be opened".into(),
        }),
        Accel::Auto => {
            let log = work.join("kvm-probe.log");
            let command = qemu("kvm", kernel, 256, "console=ttyS0 panic=-1", &log, false);
            let printed = |text: &str| text.contains("Linux version");
            let started = Instant::now();
            if run_until(command, &log, Duration::from_secs(15), printed)?
                && printed(&std::fs::read_to_string(&log).unwrap_or_default())
            {
                Ok(Chosen {
                    accel: "kvm",
                    why: format!(
                        "a probe boot under KVM printed its first line in {:.1}s",
                        started.elapsed().as_secs_f64()
                    ),
                })
            } else {
                Ok(Chosen {
                    accel: "tcg",
                    why: "/dev/kvm opens, but a probe boot under KVM printed nothing in 15 s (nested virtualisation)".into(),
                })
            }
        }
    }
}

/// Boots `kernel` with `initrd` as its root under `accel`, the console in `log`, until the
/// probe is done or `timeout` passes. Returns whether the probe finished.
pub fn boot(
    accel: &str,
    kernel: &Path,
    initrd: &Path,
    memory_mb: u64,
    log: &Path,
    timeout: Duration,
    network: bool,
) -> Result<bool, BootError> {
    // The image is the initramfs, as Warewulf provisions it; systemd is its init.
    // ramfs, not the default tmpfs capped at half the memory: the whole image lives in RAM.
    let cmdline = "console=ttyS0,115200 rdinit=/sbin/init rootfstype=ramfs panic=-1 loglevel=4";
    let mut command = qemu(accel, kernel, memory_mb, cmdline, log, network);
    command.arg("-initrd").arg(initrd);
    let finished = |text: &str| text.contains("IMGBUILD-PROBE done");
    run_until(command, log, timeout, finished)?;
    Ok(finished(&std::fs::read_to_string(log).unwrap_or_default()))
}
