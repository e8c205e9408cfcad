//! `no_build_tools`: a node image without the compiler, the kernel headers and DKMS, which only
//! the build needed (asked for by a recipe's `build_only_packages` or `--no-build-tools`).

use super::rule::{kernel_or_skip, Rule, Verdict};
use crate::image::Image;
use crate::snapshot::Kind;

/// The rule.
pub struct NoBuildTools;

/// Program names that are a C compiler or DKMS.
fn is_build_program(name: &str) -> bool {
    let versioned = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
    };
    matches!(
        name,
        "cc" | "c++" | "gcc" | "g++" | "clang" | "clang++" | "dkms"
    ) || versioned("gcc-")
        || versioned("g++-")
        || versioned("clang-")
        || (name.contains("-linux-") && (name.ends_with("-gcc") || versioned_suffix(name)))
}

/// `x86_64-linux-gnu-gcc-12`: a target-prefixed versioned gcc.
fn versioned_suffix(name: &str) -> bool {
    name.rsplit_once("-gcc-")
        .is_some_and(|(_, v)| v.starts_with(|c: char| c.is_ascii_digit()))
}

impl Rule for NoBuildTools {
    fn id(&self) -> &'static str {
        "no_build_tools"
    }

    fn summary(&self) -> &'static str {
        "when asked (`build_only_packages`, `--no-build-tools`): no C compiler, kernel headers or DKMS, which a node would hold in RAM for nothing"
    }

    fn check(&self, image: &Image) -> Verdict {
        if !image.expect.no_build_tools {
            return Verdict::Skip(
                "not asked for: the recipe names no build_only_packages (`verify --no-build-tools` asks)".into(),
            );
        }
        let mut found: Vec<String> = image
            .snapshot
            .entries()
            .filter(|(path, entry)| {
                let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
                let program = matches!(dir, "/usr/bin" | "/usr/sbin" | "/bin" | "/sbin")
                    && entry.kind != Kind::Dir
                    && is_build_program(name);
                let headers = (dir == "/usr/src" && name.starts_with("linux-headers-"))
                    || dir == "/usr/src/kernels";
                program || headers
            })
            .map(|(path, _)| path.clone())
            .collect();
        if let Ok(kernel) = kernel_or_skip(image) {
            let build = format!("/lib/modules/{kernel}/build");
            if image
                .snapshot
                .entry(&build)
                .is_some_and(|e| e.kind == Kind::Dir)
            {
                found.push(format!("{build} (the kernel's build tree)"));
            }
        }
        if found.is_empty() {
            return Verdict::Pass("no C compiler, kernel headers or DKMS".into());
        }
        found.sort();
        let shown = found.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
        let more = found.len().saturating_sub(8);
        Verdict::Fail(format!(
            "the image still holds build tools: {shown}{}; name their packages in the recipe's build_only_packages (imgbuild removes them after the last role and keeps the modules they built)",
            if more > 0 { format!(" and {more} more") } else { String::new() }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::is_build_program;

    #[test]
    fn compilers_and_dkms_are_build_programs_and_their_neighbours_are_not() {
        for name in [
            "gcc",
            "gcc-12",
            "cc",
            "x86_64-linux-gnu-gcc-12",
            "x86_64-redhat-linux-gcc",
            "dkms",
            "clang-16",
        ] {
            assert!(is_build_program(name), "{name}");
        }
        for name in [
            "gcc-ar",
            "gcc-nm-12",
            "ccache-swap",
            "gzip",
            "bash",
            "c99-wrapper",
        ] {
            assert!(!is_build_program(name), "{name}");
        }
    }
}
