//! Checks the rootfs's `/etc/os-release` against the facts the plan was made with.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::Value as Json;

use crate::rootfs::RootFs;

/// `KEY=value` pairs of an os-release file (quotes removed).
pub fn parse_os_release(text: &str) -> IndexMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let (k, v) = line.split_once('=')?;
            let v = v.trim().trim_matches('"').trim_matches('\'');
            Some((k.trim().to_owned(), v.to_owned()))
        })
        .collect()
}

/// `Ok` when the rootfs is the distribution and version the plan says; otherwise what differs.
pub fn check(fs: &RootFs, facts: &IndexMap<String, Json>) -> Result<(), String> {
    let text = fs
        .read_text_opt(Path::new("/etc/os-release"))
        .map_err(|e| e.to_string())?
        .or(fs
            .read_text_opt(Path::new("/usr/lib/os-release"))
            .map_err(|e| e.to_string())?)
        .ok_or("the rootfs has no /etc/os-release; is the base an OS image?")?;
    let release = parse_os_release(&text);
    let fact = |k: &str| {
        facts
            .get(k)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (distribution, version) = (
        fact("ansible_distribution"),
        fact("ansible_distribution_version"),
    );
    let id = release.get("ID").cloned().unwrap_or_default();
    let version_id = release.get("VERSION_ID").cloned().unwrap_or_default();
    let id_matches = id.eq_ignore_ascii_case(&distribution)
        || (distribution == "RedHat" && id == "rhel")
        || release.get("NAME").is_some_and(|n| {
            n.to_ascii_lowercase()
                .starts_with(&distribution.to_ascii_lowercase())
        });
    if !id_matches || version_id != version {
        return Err(format!(
            "the base is {} {} (its /etc/os-release) but the recipe's facts say {distribution} {version}; fix build_from or facts: in the recipe",
            release.get("NAME").cloned().unwrap_or(id),
            version_id
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quoted_values() {
        let r = parse_os_release("NAME=\"Rocky Linux\"\nID=\"rocky\"\nVERSION_ID=\"9.5\"\n");
        assert_eq!(r["ID"], "rocky");
        assert_eq!(r["VERSION_ID"], "9.5");
    }

    #[test]
    fn mismatch_is_explained() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("root/etc")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("s")).expect("mkdir");
        std::fs::write(
            dir.path().join("root/etc/os-release"),
            "NAME=\"Debian GNU/Linux\"\nID=debian\nVERSION_ID=\"12\"\n",
        )
        .expect("write");
        let fs = RootFs::new(&dir.path().join("root"), &dir.path().join("s")).expect("fs");
        let mut facts = IndexMap::new();
        facts.insert("ansible_distribution".to_string(), Json::from("Debian"));
        facts.insert("ansible_distribution_version".to_string(), Json::from("12"));
        assert!(check(&fs, &facts).is_ok());
        facts.insert("ansible_distribution".to_string(), Json::from("Rocky"));
        facts.insert(
            "ansible_distribution_version".to_string(),
            Json::from("9.5"),
        );
        let err = check(&fs, &facts).expect_err("mismatch");
        assert!(
            err.contains("Debian GNU/Linux 12") && err.contains("Rocky 9.5"),
            "{err}"
        );
    }
}
