//! `build --secret id=ID,src=DIR`, as BuildKit's `--secret` reads it: a file or folder of the
//! build host given to the roles that need it while they run, never kept. The one id is
//! `module-signing` (the site's module signing key and certificate, `image::signing`).

use std::path::PathBuf;

use anyhow::anyhow;
use image::signing::{ModuleSigning, SECRET_ID};

/// One `--secret`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSecret {
    /// What it is for.
    pub id: String,
    /// Where it is on the build host.
    pub src: PathBuf,
}

/// Reads `id=ID,src=DIR` (`source=` as BuildKit also takes, `type=file` allowed).
pub fn parse(text: &str) -> Result<BuildSecret, String> {
    let mut id = None;
    let mut src = None;
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some(("id", value)) => id = Some(value.to_owned()),
            Some(("src" | "source", value)) => src = Some(PathBuf::from(value)),
            Some(("type", "file")) => {}
            _ => {
                return Err(format!(
                    "'{part}' is not understood: give id={SECRET_ID},src=DIR"
                ))
            }
        }
    }
    let id = id.ok_or_else(|| format!("no id: give id={SECRET_ID},src=DIR"))?;
    if id != SECRET_ID {
        return Err(format!(
            "unknown secret id '{id}': imgbuild knows id={SECRET_ID} (the site's module signing key and certificate)"
        ));
    }
    let src = src
        .filter(|s| !s.as_os_str().is_empty())
        .ok_or_else(|| format!("no src: give id={SECRET_ID},src=DIR"))?;
    Ok(BuildSecret { id, src })
}

/// The module-signing secret of `secrets`, checked (key against certificate) before any work.
pub fn module_signing(secrets: &[BuildSecret]) -> Result<Option<ModuleSigning>, crate::Failure> {
    let mut given = secrets.iter().filter(|s| s.id == SECRET_ID);
    let Some(secret) = given.next() else {
        return Ok(None);
    };
    if given.next().is_some() {
        return Err(crate::Failure::Input(anyhow!(
            "--secret id={SECRET_ID} is given more than once: give one folder"
        )));
    }
    ModuleSigning::load(&secret.src)
        .map(Some)
        .map_err(|e| crate::Failure::Input(anyhow!("{e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_read_as_buildkit_writes_it() {
        let secret = parse("id=module-signing,src=/srv/mok").expect("parse");
        assert_eq!(secret.src, PathBuf::from("/srv/mok"));
        assert_eq!(
            parse("type=file,source=/srv/mok,id=module-signing").expect("parse"),
            secret
        );
        for (bad, says) in [
            ("id=ssh,src=/x", "unknown secret id 'ssh'"),
            ("src=/x", "no id"),
            ("id=module-signing", "no src"),
            ("id=module-signing,src=", "no src"),
            (
                "id=module-signing,src=/x,env=KEY",
                "'env=KEY' is not understood",
            ),
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_missing_folder_is_bad_input_naming_it() {
        let secrets = [parse("id=module-signing,src=/nonexistent/mok").expect("parse")];
        match module_signing(&secrets) {
            Err(crate::Failure::Input(e)) => {
                assert!(e.to_string().contains("/nonexistent/mok"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(module_signing(&[]), Ok(None)));
        let twice = [secrets[0].clone(), secrets[0].clone()];
        assert!(matches!(
            module_signing(&twice),
            Err(crate::Failure::Input(_))
        ));
    }
}
