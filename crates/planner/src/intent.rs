//! What an image is meant to hold, resolved once at plan time: the pinned kernel, the MOFED and
//! NVIDIA versions, whether it builds an initramfs, whether it may run a subnet manager. Image
//! labels, the sandbox's kernel, the report and verify's expectations all read it, so one value
//! has one source.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value as Json;
use spec::NvidiaFlavor;

use crate::error::{ErrorKind, Location, PlanError};
use crate::recipe::Recipe;

/// The image's intent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImageIntent {
    /// The pinned kernel (`kernel_version`): what `uname -r` and `ansible_kernel` say in the
    /// build, what modules are built for, the image's label.
    pub kernel: Option<String>,
    /// `mofed_version`, when a `mofed` role installs MLNX_OFED.
    pub mofed: Option<String>,
    /// `doca_version`, when the `mofed` role installs DOCA-OFED instead (the recipe sets it in
    /// place of `mofed_version`).
    #[serde(rename = "doca_version", skip_serializing_if = "Option::is_none")]
    pub doca: Option<String>,
    /// `nvidia_version`, when an `nvidia` role installs it.
    pub nvidia: Option<String>,
    /// `nvidia_kernel_flavor`, when an `nvidia` role installs the driver: NVIDIA's open kernel
    /// modules or the proprietary ones.
    #[serde(
        rename = "nvidia_kernel_flavor",
        skip_serializing_if = "Option::is_none"
    )]
    pub nvidia_flavor: Option<NvidiaFlavor>,
    /// A `dracut` role builds an initramfs.
    pub initramfs: bool,
    /// `allow_opensm: true`: a subnet-manager image, which may enable `opensmd`.
    pub allow_opensm: bool,
    /// `build_only_packages`: the packages (shell patterns) that only the build needs
    /// (compiler, kernel headers, DKMS), removed after the last role.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub build_only: Vec<String>,
    /// `boot_expect_failed`: units (shell patterns) that fail when the image boots without the
    /// site's Warewulf overlays (munge without its key), reported by `boot` as expected.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boot_expect_failed: Vec<String>,
}

/// A variable that pins what a role installs in place of its `PINNED_BY` one: DOCA-OFED's
/// `doca_version` for the `mofed` role.
pub(crate) const ALSO_PINNED_BY: &[(&str, &str)] = &[("mofed", "doca_version")];

/// Role variables a recipe may leave to the role's defaults: `(role, variable)`.
pub(crate) const ROLE_DEFAULTED: &[(&str, &str)] = &[("nvidia", "nvidia_kernel_flavor")];

/// The roles that install what a version variable pins.
pub(crate) const PINNED_BY: &[(&str, &str)] = &[
    ("kernel", "kernel_version"),
    ("mofed", "mofed_version"),
    ("nvidia", "nvidia_version"),
];

impl ImageIntent {
    /// Reads the intent from the recipe's resolved variables; a role that installs a pinned
    /// component without its version is an error at that role's line.
    /// `defined_at` says where a variable is set, for errors about its value.
    pub fn of(
        recipe: &Recipe,
        vars: &IndexMap<String, Json>,
        defined_at: &dyn Fn(&str) -> Location,
    ) -> Result<ImageIntent, PlanError> {
        let text = |key: &str| {
            vars.get(key)
                .and_then(|v| match v {
                    Json::String(s) => Some(s.trim().to_owned()),
                    Json::Number(n) => Some(n.to_string()),
                    _ => None,
                })
                .filter(|s| !s.is_empty() && !s.contains("{{"))
        };
        let role = |name: &str| recipe.roles.iter().find(|r| r.name == name);
        for (name, key) in PINNED_BY {
            let instead = ALSO_PINNED_BY
                .iter()
                .find(|(role, _)| role == name)
                .filter(|(_, other)| text(other).is_some());
            if let (Some(entry), None, None) = (role(name), text(key), instead) {
                return Err(PlanError::new(
                    Location::new(&recipe.path, entry.line),
                    ErrorKind::Recipe(format!(
                        "role {name} installs what {key} pins, but the recipe sets no {key}; set vars.{key}{} (the image's labels, the build's kernel and verify's expectations come from it)",
                        ALSO_PINNED_BY
                            .iter()
                            .filter(|(role, _)| role == name)
                            .map(|(_, other)| format!(" or vars.{other}"))
                            .collect::<String>()
                    )),
                ));
            }
        }
        Ok(ImageIntent {
            kernel: text("kernel_version"),
            // doca_version chooses DOCA-OFED over MLNX_OFED, as the role does.
            mofed: text("mofed_version")
                .filter(|_| role("mofed").is_some() && text("doca_version").is_none()),
            doca: text("doca_version").filter(|_| role("mofed").is_some()),
            nvidia: text("nvidia_version").filter(|_| role("nvidia").is_some()),
            nvidia_flavor: match role("nvidia") {
                Some(_) => nvidia_flavor(text("nvidia_kernel_flavor"), defined_at)?,
                None => None,
            },
            initramfs: role("dracut").is_some(),
            allow_opensm: vars.get("allow_opensm").and_then(Json::as_bool) == Some(true),
            build_only: names(vars, "build_only_packages", "package", defined_at)?,
            boot_expect_failed: names(vars, "boot_expect_failed", "unit", defined_at)?,
        })
    }
}

/// `nvidia_kernel_flavor`, refused unless it names a flavour.
fn nvidia_flavor(
    text: Option<String>,
    defined_at: &dyn Fn(&str) -> Location,
) -> Result<Option<NvidiaFlavor>, PlanError> {
    let Some(text) = text else {
        return Ok(None);
    };
    NvidiaFlavor::parse(&text).map(Some).ok_or_else(|| {
        PlanError::new(
            defined_at("nvidia_kernel_flavor"),
            ErrorKind::Recipe(format!(
                "nvidia_kernel_flavor must be open (NVIDIA's open kernel modules, which Grace Hopper and Blackwell GPUs need) or proprietary; it is '{text}'"
            )),
        )
    })
}

/// A variable that lists names (packages, units) or shell patterns of them.
fn names(
    vars: &IndexMap<String, Json>,
    key: &str,
    what: &str,
    defined_at: &dyn Fn(&str) -> Location,
) -> Result<Vec<String>, PlanError> {
    let Some(value) = vars.get(key) else {
        return Ok(Vec::new());
    };
    let names: Option<Vec<String>> = match value {
        Json::Null => Some(Vec::new()),
        Json::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::trim).filter(|s| valid_pattern(s)))
            .map(|i| i.map(str::to_owned))
            .collect(),
        _ => None,
    };
    names.ok_or_else(|| {
        let example = match what {
            "package" => "[gcc, \"linux-headers-*\", dkms]",
            _ => "[munge.service, \"sssd*.socket\"]",
        };
        PlanError::new(
            defined_at(key),
            ErrorKind::Recipe(format!(
                "{key} must be a list of {what} names or shell patterns (such as {example}); it is {value}"
            )),
        )
    })
}

/// A package or unit name or a shell pattern of one: what dpkg, rpm and systemd allow, plus
/// `*`, `?` and `[]`.
fn valid_pattern(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-._:@*?[]".contains(c))
}
