//! `authorized_key` (`ansible.posix.authorized_key`): SSH keys in a user's `authorized_keys`
//! file of the image, as ansible.posix's module reads, orders and writes them.
//!
//! The file is read line by line: a line holding a key of a known type is parsed into its
//! options, type, blob and comment, and written back in that canonical form; any other line
//! (a comment, a blank line) is kept as it is. New keys go after the existing ones, in the order
//! given; a key already there with other options or comment is taken out and added again.
//! Whenever the file is written, the user's `.ssh` folder (with `manage_dir`) becomes 0700 and
//! the file 0600, both the user's. A key given as a URL is refused: Ansible fetches it on each
//! run, which no cached layer could follow.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use crate::become_user::User;
use crate::rootfs::{Kind, RootFs};

crate::choices!(
    /// Whether the keys are in the file.
    AuthorizedKeyState { Present => "present", Absent => "absent" }
);

/// Parameters of `authorized_key`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorizedKeyParams {
    /// The user whose file it is (its home, uid and gid from the image's `/etc/passwd`).
    pub user: Text,
    /// One key, or several, one per line (blank and `#` lines skipped).
    pub key: Text,
    /// The file (default `~user/.ssh/authorized_keys`).
    pub path: Option<Text>,
    /// Make the file's folder and give it to the user, mode 0700 (default yes).
    pub manage_dir: Option<Flag>,
    /// Present or absent.
    pub state: Option<Choice<AuthorizedKeyState>>,
    /// Options put before each given key (`from="10.0.0.0/8",no-pty`).
    pub key_options: Option<Text>,
    /// Remove every other key from the file.
    pub exclusive: Option<Flag>,
    /// The comment each given key gets.
    pub comment: Option<Text>,
    /// Check a URL key's certificate (accepted; URL keys are refused).
    pub validate_certs: Option<Flag>,
    /// Follow a symlink at the file instead of replacing it.
    pub follow: Option<Flag>,
}

impl Params for AuthorizedKeyParams {}

/// `authorized_key`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "authorized_key",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AuthorizedKeyParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

/// The key types ansible.posix's module recognises, in its order.
const KEY_TYPES: &[&str] = &[
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "webauthn-sk-ecdsa-sha2-nistp256@openssh.com",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ssh-ed25519@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
    "ssh-ed25519",
    "ssh-ed25519-cert-v01@openssh.com",
    "ssh-dss",
    "ssh-rsa",
    "ssh-xmss@openssh.com",
    "ssh-xmss-cert-v01@openssh.com",
    "rsa-sha2-256",
    "rsa-sha2-512",
    "ssh-rsa-cert-v01@openssh.com",
    "rsa-sha2-256-cert-v01@openssh.com",
    "rsa-sha2-512-cert-v01@openssh.com",
    "ssh-dss-cert-v01@openssh.com",
];

/// A key's options in their order (`name` or `name=value`, a name may repeat).
type Options = Vec<(String, Option<String>)>;

/// One line of the file, or one given key.
#[derive(Debug, Clone)]
struct Line {
    /// The key's blob; for a line kept as it is, the line itself.
    id: String,
    /// The key's type; `None` for a line kept as it is.
    kind: Option<String>,
    options: Options,
    comment: String,
    /// Where it is written: lines by their place in the file, new keys after them.
    rank: usize,
}

impl Line {
    fn kept(raw: &str, rank: usize) -> Line {
        Line {
            id: raw.to_owned(),
            kind: None,
            options: Vec::new(),
            comment: String::new(),
            rank,
        }
    }

    /// The same key, options and comment (the module compares options by name, each name's
    /// values in their order).
    fn same_as(&self, other: &Line) -> bool {
        fn grouped(options: &Options) -> BTreeMap<&str, Vec<Option<&str>>> {
            let mut map: BTreeMap<&str, Vec<Option<&str>>> = BTreeMap::new();
            for (name, value) in options {
                map.entry(name).or_default().push(value.as_deref());
            }
            map
        }
        self.id == other.id
            && self.kind == other.kind
            && grouped(&self.options) == grouped(&other.options)
            && self.comment == other.comment
    }

    /// The line as the module writes it.
    fn serialize(&self) -> String {
        let Some(kind) = &self.kind else {
            return self.id.clone();
        };
        let mut options = self
            .options
            .iter()
            .map(|(name, value)| match value {
                Some(value) => format!("{name}={value}"),
                None => name.clone(),
            })
            .collect::<Vec<_>>()
            .join(",");
        if !options.is_empty() {
            options.push(' ');
        }
        format!("{options}{kind} {} {}\n", self.id, self.comment)
    }
}

