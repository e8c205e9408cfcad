//! `build --secret id=ID,src=DIR`, as BuildKit's `--secret` reads it: a file or folder of the
//! build host, never kept. The ids: `module-signing` (the site's module signing key and
//! certificate, given to the roles that build modules, `image::signing`) and `image-signing`
//! (the key `--push` signs the pushed image with, `registry::sigstore::ImageSigner`).

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use image::signing::{ModuleSigning, SECRET_ID};
use registry::signer::{ImageSigner, IMAGE_SIGNING};

/// The secret ids imgbuild knows, each with what it is.
const KNOWN: &[(&str, &str)] = &[
    (SECRET_ID, "the site's module signing key and certificate"),
    (
        IMAGE_SIGNING,
        "the key --push signs the pushed image with: an ECDSA P-256 private key in PEM (sigstore) or an armored OpenPGP secret key (GPG)",
    ),
];

/// Whether `id` is a secret imgbuild knows.
pub fn is_known(id: &str) -> bool {
    KNOWN.iter().any(|(known, _)| *known == id)
}

/// The known ids, for messages.
pub fn known_ids() -> String {
    KNOWN
        .iter()
        .map(|(id, what)| format!("id={id} ({what})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One `--secret`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSecret {
    /// What it is for.
    pub id: String,
    /// Where it is on the build host.
    pub src: PathBuf,
    /// Where it was named when not on the command line (`mirror.toml:LINE`), for errors.
    pub origin: Option<String>,
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
    if !KNOWN.iter().any(|(known, _)| *known == id) {
        return Err(format!(
            "unknown secret id '{id}': imgbuild knows {}",
            known_ids()
        ));
    }
    let src = src
        .filter(|s| !s.as_os_str().is_empty())
        .ok_or_else(|| format!("no src: give id={SECRET_ID},src=DIR"))?;
    Ok(BuildSecret {
        id,
        src,
        origin: None,
    })
}

/// The secrets of the command line, then those `config` (the project's mirror.toml, whose
/// `text` gives the lines errors name) has under `[secrets]` for ids the command line does not
/// give, relative paths taken from `project_root`. An unknown id or an empty path is bad input.
pub fn with_site_secrets(
    given: &[BuildSecret],
    config: &mirror::MirrorConfig,
    text: &str,
    project_root: &Path,
) -> Result<Vec<BuildSecret>, crate::Failure> {
    let mut secrets = given.to_vec();
    for (id, src) in &config.secrets {
        let origin = format!("mirror.toml:{}", secret_line(text, id));
        let bad = |what: String| crate::Failure::Input(anyhow!("{origin}: [secrets] {what}"));
        if !KNOWN.iter().any(|(known, _)| known == id) {
            return Err(bad(format!(
                "names '{id}', which is not a secret imgbuild knows: {}",
                known_ids()
            )));
        }
        if src.as_os_str().is_empty() {
            return Err(bad(format!(
                "{id} is empty: give the folder the site mounts, e.g. {id} = \"/run/secrets/{id}\""
            )));
        }
        if !secrets.iter().any(|s| &s.id == id) {
            secrets.push(BuildSecret {
                id: id.clone(),
                src: project_root.join(src),
                origin: Some(origin),
            });
        }
    }
    Ok(secrets)
}

/// The line of `id`'s entry in mirror.toml's `[secrets]` table (1 when it cannot be found).
fn secret_line(text: &str, id: &str) -> usize {
    let mut in_secrets = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            in_secrets = line == "[secrets]";
        } else if in_secrets
            && line
                .trim_start_matches(['"', '\''])
                .strip_prefix(id)
                .is_some_and(|rest| {
                    rest.trim_start_matches(['"', '\''])
                        .trim_start()
                        .starts_with('=')
                })
        {
            return n + 1;
        }
    }
    1
}

/// The image-signing secret of `secrets`, read before any work.
pub fn image_signing(secrets: &[BuildSecret]) -> Result<Option<ImageSigner>, crate::Failure> {
    let mut given = secrets.iter().filter(|s| s.id == IMAGE_SIGNING);
    let Some(secret) = given.next() else {
        return Ok(None);
    };
    if given.next().is_some() {
        return Err(crate::Failure::Input(anyhow!(
            "--secret id={IMAGE_SIGNING} is given more than once: give one key"
        )));
    }
    ImageSigner::load(&secret.src).map(Some).map_err(|e| {
        crate::Failure::Input(match &secret.origin {
            Some(origin) => anyhow!("{origin}: [secrets] {IMAGE_SIGNING}: {e}"),
            None => anyhow!("{e}"),
        })
    })
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
    ModuleSigning::load(&secret.src).map(Some).map_err(|e| {
        crate::Failure::Input(match &secret.origin {
            Some(origin) => anyhow!("{origin}: [secrets] {SECRET_ID}: {e}"),
            None => anyhow!("{e}"),
        })
    })
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
    fn mirror_toml_names_a_secret_the_flag_overrides() {
        let root = Path::new("/site/project");
        let site = |text: &str, given: &[BuildSecret]| {
            let config =
                mirror::MirrorConfig::parse(text, Path::new("mirror.toml")).expect("parse");
            with_site_secrets(given, &config, text, root)
        };
        let text = "url = \"http://m/\"\n\n[secrets]\nmodule-signing = \"keys/mok\"\n";
        let secrets = site(text, &[]).expect("secrets");
        assert_eq!(
            secrets,
            vec![BuildSecret {
                id: SECRET_ID.into(),
                src: PathBuf::from("/site/project/keys/mok"),
                origin: Some("mirror.toml:4".into()),
            }]
        );
        let flag = parse("id=module-signing,src=/run/secrets/mok").expect("parse");
        let secrets = site(text, std::slice::from_ref(&flag)).expect("secrets");
        assert_eq!(secrets, vec![flag], "the command line goes first");
        let absolute = "[secrets]\n\"module-signing\" = \"/run/secrets/mok\"\n";
        let secrets = site(absolute, &[]).expect("secrets");
        assert_eq!(secrets[0].src, PathBuf::from("/run/secrets/mok"));
        assert_eq!(secrets[0].origin.as_deref(), Some("mirror.toml:2"));
        for (text, says) in [
            (
                "[paths.\"/x/\"]\nretries = 1\n[secrets]\nssh = \"/x\"\n",
                "mirror.toml:4: [secrets] names 'ssh'",
            ),
            (
                "[secrets]\nmodule-signing = \"\"\n",
                "mirror.toml:2: [secrets] module-signing is empty",
            ),
        ] {
            match site(text, &[]) {
                Err(crate::Failure::Input(e)) => assert!(e.to_string().starts_with(says), "{e}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(site("", &[]).expect("none").is_empty());
        let missing =
            site("[secrets]\nmodule-signing = \"/nonexistent/mok\"\n", &[]).expect("secrets");
        match module_signing(&missing) {
            Err(crate::Failure::Input(e)) => {
                let e = e.to_string();
                assert!(
                    e.starts_with("mirror.toml:2: [secrets] module-signing: "),
                    "{e}"
                );
                assert!(e.contains("/nonexistent/mok"), "{e}");
            }
            other => panic!("{other:?}"),
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
