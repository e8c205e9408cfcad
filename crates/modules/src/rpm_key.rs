//! `rpm_key`: a signing key imported into the image's rpm database (`rpm --import` in the
//! rootfs; a URL is downloaded through the site mirror and pinned like any artifact).
//!
//! A key in the image's rpm database, as ansible-core 2.14's module handles it with
//! the image's own `gpg` and `rpm`: the key id read from the key file, the key imported unless
//! a key with that id is (`rpm --import`), or erased (`rpm --erase --allmatches
//! gpg-pubkey-<id>`). A key given by URL comes through the site mirror and is pinned like any
//! artifact; it is imported from a file in the image's `/tmp`, removed afterwards.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use crate::api::{params, ModuleCtx, ModuleError, ModuleResult};
use crate::target::Cmd;
use serde_json::Value as Json;
use std::path::Path;

crate::choices!(
    /// Imported or removed.
    KeyState { Present => "present", Absent => "absent" }
);

/// Parameters of `rpm_key`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RpmKeyParams {
    /// A URL, or a path in the image.
    pub key: Text,
    /// Present or absent.
    pub state: Option<Choice<KeyState>>,
    /// The fingerprint the key must have.
    pub fingerprint: Option<Text>,
    /// Accepted.
    pub validate_certs: Option<Flag>,
}

impl Params for RpmKeyParams {}

/// `rpm_key`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "rpm_key",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["key"],
    normalize: super::spec::normalize_with::<RpmKeyParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Url("key"),
    family: Some(PackageFamily::Dnf),
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// Where a key fetched from a URL is put in the image while it is read and imported.
const FETCHED: &str = "/tmp/.imgbuild-rpm-key";

/// gpg's listing of keys, as the module runs it.
const GPG_LIST: &str = "gpg --no-tty --batch --with-colons --fixed-list-mode";

/// Runs a shell command in the image; its standard output, or its standard error as the
/// module's failure (`execute_command`).
fn execute(ctx: &ModuleCtx, script: &str) -> Result<String, ModuleError> {
    let out = ctx.target.run(&Cmd::new(&["sh", "-c", script]))?;
    if out.rc == 127 && out.stderr.contains("gpg") {
        return Err(ModuleError::new(
            "Failed to find required executable \"gpg2\" in paths: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        ));
    }
    if out.rc != 0 {
        return Err(ModuleError::new(out.stderr));
    }
    Ok(out.stdout)
}

/// Field `n` (from 0) of the first gpg colon line that starts with `kind`.
fn colon_field(listing: &str, kind: &str, n: usize) -> Result<String, ModuleError> {
    listing
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(kind))
        .and_then(|l| l.split(':').nth(n))
        .map(str::to_owned)
        .ok_or_else(|| ModuleError::new("Unexpected gpg output"))
}

/// Whether a key with `keyid` is in the rpm database.
fn imported(ctx: &ModuleCtx, keyid: &str) -> Result<bool, ModuleError> {
    let out = ctx.target.run(&Cmd::new(&["rpm", "-q", "gpg-pubkey"]))?;
    if out.rc != 0 {
        return Ok(false);
    }
    let listing = execute(
        ctx,
        &format!("rpm -q gpg-pubkey --qf '%{{description}}' | {GPG_LIST} -"),
    )?;
    Ok(listing
        .lines()
        .any(|l| l.split(':').nth(4).is_some_and(|f| f.contains(keyid))))
}

/// A key id as the user gives one (`0x` and 8 hex digits or more, any case).
fn is_keyid(key: &str) -> bool {
    let hex = key
        .strip_prefix("0x")
        .or_else(|| key.strip_prefix("0X"))
        .unwrap_or(key);
    hex.len() >= 8 && hex[..8].chars().all(|c| c.is_ascii_hexdigit())
}

/// The key file in the image (fetched there for a URL) and whether it is a temporary one;
/// `None` for a key id.
fn key_file(ctx: &ModuleCtx, key: &str) -> Result<Option<(String, bool)>, ModuleError> {
    if key.contains("://") {
        let cached = ctx.downloads.fetch(key, None)?;
        let fs = ctx.target.fs();
        fs.mkdir_all(Path::new(FETCHED), 0o700)?;
        let inside = format!("{FETCHED}/key");
        fs.copy_in(&cached, Path::new(&inside), Some(0o600))?;
        return Ok(Some((inside, true)));
    }
    if is_keyid(key) {
        return Ok(None);
    }
    let is_file = ctx
        .target
        .fs()
        .meta_follow(Path::new(key))?
        .is_some_and(|m| m.kind == crate::rootfs::Kind::File);
    if !is_file {
        return Err(ModuleError::new(format!("Not a valid key {key}")));
    }
    Ok(Some((key.to_owned(), false)))
}

/// `rpm_key`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: RpmKeyParams = params(SPEC.name, args)?;
    let key = p.key.as_str();
    let file = key_file(ctx, key)?;
    let result = apply(ctx, &p, file.as_ref().map(|f| f.0.as_str()));
    if file.is_some_and(|f| f.1) {
        let _ = ctx.target.fs().remove_all(Path::new(FETCHED));
    }
    result
}

