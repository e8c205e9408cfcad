//! `imgbuild matrix`: the version matrix as a table, Markdown, JSON or CSV.

use std::process::ExitCode;

use anyhow::anyhow;
use planner::edit;
use planner::matrix::MatrixRow;
use planner::{PlanOptions, Project};
use serde::Serialize;

use crate::cli::{MatrixFormat, MatrixSetArgs};
use crate::Failure;

/// The matrix's columns.
const COLUMNS: usize = 8;

const HEADERS: [&str; COLUMNS] = [
    "image",
    "os",
    "os_version",
    "kernel",
    "mofed",
    "doca",
    "nvidia",
    "nvidia_flavor",
];

fn cells(row: &MatrixRow) -> [String; COLUMNS] {
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    [
        row.image.clone(),
        row.os.clone(),
        row.os_version.clone(),
        opt(&row.kernel),
        opt(&row.mofed),
        opt(&row.doca),
        opt(&row.nvidia),
        opt(&row.nvidia_flavor),
    ]
}

fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

/// Renders the matrix in `format`.
pub fn render(rows: &[MatrixRow], format: MatrixFormat) -> Result<String, serde_json::Error> {
    if format == MatrixFormat::Json {
        return Ok(serde_json::to_string_pretty(rows)? + "\n");
    }
    let table: Vec<[String; COLUMNS]> = rows.iter().map(cells).collect();
    Ok(render_cells(&table, format))
}

/// Renders rows of cells as a table, Markdown or CSV.
fn render_cells(table: &[[String; COLUMNS]], format: MatrixFormat) -> String {
    match format {
        MatrixFormat::Csv | MatrixFormat::Json => {
            let mut out = HEADERS.join(",") + "\n";
            for row in table {
                let fields: Vec<String> = row
                    .iter()
                    .map(|c| {
                        if c == "-" {
                            String::new()
                        } else {
                            csv_field(c)
                        }
                    })
                    .collect();
                out += &(fields.join(",") + "\n");
            }
            out
        }
        MatrixFormat::Markdown => {
            let mut out = format!(
                "| {} |\n|{}|\n",
                HEADERS.join(" | "),
                ["---"; COLUMNS].join("|")
            );
            for row in table {
                out += &format!("| {} |\n", row.join(" | "));
            }
            out
        }
        MatrixFormat::Table => {
            let mut widths = HEADERS.map(str::len);
            for row in table {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            let line = |cells: &[String]| {
                cells
                    .iter()
                    .zip(widths)
                    .map(|(c, w)| format!("{c:<w$}"))
                    .collect::<Vec<_>>()
                    .join("  ")
                    .trim_end()
                    .to_owned()
                    + "\n"
            };
            let mut out = line(&HEADERS.map(String::from));
            for row in table {
                out += &line(row);
            }
            out
        }
    }
}

/// How one image's row differs between a revision and the working tree.
#[derive(Debug, Serialize)]
struct RowDiff<'a> {
    image: &'a str,
    /// `added`, `removed`, `changed` or `same`.
    change: &'static str,
    /// The columns whose values differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    changed: Vec<&'static str>,
    before: Option<&'a MatrixRow>,
    after: Option<&'a MatrixRow>,
}

fn diff_rows<'a>(before: &'a [MatrixRow], after: &'a [MatrixRow]) -> Vec<RowDiff<'a>> {
    let mut images: Vec<&str> = before
        .iter()
        .chain(after)
        .map(|r| r.image.as_str())
        .collect();
    images.sort_unstable();
    images.dedup();
    images
        .into_iter()
        .map(|image| {
            let b = before.iter().find(|r| r.image == image);
            let a = after.iter().find(|r| r.image == image);
            let changed: Vec<&'static str> = match (b, a) {
                (Some(b), Some(a)) => {
                    let (cb, ca) = (cells(b), cells(a));
                    HEADERS
                        .iter()
                        .zip(cb.iter().zip(&ca))
                        .filter(|(_, (x, y))| x != y)
                        .map(|(h, _)| *h)
                        .collect()
                }
                _ => Vec::new(),
            };
            let change = match (b, a) {
                (None, _) => "added",
                (_, None) => "removed",
                _ if changed.is_empty() => "same",
                _ => "changed",
            };
            RowDiff {
                image,
                change,
                changed,
                before: b,
                after: a,
            }
        })
        .collect()
}

