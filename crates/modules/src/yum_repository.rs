//! `yum_repository`: a `.repo` file of the image (dnf reads it when later tasks install).
//!
//! A section of a `.repo` file, read and written as ansible-core 2.14's
//! module does with Python's `RawConfigParser`: the other sections of the file kept, the
//! section made again from the task's options (sorted by key, booleans as `0`/`1`, lists of
//! URLs on continuation lines), the file rewritten only when its sections say something else,
//! and removed when its last section goes.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text, TextList};
use crate::api::{params, ModuleCtx, ModuleError, ModuleResult};
use crate::copy::{place, Placement};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

crate::choices!(
    /// Whether the repository section is there.
    RepoState { Present => "present", Absent => "absent" }
);

/// Parameters of `yum_repository`: every option ansible-core 2.14's module takes (each, when
/// given, is a `key = value` line of the repository's section), and the file's attributes.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct YumRepositoryParams {
    /// The repository id (the `[section]`).
    pub name: Text,
    /// Its `name =` (required to add a repository).
    pub description: Option<Text>,
    /// `async`: parallel downloads.
    #[serde(rename = "async")]
    pub async_: Option<Flag>,
    /// Bandwidth limit.
    pub bandwidth: Option<Text>,
    /// Base URLs.
    pub baseurl: Option<TextList>,
    /// Cost.
    pub cost: Option<Text>,
    /// Delta RPM metadata percentage.
    pub deltarpm_metadata_percentage: Option<Text>,
    /// Delta RPM percentage.
    pub deltarpm_percentage: Option<Text>,
    /// Enabled.
    pub enabled: Option<Flag>,
    /// Groups from this repository.
    pub enablegroups: Option<Flag>,
    /// Packages to leave out.
    #[serde(alias = "excludepkgs")]
    pub exclude: Option<TextList>,
    /// `roundrobin` or `priority`.
    pub failovermethod: Option<Text>,
    /// CA key URL.
    pub gpgcakey: Option<Text>,
    /// Check package signatures.
    pub gpgcheck: Option<Flag>,
    /// Key URLs.
    pub gpgkey: Option<TextList>,
    /// Let modular filtering ignore this repository.
    pub module_hotfixes: Option<Flag>,
    /// `all`, `packages` or `none`.
    pub http_caching: Option<Text>,
    /// A URL of further settings.
    pub include: Option<Text>,
    /// The only packages to take.
    pub includepkgs: Option<TextList>,
    /// `4`, `6`, `IPv4`, `IPv6` or `whatever`.
    pub ip_resolve: Option<Text>,
    /// HTTP keepalive.
    pub keepalive: Option<Flag>,
    /// Keep downloaded packages (`0` or `1`).
    pub keepcache: Option<Text>,
    /// Metadata lifetime.
    pub metadata_expire: Option<Text>,
    /// When expired metadata is still used.
    pub metadata_expire_filter: Option<Text>,
    /// A metalink URL.
    pub metalink: Option<Text>,
    /// A mirror list URL.
    pub mirrorlist: Option<Text>,
    /// The mirror list's lifetime.
    pub mirrorlist_expire: Option<Text>,
    /// Removed in Ansible 2.5: refused as the module refuses it.
    pub params: Option<serde_json::Value>,
    /// Password for the repository.
    pub password: Option<Text>,
    /// Priority.
    pub priority: Option<Text>,
    /// Protect packages from updates from other repositories.
    pub protect: Option<Flag>,
    /// Proxy URL.
    pub proxy: Option<Text>,
    /// Proxy password.
    pub proxy_password: Option<Text>,
    /// Proxy user.
    pub proxy_username: Option<Text>,
    /// Check the repository metadata's signature.
    pub repo_gpgcheck: Option<Flag>,
    /// Retries.
    pub retries: Option<Text>,
    /// S3 repository.
    pub s3_enabled: Option<Flag>,
    /// Skip when unreachable.
    pub skip_if_unavailable: Option<Flag>,
    /// CA certificate file for TLS.
    #[serde(alias = "ca_cert")]
    pub sslcacert: Option<Text>,
    /// Check the permissions of the TLS files.
    pub ssl_check_cert_permissions: Option<Flag>,
    /// Client certificate file.
    #[serde(alias = "client_cert")]
    pub sslclientcert: Option<Text>,
    /// Client key file.
    #[serde(alias = "client_key")]
    pub sslclientkey: Option<Text>,
    /// Verify TLS.
    #[serde(alias = "validate_certs")]
    pub sslverify: Option<Flag>,
    /// Bandwidth throttle.
    pub throttle: Option<Text>,
    /// Timeout.
    pub timeout: Option<Text>,
    /// Variables shown in repository ids.
    pub ui_repoid_vars: Option<Text>,
    /// User for the repository.
    pub username: Option<Text>,
    /// Send countme (a later ansible-core's; refused by the planner for 2.14).
    pub countme: Option<Flag>,
    /// The file name without `.repo` (default: the name).
    pub file: Option<Text>,
    /// The folder (default `/etc/yum.repos.d`).
    pub reposdir: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<RepoState>>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner.
    pub owner: Option<Text>,
    /// Group.
    pub group: Option<Text>,
    /// Extended attributes (`chattr` letters; accepted, not applied in an image build).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for YumRepositoryParams {}

