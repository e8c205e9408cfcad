//! The probe: a small program of ours, sent to the VM as a second cpio archive after the image
//! (as Warewulf sends its overlays), run by systemd once `multi-user.target` is reached. It
//! loads every module under `/lib/modules/<K>/{extra,updates}` with `modprobe` (`insmod` for
//! one an overlay added, which `modules.dep` does not know) and writes one `IMGBUILD-PROBE` line
//! per finding to the serial console, then powers the VM off. Booted through the firmware, it
//! also reports Secure Boot, the kernel's lockdown and the X.509 keys the kernel loaded.

use serde::Serialize;

/// The probe's shell script.
const SCRIPT: &str = r#"#!/bin/sh
# imgbuild boot probe: one console line per finding, then power off.
say() { echo "IMGBUILD-PROBE $*" > /dev/ttyS0; }
K=$(uname -r)
say kernel "$K"
# Secure Boot, when the firmware booted the kernel: its SecureBoot variable (the byte after
# the 4 of attributes), what the kernel said of it, the lockdown mode, the keys it loaded.
SB=/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
if [ -d /sys/firmware/efi ]; then
    [ -e "$SB" ] || { modprobe efivarfs; mount -t efivarfs efivarfs /sys/firmware/efi/efivars; } 2>/dev/null
    VALUE=$(head -c 5 "$SB" 2>/dev/null | tail -c 1 | od -An -tu1 | tr -d ' ')
    say secure-boot "${VALUE:--}" "$(dmesg | grep -o 'secureboot: .*' | head -n 1)"
    say lockdown "$(cat /sys/kernel/security/lockdown 2>/dev/null)"
    dmesg | grep -o "Loaded X.509 cert '.*'" | while read -r line; do say x509 "$line"; done
fi
# A module modules.dep does not know (one an overlay added) is loaded from its file.
load() { if modprobe --show-depends "$1" >/dev/null 2>&1; then modprobe "$1"; else insmod "$2"; fi; }
for dir in "/lib/modules/$K/extra" "/lib/modules/$K/updates"; do
    [ -d "$dir" ] || continue
    find "$dir" -name '*.ko*' | sort | while read -r file; do
        name=$(basename "$file"); name=${name%%.ko*}
        seen=$(dmesg | wc -l)
        if out=$(load "$name" "$file" 2>&1); then
            say module "$name" loaded
        else
            # What the kernel said since (a refused signature does not name the module),
            # else its last lines naming it.
            log=$(dmesg | tail -n +$((seen + 1)) | tail -n 2 | tr '\n' ' ')
            [ -n "$log" ] || log=$(dmesg | grep -i -- "$(echo "$name" | tr - _)" | tail -n 2 | tr '\n' ' ')
            say module "$name" failed "$(echo "$out" | tr '\n' ' ')" "| $log"
        fi
    done
done
# SoftRoCE: an rxe device on the VM's card (the image's own unit makes one, else the probe
# does), a link-local address, the port's state, and an RDMA write to itself.
if command -v ib_write_bw >/dev/null && command -v rdma >/dev/null; then
    NIC=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
    if [ -n "$NIC" ]; then
        ip link set "$NIC" up
        ip addr add 169.254.77.1/16 dev "$NIC" 2>/dev/null
        modprobe rdma_rxe
        DEV=$(rdma link show | awk -v nic="$NIC" '$NF == nic {split($2, a, "/"); print a[1]; exit}')
        [ -n "$DEV" ] || { rdma link add rxe_probe type rxe netdev "$NIC" && DEV=rxe_probe; }
        sleep 3
        STATE=$(ibv_devinfo -d "$DEV" 2>&1 | awk '/state:/ {print $2; exit}')
        # Up to three tries: under TCG a loaded machine now and then ends a run after its
        # header, with no figure; each try must move data of its own.
        for TRY in 1 2 3; do
            ib_write_bw -d "$DEV" -D 3 >/dev/null 2>&1 &
            SERVER=$!
            sleep 2
            OUT=$(ib_write_bw -d "$DEV" -D 3 169.254.77.1 2>&1)
            kill "$SERVER" 2>/dev/null
            wait "$SERVER" 2>/dev/null
            BW=$(echo "$OUT" | awk '$1 == 65536 {print $4}' | tail -n 1)
            [ -n "$BW" ] && break
        done
        say rdma "$DEV" "$NIC" "$STATE" "${BW:--}" "$(echo "$OUT" | tail -n 2 | tr '\n' ' ')"
    else
        say rdma none none NO_NIC - no network card
    fi
