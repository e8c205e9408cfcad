//! What a module learns by running a tool of the image, as Ansible's modules do on their
//! host: `file`'s MIME type and charset, `lsattr`'s flags. A tool the image lacks gives
//! Ansible's defaults (`unknown`, no attributes), never an error.

use std::path::Path;

use serde_json::{json, Map, Value as Json};

use super::api::ModuleError;
use crate::rootfs::{Kind, RootFs};
use crate::target::{Cmd, Target};

/// The names Ansible gives the letters `lsattr` prints.
const ATTRIBUTE_NAMES: &[(char, &str)] = &[
    ('A', "noatime"),
    ('a', "append"),
    ('c', "compressed"),
    ('C', "nocow"),
    ('d', "nodump"),
    ('D', "dirsync"),
    ('e', "extents"),
    ('E', "encrypted"),
    ('h', "blocksize"),
    ('i', "immutable"),
    ('I', "indexed"),
    ('j', "journalled"),
    ('N', "inline"),
    ('s', "zero"),
    ('S', "synchronous"),
    ('t', "notail"),
    ('T', "blockroot"),
    ('u', "undelete"),
    ('X', "compressedraw"),
    ('Z', "compresseddirty"),
];

/// Where Ansible's `get_bin_path` looks: the sandbox's PATH, which has the sbin folders.
const SEARCH: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// The path of program `name` in the image, if it has one.
pub fn bin_path(fs: &RootFs, name: &str) -> Result<Option<String>, ModuleError> {
    for dir in SEARCH {
        let candidate = format!("{dir}/{name}");
        let meta = fs.meta_follow(Path::new(&candidate))?;
        if meta.is_some_and(|m| m.kind == Kind::File && m.mode & 0o111 != 0) {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

/// Runs `program args path` in the image; its standard output when it exits 0.
fn output_of(
    target: &dyn Target,
    program: &str,
    args: &[&str],
    path: &str,
) -> Result<Option<String>, ModuleError> {
    let Some(bin) = bin_path(target.fs(), program)? else {
        return Ok(None);
    };
    let mut argv = vec![bin.as_str()];
    argv.extend_from_slice(args);
    argv.push(path);
    let out = target.run(&Cmd::new(&argv))?;
    Ok((out.rc == 0).then_some(out.stdout))
}

/// Adds `mimetype` and `charset` (from `file --mime-type --mime-encoding`).
pub fn add_mime(
    target: &dyn Target,
    path: &str,
    fields: &mut Map<String, Json>,
) -> Result<(), ModuleError> {
    let out = output_of(target, "file", &["--mime-type", "--mime-encoding"], path)?;
    let (mimetype, charset) = out
        .as_deref()
        .and_then(parse_mime)
        .unwrap_or(("unknown", "unknown"));
    fields.insert("mimetype".into(), json!(mimetype));
    fields.insert("charset".into(), json!(charset));
    Ok(())
}

/// `<path>: text/plain; charset=us-ascii` into its type and charset.
fn parse_mime(out: &str) -> Option<(&str, &str)> {
    let (_, tail) = out.rsplit_once(':')?;
    let (mimetype, charset) = tail.split_once(';')?;
    let (_, charset) = charset.split_once('=')?;
    Some((mimetype.trim(), charset.trim()))
}

/// Adds `version`, `attr_flags` and `attributes` (from `lsattr -vd`).
pub fn add_attributes(
    target: &dyn Target,
    path: &str,
    fields: &mut Map<String, Json>,
) -> Result<(), ModuleError> {
    fields.insert("version".into(), Json::Null);
    fields.insert("attributes".into(), json!([]));
    fields.insert("attr_flags".into(), json!(""));
    let out = output_of(target, "lsattr", &["-vd"], path)?;
    if let Some((version, flags)) = out.as_deref().and_then(parse_lsattr) {
        fields.insert("version".into(), json!(version));
        fields.insert("attributes".into(), json!(attribute_names(&flags)));
        fields.insert("attr_flags".into(), json!(flags));
    }
    Ok(())
}

/// `<version> <flags> <path>` into the version and the set letters.
fn parse_lsattr(out: &str) -> Option<(&str, String)> {
    let mut words = out.split_whitespace();
    let version = words.next()?;
    let flags = words.next()?.replace('-', "");
    Some((version, flags))
}

/// The names of the set letters, in their order.
fn attribute_names(flags: &str) -> Vec<&'static str> {
    flags
        .chars()
        .filter_map(|c| ATTRIBUTE_NAMES.iter().find(|(l, _)| *l == c).map(|a| a.1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_output_gives_type_and_charset() {
        assert_eq!(
            parse_mime("/tmp/foo:bar.txt: text/plain; charset=us-ascii\n"),
            Some(("text/plain", "us-ascii"))
        );
        assert_eq!(parse_mime("garbage"), None);
    }

    #[test]
    fn lsattr_output_gives_version_and_names() {
        let (version, flags) =
            parse_lsattr("   12 --------------e------- /tmp/x\n").expect("parsed");
        assert_eq!((version, flags.as_str()), ("12", "e"));
        assert_eq!(attribute_names("ie"), vec!["immutable", "extents"]);
    }
}