/// `yum_repository`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "yum_repository",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["baseurl", "gpgkey"],
    normalize: super::spec::normalize_with::<YumRepositoryParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: Some(PackageFamily::Dnf),
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// The sections of a repository file, in file order, each with its keys in order.
type Sections = Vec<(String, Vec<(String, String)>)>;

/// Reads a `.repo` file as `RawConfigParser` does: `key = value` or `key: value` (keys
/// lower-cased), indented lines continuing the value before, `#` and `;` comment lines.
fn parse(text: &str) -> Sections {
    let mut sections: Sections = Vec::new();
    let mut last_key = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        if let Some(section) = sections.last_mut() {
            if indented && last_key {
                if let Some((_, value)) = section.1.last_mut() {
                    value.push('\n');
                    value.push_str(trimmed);
                    continue;
                }
            }
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            sections.retain(|(n, _)| n != name);
            sections.push((name.to_owned(), Vec::new()));
            last_key = false;
            continue;
        }
        let at = trimmed.find(['=', ':']).unwrap_or(trimmed.len());
        let (key, value) = trimmed.split_at(at);
        let value = value.get(1..).unwrap_or("").trim();
        if let Some(section) = sections.last_mut() {
            let key = key.trim().to_lowercase();
            section.1.retain(|(k, _)| *k != key);
            section.1.push((key, value.to_owned()));
            last_key = true;
        }
    }
    sections
}

/// The file as `RawConfigParser.write` writes it.
fn write(sections: &Sections) -> String {
    let mut text = String::new();
    for (name, items) in sections {
        text.push_str(&format!("[{name}]\n"));
        for (key, value) in items {
            text.push_str(&format!("{key} = {}\n", value.replace('\n', "\n\t")));
        }
        text.push('\n');
    }
    text
}

/// The module's `dump`: sections and keys sorted (what it compares, and its diff).
fn dump(sections: &Sections) -> String {
    let mut sorted: Sections = sections.clone();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut text = String::new();
    for (name, mut items) in sorted {
        items.sort();
        text.push_str(&format!("[{name}]\n"));
        for (key, value) in items {
            text.push_str(&format!("{key} = {value}\n"));
        }
        text.push('\n');
    }
    text
}

fn flag(v: &Option<Flag>) -> Option<String> {
    v.as_ref()
        .map(|f| if f.or(false) { "1" } else { "0" }.to_owned())
}

fn text(v: &Option<Text>) -> Option<String> {
    v.as_ref().map(|t| t.as_str().to_owned())
}

fn list(v: &Option<TextList>, sep: &str) -> Option<String> {
    v.as_ref().map(|l| l.0.join(sep))
}

/// The section's keys and values, as the module sets them (sorted by key).
fn section(p: &YumRepositoryParams) -> Vec<(String, String)> {
    let items = [
        ("async", flag(&p.async_)),
        ("bandwidth", text(&p.bandwidth)),
        ("baseurl", list(&p.baseurl, "\n")),
        ("cost", text(&p.cost)),
        (
            "deltarpm_metadata_percentage",
            text(&p.deltarpm_metadata_percentage),
        ),
        ("deltarpm_percentage", text(&p.deltarpm_percentage)),
        ("enabled", flag(&p.enabled)),
        ("enablegroups", flag(&p.enablegroups)),
        ("exclude", list(&p.exclude, " ")),
        ("failovermethod", text(&p.failovermethod)),
        ("gpgcakey", text(&p.gpgcakey)),
        ("gpgcheck", flag(&p.gpgcheck)),
        ("gpgkey", list(&p.gpgkey, "\n")),
        ("http_caching", text(&p.http_caching)),
        ("include", text(&p.include)),
        ("includepkgs", list(&p.includepkgs, " ")),
        ("ip_resolve", text(&p.ip_resolve)),
        ("keepalive", flag(&p.keepalive)),
        ("keepcache", text(&p.keepcache)),
        ("metadata_expire", text(&p.metadata_expire)),
        ("metadata_expire_filter", text(&p.metadata_expire_filter)),
        ("metalink", text(&p.metalink)),
        ("mirrorlist", text(&p.mirrorlist)),
        ("mirrorlist_expire", text(&p.mirrorlist_expire)),
        ("module_hotfixes", flag(&p.module_hotfixes)),
        ("name", text(&p.description)),
        ("password", text(&p.password)),
        ("priority", text(&p.priority)),
        ("protect", flag(&p.protect)),
        ("proxy", text(&p.proxy)),
        ("proxy_password", text(&p.proxy_password)),
        ("proxy_username", text(&p.proxy_username)),
        ("repo_gpgcheck", flag(&p.repo_gpgcheck)),
        ("retries", text(&p.retries)),
        ("s3_enabled", flag(&p.s3_enabled)),
        ("skip_if_unavailable", flag(&p.skip_if_unavailable)),
        (
            "ssl_check_cert_permissions",
            flag(&p.ssl_check_cert_permissions),
        ),
        ("sslcacert", text(&p.sslcacert)),
        ("sslclientcert", text(&p.sslclientcert)),
        ("sslclientkey", text(&p.sslclientkey)),
        ("sslverify", flag(&p.sslverify)),
        ("throttle", text(&p.throttle)),
        ("timeout", text(&p.timeout)),
        ("ui_repoid_vars", text(&p.ui_repoid_vars)),
        ("username", text(&p.username)),
    ];
    items
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v?)))
        .collect()
}

