//! `assemble`: one file made of a folder's fragments, in name order; the folder is in the image
//! (`remote_src`, the default) or the role's `files/`.
//!
//! A file made of a folder's fragments in name order, as Ansible's module (a folder
//! of the image) or its action plugin (a folder of the role) makes it, put in place when its
//! bytes differ from the file's.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Mode, Text};
use crate::rootfs::Kind;
use crate::target::Cmd;
use regex::Regex;
use serde_json::{json, Value as Json};
use sha1::Digest;
use std::path::Path;

/// Parameters of `assemble`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AssembleParams {
    /// The folder of fragments.
    pub src: Text,
    /// The file made.
    pub dest: Text,
    /// Written between fragments (backslash escapes such as `\n` read as Python reads them).
    pub delimiter: Option<Text>,
    /// Only fragments whose names this regular expression finds something in.
    pub regexp: Option<Text>,
    /// Leave out fragments whose names start with a dot.
    pub ignore_hidden: Option<Flag>,
    /// `src` is a folder of the image (default yes); no: of the role's `files/`.
    pub remote_src: Option<Flag>,
    /// Decrypt vaulted fragments of the role (default yes).
    pub decrypt: Option<Flag>,
    /// Keep a timestamped copy of a file it replaces.
    pub backup: Option<Flag>,
    /// Command validating the new file (`%s` is the file).
    pub validate: Option<Text>,
    /// Mode of the file.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
}

impl Params for AssembleParams {
    fn check(&self) -> Result<(), String> {
        if let Some(regexp) = &self.regexp {
            super::spec::check_regex("regexp", regexp.as_str())?;
        }
        match &self.validate {
            // Ansible's words.
            Some(v)
                if !v.as_str().contains("%s") && !ansible::template::is_template(v.as_str()) =>
            {
                Err(format!("validate must contain %s: {v}"))
            }
            _ => Ok(()),
        }
    }
}

/// `assemble`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "assemble",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AssembleParams>,
    plan_time: PlanTime::PushSourceWhenNotRemote,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// Which fragments of the folder are taken.
struct Filter {
    regexp: Option<Regex>,
    ignore_hidden: bool,
}

impl Filter {
    fn takes(&self, name: &str) -> bool {
        self.regexp.as_ref().is_none_or(|r| r.is_match(name))
            && !(self.ignore_hidden && name.starts_with('.'))
    }
}

/// `assemble`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AssembleParams = params(SPEC.name, args)?;
    if ctx.check {
        // Ansible's action plugin does not run it in check mode.
        return Ok(ModuleResult {
            skipped: true,
            msg: Some("check mode not supported for this module".into()),
            ..ModuleResult::default()
        });
    }
    let regexp = p
        .regexp
        .as_ref()
        .map(|r| Regex::new(r.as_str()))
        .transpose()
        .map_err(|e| ModuleError::new(format!("Invalid Regexp ({e})")))?;
    let filter = Filter {
        regexp,
        ignore_hidden: flag(&p.ignore_hidden, false),
    };
    let delimiter = p.delimiter.as_ref().map(Text::as_str);
    let remote = flag(&p.remote_src, true);
    let fragments = if remote {
        image_fragments(ctx, p.src.as_str(), &filter)?
    } else {
        role_fragments(ctx, &filter, flag(&p.decrypt, true))?
    };
    let bytes = join(&fragments, delimiter)?;
    let dest = Path::new(p.dest.as_str());
    let checksum = format!("{:x}", sha1::Sha1::digest(&bytes));
    let mut result = put(ctx, dest, &bytes, &p, !remote)?
        .with("checksum", checksum)
        .with("md5sum", format!("{:x}", md5::Md5::digest(&bytes)))
        .with("dest", p.dest.as_str());
    result.changed |= attrs::apply(ctx.target.fs(), dest, &p.owner, &p.group, &p.mode, false)?;
    if remote {
        // The module's own result; from the role, Ansible's copy module answers.
        result = result.with("src", p.src.as_str()).with("msg", "OK");
    }
    Ok(result)
}