/// The cells of a diff: changed values as `old → new` (bold new value in Markdown).
fn diff_cells(diff: &RowDiff, markdown: bool) -> [String; COLUMNS] {
    let mark = |old: &str, new: &str| {
        if markdown {
            format!("~~{old}~~ **{new}**")
        } else {
            format!("{old} → {new}")
        }
    };
    match (diff.before, diff.after) {
        (Some(b), Some(a)) => {
            let (cb, ca) = (cells(b), cells(a));
            std::array::from_fn(|i| {
                if cb[i] == ca[i] {
                    ca[i].clone()
                } else {
                    mark(&cb[i], &ca[i])
                }
            })
        }
        (None, Some(a)) => {
            let mut c = cells(a);
            c[0] = if markdown {
                format!("**{}** (new)", c[0])
            } else {
                format!("{} (new)", c[0])
            };
            c
        }
        (Some(b), None) => {
            let mut c = cells(b);
            c[0] = if markdown {
                format!("~~{}~~ (removed)", c[0])
            } else {
                format!("{} (removed)", c[0])
            };
            c
        }
        (None, None) => std::array::from_fn(|_| String::new()),
    }
}

/// Renders the difference between the matrix at a revision and now.
fn render_diff(
    before: &[MatrixRow],
    after: &[MatrixRow],
    rev: &str,
    format: MatrixFormat,
) -> Result<String, serde_json::Error> {
    let diffs = diff_rows(before, after);
    if format == MatrixFormat::Json {
        return Ok(serde_json::to_string_pretty(&diffs)? + "\n");
    }
    let markdown = format == MatrixFormat::Markdown;
    let table: Vec<[String; COLUMNS]> = diffs.iter().map(|d| diff_cells(d, markdown)).collect();
    let mut out = render_cells(&table, format);
    if format != MatrixFormat::Csv {
        let cells: usize = diffs.iter().map(|d| d.changed.len()).sum();
        let touched = diffs.iter().filter(|d| d.change != "same").count();
        out += &format!(
            "\n{cells} cells changed, {touched} of {} images differ from {rev}\n",
            diffs.len()
        );
    }
    Ok(out)
}

