//! The command reference in `docs/commands.md`, made from the command line's own definition
//! (clap's help of every command), so the page cannot drift from the binary: a test compares
//! the two and prints the text to paste when they differ (`IMGBUILD_BLESS_DOCS=1 cargo test -p
//! imgbuild cli_reference` writes it in).

use clap::CommandFactory;

/// Every command's help, as Markdown sections, in the order clap lists them.
pub fn reference() -> String {
    let mut out = String::new();
    let root = crate::cli::Cli::command();
    section(&mut out, root, "imgbuild");
    out
}

fn section(out: &mut String, mut command: clap::Command, path: &str) {
    let help = command.render_help().to_string();
    out.push_str(&format!(
        "### `{path}`\n\n```text\n{}\n```\n\n",
        help.trim_end()
    ));
    let subcommands: Vec<clap::Command> = command
        .get_subcommands()
        .filter(|c| c.get_name() != "help" && !c.is_hide_set())
        .cloned()
        .collect();
    for sub in subcommands {
        let name = format!("{path} {}", sub.get_name());
        section(out, sub.bin_name(name.clone()), &name);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_commands_page_is_the_binarys_own_help() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/commands.md");
        let page = std::fs::read_to_string(path).expect("docs/commands.md");
        let start = "<!-- commands: generated from crates/imgbuild/src/cli/ -->\n";
        let end = "<!-- end of commands -->";
        let listed = page
            .split_once(start)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(text, _)| text)
            .expect("docs/commands.md's markers");
        let made = super::reference();
        if std::env::var_os("IMGBUILD_BLESS_DOCS").is_some() && listed != made {
            let blessed = page.replacen(
                &format!("{start}{listed}{end}"),
                &format!("{start}{made}{end}"),
                1,
            );
            std::fs::write(path, blessed).expect("write docs/commands.md");
            return;
        }
        assert!(
            listed == made,
            "docs/commands.md's reference is out of date; put this between the markers:\n{made}"
        );
    }
}