fn apply(
    ctx: &ModuleCtx,
    p: &RpmKeyParams,
    file: Option<&str>,
) -> Result<ModuleResult, ModuleError> {
    let keyid = match file {
        Some(file) => colon_field(&execute(ctx, &format!("{GPG_LIST} '{file}'"))?, "pub:", 4)?,
        None => p.key.as_str().to_owned(),
    };
    let keyid = keyid.trim().to_uppercase();
    let keyid = keyid.strip_prefix("0X").unwrap_or(&keyid).to_owned();
    let present = !matches!(p.state, Some(Choice::Known(KeyState::Absent)));
    let there = imported(ctx, &keyid)?;
    if !present {
        if there && !ctx.check {
            let short = keyid[keyid.len().saturating_sub(8)..].to_lowercase();
            execute(ctx, &format!("rpm --erase --allmatches gpg-pubkey-{short}"))?;
        }
        return Ok(ModuleResult::changed(there));
    }
    if there {
        return Ok(ModuleResult::changed(false));
    }
    let Some(file) = file else {
        return Err(ModuleError::new(
            "When importing a key, a valid file must be given",
        ));
    };
    if let Some(wanted) = &p.fingerprint {
        let wanted = wanted.as_str().replace(' ', "").to_uppercase();
        let listing = execute(ctx, &format!("{GPG_LIST} --with-fingerprint '{file}'"))?;
        let has = colon_field(&listing, "fpr:", 9)?;
        if wanted != has {
            return Err(ModuleError::new(format!(
                "The specified fingerprint, '{wanted}', does not match the key fingerprint '{has}'"
            )));
        }
    }
    if !ctx.check {
        execute(ctx, &format!("rpm --import '{file}'"))?;
    }
    Ok(ModuleResult::changed(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_and_gpg_listings_read_as_the_module_reads_them() {
        assert!(is_keyid("0xEA0BAEE7"));
        assert!(is_keyid("c09673a4ea0baee7"));
        assert!(!is_keyid("/etc/pki/rpm-gpg/RPM-GPG-KEY"));
        assert!(!is_keyid("0xEA0B"));
        let listing = "tru::1:0:0:0\npub:-:2048:1:C09673A4EA0BAEE7:1795718000:::-:::scSC::::::23::0:\nfpr:::::::::9131CC7D7E9DA7FC51FE02DEC09673A4EA0BAEE7:\n";
        assert_eq!(
            colon_field(listing, "pub:", 4).expect("pub"),
            "C09673A4EA0BAEE7"
        );
        assert_eq!(
            colon_field(listing, "fpr:", 9).expect("fpr"),
            "9131CC7D7E9DA7FC51FE02DEC09673A4EA0BAEE7"
        );
        assert!(colon_field("sec:x\n", "pub:", 4).is_err());
    }
}
