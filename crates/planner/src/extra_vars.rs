//! `-e` arguments: `KEY=VALUE` words, an inline JSON/YAML mapping, or `@FILE`.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::Value as Json;

use crate::error::{ErrorKind, PlanError, Result};
use crate::task::parse_key_values;
use crate::vault::{self, Vault};
use crate::yaml;

/// Parses one `-e` argument; `@FILE` is read relative to `cwd`.
pub fn parse_extra_vars(arg: &str, cwd: &Path) -> Result<IndexMap<String, Json>> {
    parse_extra_vars_with_vault(arg, cwd, &Vault::default())
}

/// Parses one `-e` argument, decrypting a vaulted `@FILE` and `!vault` values with `vault`.
pub fn parse_extra_vars_with_vault(
    arg: &str,
    cwd: &Path,
    vault: &Vault,
) -> Result<IndexMap<String, Json>> {
    let bad = || PlanError::unlocated(ErrorKind::ExtraVar(arg.to_owned()));
    let vault_error =
        |message: String| PlanError::unlocated(ErrorKind::Vault(format!("-e {arg}: {message}")));
    let mapping = |text: &str| -> Result<IndexMap<String, Json>> {
        let node = yaml::parse_with_vault(text, vault).map_err(|e| match e.vault {
            true => vault_error(format!("line {}: {}", e.line, e.message)),
            false => bad(),
        })?;
        match node.to_json() {
            Json::Object(map) => Ok(map.into_iter().collect()),
            _ => Err(bad()),
        }
    };
    let trimmed = arg.trim();
    if let Some(file) = trimmed.strip_prefix('@') {
        let text = std::fs::read_to_string(cwd.join(file)).map_err(|e| {
            PlanError::unlocated(ErrorKind::ExtraVar(format!(
                "{arg}: cannot read {file}: {e}"
            )))
        })?;
        if vault::is_vaulted(text.as_bytes()) {
            let clear = vault
                .decrypt_text(&text)
                .map_err(|e| vault_error(format!("vault-encrypted file: {e}")))?;
            return mapping(&clear);
        }
        return mapping(&text);
    }
    if trimmed.starts_with('{') {
        return mapping(trimmed);
    }
    let pairs = parse_key_values(trimmed).map_err(|_| bad())?;
    if pairs.is_empty() {
        return Err(bad());
    }
    Ok(pairs.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn forms() {
        let cwd = Path::new(".");
        assert_eq!(
            parse_extra_vars("a=1 b=x", cwd).expect("kv")["a"],
            json!("1")
        );
        assert_eq!(
            parse_extra_vars("{\"a\": [1]}", cwd).expect("json")["a"],
            json!([1])
        );
        assert!(parse_extra_vars("novalue", cwd).is_err());
        assert!(parse_extra_vars("@/nonexistent/file.yml", cwd).is_err());
    }

    #[test]
    fn a_vaulted_file_needs_the_password() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("x.yml"), crate::vault::fixtures::FILE11).expect("write");
        let err = parse_extra_vars("@x.yml", dir.path()).expect_err("no password");
        assert!(err.to_string().contains("--vault-password-file"), "{err}");
        let vars = parse_extra_vars_with_vault(
            "@x.yml",
            dir.path(),
            &crate::vault::fixtures::vault("default"),
        )
        .expect("decrypted");
        assert_eq!(vars["b"], json!("two"));
    }
}