/// Parses a key line: `None` when it holds no key of a known type.
fn parse_key(raw: &str, rank: usize) -> Result<Option<Line>, String> {
    let raw = raw.replace("\\#", "#");
    let parts: Vec<&str> = raw
        .split([' ', '\t', '\r', '\n'])
        .filter(|part| !part.is_empty())
        .collect();
    if parts.first() == Some(&"#") {
        return Ok(Some(Line::kept(&raw, rank)));
    }
    let Some(at) = parts.iter().position(|part| KEY_TYPES.contains(part)) else {
        return Ok(None);
    };
    let blob = parts
        .get(at + 1)
        .ok_or_else(|| format!("invalid key specified: {raw} (no key after its type)"))?;
    Ok(Some(Line {
        id: (*blob).to_owned(),
        kind: Some(parts[at].to_owned()),
        options: parse_options(&parts[..at].join(" ")),
        comment: parts.get(at + 2..).unwrap_or_default().join(" "),
        rank,
    }))
}

/// A key's options, split on the commas outside quotes.
fn parse_options(text: &str) -> Options {
    split_outside_quotes(text)
        .into_iter()
        .filter(|part| part.as_str() != ",")
        .map(|part| match part.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (part, None),
        })
        .collect()
}

/// What Python's `re.split` with `((?:[^,"']|"[^"]*"|'[^']*')+)` gives, less its first and last
/// piece: the runs of unquoted non-commas and quoted strings, with what separates them.
fn split_outside_quotes(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let item_end = |at: usize| -> Option<usize> {
        match chars[at] {
            ',' => None,
            quote @ ('"' | '\'') => chars[at + 1..]
                .iter()
                .position(|&c| c == quote)
                .map(|close| at + close + 2),
            _ => Some(at + 1),
        }
    };
    let mut pieces = vec![String::new()];
    let mut at = 0;
    while at < chars.len() {
        let start = at;
        while let Some(end) = (at < chars.len()).then(|| item_end(at)).flatten() {
            at = end;
        }
        if at > start {
            pieces.push(chars[start..at].iter().collect());
            pieces.push(String::new());
        } else {
            if let Some(last) = pieces.last_mut() {
                last.push(chars[at]);
            }
            at += 1;
        }
    }
    pieces.pop();
    pieces.into_iter().skip(1).collect()
}

/// What Python's `str.splitlines` breaks lines at (`\r\n` too).
const BREAKS: &[char] = &[
    '\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\u{85}', '\u{2028}', '\u{2029}',
];

/// Python's `str.splitlines(True)`.
fn lines_with_ends(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if BREAKS.contains(&c) {
            let mut end = at + c.len_utf8();
            if c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n') {
                chars.next();
                end += 1;
            }
            lines.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Python's `str.splitlines()`: the lines without their breaks.
fn lines_without_ends(text: &str) -> Vec<&str> {
    lines_with_ends(text)
        .into_iter()
        .map(|line| match line.strip_suffix("\r\n") {
            Some(stripped) => stripped,
            None => line
                .char_indices()
                .last()
                .filter(|(_, c)| BREAKS.contains(c))
                .map_or(line, |(at, _)| &line[..at]),
        })
        .collect()
}

/// The file's lines, keyed by their blob (a later copy of a key takes the earlier's place).
fn parse_file(text: &str) -> Result<IndexMap<String, Line>, String> {
    let mut lines = IndexMap::new();
    for (rank, raw) in lines_with_ends(text).into_iter().enumerate() {
        let line = parse_key(raw, rank)?.unwrap_or_else(|| Line::kept(raw, rank));
        lines.insert(line.id.clone(), line);
    }
    Ok(lines)
}

// How it runs in the rootfs.

/// What the task asks for, read once.
struct Request {
    user: String,
    present: bool,
    exclusive: bool,
    keys: Vec<Line>,
}

/// `authorized_key`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AuthorizedKeyParams = params(SPEC.name, args)?;
    let request = request(&p)?;
    let fs = ctx.target.fs();
    let account = account(fs, &request.user)?;
    if account.is_none() && !ctx.check {
        return Err(no_user(&request.user));
    }
    let (keyfile, ssh_dir) =
        match (&p.path, &account) {
            (Some(path), _) => {
                let path = PathBuf::from(path.as_str());
                let dir = path
                    .parent()
                    .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
                (path, dir)
            }
            (None, Some(user)) => {
                let dir = Path::new(&user.home).join(".ssh");
                (dir.join("authorized_keys"), dir)
            }
            (None, None) => return Err(ModuleError::new(
                "Either user must exist or you must provide full path to key file in check mode",
            )),
        };
    let before = match fs.meta_follow(&keyfile)? {
        Some(meta) if meta.kind == Kind::File => fs.read_text_opt(&keyfile)?.unwrap_or_default(),
        _ => String::new(),
    };
    let mut lines = parse_file(&before).map_err(ModuleError::new)?;
    let changed = apply(&mut lines, &request);
    let after = serialize(&lines);
    if changed && !ctx.check {
        let user = account.ok_or_else(|| no_user(&request.user))?;
        let target = match flag(&p.follow, false) {
            true => fs.resolve(&keyfile)?,
            false => keyfile.clone(),
        };
        write(
            fs,
            &user,
            &target,
            &ssh_dir,
            flag(&p.manage_dir, true),
            &after,
        )?;
    }
    let mut result = ModuleResult::changed(changed);
    if changed && ctx.diff {
        result.diff = Some((keyfile.display().to_string(), before, after));
    }
    Ok(with_params(result, &p, &keyfile))
}

