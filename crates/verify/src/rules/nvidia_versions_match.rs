//! `nvidia_versions_match`: the NVIDIA driver's parts in the image are of one version. The
//! kernel module refuses user-space libraries of another version ("API mismatch"), and the
//! GSP firmware is loaded by the module's exact version (the open modules need it).

use super::rule::{loaded_nvidia, Rule, Verdict};
use crate::image::Image;
use crate::snapshot::Kind;

/// The rule.
pub struct NvidiaVersionsMatch;

/// The user-space libraries whose file names carry the driver's version.
const LIBRARIES: &[&str] = &["libcuda.so.", "libnvidia-ml.so."];

/// A driver version: digits and dots, at least two dots (`535.261.03`).
fn is_driver_version(text: &str) -> bool {
    text.matches('.').count() >= 2 && text.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// Files of the driver, each with the version its path names.
type Versioned = Vec<(String, String)>;

/// The GSP firmware files (`/lib/firmware/nvidia/<version>/gsp*.bin`) and the versioned
/// libraries of the image.
fn parts(image: &Image) -> (Versioned, Versioned) {
    let (mut firmware, mut libraries) = (Vec::new(), Vec::new());
    for (path, entry) in image.snapshot.entries() {
        if entry.kind != Kind::File {
            continue;
        }
        let under_firmware = path
            .strip_prefix("/usr/lib/firmware/nvidia/")
            .or_else(|| path.strip_prefix("/lib/firmware/nvidia/"));
        if let Some((version, file)) = under_firmware.and_then(|rest| rest.split_once('/')) {
            if is_driver_version(version) && file.starts_with("gsp") {
                firmware.push((path.clone(), version.to_owned()));
            }
            continue;
        }
        let name = path.rsplit('/').next().unwrap_or_default();
        let versioned = LIBRARIES
            .iter()
            .find_map(|prefix| name.strip_prefix(prefix))
            .filter(|version| is_driver_version(version));
        if let Some(version) = versioned {
            libraries.push((path.clone(), version.to_owned()));
        }
    }
    (firmware, libraries)
}

impl Rule for NvidiaVersionsMatch {
    fn id(&self) -> &'static str {
        "nvidia_versions_match"
    }

    fn summary(&self) -> &'static str {
        "with the NVIDIA driver in the image: its user-space libraries (`libcuda.so.<version>`, `libnvidia-ml.so.<version>`) are of the kernel module's version, and GSP firmware, when there is any, includes that version's (`/lib/firmware/nvidia/<version>/gsp*.bin`); each part of another version is named"
    }

    fn check(&self, image: &Image) -> Verdict {
        let module = match loaded_nvidia(image) {
            Ok(module) => module,
            Err(skip) => return skip,
        };
        let Some(version) = module.info.ok().and_then(|i| i.get("version")) else {
            return Verdict::Skip(format!(
                "{} has no version in .modinfo (see nvidia_version)",
                module.path
            ));
        };
        let (firmware, libraries) = parts(image);
        let mut wrong: Vec<String> = libraries
            .iter()
            .filter(|(_, v)| v != version)
            .map(|(path, v)| format!("{path} is {v}"))
            .collect();
        if !firmware.is_empty() && !firmware.iter().any(|(_, v)| v == version) {
            wrong.extend(firmware.iter().map(|(path, v)| format!("{path} is {v}")));
        }
        if !wrong.is_empty() {
            return Verdict::Fail(format!(
                "the nvidia module {} is driver {version}, but {}: install the driver's packages of one version (pin them together)",
                module.path,
                wrong.join(", ")
            ));
        }
        let mut matched: Vec<&str> = libraries.iter().map(|(path, _)| path.as_str()).collect();
        matched.extend(
            firmware
                .iter()
                .filter(|(_, v)| v == version)
                .map(|(path, _)| path.as_str())
                .take(1),
        );
        if matched.is_empty() {
            return Verdict::Pass(format!(
                "{} is driver {version}; no GSP firmware or versioned library to compare",
                module.path
            ));
        }
        Verdict::Pass(format!(
            "{} is driver {version}, as are {}",
            module.path,
            matched.join(", ")
        ))
    }
}
