//! `imgbuild sbom`: an image's SBOM (CycloneDX 1.5 JSON), read from its files; and the check
//! `verify --sbom` adds, that an image still matches the SBOM it was given.

use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use verify::inputs::Labels;
use verify::{Check, Snapshot};

use crate::cli::SbomArgs;
use crate::Failure;

/// The SBOM of the image read into `snapshot`, named `name`.
pub(super) fn of_image(snapshot: &Snapshot, name: &str, labels: &Labels) -> sbom::Bom {
    let inputs = sbom::Inputs {
        name: name.to_owned(),
        labels: labels.clone(),
        downloads: Vec::new(),
    };
    sbom::build(snapshot, &inputs)
}

/// Reads the SBOM file `file`; an unreadable or invalid one is bad input.
pub(super) fn read(file: &Path) -> Result<sbom::Bom, Failure> {
    let bytes = std::fs::read(file).map_err(|e| {
        Failure::Input(anyhow!(
            "{}: {e}; give the SBOM file `imgbuild sbom` or a build wrote",
            file.display()
        ))
    })?;
    sbom::parse(&bytes).map_err(|e| Failure::Input(anyhow!("{}: {e}", file.display())))
}

/// The `sbom` check: the image holds what `recorded` lists, each difference named.
pub(super) fn check(recorded: &sbom::Bom, current: &sbom::Bom, file: &Path) -> Check {
    let differences = sbom::diff(recorded, current);
    let detail = if differences.is_empty() {
        format!(
            "the image matches {} ({} components)",
            file.display(),
            recorded.components.len()
        )
    } else {
        let listed: Vec<String> = differences.iter().map(ToString::to_string).collect();
        format!(
            "the image no longer matches {} ({} difference{}): {}",
            file.display(),
            differences.len(),
            if differences.len() == 1 { "" } else { "s" },
            listed.join("; ")
        )
    };
    Check {
        id: "sbom".to_owned(),
        ok: differences.is_empty(),
        detail,
    }
}

/// Writes the SBOM of `args.image` to `--out` or standard output.
pub fn run(args: &SbomArgs) -> Result<ExitCode, Failure> {
    let (snapshot, labels) = super::image_input::read_image(&args.image)?;
    let bom = of_image(&snapshot, &args.image, &labels);
    let bytes = sbom::to_bytes(&bom).map_err(|e| Failure::Run(anyhow!(e)))?;
    match &args.out {
        Some(out) => {
            super::output::write_atomically(out, &bytes)?;
            eprintln!(
                "sbom: {} components of {} written to {}",
                bom.components.len(),
                args.image,
                out.display()
            );
        }
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(&bytes)
                .map_err(|e| Failure::Run(anyhow!("writing the SBOM: {e}")))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
