//! QEMU: which accelerator, and a boot with the console captured to a file. On these machines
//! `/dev/kvm` opens but a nested KVM guest hangs before its kernel prints a line, so `auto`
//! uses KVM only after a short probe boot of the kernel prints its first line; otherwise TCG.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::error::BootError;

/// The argument under which imgbuild's binary starts QEMU for it ([`launcher_main`]).
pub const LAUNCHER_ARG: &str = "__imgbuild-qemu-launcher";

/// imgbuild's binary, once it said it runs [`launcher_main`] under [`LAUNCHER_ARG`].
static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Called by a binary whose `main` runs [`launcher_main`] under [`LAUNCHER_ARG`]: QEMU is then
/// started through it, so that it dies with the build or boot that started it, however that
/// ends (SIGKILL included). Without it (a library's tests), QEMU is started directly.
pub fn use_launcher() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = LAUNCHER.set(exe);
    }
}

/// `imgbuild __imgbuild-qemu-launcher <parent pid> <program> <args>...`: asks the kernel to
/// kill this process when its parent dies, then becomes the program. Returns only on failure.
pub fn launcher_main() -> i32 {
    use std::os::unix::process::CommandExt;
    let mut args = std::env::args_os().skip(2);
    let parent = args
        .next()
        .and_then(|pid| pid.to_str()?.parse::<i32>().ok());
    let Some(program) = args.next() else {
        eprintln!("imgbuild: {LAUNCHER_ARG} needs a parent and a program");
        return 2;
    };
    let signal = Some(rustix::process::Signal::KILL);
    if rustix::process::set_parent_process_death_signal(signal).is_err() {
        return 1;
    }
    // A parent that died before the signal was asked for never sends it.
    if rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get()) != parent {
        return 1;
    }
    let error = Command::new(&program).args(args).exec();
    eprintln!(
        "imgbuild: cannot start {}: {error}",
        program.to_string_lossy()
    );
    127
}

/// `command` started through imgbuild's launcher when there is one.
fn launched(command: &Command) -> Command {
    let Some(exe) = LAUNCHER.get() else {
        let mut direct = Command::new(command.get_program());
        direct.args(command.get_args());
        return direct;
    };
    let mut launched = Command::new(exe);
    launched
        .arg(LAUNCHER_ARG)
        .arg(std::process::id().to_string())
        .arg(command.get_program())
        .args(command.get_args());
    launched
}

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

/// What the VM starts from.
pub enum Start<'a> {
    /// The kernel itself (`-kernel`, `-append`; the initrd is added by the caller).
    Kernel {
        /// The kernel.
        kernel: &'a Path,
        /// Its command line.
        cmdline: &'a str,
    },
    /// Secure Boot firmware: its code, a private variable store, and a system partition.
    Firmware {
        /// The firmware's code (read only).
        code: &'a Path,
        /// The variable store (written by the firmware).
        vars: &'a Path,
        /// The FAT image of the EFI system partition.
        esp: &'a Path,
    },
}

/// A path as one value of a QEMU option list (a comma doubled).
fn option_value(path: &Path) -> String {
    path.to_string_lossy().replace(',', ",,")
}

fn qemu(accel: &str, start: &Start, memory_mb: u64, log: &Path, network: bool) -> Command {
    let mut command = Command::new(QEMU);
    let machine = match start {
        Start::Kernel { .. } => "q35",
        // SMM keeps the variable store out of the guest's reach, as Secure Boot requires.
        Start::Firmware { .. } => "q35,smm=on",
    };
    command
        .args(["-machine", machine, "-accel", accel, "-smp", "2"])
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
        .arg(format!("file:{}", log.display()));
    match start {
        Start::Kernel { kernel, cmdline } => {
            command
                .arg("-kernel")
                .arg(kernel)
                .args(["-append", cmdline]);
        }
        Start::Firmware { code, vars, esp } => {
            command
                .args(["-global", "driver=cfi.pflash01,property=secure,value=on"])
                .arg("-drive")
                .arg(format!(
                    "if=pflash,format=raw,unit=0,readonly=on,file={}",
                    option_value(code)
                ))
                .arg("-drive")
                .arg(format!(
                    "if=pflash,format=raw,unit=1,file={}",
                    option_value(vars)
                ))
                .arg("-drive")
                .arg(format!(
                    "if=none,id=esp,format=raw,file={}",
                    option_value(esp)
                ))
                .args(["-device", "virtio-blk-pci,drive=esp"]);
        }
    }
    command
}

/// Runs `command` until it exits, `done` says the log is complete, or `timeout` passes.
fn run_until(
    command: Command,
    log: &Path,
    timeout: Duration,
    done: impl Fn(&str) -> bool,
) -> Result<bool, BootError> {
    let mut child = launched(&command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
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
            let start = Start::Kernel {
                kernel,
                cmdline: "console=ttyS0 panic=-1",
            };
            let command = qemu("kvm", &start, 256, &log, false);
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

/// The kernel's command line: the image is the initramfs, as Warewulf provisions it, and
/// systemd is its init; ramfs, not the default tmpfs capped at half the memory, so the whole
/// image lives in RAM.
pub const CMDLINE: &str =
    "console=ttyS0,115200 rdinit=/sbin/init rootfstype=ramfs panic=-1 loglevel=4";

/// Boots from `start` (with `initrd` when it is the kernel itself) under `accel`, the console
/// in `log`, until the probe is done or `timeout` passes. Returns whether the probe finished.
pub fn boot(
    accel: &str,
    start: &Start,
    initrd: Option<&Path>,
    memory_mb: u64,
    log: &Path,
    timeout: Duration,
    network: bool,
) -> Result<bool, BootError> {
    let mut command = qemu(accel, start, memory_mb, log, network);
    if let Some(initrd) = initrd {
        command.arg("-initrd").arg(initrd);
    }
    let finished = |text: &str| text.contains("IMGBUILD-PROBE done");
    run_until(command, log, timeout, finished)?;
    Ok(finished(&std::fs::read_to_string(log).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &Command) -> Vec<String> {
        command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_firmware_boots_with_smm_secure_flash_and_the_partition() {
        let start = Start::Firmware {
            code: Path::new("code.fd"),
            vars: Path::new("a,b/vars.fd"),
            esp: Path::new("esp.img"),
        };
        let args = args(&qemu("tcg", &start, 2048, Path::new("log"), false));
        let joined = args.join(" ");
        assert!(joined.contains("-machine q35,smm=on"), "{joined}");
        assert!(joined.contains("driver=cfi.pflash01,property=secure,value=on"));
        assert!(joined.contains("if=pflash,format=raw,unit=0,readonly=on,file=code.fd"));
        assert!(joined.contains("unit=1,file=a,,b/vars.fd"), "{joined}");
        assert!(joined.contains("virtio-blk-pci,drive=esp"));
        assert!(!args.contains(&"-kernel".to_owned()));
        let direct = Start::Kernel {
            kernel: Path::new("vmlinuz"),
            cmdline: CMDLINE,
        };
        let joined = self::args(&qemu("tcg", &direct, 2048, Path::new("log"), false)).join(" ");
        assert!(joined.contains("-machine q35 ") && joined.contains("-kernel vmlinuz"));
        assert!(!joined.contains("pflash"));
    }
}