/// The task's keys, parsed, with its `key_options` and `comment` put on each.
fn request(p: &AuthorizedKeyParams) -> Result<Request, ModuleError> {
    let key = p.key.as_str();
    if key.starts_with("http") {
        return Err(ModuleError::new(format!(
            "authorized_key: the key is a URL ({key}), which imgbuild does not fetch on every run as Ansible does (no cached layer could follow it): put the key in the role (files/) and pass it with lookup('file', ...), or download it with get_url and read it from there"
        )));
    }
    let mut keys = Vec::new();
    let given = lines_without_ends(key)
        .into_iter()
        .filter(|line| !line.is_empty() && !line.starts_with('#'));
    for (rank, raw) in given.enumerate() {
        let mut line = parse_key(raw, rank)
            .map_err(ModuleError::new)?
            .ok_or_else(|| ModuleError::new(format!("invalid key specified: {raw}")))?;
        if let Some(options) = &p.key_options {
            line.options = parse_options(options.as_str());
        }
        if let Some(comment) = &p.comment {
            line.comment = comment.as_str().to_owned();
        }
        keys.push(line);
    }
    Ok(Request {
        user: p.user.as_str().to_owned(),
        present: !matches!(p.state, Some(Choice::Known(AuthorizedKeyState::Absent))),
        exclusive: flag(&p.exclusive, false),
        keys,
    })
}

/// Puts the request's keys in (or takes them out of) the file's lines; whether that changed
/// anything.
fn apply(lines: &mut IndexMap<String, Line>, request: &Request) -> bool {
    let existing = lines.len();
    let mut changed = false;
    for key in &request.keys {
        let found = lines.get(&key.id);
        let matched = found.is_some_and(|line| !request.present || line.same_as(key));
        if request.present {
            if found.is_some() && !matched {
                lines.shift_remove(&key.id);
                changed = true;
            }
            if !matched {
                let mut new = key.clone();
                new.rank = existing + key.rank;
                lines.insert(new.id.clone(), new);
                changed = true;
            }
        } else if matched {
            lines.shift_remove(&key.id);
            changed = true;
        }
    }
    if request.present && request.exclusive {
        let before = lines.len();
        lines.retain(|id, _| request.keys.iter().any(|key| &key.id == id));
        changed |= lines.len() != before;
    }
    changed
}

/// The file's text: its lines by rank (lines of equal rank in the file's order).
fn serialize(lines: &IndexMap<String, Line>) -> String {
    let mut ordered: Vec<&Line> = lines.values().collect();
    ordered.sort_by_key(|line| line.rank);
    ordered.iter().map(|line| line.serialize()).collect()
}

/// The user, from the image's account files; `None` when it has no such user.
fn account(fs: &RootFs, name: &str) -> Result<Option<User>, ModuleError> {
    let passwd = fs.read_text_opt(Path::new("/etc/passwd"))?;
    let group = fs.read_text_opt(Path::new("/etc/group"))?;
    Ok(User::from_files(
        passwd.as_deref().unwrap_or_default(),
        group.as_deref().unwrap_or_default(),
        name,
    ))
}

/// The module's failure for a user the image does not have (Python's `KeyError` as it prints).
fn no_user(name: &str) -> ModuleError {
    ModuleError::new(format!(
        "Failed to lookup user {name}: \"getpwnam(): name not found: '{name}'\""
    ))
}

/// Writes the file as the module does: the folder made (0700) and given to the user with
/// `manage_dir`, the file made if missing, given to the user, 0600.
fn write(
    fs: &RootFs,
    user: &User,
    keyfile: &Path,
    ssh_dir: &Path,
    manage_dir: bool,
    text: &str,
) -> Result<(), ModuleError> {
    let (uid, gid) = (Some(user.uid), Some(user.gid));
    if manage_dir {
        if !fs.exists(ssh_dir)? {
            if !fs.exists(ssh_dir.parent().unwrap_or(Path::new("/")))? {
                return Err(ModuleError::new(format!(
                    "Failed to create directory {} : [Errno 2] No such file or directory: '{}'",
                    ssh_dir.display(),
                    ssh_dir.display()
                )));
            }
            fs.mkdir_all(ssh_dir, 0o700)?;
        }
        fs.chown(ssh_dir, uid, gid)?;
        fs.chmod(ssh_dir, 0o700)?;
    }
    if let Some(dir) = keyfile.parent() {
        fs.mkdir_all(dir, 0o755)?;
    }
    fs.write_atomic(keyfile, text.as_bytes(), Some(0o600))?;
    fs.chown(keyfile, uid, gid)?;
    Ok(())
}

