//! `apt_key`: a signing key placed in the image's `/etc/apt/trusted.gpg.d/` (or `keyring`),
//! where apt reads it; a URL is downloaded through the site mirror.
//!
//! A key apt trusts, in `/etc/apt/trusted.gpg.d`.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::repos::put;
use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

crate::choices!(
    /// There or not.
    AptKeyState { Present => "present", Absent => "absent" }
);

/// Parameters of `apt_key`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AptKeyParams {
    /// The key's URL.
    pub url: Option<Text>,
    /// The key itself (armored text).
    pub data: Option<Text>,
    /// A key file in the image.
    pub file: Option<Text>,
    /// The key id (names the file; needed for absent).
    pub id: Option<Text>,
    /// The keyring file to write (default `/etc/apt/trusted.gpg.d/<id or name>.asc`).
    pub keyring: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<AptKeyState>>,
    /// Accepted; keys come from the mirror or the task.
    pub keyserver: Option<Text>,
    /// Accepted.
    pub validate_certs: Option<Flag>,
}

impl Params for AptKeyParams {
    fn check(&self) -> Result<(), String> {
        let absent = matches!(self.state, Some(Choice::Known(AptKeyState::Absent)));
        if !absent && self.keyserver.is_some() {
            return Err("keyserver: a key server is a host on the network, and an image's inputs are the project's files and the site mirror: export the key (gpg --export --armor ID) into the role's files/ and give it as file:, or put it on the mirror and give url:".into());
        }
        if !absent {
            super::spec::exactly_one(
                "apt_key",
                &[
                    ("url", self.url.is_some()),
                    ("data", self.data.is_some()),
                    ("file", self.file.is_some()),
                ],
            )?;
        }
        Ok(())
    }
}

/// `apt_key`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "apt_key",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["url"],
    normalize: super::spec::normalize_with::<AptKeyParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Url("url"),
    family: Some(PackageFamily::Apt),
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `apt_key`: the key as an armored file apt reads from `trusted.gpg.d` (or `keyring`).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AptKeyParams = params(SPEC.name, args)?;
    let stem =
        p.id.as_ref()
            .map(|t| t.as_str().trim().to_owned())
            .or_else(|| {
                p.url.as_ref().and_then(|u| {
                    u.as_str().rsplit('/').next().map(|b| {
                        b.trim_end_matches(".asc")
                            .trim_end_matches(".gpg")
                            .to_owned()
                    })
                })
            })
            .unwrap_or_else(|| "imgbuild".into());
    let path = p
        .keyring
        .as_ref()
        .map(|k| PathBuf::from(k.as_str()))
        .unwrap_or_else(|| PathBuf::from(format!("/etc/apt/trusted.gpg.d/{stem}.asc")));
    if matches!(p.state, Some(Choice::Known(AptKeyState::Absent))) {
        return put(ctx, &path, None);
    }
    let bytes = match (&p.url, &p.data, &p.file) {
        (Some(url), _, _) => key_bytes(ctx, url.as_str())?,
        (_, Some(data), _) => data.as_str().as_bytes().to_vec(),
        (_, _, Some(file)) => ctx.target.fs().read(Path::new(file.as_str()))?,
        _ => return Err(ModuleError::new("apt_key needs url, data or file")),
    };
    put(ctx, &path, Some(&String::from_utf8_lossy(&bytes)))
}

/// The key bytes of `source`: a URL through the mirror, or a file of the image.
fn key_bytes(ctx: &ModuleCtx, source: &str) -> Result<Vec<u8>, ModuleError> {
    if source.starts_with("http://") || source.starts_with("https://") {
        let file = ctx.downloads.fetch(source, None)?;
        std::fs::read(&file).map_err(|e| ModuleError::new(format!("{}: {e}", file.display())))
    } else {
        Ok(ctx.target.fs().read(Path::new(source))?)
    }
}

#[cfg(test)]
mod spec_tests {
    use serde_json::json;

    #[test]
    fn a_key_server_is_refused_with_what_to_do_instead() {
        let refused = (super::SPEC.normalize)(json!({"keyserver": "keys.example", "id": "ABCD"}))
            .expect_err("keyserver");
        assert!(refused.contains("role's files/"), "{refused}");
        // Removing a key by its id needs no source.
        assert!((super::SPEC.normalize)(json!({"id": "ABCD", "state": "absent"})).is_ok());
    }
}