fi
say failed-units $(systemctl --failed --no-legend --plain | awk '{print $1}')
LOADS=$(journalctl -b -u systemd-modules-load.service -o cat --no-pager 2>/dev/null | grep -i 'failed to insert' | tr '\n' '|')
# The journal does not always hold the unit's early lines: run it again, as it ran at boot, its
# messages on its standard error.
if [ -z "$LOADS" ] && systemctl is-failed --quiet systemd-modules-load.service; then
    for LOADER in /usr/lib/systemd/systemd-modules-load /lib/systemd/systemd-modules-load; do
        [ -x "$LOADER" ] || continue
        LOADS=$(SYSTEMD_LOG_TARGET=console "$LOADER" 2>&1 | grep -i 'failed to insert' | tr '\n' '|')
        break
    done
fi
say modules-load "$LOADS"
# Each word stays in its place when systemctl prints nothing (an image without openibd).
ENABLED=$(systemctl is-enabled openibd 2>/dev/null)
ACTIVE=$(systemctl is-active openibd 2>/dev/null)
say openibd "${ENABLED:-not-found}" "${ACTIVE:-unknown}"
say opensmd "$(systemctl is-active opensmd 2>/dev/null)"
say done
sync
echo o > /proc/sysrq-trigger
"#;

/// The unit that runs the probe once the node is up.
const UNIT: &str = "[Unit]
Description=imgbuild boot probe
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/lib/imgbuild-probe
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
";

/// The probe as a cpio archive: the script, its unit, and the link that starts it.
pub fn archive() -> std::io::Result<Vec<u8>> {
    crate::pack::pack_files(
        &[
            ("usr/lib/imgbuild-probe", 0o100755, SCRIPT.as_bytes()),
            (
                "etc/systemd/system/imgbuild-probe.service",
                0o100644,
                UNIT.as_bytes(),
            ),
            (
                "etc/systemd/system/multi-user.target.wants/imgbuild-probe.service",
                0o120777,
                b"../imgbuild-probe.service",
            ),
        ],
        Vec::new(),
    )
}

/// What loading one module gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It loaded.
    Loaded,
    /// A hardware driver with no hardware (nvidia on a VM): acceptable.
    NoDevice,
    /// It did not load (`Exec format error`, `Unknown symbol`, ...).
    Failed,
    /// The kernel refused its signature (unsigned, or signed by a key it does not trust):
    /// `Key was rejected by service`, `EKEYREJECTED`.
    Rejected,
}

/// What the kernel says when it refuses a module for its signature: modprobe's
/// `EKEYREJECTED`, the kernel's `Loading of unsigned module is rejected` (or `of module with
/// unavailable key`), lockdown's `unsigned module loading is restricted`.
const SIGNATURE_REFUSED: [&str; 5] = [
    "Key was rejected by service",
    "is rejected",
    "unsigned module loading is restricted",
    "module verification failed",
    "Required key not available",
];

/// What the probe found of Secure Boot, when the firmware booted the kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SecureBootState {
    /// The firmware's `SecureBoot` variable (`1`: on).
    pub variable: String,
    /// What the kernel said (`secureboot: Secure boot enabled`).
    pub kernel_says: String,
    /// The kernel's lockdown mode (`integrity`, `confidentiality`, `none`).
    pub lockdown: String,
    /// The X.509 keys the kernel loaded (`Loaded X.509 cert '<name>: <key id>'`).
    pub keys: Vec<String>,
}

impl SecureBootState {
    /// Secure Boot is on, by the firmware's variable and by the kernel's word.
    pub fn enabled(&self) -> bool {
        self.variable == "1" && self.kernel_says.contains("Secure boot enabled")
    }
}

/// The mode in brackets of `/sys/kernel/security/lockdown` (`none [integrity] confidentiality`).
fn lockdown_mode(line: &str) -> String {
    line.split('[')
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or(line)
        .to_owned()
}

/// One module the probe loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleResult {
    /// The module's name.
    pub name: String,
    /// What loading it gave.
    pub outcome: Outcome,
    /// modprobe's message and the kernel's last lines about it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// What the probe reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Findings {
    /// The running kernel.
    pub kernel: Option<String>,
    /// Each module under extra/ and updates/.
    pub modules: Vec<ModuleResult>,
    /// Units systemd lists as failed.
    pub failed_units: Vec<String>,
    /// What `systemd-modules-load` could not insert (its journal lines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modules_load_failures: Vec<String>,
    /// `openibd`: enabled, active.
    pub openibd: Option<(String, String)>,
    /// `opensmd`: active.
    pub opensmd: Option<String>,
    /// SoftRoCE, in an image with RDMA tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdma: Option<Rdma>,
    /// Secure Boot, when the firmware booted the kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secure_boot: Option<SecureBootState>,
    /// The probe got to its end.
    pub done: bool,
}

