//! `get_url`: download a file through the site mirror into the rootfs.
//!
//! Download through the site mirror (cached and pinned) into the rootfs.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::checksum::{self, Algorithm};
use super::pathinfo::{md5_of, sha1_of, sha1_of_host};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Int, Mode, Text};
use crate::rootfs::Kind;
use serde_json::Value as Json;
use sha2::Digest;
use std::path::{Path, PathBuf};

/// Parameters of `get_url`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GetUrlParams {
    /// http(s) URL.
    pub url: Text,
    /// Destination file (or directory) in the rootfs.
    pub dest: Text,
    /// `sha256:<hex>` (or another algorithm), or `sha256:<url of a checksum file>`.
    pub checksum: Option<Text>,
    /// Download even when `dest` exists.
    pub force: Option<Flag>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Seconds before a request times out.
    pub timeout: Option<Int>,
    /// Extra request headers.
    pub headers: Option<serde_json::Map<String, serde_json::Value>>,
    /// HTTP basic-auth user.
    #[serde(alias = "username")]
    pub url_username: Option<Text>,
    /// HTTP basic-auth password (never printed).
    #[serde(alias = "password")]
    pub url_password: Option<Text>,
    /// Send basic auth before being asked.
    pub force_basic_auth: Option<Flag>,
    /// Verify TLS certificates.
    pub validate_certs: Option<Flag>,
    /// Use proxy environment variables.
    pub use_proxy: Option<Flag>,
    /// User-Agent.
    pub http_agent: Option<Text>,
    /// Keep a timestamped backup of a replaced file.
    pub backup: Option<Flag>,
    /// Temporary directory for the download.
    pub tmp_dest: Option<Text>,
    /// Decompress a gzip transfer encoding.
    pub decompress: Option<Flag>,
    /// Headers not to send on redirect.
    pub unredirected_headers: Option<Vec<Text>>,
    /// Use `~/.netrc`.
    pub use_netrc: Option<Flag>,
    /// Use GSSAPI.
    pub use_gssapi: Option<Flag>,
    /// TLS client certificate.
    pub client_cert: Option<Text>,
    /// TLS client key.
    pub client_key: Option<Text>,
    /// TLS ciphers.
    pub ciphers: Option<Vec<Text>>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes.
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for GetUrlParams {
    fn check(&self) -> Result<(), String> {
        let url = self.url.as_str();
        let templated = ansible::template::is_template(url);
        let allowed = templated
            || url.starts_with("http://")
            || url.starts_with("https://")
            || url.starts_with("file://");
        if !allowed {
            return Err(format!(
                "url '{url}' must start with http://, https:// or file://"
            ));
        }
        if let Some(checksum) = self.checksum.as_ref().map(|c| c.as_str()) {
            check_checksum(checksum)?;
        }
        Ok(())
    }
}

/// A checksum as Ansible takes it: `<algorithm>:<hex>` or `<algorithm>:<URL of a checksum
/// file>` (a template is checked when it is rendered, at build time).
fn check_checksum(checksum: &str) -> Result<(), String> {
    if ansible::template::is_template(checksum) {
        return Ok(());
    }
    let what = format!(
        "write <algorithm>:<hex digits> or <algorithm>:<URL of a checksum file>, the algorithm one of {}",
        checksum::algorithm_names()
    );
    let Some((name, rest)) = checksum.split_once(':') else {
        return Err(format!("checksum '{checksum}' names no algorithm; {what}"));
    };
    let Some(algorithm) = Algorithm::named(name) else {
        return Err(format!(
            "checksum '{checksum}': '{name}' is not an algorithm Ansible checks; {what}"
        ));
    };
    if rest.contains("://") || algorithm.is_digest(rest) {
        return Ok(());
    }
    Err(format!(
        "checksum '{checksum}': '{rest}' is not a {name} ({} hex digits); {what}",
        algorithm.hex_len()
    ))
}

/// `get_url`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "get_url",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["url"],
    normalize: super::spec::normalize_with::<GetUrlParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Url("url"),
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

