//! The boot under Secure Boot, as a Warewulf 4.5+ node boots with it: Debian's Secure Boot
//! OVMF (Microsoft's keys enrolled) starts Microsoft-signed shim, shim starts Debian's signed
//! GRUB, GRUB the image's own signed kernel with our initrd. They are on a FAT system partition
//! made for the boot with mtools (no loop mount); the module-signing certificate is enrolled as
//! shim's Machine Owner Key, written into a private copy of the firmware's variable store.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

use crate::error::BootError;
use crate::varstore;

/// Debian's OVMF built with Secure Boot and SMM (package `ovmf`).
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd";
/// Its variable store with Microsoft's KEK and db enrolled and Secure Boot on.
pub const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd";
/// shim signed by Microsoft (package `shim-signed`), Debian's CA built in.
pub const SHIM: &str = "/usr/lib/shim/shimx64.efi.signed";
/// Debian's monolithic GRUB signed by Debian (package `grub-efi-amd64-signed`); its prefix is
/// `/EFI/debian`, where it reads `grub.cfg`.
pub const GRUB: &str = "/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed";

/// The files a Secure Boot boot starts from, with the package that has each.
const FILES: [(&str, &str); 4] = [
    (OVMF_CODE, "ovmf"),
    (OVMF_VARS, "ovmf"),
    (SHIM, "shim-signed"),
    (GRUB, "grub-efi-amd64-signed"),
];

/// One firmware or boot loader file the boot used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BootFile {
    /// Where it is on this machine.
    pub path: String,
    /// `sha256:<hex>` of its bytes.
    pub digest: String,
}

/// The certificate enrolled as the Machine Owner Key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mok {
    /// Its subject.
    pub subject: String,
    /// `sha256:<hex>` of its DER.
    pub fingerprint: String,
    /// Where it came from (`--mok-cert FILE` or the image's label).
    pub from: String,
    /// Its DER.
    #[serde(skip)]
    pub der: Vec<u8>,
}

impl Mok {
    /// The name the kernel gives the certificate when it loads it (its CN, the subject else),
    /// as in `Loaded X.509 cert '<name>: <key id>'`.
    pub fn kernel_name(&self) -> String {
        self.subject
            .split(',')
            .find_map(|part| part.trim().strip_prefix("CN="))
            .unwrap_or(&self.subject)
            .to_owned()
    }

    /// The certificate in `path`, PEM or DER.
    pub fn from_file(path: &Path) -> Result<Mok, BootError> {
        let bytes = std::fs::read(path).map_err(|e| {
            BootError::Input(format!(
                "--mok-cert {}: cannot be read ({e}); give the site's module-signing certificate (PEM or DER)",
                path.display()
            ))
        })?;
        let cert = verify::SignerCert::parse(&bytes).map_err(|e| {
            BootError::Input(format!(
                "--mok-cert {}: {e}; give the site's module-signing certificate (PEM or DER)",
                path.display()
            ))
        })?;
        Ok(Mok::of(&cert, format!("--mok-cert {}", path.display())))
    }

    /// From a parsed certificate.
    pub fn of(cert: &verify::SignerCert, from: String) -> Mok {
        Mok {
            subject: cert.subject.clone(),
            fingerprint: format!("sha256:{}", cert.fingerprint),
            from,
            der: cert.der.clone(),
        }
    }
}

/// The files the firmware boots from, each checked to be there (missing: which package has
/// it), with their digests.
pub fn boot_files() -> Result<Vec<BootFile>, BootError> {
    FILES
        .iter()
        .map(|(path, package)| {
            let bytes = std::fs::read(path).map_err(|_| {
                BootError::Missing(format!(
                    "--secure-boot needs {path}; install it (apt-get install {package})"
                ))
            })?;
            Ok(BootFile {
                path: (*path).to_owned(),
                digest: image::hashing::digest_of(&bytes),
            })
        })
        .collect()
}

/// A private copy of the firmware's variable store in `work`, with `mok` enrolled as shim's
/// `MokList` when given.
pub fn variable_store(work: &Path, mok: Option<&Mok>) -> Result<PathBuf, BootError> {
    let mut store = std::fs::read(OVMF_VARS).map_err(|e| BootError::io(Path::new(OVMF_VARS), e))?;
    if let Some(mok) = mok {
        varstore::enroll_mok(&mut store, &mok.der).map_err(|e| {
            BootError::Input(format!(
                "{OVMF_VARS}: {e}; reinstall Debian's ovmf package, whose 4M variable store this boot writes the MOK into"
            ))
        })?;
    }
    let path = work.join("OVMF_VARS.fd");
    std::fs::write(&path, store).map_err(|e| BootError::io(&path, e))?;
    Ok(path)
}

/// GRUB's configuration: no menu, the kernel with `cmdline`, the initrd.
fn grub_cfg(cmdline: &str) -> String {
    format!(
        "set timeout=0\necho 'imgbuild: GRUB loads the image kernel'\nlinux /vmlinuz {cmdline}\ninitrd /initrd\nboot\n"
    )
}

