//! `bootstrap: dnf`: a base made by the building machine's dnf with `--installroot`, from the
//! repositories the recipe names (`dnf_repos`) and the packages it lists
//! (`bootstrap_include`), as mkosi makes Rocky on a Debian host. dnf reads only the build's
//! own configuration (never the host's repositories); the rpm database goes in the image's
//! `/var/lib/rpm` (Debian's rpm macros would put it in the building user's home); dnf's
//! package cache and logs stay out of the image.

use std::path::Path;
use std::process::Command;

use serde_json::Value as Json;

/// One repository of `dnf_repos`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnfRepo {
    /// Its id (`baseos`).
    pub name: String,
    /// Where it is.
    pub baseurl: String,
    /// Its signing key (a URL or a path on the building machine); without one, packages are
    /// taken unsigned only when the recipe says `gpgcheck: false`.
    pub gpgkey: Option<String>,
    /// Whether packages must be signed.
    pub gpgcheck: bool,
}

/// Reads `dnf_repos`: a list of `{name, baseurl, gpgkey, gpgcheck}`.
pub fn repos_from_vars(value: Option<&Json>) -> Result<Vec<DnfRepo>, String> {
    let hint =
        "dnf_repos is a list of {name, baseurl, gpgkey} (gpgcheck: false for unsigned packages)";
    let Some(Json::Array(items)) = value else {
        return Err(format!(
            "bootstrap: dnf needs the repositories to install from: {hint}"
        ));
    };
    let mut repos = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let text = |k: &str| item.get(k).and_then(Json::as_str).map(str::to_owned);
        let (Some(name), Some(baseurl)) = (text("name"), text("baseurl")) else {
            return Err(format!("dnf_repos[{i}] lacks name or baseurl: {hint}"));
        };
        let gpgkey = text("gpgkey");
        let gpgcheck = item.get("gpgcheck").and_then(Json::as_bool).unwrap_or(true);
        if gpgcheck && gpgkey.is_none() {
            return Err(format!(
                "dnf_repos[{i}] ({name}) names no gpgkey: give the repository's key, or gpgcheck: false to take its packages unsigned"
            ));
        }
        let valid = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
        };
        if !valid(&name) {
            return Err(format!(
                "dnf_repos[{i}]: '{name}' is not a repository id (letters, digits, - _ . :)"
            ));
        }
        repos.push(DnfRepo {
            name,
            baseurl,
            gpgkey,
            gpgcheck,
        });
    }
    Ok(repos)
}

/// What names the base: the release, the repositories (without passwords in their URLs)
/// and the packages (the base's cache key is a digest of it).
pub fn identity(releasever: &str, repos: &[DnfRepo], include: &[String]) -> String {
    let repos: Vec<String> = repos
        .iter()
        .map(|r| {
            mirror::redact_credentials(&format!(
                "{}={}|{}|{}",
                r.name,
                r.baseurl,
                r.gpgkey.as_deref().unwrap_or(""),
                r.gpgcheck
            ))
        })
        .collect();
    format!(
        "dnf\0{releasever}\0{}\0{}\0nodnfcache",
        repos.join(","),
        include.join(",")
    )
}

/// Refuses what this machine's rpm cannot make: EL 8 and older keep their rpm database in
/// Berkeley DB, which rpm 4.18 writes no more.
pub fn check_release(releasever: &str) -> Result<(), String> {
    let major: u32 = releasever
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| format!("build_from '{releasever}' is not a release (bootstrap: dnf takes the release, such as \"9.5\")"))?;
    if major < 9 {
        return Err(format!(
            "bootstrap: dnf makes EL {major} bases with this machine's rpm, whose database (sqlite) EL {major}'s rpm cannot read; build EL {major} from a registry image (bootstrap: docker)"
        ));
    }
    Ok(())
}