/// What the probe found of RDMA over SoftRoCE.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Rdma {
    /// The rxe device.
    pub device: String,
    /// The network card under it.
    pub netdev: String,
    /// `ibv_devinfo`'s port state (`PORT_ACTIVE`).
    pub port_state: String,
    /// `ib_write_bw`'s average, in MB/s as perftest counts them (2^20 bytes).
    pub write_mb_per_s: Option<f64>,
    /// The last lines `ib_write_bw` printed.
    pub message: String,
}

fn rdma(value: &str) -> Rdma {
    let mut parts = value.splitn(5, ' ');
    let mut next = || parts.next().unwrap_or("").trim().to_owned();
    Rdma {
        device: next(),
        netdev: next(),
        port_state: next(),
        write_mb_per_s: next().parse().ok(),
        message: next(),
    }
}

/// Reads the probe's lines out of the console log.
pub fn parse(console: &str) -> Findings {
    let mut findings = Findings::default();
    for line in console.lines() {
        let Some(rest) = line.split("IMGBUILD-PROBE ").nth(1) else {
            continue;
        };
        let mut words = rest.trim_end_matches('\r').splitn(2, ' ');
        let (what, value) = (
            words.next().unwrap_or(""),
            words.next().unwrap_or("").trim(),
        );
        match what {
            "kernel" => findings.kernel = Some(value.to_owned()),
            "module" => findings.modules.push(module(value)),
            "failed-units" => {
                findings.failed_units = value.split_whitespace().map(str::to_owned).collect()
            }
            "openibd" => {
                let mut parts = value.split_whitespace();
                let enabled = parts.next().unwrap_or("").to_owned();
                findings.openibd = Some((enabled, parts.next().unwrap_or("").to_owned()));
            }
            "modules-load" => {
                findings.modules_load_failures = value
                    .split('|')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect()
            }
            "opensmd" => findings.opensmd = Some(value.to_owned()),
            "secure-boot" => {
                let (variable, says) = value.split_once(' ').unwrap_or((value, ""));
                let state = findings.secure_boot.get_or_insert_with(Default::default);
                state.variable = variable.to_owned();
                state.kernel_says = says.trim().to_owned();
            }
            "lockdown" => {
                findings
                    .secure_boot
                    .get_or_insert_with(Default::default)
                    .lockdown = lockdown_mode(value)
            }
            "x509" => findings
                .secure_boot
                .get_or_insert_with(Default::default)
                .keys
                .push(value.to_owned()),
            "rdma" => findings.rdma = Some(rdma(value)),
            "done" => findings.done = true,
            _ => {}
        }
    }
    findings
}

