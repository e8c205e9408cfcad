//! `user`: accounts in the rootfs's passwd and shadow.
//!
//! An account in the rootfs, through its own useradd/usermod/userdel.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::lineinfile::LineState;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Int, Text, TextList};
use super::users::{absent, entry, groups_of, int, run_argv};
use serde_json::Value as Json;
use std::path::Path;

crate::choices!(
    /// When to replace the password.
    UpdatePassword { Always => "always", OnCreate => "on_create" }
);

/// Parameters of `user`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserParams {
    /// Login name.
    #[serde(alias = "user")]
    pub name: Text,
    /// Present or absent.
    pub state: Option<Choice<LineState>>,
    /// User id.
    pub uid: Option<Int>,
    /// Primary group.
    pub group: Option<Text>,
    /// Supplementary groups.
    pub groups: Option<TextList>,
    /// Add to `groups` instead of replacing them.
    pub append: Option<Flag>,
    /// GECOS comment.
    pub comment: Option<Text>,
    /// Home directory.
    pub home: Option<Text>,
    /// Create the home directory.
    #[serde(alias = "createhome")]
    pub create_home: Option<Flag>,
    /// Login shell.
    pub shell: Option<Text>,
    /// A system account (uid below 1000, no home by default).
    pub system: Option<Flag>,
    /// Crypted password (never printed).
    pub password: Option<Text>,
    /// When to update the password.
    pub update_password: Option<Choice<UpdatePassword>>,
    /// Remove the home directory with `absent`.
    pub remove: Option<Flag>,
    /// Force removal.
    pub force: Option<Flag>,
    /// Allow a non-unique uid.
    pub non_unique: Option<Flag>,
}

impl Params for UserParams {}

/// `user`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "user",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<UserParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `user`, with the result fields Ansible's user module returns.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: UserParams = params(SPEC.name, args)?;
    let existed = entry(ctx, "/etc/passwd", p.name.as_str())?.is_some();
    let mut result = user_apply(&p, ctx)?;
    if !absent(&p.state) && flag(&p.create_home, true) && missing_home_made(&p, ctx)? {
        result.changed = true;
    }
    let fields = &mut result.fields;
    let present = !absent(&p.state);
    fields.insert(
        "state".into(),
        Json::from(if present { "present" } else { "absent" }),
    );
    match (present, existed) {
        (false, true) => {
            fields.insert("force".into(), Json::from(flag(&p.force, false)));
            fields.insert("remove".into(), Json::from(flag(&p.remove, false)));
        }
        (true, false) => {
            fields.insert("system".into(), Json::from(flag(&p.system, false)));
            fields.insert("create_home".into(), Json::from(flag(&p.create_home, true)));
        }
        (true, true) => {
            fields.insert("append".into(), Json::from(flag(&p.append, false)));
            fields.insert("move_home".into(), Json::from(false));
        }
        (false, false) => {}
    }
    let mut warnings = Vec::new();
    if p.groups.is_none() && flag(&p.append, false) {
        warnings.push(APPEND_WITHOUT_GROUPS);
    }
    if text(&p.password).is_some_and(|pw| !looks_hashed(&pw)) {
        warnings.push(NOT_HASHED);
    }
    if !warnings.is_empty() {
        fields.insert("warnings".into(), Json::from(warnings));
    }
    if let (true, Some(info)) = (present, entry(ctx, "/etc/passwd", p.name.as_str())?) {
        let number = |i: usize| info.get(i).and_then(|v| v.parse::<u64>().ok());
        let text = |i: usize| Json::from(info.get(i).cloned().unwrap_or_default());
        fields.insert("uid".into(), Json::from(number(2)));
        fields.insert("group".into(), Json::from(number(3)));
        fields.insert("comment".into(), text(4));
        fields.insert("home".into(), text(5));
        fields.insert("shell".into(), text(6));
        if let Some(TextList(groups)) = &p.groups {
            fields.insert("groups".into(), Json::from(groups.join(",")));
        }
    }
    Ok(result)
}