/// Writes `bytes` to `dest` when they differ from its own: validated first, a backup kept when
/// asked. `diff`: report before and after (the role's fragments, as Ansible's copy does).
fn put(
    ctx: &ModuleCtx,
    dest: &Path,
    bytes: &[u8],
    p: &AssembleParams,
    diff: bool,
) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let existing = match fs.meta_follow(dest)? {
        Some(meta) if meta.kind == Kind::Dir => {
            return Err(ModuleError::new(format!(
                "[Errno 21] Is a directory: '{}'",
                dest.display()
            )))
        }
        Some(_) => Some(fs.read(dest)?),
        None => None,
    };
    let mut result = ModuleResult::default();
    if existing.as_deref() == Some(bytes) {
        return Ok(result);
    }
    if let Some(validate) = &p.validate {
        let (rc, stdout, stderr) = validated(ctx, validate.as_str(), bytes)?;
        result = result.with(
            "validation",
            json!({"rc": rc, "stdout": stdout, "stderr": stderr}),
        );
        if rc != 0 {
            let mut error = ModuleError::new(format!("failed to validate: rc:{rc} error:{stderr}"));
            error.fields = result.fields;
            return Err(error);
        }
    }
    if flag(&p.backup, false) && existing.is_some() {
        let name = super::pathinfo::backup(fs, dest)?;
        result = result.with("backup_file", name);
    }
    if diff && ctx.diff {
        let before = existing.as_deref().map(String::from_utf8_lossy);
        result.diff = Some((
            dest.display().to_string(),
            before.unwrap_or_default().into_owned(),
            String::from_utf8_lossy(bytes).into_owned(),
        ));
    }
    let mode = match p.mode {
        Some(Mode::Octal(bits)) => Some(bits),
        _ => None,
    };
    fs.write_atomic(dest, bytes, mode)?;
    result.changed = true;
    Ok(result)
}

/// Runs `validate` on the new bytes in a file of the image: its rc, stdout and stderr.
fn validated(
    ctx: &ModuleCtx,
    validate: &str,
    bytes: &[u8],
) -> Result<(i32, String, String), ModuleError> {
    let fs = ctx.target.fs();
    let probe = format!("/tmp/.imgbuild-assemble-{}", std::process::id());
    fs.write_atomic(Path::new(&probe), bytes, Some(0o600))?;
    let out = ctx.target.run(&Cmd::shell(&validate.replace("%s", &probe)));
    fs.remove_all(Path::new(&probe))?;
    let out = out?;
    Ok((out.rc, out.stdout, out.stderr))
}

/// The fragments of a folder of the image, in name order.
fn image_fragments(
    ctx: &ModuleCtx,
    src: &str,
    filter: &Filter,
) -> Result<Vec<Vec<u8>>, ModuleError> {
    let fs = ctx.target.fs();
    let folder = Path::new(src);
    match fs.meta_follow(folder)? {
        None => return Err(ModuleError::new(format!("Source ({src}) does not exist"))),
        Some(meta) if meta.kind != Kind::Dir => {
            return Err(ModuleError::new(format!(
                "Source ({src}) is not a directory"
            )))
        }
        Some(_) => {}
    }
    let mut fragments = Vec::new();
    for name in fs.list(folder)?.iter().filter(|n| filter.takes(n)) {
        let path = folder.join(name);
        if fs.meta_follow(&path)?.is_some_and(|m| m.kind == Kind::File) {
            fragments.push(fs.read(&path)?);
        }
    }
    Ok(fragments)
}

/// The fragments of the role's folder the plan found, in name order; vaulted ones decrypted
/// when `decrypt`.
fn role_fragments(
    ctx: &ModuleCtx,
    filter: &Filter,
    decrypt: bool,
) -> Result<Vec<Vec<u8>>, ModuleError> {
    let folder = ctx.local_path()?;
    if !folder.is_dir() {
        return Err(ModuleError::new(format!(
            "Source ({}) is not a directory",
            folder.display()
        )));
    }
    let read_error = |e: std::io::Error| ModuleError::new(format!("{}: {e}", folder.display()));
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .map_err(read_error)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut fragments = Vec::new();
    for name in names.iter().filter(|n| filter.takes(n)) {
        let path = folder.join(name);
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path)
            .map_err(|e| ModuleError::new(format!("{}: {e}", path.display())))?;
        let bytes = if decrypt {
            ansible::vault::process_vault()
                .open_file(bytes)
                .map_err(|e| {
                    ModuleError::new(format!("{}: vault-encrypted file: {e}", path.display()))
                })?
                .0
        } else {
            bytes
        };
        fragments.push(bytes);
    }
    Ok(fragments)
}

