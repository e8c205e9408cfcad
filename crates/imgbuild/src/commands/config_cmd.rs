//! `imgbuild config`: each setting in force and where it comes from.

use std::path::Path;
use std::process::ExitCode;

use crate::settings::{Setting, Settings, Source};
use crate::Failure;

/// A size as the files take it: `200G`, `512M`, or bytes.
fn size_text(bytes: u64) -> String {
    match bytes {
        0 => "0".to_owned(),
        b if b % (1 << 40) == 0 => format!("{}T", b >> 40),
        b if b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// Each setting as `(name, value, from)`; `None` for a setting with no value.
fn rows(settings: &Settings) -> Vec<(String, Option<String>, &Source)> {
    let cache_max = match settings.cache_max.value {
        Some(bytes) => size_text(bytes),
        None => format!(
            "about {:.1}G (a tenth of the cache's filesystem, at least 4G)",
            image::cache::default_limit(&settings.cache_dir.value) as f64 / f64::from(1u32 << 30)
        ),
    };
    let mut rows = vec![
        row(
            "cache_dir",
            Some(settings.cache_dir.value.display().to_string()),
            &settings.cache_dir,
        ),
        row("cache_max", Some(cache_max), &settings.cache_max),
        row(
            "cache_from",
            settings.cache_from.value.clone(),
            &settings.cache_from,
        ),
        row(
            "cache_to",
            settings.cache_to.value.clone(),
            &settings.cache_to,
        ),
        row(
            "warewulf",
            settings.warewulf.value.map(|v| v.as_str().to_owned()),
            &settings.warewulf,
        ),
    ];
    for (id, secret) in &settings.secrets {
        let value = Some(secret.value.display().to_string());
        rows.push(row(&format!("secrets.{id}"), value, secret));
    }
    rows
}

fn row<'a, T>(
    name: &str,
    value: Option<String>,
    setting: &'a Setting<T>,
) -> (String, Option<String>, &'a Source) {
    (name.to_owned(), value, &setting.from)
}

/// Prints the files read and the settings in force for the project at `root`, if any.
pub fn run(root: Option<&Path>, json: bool) -> Result<ExitCode, Failure> {
    let settings = crate::settings::in_force(root, &crate::settings::Flags::default())?;
    let files: Vec<(String, bool)> = crate::settings::site_sources(&crate::settings::process_env)
        .into_iter()
        .filter_map(|(source, _)| source.path().map(Path::to_path_buf))
        .chain(root.map(|root| root.join("mirror.toml")))
        .map(|path| (path.display().to_string(), path.is_file()))
        .collect();
    let rows = rows(&settings);
    if json {
        let files: Vec<serde_json::Value> = files
            .iter()
            .map(|(path, read)| serde_json::json!({"path": path, "read": read}))
            .collect();
        let settings: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(name, value, from)| {
                (
                    name.clone(),
                    serde_json::json!({"value": value, "from": from.to_string()}),
                )
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({"files": files, "settings": settings})
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("files, each over the one before:");
    for (path, read) in &files {
        println!("  {path}{}", if *read { "" } else { " (absent)" });
    }
    let width = rows.iter().map(|(name, ..)| name.len()).max().unwrap_or(0);
    let text = |value: &Option<String>| value.clone().unwrap_or_else(|| "(none)".to_owned());
    let value_width = rows
        .iter()
        .map(|(_, v, _)| text(v).len())
        .max()
        .unwrap_or(0);
    println!();
    for (name, value, from) in &rows {
        println!("{name:width$}  {:value_width$}  {from}", text(value));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_the_files_take_them() {
        assert_eq!(size_text(200 << 30), "200G");
        assert_eq!(size_text(3 << 40), "3T");
        assert_eq!(size_text(1536 << 20), "1536M");
        assert_eq!(size_text(1000), "1000");
        for bytes in [200 << 30, 1536 << 20, 4097] {
            assert_eq!(crate::cli::parse_size(&size_text(bytes)), Ok(bytes));
        }
    }
}