fn sha256_of(reader: &mut dyn std::io::Read) -> Result<String, ModuleError> {
    let mut hasher = sha2::Sha256::new();
    std::io::copy(reader, &mut hasher).map_err(|e| ModuleError::new(e.to_string()))?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// The digest asked for by `checksum:`: `<algorithm>:<hex>`, or `<algorithm>:<url>` of a
/// checksum file (`sha256sum` lines, `<hex>  name` or `<hex> *name`, or one hash alone), whose
/// line for the downloaded file's name gives it, as Ansible reads it.
fn expected_checksum(
    checksum: Option<&str>,
    url: &str,
    ctx: &ModuleCtx,
) -> Result<Option<(Algorithm, String)>, ModuleError> {
    let Some(checksum) = checksum else {
        return Ok(None);
    };
    let invalid = || ModuleError::new(check_checksum(checksum).err().unwrap_or_default());
    let (name, rest) = checksum.split_once(':').ok_or_else(invalid)?;
    let algorithm = Algorithm::named(name).ok_or_else(invalid)?;
    let hex = if rest.contains("://") {
        checksum_from_file(rest, url, ctx)?
    } else {
        rest.to_owned()
    };
    if algorithm.is_digest(&hex) {
        Ok(Some((algorithm, hex.to_ascii_lowercase())))
    } else {
        Err(ModuleError::new(format!(
            "checksum '{checksum}': '{hex}' is not a {name} ({} hex digits)",
            algorithm.hex_len()
        )))
    }
}

/// The `algorithm` digest of a file of the image.
fn digest_in_image(
    algorithm: Algorithm,
    fs: &crate::rootfs::RootFs,
    path: &Path,
) -> Result<String, ModuleError> {
    algorithm
        .hex_digest(&mut fs.open_read(path)?)
        .map_err(|e| ModuleError::new(format!("{}: {e}", path.display())))
}

fn checksum_from_file(sums: &str, url: &str, ctx: &ModuleCtx) -> Result<String, ModuleError> {
    let file = ctx.downloads.fetch(sums, None)?;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| ModuleError::new(format!("checksum file {sums}: {e}")))?;
    let name = url_file_name(url);
    let lines: Vec<&str> = text.lines().collect();
    if let [only] = lines.as_slice() {
        if only.split_whitespace().count() == 1 {
            return Ok(only.trim().to_owned());
        }
    }
    lines
        .iter()
        .filter_map(|line| line.split_once(' '))
        .map(|(hash, file)| (hash, file.trim_start_matches([' ', '*'])))
        .find(|(_, file)| file.trim_start_matches("./") == name)
        .map(|(hash, _)| hash.to_owned())
        .ok_or_else(|| {
            ModuleError::new(format!(
                "Unable to find a checksum for file '{name}' in '{sums}'"
            ))
        })
}

/// The file name a URL names (its last path segment, without a query).
fn url_file_name(url: &str) -> &str {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    path.rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("download")
}

/// `get_url`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: GetUrlParams = params(SPEC.name, args)?;
    let url = p.url.as_str();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ModuleError::new(format!(
            "url '{url}': image builds download over http(s) only"
        )));
    }
    let fs = ctx.target.fs();
    let mut dest = PathBuf::from(p.dest.as_str());
    if fs.meta_follow(&dest)?.is_some_and(|m| m.kind == Kind::Dir) {
        dest = dest.join(url_file_name(url));
    }
    let expected = expected_checksum(p.checksum.as_ref().map(|c| c.as_str()), url, ctx)?;
    let existing = fs.meta_follow(&dest)?.is_some();
    if existing && !flag(&p.force, false) {
        if let Some(kept) = keep_existing(&p, &dest, expected.as_ref(), ctx)? {
            return Ok(kept);
        }
    }
    if ctx.check {
        return Ok(ModuleResult::changed(true)
            .with("dest", dest.display().to_string())
            .with("url", url));
    }
    download(&p, &dest, expected.as_ref(), existing, ctx)
}