fn tool<'a>(program: &'a str, package: &'a str) -> impl Fn(std::io::Error) -> BootError + 'a {
    move |e| match e.kind() {
        std::io::ErrorKind::NotFound => BootError::Missing(format!(
            "--secure-boot needs {program}; install it (apt-get install {package})"
        )),
        _ => BootError::io(Path::new(program), e),
    }
}

fn run(command: &mut Command, program: &str, package: &str) -> Result<(), BootError> {
    let out = command
        .env("MTOOLS_SKIP_CHECK", "1")
        .stdin(Stdio::null())
        .output()
        .map_err(tool(program, package))?;
    if out.status.success() {
        return Ok(());
    }
    Err(BootError::io(
        Path::new(program),
        std::io::Error::other(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    ))
}

/// The EFI system partition, a FAT image in `work`: shim as the removable-media loader
/// `/EFI/BOOT/BOOTX64.EFI`, GRUB beside it (where shim looks), GRUB's configuration where
/// Debian's GRUB reads it (`/EFI/debian/grub.cfg`), the kernel and the initrd.
pub fn system_partition(
    work: &Path,
    kernel: &Path,
    initrd: &Path,
    cmdline: &str,
) -> Result<PathBuf, BootError> {
    let cfg = work.join("grub.cfg");
    std::fs::write(&cfg, grub_cfg(cmdline)).map_err(|e| BootError::io(&cfg, e))?;
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len());
    let payload = size(kernel).map_err(|e| BootError::io(kernel, e))?
        + size(initrd).map_err(|e| BootError::io(initrd, e))?
        + size(Path::new(SHIM)).map_err(|e| BootError::io(Path::new(SHIM), e))?
        + size(Path::new(GRUB)).map_err(|e| BootError::io(Path::new(GRUB), e))?;
    // FAT32 wants 65525 clusters at least; a twentieth more than the files, for FAT tables.
    let kib = (payload + payload / 20) / 1024 + 16 * 1024;
    let kib = kib.max(64 * 1024);
    let esp = work.join("esp.img");
    let image = esp.to_string_lossy().into_owned();
    run(
        Command::new("mkfs.vfat")
            .args(["-F", "32", "-n", "IMGBUILD", "-C", &image])
            .arg(kib.to_string()),
        "mkfs.vfat",
        "dosfstools",
    )?;
    run(
        Command::new("mmd").args(["-i", &image, "::/EFI", "::/EFI/BOOT", "::/EFI/debian"]),
        "mmd",
        "mtools",
    )?;
    let copies: [(&Path, &str); 5] = [
        (Path::new(SHIM), "::/EFI/BOOT/BOOTX64.EFI"),
        (Path::new(GRUB), "::/EFI/BOOT/grubx64.efi"),
        (&cfg, "::/EFI/debian/grub.cfg"),
        (kernel, "::/vmlinuz"),
        (initrd, "::/initrd"),
    ];
    for (from, to) in copies {
        run(
            Command::new("mcopy").args(["-i", &image]).arg(from).arg(to),
            "mcopy",
            "mtools",
        )?;
    }
    Ok(esp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mok(subject: &str) -> Mok {
        Mok {
            subject: subject.into(),
            fingerprint: "sha256:00".into(),
            from: "test".into(),
            der: Vec::new(),
        }
    }

    #[test]
    fn the_kernel_names_a_certificate_by_its_common_name() {
        assert_eq!(
            mok("CN=imgbuild e2e site module signing key").kernel_name(),
            "imgbuild e2e site module signing key"
        );
        assert_eq!(mok("O=Site,CN=Modules").kernel_name(), "Modules");
        assert_eq!(mok("O=Site").kernel_name(), "O=Site");
    }

    #[test]
    fn grub_boots_the_kernel_and_initrd_with_the_command_line_at_once() {
        let cfg = grub_cfg("console=ttyS0 rdinit=/sbin/init");
        assert!(cfg.starts_with("set timeout=0\n"), "{cfg}");
        assert!(cfg
            .contains("\nlinux /vmlinuz console=ttyS0 rdinit=/sbin/init\ninitrd /initrd\nboot\n"));
    }

    #[test]
    fn a_certificate_file_that_is_not_one_is_refused_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("site.pem");
        std::fs::write(&path, "not a certificate").expect("write");
        let error = Mok::from_file(&path).expect_err("refused");
        assert!(matches!(error, BootError::Input(_)));
        assert!(error.to_string().contains("site.pem"), "{error}");
        let missing = Mok::from_file(&dir.path().join("none.pem")).expect_err("no file");
        assert!(matches!(missing, BootError::Input(_)));
        assert!(
            missing.to_string().contains("none.pem: cannot be read"),
            "{missing}"
        );
        let (_, pem) = verify::signing_fixture::signing_key(dir.path(), "site");
        let read = Mok::from_file(&pem).expect("a certificate");
        assert_eq!(read.kernel_name(), "site module signing key");
        assert!(read.from.ends_with("site.pem") && read.der.first() == Some(&0x30));
        assert_eq!(read.fingerprint.len(), "sha256:".len() + 64);
    }
}