/// The fragments joined as Ansible joins them: a newline after one that does not end with
/// one, and the delimiter (its escapes decoded, once more at each use, as Ansible's loop
/// does) between two, followed by a newline unless it ends with one.
fn join(fragments: &[Vec<u8>], delimiter: Option<&str>) -> Result<Vec<u8>, ModuleError> {
    let mut out = Vec::new();
    let mut delimiter = delimiter
        .filter(|d| !d.is_empty())
        .map(|d| d.as_bytes().to_vec());
    for (index, fragment) in fragments.iter().enumerate() {
        if index > 0 {
            // After the fragment before, however the output ends (an empty one gets one too).
            if !fragments[index - 1].ends_with(b"\n") {
                out.push(b'\n');
            }
            if let Some(raw) = delimiter.take() {
                let decoded = escape_decode(&raw)?;
                let Some(&last) = decoded.last() else {
                    return Err(ModuleError::new(
                        "the delimiter decodes to nothing (IndexError in Ansible's module)",
                    ));
                };
                out.extend_from_slice(&decoded);
                if last != b'\n' {
                    out.push(b'\n');
                }
                delimiter = Some(decoded);
            }
        }
        out.extend_from_slice(fragment);
    }
    Ok(out)
}

/// Python's `codecs.escape_decode`: the backslash escapes of a bytes literal decoded, an
/// unknown one kept as written.
fn escape_decode(raw: &[u8]) -> Result<Vec<u8>, ModuleError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'\\' {
            out.push(raw[i]);
            i += 1;
            continue;
        }
        let Some(&c) = raw.get(i + 1) else {
            return Err(ModuleError::new("Trailing \\ in string"));
        };
        i += 2;
        match c {
            b'\n' => {}
            b'\\' | b'\'' | b'"' => out.push(c),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                let mut taken = 0;
                while taken < 2 && matches!(raw.get(i), Some(b'0'..=b'7')) {
                    value = value * 8 + u32::from(raw[i] - b'0');
                    i += 1;
                    taken += 1;
                }
                out.push((value & 0xff) as u8);
            }
            b'x' => {
                let hex = raw
                    .get(i..i + 2)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        ModuleError::new(format!("invalid \\x escape at position {}", i - 2))
                    })?;
                out.push(hex);
                i += 2;
            }
            other => out.extend_from_slice(&[b'\\', other]),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_join_as_ansible_joins_them() {
        let parts = [b"one\n".to_vec(), b"two".to_vec(), b"three\n".to_vec()];
        assert_eq!(join(&parts, None).expect("joined"), b"one\ntwo\nthree\n");
        let delimited = join(&parts, Some("#--- delimiter ---#")).expect("joined");
        assert_eq!(
            delimited,
            b"one\n#--- delimiter ---#\ntwo\n#--- delimiter ---#\nthree\n"
        );
        let newline = join(&parts[..2], Some("--\\n")).expect("joined");
        assert_eq!(newline, b"one\n--\ntwo");
        let empty = join(&[b"a\n".to_vec(), Vec::new(), b"b".to_vec()], None).expect("joined");
        assert_eq!(empty, b"a\n\nb");
    }

    #[test]
    fn the_delimiter_is_decoded_again_at_each_use() {
        // A written backslash pair is one backslash the first time, an escape the second.
        let parts = [b"a\n".to_vec(), b"b\n".to_vec(), b"c\n".to_vec()];
        let joined = join(&parts, Some("x\\\\ty")).expect("joined");
        assert_eq!(joined, b"a\nx\\ty\nb\nx\ty\nc\n");
    }

    #[test]
    fn escapes_decode_as_python_decodes_them() {
        assert_eq!(
            escape_decode(b"\\101\\x42\\q\\\\").expect("decoded"),
            b"AB\\q\\"
        );
        assert!(escape_decode(b"\\x4").is_err());
        assert!(escape_decode(b"end\\").is_err());
    }
}

#[cfg(test)]
mod spec_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validate_needs_the_file_and_regexp_compiles() {
        let ok = (SPEC.normalize)(json!({"src": "/a", "dest": "/b", "validate": "sh -n %s"}));
        assert!(ok.is_ok());
        let no_file = (SPEC.normalize)(json!({"src": "/a", "dest": "/b", "validate": "true"}));
        assert!(no_file.is_err_and(|e| e.starts_with("validate must contain %s")));
        let bad = (SPEC.normalize)(json!({"src": "/a", "dest": "/b", "regexp": "("}));
        assert!(bad.is_err());
    }
}
