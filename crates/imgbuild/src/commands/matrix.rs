//! `imgbuild matrix`: the version matrix as a table, Markdown, JSON or CSV.

use std::process::ExitCode;

use anyhow::anyhow;
use planner::matrix::MatrixRow;
use planner::{PlanOptions, Project};

use crate::cli::MatrixFormat;
use crate::Failure;

const HEADERS: [&str; 6] = ["image", "os", "os_version", "kernel", "mofed", "nvidia"];

fn cells(row: &MatrixRow) -> [String; 6] {
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    [
        row.image.clone(),
        row.os.clone(),
        row.os_version.clone(),
        opt(&row.kernel),
        opt(&row.mofed),
        opt(&row.nvidia),
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
    let table: Vec<[String; 6]> = rows.iter().map(cells).collect();
    Ok(match format {
        MatrixFormat::Json => serde_json::to_string_pretty(rows)? + "\n",
        MatrixFormat::Csv => {
            let mut out = HEADERS.join(",") + "\n";
            for row in rows {
                let opt = |v: &Option<String>| v.as_deref().map(csv_field).unwrap_or_default();
                out += &format!(
                    "{},{},{},{},{},{}\n",
                    csv_field(&row.image),
                    csv_field(&row.os),
                    csv_field(&row.os_version),
                    opt(&row.kernel),
                    opt(&row.mofed),
                    opt(&row.nvidia)
                );
            }
            out
        }
        MatrixFormat::Markdown => {
            let mut out = format!("| {} |\n|{}|\n", HEADERS.join(" | "), ["---"; 6].join("|"));
            for row in &table {
                out += &format!("| {} |\n", row.join(" | "));
            }
            out
        }
        MatrixFormat::Table => {
            let mut widths = HEADERS.map(str::len);
            for row in &table {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.len());
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
            for row in &table {
                out += &line(row);
            }
            out
        }
    })
}

/// Prints the matrix.
pub fn run(project: &Project, format: MatrixFormat) -> Result<ExitCode, Failure> {
    let rows = planner::matrix::matrix(project, &PlanOptions::default())?;
    let text =
        render(&rows, format).map_err(|e| Failure::Run(anyhow!("cannot write JSON: {e}")))?;
    print!("{text}");
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
            nvidia: Some("580,1".into()),
        }]
    }

    #[test]
    fn formats() {
        let md = render(&rows(), MatrixFormat::Markdown).expect("md");
        assert!(
            md.contains("| a | Rocky | 9.5 | 5.14 | - | 580,1 |"),
            "{md}"
        );
        let csv = render(&rows(), MatrixFormat::Csv).expect("csv");
        assert!(csv.ends_with("a,Rocky,9.5,5.14,,\"580,1\"\n"), "{csv}");
        let json: serde_json::Value =
            serde_json::from_str(&render(&rows(), MatrixFormat::Json).expect("json"))
                .expect("valid");
        assert_eq!(json[0]["mofed"], serde_json::Value::Null);
        let table = render(&rows(), MatrixFormat::Table).expect("table");
        assert!(
            table.starts_with("image  os     os_version  kernel"),
            "{table}"
        );
    }
}