/// The result when the file already at `dest` is kept without a download: it matches the
/// expected checksum, or no checksum is asked for; `None` when it must be downloaded.
fn keep_existing(
    p: &GetUrlParams,
    dest: &Path,
    expected: Option<&(Algorithm, String)>,
    ctx: &ModuleCtx,
) -> Result<Option<ModuleResult>, ModuleError> {
    let fs = ctx.target.fs();
    let url = p.url.as_str();
    let matches = match expected {
        Some((algorithm, hex)) => digest_in_image(*algorithm, fs, dest)? == *hex,
        None => true,
    };
    if matches && expected.is_some() {
        let changed = attrs::apply(fs, dest, &p.owner, &p.group, &p.mode, ctx.check)?;
        return Ok(Some(
            ModuleResult::changed(changed)
                .with("dest", dest.display().to_string())
                .with("url", url)
                .with("msg", "file already exists"),
        ));
    }
    if matches {
        // Ansible asks the mirror with If-Modified-Since the file's mtime, and the answer
        // depends on clocks. A build keeps the file, as the usual 304 does, never asking.
        return Ok(Some(
            ModuleResult::changed(false)
                .with("dest", dest.display().to_string())
                .with("url", url)
                .with("status_code", 304)
                .with("msg", "HTTP Error 304: Not Modified"),
        ));
    }
    Ok(None)
}

/// Ansible's message when the download `cached` is not the `expected` digest, else `None`.
fn mismatch(
    expected: Option<&(Algorithm, String)>,
    cached: &Path,
    dest: &Path,
) -> Result<Option<String>, ModuleError> {
    let Some((algorithm, hex)) = expected else {
        return Ok(None);
    };
    let open = std::fs::File::open(cached).map_err(|e| ModuleError::new(e.to_string()));
    let got = algorithm
        .hex_digest(&mut open?)
        .map_err(|e| ModuleError::new(e.to_string()))?;
    Ok((got != *hex).then(|| {
        format!(
            "The checksum for {} did not match {hex}; it was {got}.",
            dest.display()
        )
    }))
}

/// Downloads the URL through the mirror and puts it at `dest` (unless the same file is there),
/// checking it against `expected`; failures carry Ansible's result fields.
fn download(
    p: &GetUrlParams,
    dest: &Path,
    expected: Option<&(Algorithm, String)>,
    existing: bool,
    ctx: &ModuleCtx,
) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let url = p.url.as_str();
    let failed = |msg: String| {
        let mut error = ModuleError::new(msg);
        error
            .fields
            .insert("dest".into(), Json::from(dest.display().to_string()));
        error.fields.insert("url".into(), Json::from(url));
        error
    };
    let cached = ctx.downloads.fetch(url, None).map_err(|e| {
        let mut error = failed(e.message);
        if let Some(status) = e.status {
            error
                .fields
                .insert("status_code".into(), Json::from(status));
        }
        error
    })?;
    let sha =
        sha256_of(&mut std::fs::File::open(&cached).map_err(|e| ModuleError::new(e.to_string()))?)?;
    // Ansible's checksums here are SHA-1: of the file that was there, and of the download.
    let checksum_src = sha1_of_host(&cached)?;
    let checksum_dest = if existing {
        Json::from(sha1_of(fs, dest)?)
    } else {
        Json::Null
    };
    let download_failed = |msg: String, changed: bool| {
        let mut error = failed(msg);
        let fields = &mut error.fields;
        fields.insert("changed".into(), Json::from(changed));
        fields.insert("checksum_src".into(), Json::from(checksum_src.as_str()));
        fields.insert("checksum_dest".into(), checksum_dest.clone());
        error
    };
    let parent = dest.parent().unwrap_or(Path::new("/"));
    if fs.meta_follow(parent)?.is_none() {
        return Err(download_failed(
            format!("Destination {} does not exist", parent.display()),
            false,
        ));
    }
    if let Some(mismatch) = mismatch(expected, &cached, dest)? {
        // Ansible reports the download as a change even though it keeps nothing of it.
        let changed = checksum_dest.as_str() != Some(checksum_src.as_str());
        return Err(download_failed(mismatch, changed));
    }
    let same = existing && sha256_of(&mut fs.open_read(dest)?)? == sha;
    if !same {
        let mode = match &p.mode {
            Some(crate::types::Mode::Octal(bits)) => Some(*bits),
            _ => None,
        };
        fs.copy_in(&cached, dest, mode)?;
    }
    let attrs_changed = attrs::apply(fs, dest, &p.owner, &p.group, &p.mode, false)?;
    Ok(ModuleResult::changed(!same || attrs_changed)
        .with("dest", dest.display().to_string())
        .with("url", url)
        .with("status_code", 200)
        .with("checksum_dest", checksum_dest)
        .with("checksum_src", checksum_src)
        .with("md5sum", md5_of(fs, dest)?))
}
