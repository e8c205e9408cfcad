//! `known_hosts`: a host's key in an SSH known_hosts file of the image, looked up with the
//! image's `ssh-keygen` as Ansible's module does.
//!
//! A host's key in an SSH known_hosts file of the image, found with the image's
//! `ssh-keygen -F` and written as Ansible's module writes it (the host's line replaced or
//! removed in place, a new one appended, hashed with a random salt when asked).

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::lineinfile::LineState;
use super::required;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use crate::target::Cmd;
use base64::Engine;
use serde_json::{json, Value as Json};
use sha1::Digest;
use std::io::Read;
use std::path::Path;

/// Parameters of `known_hosts`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KnownHostsParams {
    /// The host (one name; lower-cased as Ansible does).
    #[serde(alias = "host")]
    pub name: Text,
    /// The known_hosts line (`host keytype key`); needed unless state is absent.
    pub key: Option<Text>,
    /// The file (default `~/.ssh/known_hosts`).
    pub path: Option<Text>,
    /// Write the host hashed (`|1|salt|hash`).
    pub hash_host: Option<Flag>,
    /// Present or absent (default present).
    pub state: Option<Choice<LineState>>,
}

impl Params for KnownHostsParams {}

/// `known_hosts`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "known_hosts",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<KnownHostsParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// Where the host's key stands in the file.
struct Found {
    /// The host has some key there.
    host: bool,
    /// The key given differs from the host's key of the same type (or none of its keys match).
    replace_or_add: bool,
    /// The line (from 1) of the host's key of the same type.
    line: Option<usize>,
}

/// `known_hosts`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: KnownHostsParams = params(SPEC.name, args)?;
    let host = p.name.as_str().to_lowercase();
    let path = expand_user(p.path.as_ref().map_or("~/.ssh/known_hosts", |t| t.as_str()));
    let present = !matches!(p.state, Some(Choice::Known(LineState::Absent)));
    let keygen = required::path_of(ctx.target.fs(), "ssh-keygen")?;
    let mut key = p.key.as_ref().map(|k| k.as_str().to_owned());
    if key.is_none() && present {
        return Err(ModuleError::new("No key specified when adding a host"));
    }
    if let Some(given) = key.as_mut() {
        if flag(&p.hash_host, false) {
            *given = hashed(&host, given)?;
        }
        if !given.ends_with('\n') {
            given.push('\n');
        }
        sanity_check(ctx, &keygen, &host, given)?;
    }
    let found = search(ctx, &keygen, &host, key.as_deref(), &path)?;
    let (before, after) = diff_texts(ctx, &path, &found, present, key.as_deref())?;
    let diff = json!({
        "before_header": if before.is_some() { path.as_str() } else { "/dev/null" },
        "after_header": path,
        "before": before.clone().unwrap_or_default(),
        "after": after,
    });
    let rewrite = found.replace_or_add || found.host != present;
    let nothing_to_remove = !present && found.line.is_none() && key.is_some();
    let changed = if nothing_to_remove {
        false
    } else if ctx.check {
        rewrite
    } else if found.host && key.is_none() && !present {
        // The whole host goes (ssh-keygen -R); what Ansible then rewrites is that file as is.
        let out = ctx
            .target
            .run(&Cmd::new(&[keygen.as_str(), "-R", &host, "-f", &path]))?;
        if out.rc != 0 {
            return Err(ModuleError::new(out.stderr));
        }
        true
    } else {
        if rewrite {
            let fs = ctx.target.fs();
            fs.write_atomic(Path::new(&path), after.as_bytes(), None)?;
        }
        rewrite
    };
    let mut result = ModuleResult::changed(changed);
    if changed && ctx.diff {
        result.diff = Some((path.clone(), before.unwrap_or_default(), after));
    }
    if nothing_to_remove || !ctx.check {
        // Ansible's module returns its parameters beside the outcome (check mode: not).
        result = result
            .with("name", p.name.as_str())
            .with(
                "key",
                p.key.as_ref().map_or(Json::Null, |k| json!(k.as_str())),
            )
            .with("path", path)
            .with("hash_host", flag(&p.hash_host, false))
            .with("state", if present { "present" } else { "absent" });
    }
    Ok(result.with("diff", diff))
}

