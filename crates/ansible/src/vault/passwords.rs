//! Vault passwords from the command line and the environment, read as ansible-core 2.14 reads
//! them (`ansible/cli/__init__.py` `setup_vault_secrets`, `get_file_vault_secret`).
//!
//! Order: `ANSIBLE_VAULT_IDENTITY_LIST`, then each `--vault-id`, then each
//! `--vault-password-file` and `ANSIBLE_VAULT_PASSWORD_FILE` (both under the label `default`).
//! A password file that is executable is run and its standard output is the password (a
//! `*-client` script is given `--vault-id LABEL`); any other file's content is the password,
//! whitespace stripped from both ends.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{is_vaulted, Vault, VaultError, VaultSecret, DEFAULT_LABEL};

/// The vault options of a command.
#[derive(Debug, Clone, Default)]
pub struct PasswordSources {
    /// `--vault-id [LABEL@]FILE`, in order.
    pub vault_ids: Vec<String>,
    /// `--vault-password-file FILE`, in order.
    pub password_files: Vec<PathBuf>,
}

fn fail(message: String) -> VaultError {
    VaultError::Password(message)
}

/// Reads every password the options and the environment (`env`) name.
pub fn load(
    sources: &PasswordSources,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vault, VaultError> {
    let mut slugs: Vec<String> = env("ANSIBLE_VAULT_IDENTITY_LIST")
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    slugs.extend(sources.vault_ids.iter().cloned());
    let files = sources
        .password_files
        .iter()
        .map(|f| f.display().to_string())
        .chain(env("ANSIBLE_VAULT_PASSWORD_FILE").filter(|f| !f.is_empty()));
    slugs.extend(files.map(|file| format!("{DEFAULT_LABEL}@{file}")));
    let mut secrets: Vec<VaultSecret> = Vec::new();
    for slug in slugs {
        let (label, source) = match slug.split_once('@') {
            Some((label, source)) if !label.is_empty() => (label, source),
            Some((_, source)) => (DEFAULT_LABEL, source),
            None => (DEFAULT_LABEL, slug.as_str()),
        };
        if matches!(source, "prompt" | "prompt_ask_vault_pass") {
            return Err(fail(format!(
                "--vault-id {slug}: imgbuild does not prompt for a vault password (builds run unattended); give a file: --vault-id {label}@FILE"
            )));
        }
        let path = expand_home(source, env);
        let password = read_password(&path, label, &Vault::new(secrets.clone()))?;
        secrets.push(VaultSecret::new(label, password));
    }
    Ok(Vault::new(secrets))
}

/// `~/x` under `$HOME`, as Ansible's `unfrackpath` expands it.
fn expand_home(path: &str, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match (path.strip_prefix("~/"), env("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// The password a file gives: its output if it is executable, else its content.
fn read_password(path: &Path, label: &str, earlier: &Vault) -> Result<Vec<u8>, VaultError> {
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|_| fail(format!("The vault password file {shown} was not found")))?;
    let password = if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
        let password = run_script(path, label)?;
        strip(&password, |b| b == b'\r' || b == b'\n').to_vec()
    } else {
        let bytes = std::fs::read(path)
            .map_err(|e| fail(format!("Could not read vault password file {shown}: {e}")))?;
        let bytes = strip(&bytes, |b| b.is_ascii_whitespace()).to_vec();
        // A password file may itself be vaulted with a password given before it.
        let bytes = if is_vaulted(&bytes) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            earlier
                .decrypt(&text)
                .map_err(|e| fail(format!("vault password file {shown}: {e}")))?
        } else {
            bytes
        };
        strip(&bytes, |b| b == b'\r' || b == b'\n').to_vec()
    };
    if password.is_empty() {
        return Err(fail(format!(
            "Invalid vault password was provided from file ({shown})"
        )));
    }
    Ok(password)
}

/// Runs a password script: plain ones with no argument, `*-client` ones with `--vault-id LABEL`.
fn run_script(path: &Path, label: &str) -> Result<Vec<u8>, VaultError> {
    let shown = path.display();
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let client = stem.is_some_and(|s| s.ends_with("-client"));
    let mut command = Command::new(path);
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    if client {
        command.args(["--vault-id", label]).stderr(Stdio::piped());
    }
    let output = command.output().map_err(|e| {
        fail(format!(
            "Problem running vault password script {shown} ({e}). If this is not a script, remove the executable bit from the file."
        ))
    })?;
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    match output.status.code() {
        Some(0) => Ok(output.stdout),
        Some(2) if client => Err(fail(format!(
            "Vault password client script {shown} did not find a secret for vault-id={label}: {stderr}"
        ))),
        code => Err(fail(format!(
            "Vault password script {shown} returned non-zero ({}){}",
            code.map_or_else(|| "killed".to_owned(), |c| c.to_string()),
            if stderr.is_empty() { String::new() } else { format!(": {stderr}") }
        ))),
    }
}

/// `bytes` without the leading and trailing bytes that `drop` matches (Python's `strip`).
fn strip(bytes: &[u8], drop: impl Fn(u8) -> bool) -> &[u8] {
    let start = bytes.iter().position(|b| !drop(*b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !drop(*b))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::fixtures::{PASSWORD, V11, V12};

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    #[test]
    fn a_file_is_its_content_stripped_and_a_script_its_output() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = write(dir.path(), "pw", &format!("  {PASSWORD} \n\n"), 0o600);
        let script = write(
            dir.path(),
            "pw.sh",
            &format!("#!/bin/sh\necho {PASSWORD}\n"),
            0o700,
        );
        for source in [file, script] {
            let sources = PasswordSources {
                password_files: vec![source],
                ..Default::default()
            };
            let vault = load(&sources, &no_env).expect("loaded");
            assert_eq!(vault.decrypt(V11).expect("opens"), b"unit-clear-1.1");
        }
    }

    #[test]
    fn vault_ids_labels_and_the_environment() {
        let dir = tempfile::tempdir().expect("tmp");
        let good = write(dir.path(), "good", PASSWORD, 0o600);
        let bad = write(dir.path(), "bad", "wrong-password-x", 0o600);
        let env_file = good.display().to_string();
        let env =
            move |name: &str| (name == "ANSIBLE_VAULT_PASSWORD_FILE").then(|| env_file.clone());
        let sources = PasswordSources {
            vault_ids: vec![format!("prod@{}", bad.display())],
            ..Default::default()
        };
        let vault = load(&sources, &env).expect("loaded");
        let labels: Vec<&str> = vault.secrets.iter().map(VaultSecret::label).collect();
        assert_eq!(labels, ["prod", "default"]);
        // prod's password is tried first for a 1.2 `prod` value, and fails; default's opens it.
        assert_eq!(vault.decrypt(V12).expect("opens"), b"unit-clear-1.2");
    }

    #[test]
    fn prompts_missing_files_and_failing_scripts_are_clear_errors() {
        let dir = tempfile::tempdir().expect("tmp");
        let prompt = PasswordSources {
            vault_ids: vec!["prod@prompt".into()],
            ..Default::default()
        };
        let err = load(&prompt, &no_env).expect_err("prompt");
        assert!(err.to_string().contains("does not prompt"), "{err}");
        let missing = PasswordSources {
            password_files: vec![dir.path().join("nope")],
            ..Default::default()
        };
        let err = load(&missing, &no_env).expect_err("missing");
        assert!(err.to_string().contains("was not found"), "{err}");
        let script = write(dir.path(), "fail.sh", "#!/bin/sh\nexit 3\n", 0o700);
        let failing = PasswordSources {
            password_files: vec![script],
            ..Default::default()
        };
        let err = load(&failing, &no_env).expect_err("exit 3");
        assert!(err.to_string().contains("returned non-zero (3)"), "{err}");
        let empty = write(dir.path(), "empty", " \n", 0o600);
        let empty = PasswordSources {
            password_files: vec![empty],
            ..Default::default()
        };
        let err = load(&empty, &no_env).expect_err("empty");
        assert!(err.to_string().contains("Invalid vault password"), "{err}");
    }

    #[test]
    fn a_client_script_is_asked_for_its_label() {
        let dir = tempfile::tempdir().expect("tmp");
        let script = write(
            dir.path(),
            "pass-client.sh",
            &format!("#!/bin/sh\n[ \"$2\" = prod ] && echo {PASSWORD} || exit 2\n"),
            0o700,
        );
        let sources = PasswordSources {
            vault_ids: vec![format!("prod@{}", script.display())],
            ..Default::default()
        };
        let vault = load(&sources, &no_env).expect("loaded");
        assert_eq!(vault.decrypt(V12).expect("opens"), b"unit-clear-1.2");
        let other = PasswordSources {
            vault_ids: vec![format!("dev@{}", script.display())],
            ..Default::default()
        };
        let err = load(&other, &no_env).expect_err("unknown id");
        assert!(err.to_string().contains("vault-id=dev"), "{err}");
    }

    #[test]
    fn strip_is_pythons() {
        assert_eq!(strip(b"\r\n x \n", |b| b == b'\r' || b == b'\n'), b" x ");
        assert_eq!(strip(b"\n\n", |b| b == b'\n'), b"");
    }
}