/// Fails as the module does on what it refuses before reading the file.
fn refuse(p: &YumRepositoryParams, present: bool) -> Result<(), ModuleError> {
    if p.params.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(ModuleError::new(
            "The params option to yum_repository was removed in Ansible 2.5 since it \
             circumvents Ansible's option handling",
        ));
    }
    if present && p.baseurl.is_none() && p.metalink.is_none() && p.mirrorlist.is_none() {
        return Err(ModuleError::new(
            "Parameter 'baseurl', 'metalink' or 'mirrorlist' is required.",
        ));
    }
    if present && p.description.is_none() {
        return Err(ModuleError::new("Parameter 'description' is required."));
    }
    Ok(())
}

/// `yum_repository`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: YumRepositoryParams = params(SPEC.name, args)?;
    let present = !matches!(p.state, Some(Choice::Known(RepoState::Absent)));
    refuse(&p, present)?;
    let name = p.name.as_str();
    let dir = p.reposdir.as_ref().map_or("/etc/yum.repos.d", Text::as_str);
    let fs = ctx.target.fs();
    if !fs
        .meta_follow(Path::new(dir))?
        .is_some_and(|m| m.kind == crate::rootfs::Kind::Dir)
    {
        return Err(ModuleError::new(format!(
            "Repo directory '{dir}' does not exist."
        )));
    }
    let file = p.file.as_ref().map_or(name, Text::as_str);
    let dest = PathBuf::from(dir).join(format!("{file}.repo"));
    let old = fs.read_text_opt(&dest)?;
    let mut sections = old.as_deref().map(parse).unwrap_or_default();
    let before = dump(&sections);
    sections.retain(|(n, _)| n != name);
    if present {
        sections.push((name.to_owned(), section(&p)));
    }
    let after = dump(&sections);
    let mut changed = before != after;
    let state = if present { "present" } else { "absent" };
    if changed && sections.is_empty() {
        if !ctx.check {
            fs.remove_all(&dest)?;
        }
    } else if changed || old.is_some() {
        // Unchanged sections keep the file's bytes; the attributes are applied either way.
        let bytes = if changed {
            write(&sections)
        } else {
            old.unwrap_or_default()
        };
        let placed = place(
            ctx,
            &dest,
            &Placement {
                bytes: bytes.as_bytes(),
                mode: &p.mode,
                owner: &p.owner,
                group: &p.group,
                force: true,
                validate: None,
                backup: false,
            },
        )?;
        changed |= placed.changed;
    }
    let header = dest.display().to_string();
    // The module's output hides its no_log values (passwords) wherever they appear (the
    // longer first: Ansible's order, a set's, is not fixed when one holds the other).
    let mut secrets: Vec<&str> = [&p.password, &p.proxy_password]
        .into_iter()
        .flatten()
        .map(Text::as_str)
        .filter(|secret| !secret.is_empty())
        .collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let hide = |text: String| {
        secrets
            .iter()
            .fold(text, |text, secret| text.replace(secret, "********"))
    };
    let (before, after) = (hide(before), hide(after));
    Ok(ModuleResult::changed(changed)
        .with("repo", name)
        .with("state", state)
        .with(
            "diff",
            json!({"before_header": header, "before": before,
                   "after_header": header, "after": after}),
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repo_file_reads_and_writes_as_python_configparser() {
        let text = "# site\n[a]\nname = A\nbaseurl = http://x/1\n\thttp://x/2\nGPGCheck: 1\n\n[b]\nname=B\n";
        let sections = parse(text);
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].1[1].1, "http://x/1\nhttp://x/2");
        assert_eq!(sections[0].1[2], ("gpgcheck".to_owned(), "1".to_owned()));
        assert_eq!(
            write(&sections),
            "[a]\nname = A\nbaseurl = http://x/1\n\thttp://x/2\ngpgcheck = 1\n\n[b]\nname = B\n\n"
        );
        assert!(dump(&sections)
            .starts_with("[a]\nbaseurl = http://x/1\nhttp://x/2\ngpgcheck = 1\nname = A\n"));
    }
}
