//! `imgbuild man-pages DIR` (hidden): the man pages, made by `clap_mangen` from the same
//! command line definition as `--help`, for the packages (`scripts/package`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use clap::CommandFactory;

use crate::cli::Cli;
use crate::Failure;

/// Writes `imgbuild.1` and one `imgbuild-<command>[-<subcommand>].1` per visible command into
/// `dir`, and prints their names.
pub fn write(dir: &Path) -> Result<ExitCode, Failure> {
    let failed = |e: std::io::Error| Failure::Run(anyhow!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(failed)?;
    // Built once from the top, so that each command's page is named `imgbuild-<command>`.
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    write_pages(root, dir).map_err(failed)?;
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(failed)?
        .filter_map(|entry| Some(entry.ok()?.file_name().to_string_lossy().into_owned()))
        .filter(|name| name.starts_with("imgbuild") && name.ends_with(".1"))
        .collect();
    names.sort();
    for name in names {
        println!("{name}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The page of `command` and of each visible command below it, every footer naming the version
/// and the commit's date.
fn write_pages(command: clap::Command, dir: &Path) -> std::io::Result<()> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub.clone(), dir)?;
    }
    clap_mangen::Man::new(command)
        .date(env!("IMGBUILD_COMMIT_DATE"))
        .source(concat!("imgbuild ", env!("CARGO_PKG_VERSION")))
        .manual("imgbuild manual")
        .generate_to(dir)
        .map(drop)
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_page_for_imgbuild_and_each_visible_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        super::write(dir.path())
            .map_err(|_| "write")
            .expect("man pages");
        let page = |name: &str| std::fs::read_to_string(dir.path().join(name));
        let main = page("imgbuild.1").expect("imgbuild.1");
        let footer = concat!(
            "\"imgbuild ",
            env!("CARGO_PKG_VERSION"),
            "\" \"imgbuild manual\""
        );
        assert!(
            main.starts_with(".ie") && main.contains(".TH imgbuild 1 "),
            "{main}"
        );
        let build = page("imgbuild-build.1").expect("imgbuild-build.1");
        assert!(build.contains("\\-\\-out"), "{build}");
        assert!(
            build.contains(".TH imgbuild-build 1 ") && build.contains(footer),
            "{build}"
        );
        assert!(
            page("imgbuild-cache-prune.1").is_ok(),
            "a page per subcommand"
        );
        assert!(
            page("imgbuild-man-pages.1").is_err(),
            "the hidden command has none"
        );
    }
}