/// Installs `include` from `repos` into `root` (created), keeping downloaded packages in
/// `packages` for the next base.
pub fn install(
    root: &Path,
    releasever: &str,
    repos: &[DnfRepo],
    include: &[String],
    packages: &Path,
) -> Result<(), String> {
    let failed = |what: &str, e: std::io::Error| format!("{what}: {e}");
    std::fs::create_dir_all(root).map_err(|e| failed("creating the base", e))?;
    std::fs::create_dir_all(packages).map_err(|e| failed("creating the package cache", e))?;
    let conf = tempfile::tempdir().map_err(|e| failed("dnf's configuration", e))?;
    let repos_d = conf.path().join("repos.d");
    std::fs::create_dir_all(&repos_d).map_err(|e| failed("dnf's configuration", e))?;
    std::fs::write(
        conf.path().join(".rpmmacros"),
        "%_dbpath /var/lib/rpm\n%_db_backend sqlite\n",
    )
    .map_err(|e| failed("rpm's macros", e))?;
    std::fs::write(
        conf.path().join("dnf.conf"),
        "[main]\ngpgcheck=1\ninstallonly_limit=3\ninstall_weak_deps=False\nbest=True\nskip_if_unavailable=False\nkeepcache=True\n",
    )
    .map_err(|e| failed("dnf's configuration", e))?;
    let mut text = String::new();
    for r in repos {
        text.push_str(&format!(
            "[{}]\nname={0}\nbaseurl={}\ngpgcheck={}\n",
            r.name,
            r.baseurl,
            u8::from(r.gpgcheck)
        ));
        if let Some(key) = &r.gpgkey {
            text.push_str(&format!("gpgkey={key}\n"));
        }
        text.push('\n');
    }
    std::fs::write(repos_d.join("imgbuild.repo"), text)
        .map_err(|e| failed("dnf's repositories", e))?;
    let output = Command::new("dnf")
        .env("HOME", conf.path())
        .env("LC_ALL", "C.UTF-8")
        .arg(format!("--installroot={}", root.display()))
        .arg(format!(
            "--config={}",
            conf.path().join("dnf.conf").display()
        ))
        .arg(format!("--setopt=reposdir={}", repos_d.display()))
        .arg(format!("--setopt=cachedir={}", packages.display()))
        .arg(format!("--releasever={releasever}"))
        .args(["--assumeyes", "--quiet", "install"])
        .args(include)
        .output()
        .map_err(|e| format!("cannot run dnf ({e}); install it (apt-get install dnf)"))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = said.lines().collect();
        return Err(mirror::redact_credentials(&format!(
            "dnf --installroot failed installing {}:\n{}",
            include.join(" "),
            lines[lines.len().saturating_sub(12)..].join("\n")
        )));
    }
    for leftover in [
        "var/cache/dnf",
        "var/log/dnf.log",
        "var/log/dnf.librepo.log",
        "var/log/dnf.rpm.log",
        "var/log/hawkey.log",
    ] {
        let path = root.join(leftover);
        let _ = std::fs::remove_dir_all(&path);
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repositories_need_a_key_or_a_plain_no() {
        let signed =
            json!([{"name": "baseos", "baseurl": "http://m/baseos/", "gpgkey": "http://m/KEY"}]);
        let repos = repos_from_vars(Some(&signed)).expect("valid");
        assert!(repos[0].gpgcheck);
        let unsigned = json!([{"name": "local", "baseurl": "http://m/x/"}]);
        let err = repos_from_vars(Some(&unsigned)).expect_err("no key");
        assert!(err.contains("gpgcheck: false"), "{err}");
        let plain = json!([{"name": "local", "baseurl": "http://m/x/", "gpgcheck": false}]);
        assert!(!repos_from_vars(Some(&plain)).expect("valid")[0].gpgcheck);
        assert!(repos_from_vars(None).is_err());
        let bad = json!([{"name": "a b", "baseurl": "http://m/", "gpgcheck": false}]);
        assert!(repos_from_vars(Some(&bad)).is_err());
    }

    #[test]
    fn credentials_in_urls_stay_out_of_keys_and_messages() {
        let repo = |url: &str| DnfRepo {
            name: "el".into(),
            baseurl: url.into(),
            gpgkey: None,
            gpgcheck: false,
        };
        let one = identity("9.5", &[repo("https://a:one@m/el/")], &[]);
        let two = identity("9.5", &[repo("https://a:two@m/el/")], &[]);
        assert_eq!(one, two, "a new password is the same base");
        assert!(!one.contains("one@"), "{one}");
    }

    #[test]
    fn el8_is_refused_before_any_work() {
        assert!(check_release("9.5").is_ok());
        let err = check_release("8.10").expect_err("bdb");
        assert!(err.contains("bootstrap: docker"), "{err}");
        assert!(check_release("rocky").is_err());
    }
}