/// `~` as root's home: tasks run as root.
fn expand_user(path: &str) -> String {
    match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("/root{rest}"),
        _ => path.to_owned(),
    }
}

/// The key with its host field hashed as OpenSSH hashes it: `|1|salt|HMAC-SHA1(salt, host)`,
/// base64, with a fresh random salt.
fn hashed(host: &str, key: &str) -> Result<String, ModuleError> {
    let mut salt = [0u8; 20];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut salt))
        .map_err(|e| ModuleError::new(format!("/dev/urandom: {e}")))?;
    Ok(hashed_with(host, key, &salt))
}

fn hashed_with(host: &str, key: &str, salt: &[u8; 20]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut parts: Vec<String> = key.split_whitespace().map(str::to_owned).collect();
    // A leading @cert-authority or @revoked marker stays before the host.
    let at = usize::from(parts.first().is_some_and(|p| p.starts_with('@')));
    if let Some(field) = parts.get_mut(at) {
        let digest = hmac_sha1(salt, host.as_bytes());
        *field = format!("|1|{}|{}", b64.encode(salt), b64.encode(digest));
    }
    parts.join(" ")
}

/// HMAC-SHA1 (RFC 2104).
fn hmac_sha1(key: &[u8], message: &[u8]) -> [u8; 20] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..20].copy_from_slice(&sha1::Sha1::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = sha1::Sha1::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    sha1::Sha1::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// Refuses a comma list of hosts, and a key whose host field does not name the host (asked of
/// ssh-keygen, which reads hashed fields).
fn sanity_check(ctx: &ModuleCtx, keygen: &str, host: &str, key: &str) -> Result<(), ModuleError> {
    let comma =
        regex::Regex::new(r"\S+(\s+)?,(\s+)?").map_err(|e| ModuleError::new(e.to_string()))?;
    if comma.is_match(host) {
        return Err(ModuleError::new("Comma separated list of names is not supported. Please pass a single name to lookup in the known_hosts file."));
    }
    let fs = ctx.target.fs();
    let probe = format!("/tmp/.imgbuild-known-hosts-{}", std::process::id());
    fs.write_atomic(Path::new(&probe), key.as_bytes(), Some(0o600))?;
    let out = ctx
        .target
        .run(&Cmd::new(&[keygen, "-F", host, "-f", &probe]));
    fs.remove_all(Path::new(&probe))?;
    if out?.stdout.is_empty() {
        return Err(ModuleError::new(
            "Host parameter does not match hashed host field in supplied key",
        ));
    }
    Ok(())
}

/// Whether and where the file has the host's key, as `ssh-keygen -F` finds it.
fn search(
    ctx: &ModuleCtx,
    keygen: &str,
    host: &str,
    key: Option<&str>,
    path: &str,
) -> Result<Found, ModuleError> {
    let none = Found {
        host: false,
        replace_or_add: false,
        line: None,
    };
    if ctx.target.fs().meta_follow(Path::new(path))?.is_none() {
        return Ok(none);
    }
    let out = ctx
        .target
        .run(&Cmd::new(&[keygen, "-F", host, "-f", path]))?;
    if out.stdout.is_empty() && out.stderr.is_empty() && matches!(out.rc, 0 | 1) {
        return Ok(none);
    }
    if out.rc != 0 {
        return Err(ModuleError::new(format!(
            "ssh-keygen failed (rc={}, stdout='{}',stderr='{}')",
            out.rc, out.stdout, out.stderr
        )));
    }
    let Some(key) = key else {
        return Ok(Found {
            host: true,
            replace_or_add: false,
            line: None,
        });
    };
    Ok(matching(&out.stdout, key))
}

/// Reads `ssh-keygen -F`'s lines (`# Host h found: line N` before each key) against `key`.
fn matching(stdout: &str, key: &str) -> Found {
    let line_number = regex::Regex::new(r"found: line (\d+)").ok();
    let mut wanted = Normalized::of(key);
    let mut line = None;
    for l in stdout.split('\n').filter(|l| !l.is_empty()) {
        if l.starts_with('#') {
            line = line_number
                .as_ref()
                .and_then(|r| r.captures(l))
                .and_then(|c| c[1].parse().ok());
            continue;
        }
        let Some(found) = Normalized::of(l) else {
            continue;
        };
        if let Some(wanted) = wanted.as_mut() {
            if wanted.host.starts_with("|1|") && found.host.starts_with("|1|") {
                // A hashed host is not hashed again.
                wanted.host.clone_from(&found.host);
            }
            if *wanted == found {
                return Found {
                    host: true,
                    replace_or_add: false,
                    line,
                };
            }
            if wanted.kind == found.kind {
                return Found {
                    host: true,
                    replace_or_add: true,
                    line,
                };
            }
        }
    }
    Found {
        host: true,
        replace_or_add: true,
        line: None,
    }
}

/// A known_hosts line's fields, without a trailing comment.
#[derive(Debug, Clone, PartialEq)]
struct Normalized {
    marker: Option<String>,
    host: String,
    kind: String,
    key: String,
}

impl Normalized {
    fn of(line: &str) -> Option<Self> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (marker, rest) = match words.first() {
            Some(first) if first.starts_with('@') => (Some((*first).to_owned()), &words[1..]),
            _ => (None, &words[..]),
        };
        Some(Self {
            marker,
            host: (*rest.first()?).to_owned(),
            kind: (*rest.get(1)?).to_owned(),
            key: (*rest.get(2)?).to_owned(),
        })
    }
}