/// Makes the user as the task says: `userdel` when absent, `useradd` when missing, `usermod`
/// with what differs otherwise.
fn user_apply(p: &UserParams, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let name = p.name.to_string();
    let current = entry(ctx, "/etc/passwd", &name)?;
    if absent(&p.state) {
        if current.is_none() {
            return Ok(ModuleResult::changed(false).with("name", name));
        }
        if !ctx.check {
            let mut argv = vec!["userdel".to_owned()];
            if flag(&p.force, false) {
                argv.push("-f".into());
            }
            if flag(&p.remove, false) {
                argv.push("-r".into());
            }
            argv.push(name.clone());
            run_argv(ctx, argv)?;
        }
        return Ok(ModuleResult::changed(true).with("name", name));
    }
    let (command, opts) = match &current {
        None => ("useradd", useradd_options(p)?),
        Some(fields) => ("usermod", usermod_options(p, ctx, &name, fields)?),
    };
    // A new user is a change even with no options; an existing one only when one differs.
    let changed = current.is_none() || !opts.is_empty();
    if changed && !ctx.check {
        let mut argv = vec![command.to_owned()];
        argv.extend(opts);
        argv.push(name.clone());
        run_argv(ctx, argv)?;
    }
    Ok(ModuleResult::changed(changed).with("name", name))
}

/// A user whose home folder is missing gets one, as Ansible's user module makes it after
/// `useradd`/`usermod`: `/etc/skel` copied (or an empty folder), its mode from `UMASK` in
/// `/etc/login.defs`, everything owned by the user. Whether a folder was (or, in check mode,
/// would be) made.
fn missing_home_made(p: &UserParams, ctx: &ModuleCtx) -> Result<bool, ModuleError> {
    let Some(info) = entry(ctx, "/etc/passwd", p.name.as_str())? else {
        return Ok(false);
    };
    let home = text(&p.home).unwrap_or_else(|| info.get(5).cloned().unwrap_or_default());
    let fs = ctx.target.fs();
    if home.is_empty() || fs.exists(Path::new(&home)).map_err(ModuleError::from)? {
        return Ok(false);
    }
    if ctx.check {
        return Ok(true);
    }
    let parent = Path::new(&home).parent().unwrap_or(Path::new("/"));
    run_argv(ctx, vec!["mkdir".into(), "-p".into(), parent.display().to_string()])?;
    if fs.exists(Path::new("/etc/skel")).map_err(ModuleError::from)? {
        run_argv(ctx, vec!["cp".into(), "-a".into(), "/etc/skel".into(), home.clone()])?;
    } else {
        run_argv(ctx, vec!["mkdir".into(), home.clone()])?;
    }
    let defs = fs
        .read_text_opt(Path::new("/etc/login.defs"))
        .map_err(ModuleError::from)?
        .unwrap_or_default();
    // `^UMASK\s+(\d+)$`, every matching line applied in turn: the last one wins.
    let umask = defs
        .lines()
        .rev()
        .find_map(|line| {
            let rest = line.strip_prefix("UMASK")?;
            let digits = rest.trim_start_matches([' ', '\t']);
            let spaced = digits.len() < rest.len();
            let number = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit());
            (spaced && number).then(|| u32::from_str_radix(digits, 8).ok())?
        });
    if let Some(umask) = umask {
        let mode = format!("{:o}", 0o777 & !umask);
        run_argv(ctx, vec!["chmod".into(), mode, home.clone()])?;
    }
    let owner = format!(
        "{}:{}",
        info.get(2).cloned().unwrap_or_default(),
        info.get(3).cloned().unwrap_or_default()
    );
    run_argv(ctx, vec!["chown".into(), "-R".into(), owner, home])?;
    Ok(true)
}

/// Ansible's warning for `append` without `groups`.
const APPEND_WITHOUT_GROUPS: &str = "'append' is set, but no 'groups' are specified. Use 'groups' for appending new groups.This will change to an error in Ansible 2.14.";

/// Ansible's warning for a password that is not a crypt hash (`useradd -p` stores it as is).
const NOT_HASHED: &str = "The input password appears not to have been hashed. The 'password' argument must be encrypted for this module to work properly.";

/// Whether `password` looks like a crypt hash (or a lock marker), as Ansible's user module
/// checks before it warns: no `:`, `*` or `!`, `$`-fields, the last of crypt's alphabet and,
/// for MD5, SHA-256 and SHA-512, of their lengths.
fn looks_hashed(password: &str) -> bool {
    if password.is_empty() || matches!(password, "*" | "!" | "*************") {
        return true;
    }
    let fields: Vec<&str> = password.split('$').collect();
    if password.contains([':', '*', '!']) || fields.len() < 3 {
        return false;
    }
    let last = fields[fields.len() - 1];
    let alphabet = last
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '='));
    let length = match fields[1] {
        "1" => last.len() == 22,
        "5" => last.len() == 43,
        "6" => last.len() == 86,
        _ => true,
    };
    alphabet && length
}

/// A parameter's text, when the task gives it.
fn text(t: &Option<Text>) -> Option<String> {
    t.as_ref().map(|t| t.to_string())
}