/// Prints the matrix, or with `diff` its difference from a git revision.
pub fn run(
    project: &Project,
    format: MatrixFormat,
    diff: Option<&str>,
) -> Result<ExitCode, Failure> {
    let rows = planner::matrix::matrix(project, &PlanOptions::default())?;
    let text = match diff {
        None => render(&rows, format),
        Some(rev) => {
            let dir = tempfile::tempdir().map_err(|e| Failure::Run(anyhow!(e)))?;
            crate::git::export_tree(&project.root, rev, dir.path())?;
            let then = Project::at(dir.path())?;
            let before = planner::matrix::matrix(&then, &PlanOptions::default())
                .map_err(|e| Failure::Input(anyhow!("the matrix at {rev} does not read: {e}")))?;
            render_diff(&before, &rows, rev, format)
        }
    }
    .map_err(|e| Failure::Run(anyhow!("cannot write JSON: {e}")))?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// Splits `VAR=VALUE`.
fn assignment(arg: &str) -> Result<(&str, &str), Failure> {
    match arg.split_once('=') {
        Some((var, value)) if !var.is_empty() && !var.contains(char::is_whitespace) => {
            Ok((var, value))
        }
        _ => Err(Failure::Input(anyhow!(
            "'{arg}' is not VAR=VALUE (for example mofed_version=24.10-2.1.8.0)"
        ))),
    }
}

/// `matrix set`: edits recipes in place; every edit is checked before any file is written.
pub fn set(project: &Project, args: &MatrixSetArgs) -> Result<ExitCode, Failure> {
    let (images, assignments) = if args.all_images {
        (project.images()?, &args.args[..])
    } else {
        let image = args.args[0].clone();
        (vec![image], &args.args[1..])
    };
    if assignments.is_empty() {
        return Err(Failure::Input(anyhow!(
            "nothing to set: give VAR=VALUE after the image"
        )));
    }
    let assignments = assignments
        .iter()
        .map(|a| assignment(a))
        .collect::<Result<Vec<_>, _>>()?;
    let filters = args
        .filters
        .iter()
        .map(|a| assignment(a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut edits = Vec::new();
    for image in &images {
        let rel = project.recipe_path(image)?;
        let path = project.root.join(&rel);
        let original = std::fs::read_to_string(&path)
            .map_err(|e| Failure::Input(anyhow!("{}: {e}", rel.display())))?;
        let mut wanted = true;
        for (var, value) in &filters {
            let current = edit::recipe_var_value(&original, &rel, var)?;
            wanted &= current.is_some_and(|(v, _)| v == *value);
        }
        if !wanted {
            continue;
        }
        let mut text = original.clone();
        let mut changes = Vec::new();
        for (var, value) in &assignments {
            let current = edit::recipe_var_value(&text, &rel, var)?;
            if args.all_images && current.is_none() {
                continue;
            }
            text = edit::set_recipe_var(&text, &rel, var, value)?;
            if let Some((old, _)) = current.filter(|(old, _)| old != value) {
                changes.push(format!("{}: {var} {old} → {value}", rel.display()));
            }
        }
        edits.push((path, text != original, text, changes));
    }
    if args.all_images && edits.iter().all(|(_, _, _, changes)| changes.is_empty()) {
        let names: Vec<&str> = assignments.iter().map(|(v, _)| *v).collect();
        eprintln!(
            "no recipe changed (no recipe matched, or they already hold {})",
            names.join(", ")
        );
    }
    for (path, changed, text, changes) in edits {
        if changed {
            super::output::write_atomically(&path, text.as_bytes())?;
        }
        for line in changes {
            println!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<MatrixRow> {
        vec![MatrixRow {
            image: "a".into(),
            os: "Rocky".into(),
            os_version: "9.5".into(),
            kernel: Some("5.14".into()),
            mofed: None,
            doca: Some("3.2.1".into()),
            nvidia: Some("580,1".into()),
            nvidia_flavor: Some("open".into()),
        }]
    }

    #[test]
    fn formats() {
        let md = render(&rows(), MatrixFormat::Markdown).expect("md");
        assert!(
            md.contains("| a | Rocky | 9.5 | 5.14 | - | 3.2.1 | 580,1 |"),
            "{md}"
        );
        let csv = render(&rows(), MatrixFormat::Csv).expect("csv");
        assert!(
            csv.ends_with("a,Rocky,9.5,5.14,,3.2.1,\"580,1\",open\n"),
            "{csv}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&render(&rows(), MatrixFormat::Json).expect("json"))
                .expect("valid");
        assert_eq!(json[0]["mofed"], serde_json::Value::Null);
        assert_eq!(json[0]["doca"], "3.2.1");
        let table = render(&rows(), MatrixFormat::Table).expect("table");
        assert!(table.contains("580,1"), "{table}");
        assert!(
            table.starts_with("image  os     os_version  kernel"),
            "{table}"
        );
    }

    #[test]
    fn diff_marks_changed_cells_and_new_images() {
        let before = rows();
        let mut after = rows();
        after[0].kernel = Some("5.15".into());
        after.push(MatrixRow {
            image: "b".into(),
            ..rows()[0].clone()
        });
        let md = render_diff(&before, &after, "main", MatrixFormat::Markdown).expect("md");
        assert!(
            md.contains("| a | Rocky | 9.5 | ~~5.14~~ **5.15** | - | 3.2.1 | 580,1 |"),
            "{md}"
        );
        assert!(md.contains("| **b** (new) |"), "{md}");
        assert!(
            md.contains("1 cells changed, 2 of 2 images differ from main"),
            "{md}"
        );
        let json: serde_json::Value = serde_json::from_str(
            &render_diff(&before, &after, "main", MatrixFormat::Json).expect("json"),
        )
        .expect("valid");
        assert_eq!(json[0]["changed"], serde_json::json!(["kernel"]));
        assert_eq!(json[1]["change"], "added");
        let same = render_diff(&before, &before, "main", MatrixFormat::Table).expect("table");
        assert!(same.contains("0 cells changed, 0 of 1 images"), "{same}");
    }

    #[test]
    fn assignments_need_a_name_and_an_equals_sign() {
        assert_eq!(assignment("a=b=c").ok(), Some(("a", "b=c")));
        assert!(assignment("=x").is_err());
        assert!(assignment("novalue").is_err());
    }
}
