//! `slurp`: a file of the image, registered as base64 `content`.
//!
//! A file of the image as base64.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Text;
use base64::Engine;
use serde_json::Value as Json;
use std::path::Path;

/// Parameters of `slurp`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlurpParams {
    /// The file.
    #[serde(alias = "path")]
    pub src: Text,
}

impl Params for SlurpParams {}

/// `slurp`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "slurp",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<SlurpParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `slurp`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: SlurpParams = params(SPEC.name, args)?;
    let src = p.src.as_str();
    let bytes = ctx
        .target
        .fs()
        .read(Path::new(src))
        .map_err(|e| ModuleError::new(slurp_failure(src, &e.source)))?;
    Ok(ModuleResult::changed(false)
        .with(
            "content",
            base64::engine::general_purpose::STANDARD.encode(bytes),
        )
        .with("encoding", "base64")
        .with("source", p.src.as_str()))
}

/// Why slurp could not read `src`, in the words of Ansible's.
fn slurp_failure(src: &str, e: &std::io::Error) -> String {
    use rustix::io::Errno;
    match Errno::from_io_error(e) {
        Some(Errno::NOENT) => format!("file not found: {src}"),
        Some(Errno::ACCESS) => format!("file is not readable: {src}"),
        Some(Errno::ISDIR) => format!("source is a directory and must be a file: {src}"),
        Some(errno) => {
            let text = e.to_string();
            let strerror = text.split(" (os error").next().unwrap_or(&text);
            let code = errno.raw_os_error();
            format!("unable to slurp file: [Errno {code}] {strerror}: '{src}'")
        }
        None => format!("unable to slurp file: {e}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn slurp_failures_in_ansibles_words() {
        let failure = |code| super::slurp_failure("/x", &std::io::Error::from_raw_os_error(code));
        assert_eq!(failure(2), "file not found: /x");
        assert_eq!(failure(13), "file is not readable: /x");
        assert_eq!(failure(21), "source is a directory and must be a file: /x");
        assert_eq!(
            failure(20),
            "unable to slurp file: [Errno 20] Not a directory: '/x'"
        );
    }
}