/// The result fields: the module's parameters as it returns them, and the file.
fn with_params(result: ModuleResult, p: &AuthorizedKeyParams, keyfile: &Path) -> ModuleResult {
    let text = |value: &Option<Text>| value.as_ref().map_or(Json::Null, |t| json!(t.as_str()));
    let present = !matches!(p.state, Some(Choice::Known(AuthorizedKeyState::Absent)));
    result
        .with("user", p.user.as_str())
        .with("key", p.key.as_str())
        .with("path", text(&p.path))
        .with("manage_dir", flag(&p.manage_dir, true))
        .with("state", if present { "present" } else { "absent" })
        .with("key_options", text(&p.key_options))
        .with("exclusive", flag(&p.exclusive, false))
        .with("comment", text(&p.comment))
        .with("validate_certs", flag(&p.validate_certs, true))
        .with("follow", flag(&p.follow, false))
        .with("keyfile", keyfile.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample alice@example";

    fn request(keys: &[&str], present: bool, exclusive: bool) -> Request {
        Request {
            user: "alice".into(),
            present,
            exclusive,
            keys: keys
                .iter()
                .enumerate()
                .map(|(rank, raw)| parse_key(raw, rank).expect("parse").expect("a key"))
                .collect(),
        }
    }

    #[test]
    fn options_split_on_commas_outside_quotes() {
        let options = parse_options(r#"from="10.0.0.1,10.0.0.2",no-pty,command="echo a,b""#);
        assert_eq!(
            options,
            vec![
                ("from".to_owned(), Some(r#""10.0.0.1,10.0.0.2""#.to_owned())),
                ("no-pty".to_owned(), None),
                ("command".to_owned(), Some(r#""echo a,b""#.to_owned())),
            ]
        );
        assert!(parse_options("").is_empty());
        assert!(parse_options(",").is_empty());
    }

    #[test]
    fn a_key_is_written_in_the_module_s_form() {
        let line = parse_key("no-pty  ssh-ed25519\tAAAA  a  b\n", 0)
            .expect("parse")
            .expect("a key");
        assert_eq!(line.serialize(), "no-pty ssh-ed25519 AAAA a b\n");
        let bare = parse_key("ssh-rsa AAAA", 0).expect("parse").expect("a key");
        assert_eq!(
            bare.serialize(),
            "ssh-rsa AAAA \n",
            "the module keeps the space"
        );
        assert!(parse_key("not a key\n", 0).expect("parse").is_none());
        assert!(parse_key("ssh-rsa", 0).is_err());
    }

    #[test]
    fn new_keys_go_after_the_file_s_and_comments_stay() {
        let mut lines = parse_file("# admins\nssh-rsa BBBB bob\n").expect("file");
        assert!(apply(&mut lines, &request(&[ED], true, false)));
        assert_eq!(
            serialize(&lines),
            format!("# admins\nssh-rsa BBBB bob\n{ED}\n")
        );
        assert!(
            !apply(&mut lines, &request(&[ED], true, false)),
            "idempotent"
        );
    }

    #[test]
    fn a_key_with_another_comment_moves_to_the_end_and_absent_removes_it() {
        let mut lines = parse_file(&format!("{ED}\nssh-rsa BBBB bob\n")).expect("file");
        let recommented = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample new";
        assert!(apply(&mut lines, &request(&[recommented], true, false)));
        assert_eq!(
            serialize(&lines),
            format!("ssh-rsa BBBB bob\n{recommented}\n")
        );
        assert!(apply(&mut lines, &request(&[ED], false, false)));
        assert_eq!(serialize(&lines), "ssh-rsa BBBB bob\n");
        assert!(!apply(&mut lines, &request(&[ED], false, false)));
    }

    #[test]
    fn exclusive_keeps_only_the_given_keys() {
        let mut lines = parse_file("# note\nssh-rsa BBBB bob\n").expect("file");
        assert!(apply(&mut lines, &request(&[ED], true, true)));
        assert_eq!(serialize(&lines), format!("{ED}\n"));
    }

    #[test]
    fn lines_split_as_python_splits_them() {
        assert_eq!(
            lines_with_ends("a\r\nb\rc\nd"),
            ["a\r\n", "b\r", "c\n", "d"]
        );
        assert_eq!(lines_without_ends("a\r\nb\x0bc\n"), ["a", "b", "c"]);
        assert!(lines_with_ends("").is_empty());
    }
}