/// `useradd`'s options for a new user, from every parameter the task gives.
fn useradd_options(p: &UserParams) -> Result<Vec<String>, ModuleError> {
    let mut opts: Vec<String> = Vec::new();
    if let Some(uid) = int(&p.uid)? {
        opts.extend(["-u".into(), uid.to_string()]);
    }
    if let Some(group) = text(&p.group) {
        opts.extend(["-g".into(), group]);
    }
    if let Some(TextList(groups)) = &p.groups {
        if !groups.is_empty() {
            opts.extend(["-G".into(), groups.join(",")]);
        }
    }
    if let Some(comment) = text(&p.comment) {
        opts.extend(["-c".into(), comment]);
    }
    if let Some(home) = text(&p.home) {
        opts.extend(["-d".into(), home]);
    }
    if let Some(shell) = text(&p.shell) {
        opts.extend(["-s".into(), shell]);
    }
    if let Some(password) = text(&p.password) {
        opts.extend(["-p".into(), password]);
    }
    if flag(&p.system, false) {
        opts.push("-r".into());
    }
    if flag(&p.non_unique, false) {
        opts.push("-o".into());
    }
    opts.push(if flag(&p.create_home, true) {
        "-m".into()
    } else {
        "-M".into()
    });
    Ok(opts)
}

/// `usermod`'s options for an existing user (its `/etc/passwd` `fields`): only what differs
/// from what the task asks; none when nothing does.
fn usermod_options(
    p: &UserParams,
    ctx: &ModuleCtx,
    name: &str,
    fields: &[String],
) -> Result<Vec<String>, ModuleError> {
    let mut opts: Vec<String> = Vec::new();
    let field = |i: usize| fields.get(i).cloned().unwrap_or_default();
    if let Some(uid) = int(&p.uid)? {
        if field(2) != uid.to_string() {
            opts.extend(["-u".into(), uid.to_string()]);
        }
    }
    if let Some(group) = text(&p.group) {
        let gid = entry(ctx, "/etc/group", &group)?
            .and_then(|g| g.get(2).cloned())
            .unwrap_or(group.clone());
        if field(3) != gid {
            opts.extend(["-g".into(), group]);
        }
    }
    for (i, flag_name, wanted) in [
        (4, "-c", &p.comment),
        (5, "-d", &p.home),
        (6, "-s", &p.shell),
    ] {
        if let Some(wanted) = text(wanted) {
            if field(i) != wanted {
                opts.extend([flag_name.into(), wanted]);
            }
        }
    }
    if let Some(TextList(wanted)) = &p.groups {
        let have = groups_of(ctx, name)?;
        let append = flag(&p.append, false);
        let differs = if append {
            wanted.iter().any(|g| !have.contains(g))
        } else {
            let mut a = wanted.clone();
            a.sort();
            let mut b = have.clone();
            b.sort();
            a != b
        };
        if differs {
            if append {
                opts.push("-a".into());
            }
            opts.extend(["-G".into(), wanted.join(",")]);
        }
    }
    // The password is replaced when it differs from the shadow entry's (`update_password:
    // always`, the default), a leading `!` (a lock) not counted.
    let always = !matches!(
        p.update_password,
        Some(Choice::Known(UpdatePassword::OnCreate))
    );
    if let (true, Some(password)) = (always, text(&p.password)) {
        let shadow = entry(ctx, "/etc/shadow", name)?
            .and_then(|f| f.get(1).cloned())
            .unwrap_or_default();
        if shadow.trim_start_matches('!') != password.trim_start_matches('!') {
            opts.extend(["-p".into(), password]);
        }
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::looks_hashed;

    #[test]
    fn plain_text_passwords_are_told_from_hashes_as_ansible_tells_them() {
        let sha512 = "$6$rounds=656000$TT4O7jz2M57npccl$33LF6FcUMSW11qrESXL1HX0BS.bsiT6aenFLLiVpsQh6hDtI9pJh5iY7x8J7ePkN4fP8hmElidHXaeD51pbGS.";
        assert!(looks_hashed(sha512));
        assert!(looks_hashed("*") && looks_hashed("!") && looks_hashed(""));
        assert!(!looks_hashed("plaintextpassword"));
        assert!(!looks_hashed("$6$salt$tooshort"));
        assert!(!looks_hashed("$6$rounds=656000$tgK3gYTyRLUmhyv2$lAFrYUQwn7E6VsjPOwQwoSx30lmpiU9r/E0Al7tzKrR9mkodcMEZGe9OXD0H/clOn6qdsUnaL4zefy5fG+++++"));
        assert!(!looks_hashed("a:b$c$d"));
    }
}