fn module(value: &str) -> ModuleResult {
    let mut parts = value.splitn(3, ' ');
    let name = parts.next().unwrap_or("").to_owned();
    let status = parts.next().unwrap_or("");
    let message = parts.next().unwrap_or("").trim().to_owned();
    let outcome = match status {
        "loaded" => Outcome::Loaded,
        _ if message.contains("No such device") => Outcome::NoDevice,
        _ if SIGNATURE_REFUSED.iter().any(|m| message.contains(m)) => Outcome::Rejected,
        _ => Outcome::Failed,
    };
    ModuleResult {
        name,
        outcome,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_reads_back_as_findings() {
        let console = "[   1.0] Linux version 6.1.0-50-amd64\r
IMGBUILD-PROBE kernel 6.1.0-50-amd64\r
IMGBUILD-PROBE module mlx5_core loaded\r
IMGBUILD-PROBE module nvidia-current failed modprobe: ERROR: could not insert 'nvidia_current': No such device | \r
IMGBUILD-PROBE module stray failed modprobe: ERROR: could not insert 'stray': Exec format error | stray: disagrees about version of symbol module_layout\r
IMGBUILD-PROBE failed-units munge.service sssd-nss.socket\r
IMGBUILD-PROBE modules-load Failed to insert module 'nvidia_peermem': No such device|\r
IMGBUILD-PROBE openibd enabled active\r
IMGBUILD-PROBE opensmd inactive\r
IMGBUILD-PROBE rdma rxe0 enp0s2 PORT_ACTIVE 123.45 ---------------------------------------------------------------------------------------\r
IMGBUILD-PROBE done\r
";
        let findings = parse(console);
        assert_eq!(findings.kernel.as_deref(), Some("6.1.0-50-amd64"));
        let outcomes: Vec<&Outcome> = findings.modules.iter().map(|m| &m.outcome).collect();
        assert_eq!(
            outcomes,
            vec![&Outcome::Loaded, &Outcome::NoDevice, &Outcome::Failed]
        );
        assert!(findings.modules[2]
            .message
            .contains("disagrees about version"));
        assert_eq!(
            findings.failed_units,
            vec!["munge.service", "sssd-nss.socket"]
        );
        assert_eq!(
            findings.modules_load_failures,
            vec!["Failed to insert module 'nvidia_peermem': No such device"]
        );
        assert_eq!(
            findings.openibd,
            Some(("enabled".to_owned(), "active".to_owned()))
        );
        assert_eq!(findings.opensmd.as_deref(), Some("inactive"));
        let rdma = findings.rdma.as_ref().expect("rdma");
        assert_eq!(
            (
                rdma.device.as_str(),
                rdma.netdev.as_str(),
                rdma.port_state.as_str()
            ),
            ("rxe0", "enp0s2", "PORT_ACTIVE")
        );
        assert_eq!(rdma.write_mb_per_s, Some(123.45));
        assert!(findings.done);
    }

    #[test]
    fn secure_boot_lockdown_keys_and_refused_signatures_read_back() {
        let console = "IMGBUILD-PROBE kernel 6.1.0-50-amd64\r
IMGBUILD-PROBE secure-boot 1 secureboot: Secure boot enabled\r
IMGBUILD-PROBE lockdown none [integrity] confidentiality\r
IMGBUILD-PROBE x509 Loaded X.509 cert 'Debian Secure Boot CA: 6ccece7e'\r
IMGBUILD-PROBE x509 Loaded X.509 cert 'imgbuild e2e site module signing key: db507e7a'\r
IMGBUILD-PROBE module mlx5_core loaded\r
IMGBUILD-PROBE module unsigned_mlx failed modprobe: can't load module unsigned_mlx (extra/unsigned_mlx.ko): Key was rejected by service | [ 5.2] Loading of unsigned module is rejected\r
IMGBUILD-PROBE module other failed insmod: ERROR: could not insert module other.ko: Operation not permitted | [ 5.3] Lockdown: insmod: unsigned module loading is restricted; see man kernel_lockdown.7\r
IMGBUILD-PROBE module broken failed modprobe: ERROR: could not insert 'broken': Exec format error | \r
IMGBUILD-PROBE done\r
";
        let findings = parse(console);
        let sb = findings.secure_boot.as_ref().expect("secure boot");
        assert!(sb.enabled());
        assert_eq!(sb.lockdown, "integrity");
        assert_eq!(sb.keys.len(), 2);
        assert!(sb.keys[1].contains("imgbuild e2e site"));
        let outcomes: Vec<&Outcome> = findings.modules.iter().map(|m| &m.outcome).collect();
        assert_eq!(
            outcomes,
            [
                &Outcome::Loaded,
                &Outcome::Rejected,
                &Outcome::Rejected,
                &Outcome::Failed
            ]
        );
        let off =
            parse("IMGBUILD-PROBE secure-boot 0 \r\nIMGBUILD-PROBE lockdown [none] integrity\r\n");
        let off = off.secure_boot.expect("reported");
        assert!(!off.enabled());
        assert_eq!(off.lockdown, "none");
        assert!(parse("IMGBUILD-PROBE done\r\n").secure_boot.is_none());
    }

    #[test]
    fn an_image_without_openibd_reads_as_not_found() {
        let findings =
            parse("IMGBUILD-PROBE openibd not-found inactive\r\nIMGBUILD-PROBE done\r\n");
        assert_eq!(
            findings.openibd,
            Some(("not-found".to_owned(), "inactive".to_owned()))
        );
        assert!(SCRIPT.contains("${ENABLED:-not-found}"));
    }

    #[test]
    fn the_probe_archive_holds_the_script_the_unit_and_its_link() {
        let bytes = archive().expect("archive");
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("usr/lib/imgbuild-probe"));
        assert!(text.contains("multi-user.target.wants/imgbuild-probe.service"));
        assert!(text.contains("TRAILER!!!"));
    }
}
