//! The image's provenance beside its SBOM (`provenance.json`): an in-toto statement with a SLSA
//! v1 provenance predicate, saying what made the image: the recipe and every project file the
//! plan read (each with its sha256), the `mirror.lock` pins of what it downloads, the base, the
//! module signer's certificate, imgbuild's version and code identity, and the SBOM it wrote.
//! Its bytes depend only on those (no clock): the same build writes the same statement. Secrets
//! never reach it (the signer is named by its certificate's digest; vaulted files by theirs).

use std::path::{Path, PathBuf};

use planner::Plan;
use serde_json::{json, Value as Json};
use sha2::{Digest, Sha256};

use super::error::{io, BuildError};
use super::finish::Image;
use super::settings::Settings;

/// The file name, beside the SBOM.
pub const FILE_NAME: &str = "provenance.json";
/// The media type it is pushed as (a referrer of the image).
pub const ARTIFACT_TYPE: &str = "application/vnd.in-toto+json";
/// The predicate's type.
pub const PREDICATE_TYPE: &str = "https://slsa.dev/provenance/v1";
/// What kind of build made it.
const BUILD_TYPE: &str = "urn:imgbuild:image-build:v1";

fn sha256_file(path: &Path) -> Result<String, BuildError> {
    let bytes = std::fs::read(path).map_err(io(format!("reading {}", path.display())))?;
    Ok(format!("{:x}", Sha256::digest(&bytes)))
}

/// Writes `out/<image>/provenance.json` for the image whose SBOM is `sbom`.
pub(super) fn write(
    plan: &Plan,
    settings: &Settings,
    image: &Image,
    sbom: &Path,
) -> Result<PathBuf, BuildError> {
    let mut dependencies = Vec::new();
    for input in &plan.inputs {
        let path = settings.project_root.join(input);
        if path.is_file() {
            dependencies.push(
                json!({"uri": format!("file:{input}"), "digest": {"sha256": sha256_file(&path)?}}),
            );
        }
    }
    let lock = mirror::Lock::load(&settings.project_root.join("mirror.lock"))
        .map_err(|e| BuildError::Output(e.to_string()))?;
    for (url, _) in plan.downloads() {
        if let Some(pin) = lock.get(&url) {
            let uri = mirror::redact_credentials(&url);
            dependencies.push(json!({"uri": uri, "digest": {"sha256": pin.sha256}}));
        }
    }
    let base = crate::base::BaseRequest::from_vars(&plan.vars)?;
    let base_layer = image
        .spec
        .layers
        .first()
        .map(|(blob, _)| blob.digest.clone());
    dependencies.push(json!({
        "uri": format!("{}:{}", base.bootstrap, base.build_from),
        "annotations": {"imgbuild.layer": base_layer},
    }));
    let mut byproducts = vec![json!({
        "name": sbom::FILE_NAME,
        "digest": {"sha256": sha256_file(sbom)?},
    })];
    if let Some(signing) = &settings.module_signing {
        byproducts.push(json!({
            "name": "module-signer-certificate",
            "digest": {"sha256": signing.fingerprint().trim_start_matches("sha256:")},
        }));
    }
    let manifest = image.written.manifest.trim_start_matches("sha256:");
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": plan.image, "digest": {"sha256": manifest}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {"image": plan.image, "recipe": plan.recipe},
                "internalParameters": {"SOURCE_DATE_EPOCH": settings.epoch},
                "resolvedDependencies": dependencies,
            },
            "runDetails": {
                "builder": {
                    "id": "urn:imgbuild",
                    "version": {
                        "imgbuild": env!("CARGO_PKG_VERSION"),
                        "code": crate::layer_code::layer_code(),
                    },
                },
                "byproducts": byproducts,
            },
        },
    });
    let path = image.dir.join(FILE_NAME);
    let bytes =
        serde_json::to_vec_pretty(&statement).map_err(|e| BuildError::Output(e.to_string()))?;
    crate::atomic::write_file(&path, &bytes).map_err(io(format!("writing {}", path.display())))?;
    Ok(path)
}

/// Whether `statement` is a provenance of imgbuild's naming `image` and vouching for the SBOM
/// whose bytes are `sbom`; `Err` says what does not hold.
pub fn vouches_for(statement: &Json, image: Option<&str>, sbom: &[u8]) -> Result<(), String> {
    if statement["predicateType"] != PREDICATE_TYPE {
        return Err(format!(
            "not a SLSA v1 provenance (predicateType {})",
            statement["predicateType"]
        ));
    }
    let named = statement["subject"][0]["name"].as_str().unwrap_or("");
    if let Some(image) = image.filter(|i| *i != named) {
        return Err(format!("it is the provenance of {named}, not of {image}"));
    }
    let digest = format!("{:x}", Sha256::digest(sbom));
    let byproducts = statement["predicate"]["runDetails"]["byproducts"].as_array();
    let vouched = byproducts.into_iter().flatten().any(|b| {
        b["name"] == sbom::FILE_NAME && b["digest"]["sha256"].as_str() == Some(digest.as_str())
    });
    if !vouched {
        return Err(format!(
            "it does not name this SBOM (sha256 {digest}) among what the build wrote"
        ));
    }
    Ok(())
}