/// The file's text before (`None`: no file) and after the change, as Ansible computes them.
fn diff_texts(
    ctx: &ModuleCtx,
    path: &str,
    found: &Found,
    present: bool,
    key: Option<&str>,
) -> Result<(Option<String>, String), ModuleError> {
    let before = ctx.target.fs().read_text_opt(Path::new(path))?;
    let text = before.clone().unwrap_or_default();
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    if let Some(n) = found.line.filter(|n| (1..=lines.len()).contains(n)) {
        if found.replace_or_add || !present {
            lines.remove(n - 1);
        }
    }
    let mut after: String = lines.concat();
    if present && (found.replace_or_add || found.line.is_none()) {
        after.push_str(key.unwrap_or_default());
    }
    Ok((before, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha1_is_rfc_2202s() {
        let digest = hmac_sha1(b"key", b"The quick brown fox jumps over the lazy dog");
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9");
    }

    #[test]
    fn a_hashed_key_keeps_its_marker_type_and_key() {
        let salt = [7u8; 20];
        let line = hashed_with("example.org", "@revoked example.org ssh-rsa AAAA\n", &salt);
        let words: Vec<&str> = line.split(' ').collect();
        assert_eq!(words[0], "@revoked");
        assert!(words[1].starts_with("|1|BwcHBwcHBwcHBwcHBwcHBwcHBwc=|"));
        assert_eq!(&words[2..], ["ssh-rsa", "AAAA"]);
    }

    #[test]
    fn ssh_keygen_output_is_read_as_ansible_reads_it() {
        let out = "# Host example.org found: line 6 \nexample.org ssh-rsa AAAA\n";
        let same = matching(out, "example.org ssh-rsa AAAA\n");
        assert!(same.host && !same.replace_or_add && same.line == Some(6));
        let other = matching(out, "example.org ssh-rsa BBBB\n");
        assert!(other.replace_or_add && other.line == Some(6));
        let new_type = matching(out, "example.org ssh-ed25519 CCCC\n");
        assert!(new_type.replace_or_add && new_type.line.is_none());
    }
}
