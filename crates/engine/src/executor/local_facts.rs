//! `setup` at build time: the plan's facts, and the image's local facts read as Ansible's
//! `local` fact collector reads them: every `*.fact` in the fact path (`/etc/ansible/facts.d`),
//! in name order, an executable one run in the image and its output read, any other read as it
//! is; each parsed as JSON, else as INI, else kept as an error text (with a warning), under its
//! name without `.fact`.

use std::path::Path;

use serde_json::{json, Map, Value as Json};

use super::state::Executor;
use crate::modules::{ModuleError, ModuleResult};
use crate::rootfs::Kind;
use crate::target::{Cmd, Target};

/// Where Ansible looks for local facts unless `fact_path` says otherwise.
const FACT_PATH: &str = "/etc/ansible/facts.d";

impl Executor<'_> {
    /// `setup`: the facts the plan has and, unless a `filter` leaves them out, the image's
    /// local facts, which join the variables (`ansible_local`, `ansible_facts.ansible_local`).
    pub(super) fn setup(
        &mut self,
        args: &Json,
        target: &dyn Target,
    ) -> Result<ModuleResult, ModuleError> {
        let mut facts: Map<String, Json> = self
            .plan
            .facts
            .iter()
            .filter(|(k, _)| k.as_str() != "ansible_facts")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut warnings = Vec::new();
        if modules::host_only::gathers_local_facts(args) {
            let fact_path = args
                .get("fact_path")
                .and_then(Json::as_str)
                .unwrap_or(FACT_PATH);
            let local = local_facts(target, fact_path, &mut warnings)?;
            // Both `ansible_local` and, as ansible-playbook 2.14 names it,
            // ansible_facts['ansible_local'], as any module's returned facts join.
            let gathered = json!({ "ansible_local": local.clone() });
            self.merge_facts(&ModuleResult::changed(false).with("ansible_facts", gathered));
            facts.insert("ansible_local".into(), local);
        }
        let mut result = ModuleResult::changed(false).with("ansible_facts", Json::Object(facts));
        if !warnings.is_empty() {
            result.msg = Some(warnings.join("; "));
        }
        Ok(result)
    }
}

/// The local facts under `dir` in the image (none when the folder is missing).
fn local_facts(
    target: &dyn Target,
    dir: &str,
    warnings: &mut Vec<String>,
) -> Result<Json, ModuleError> {
    let fs = target.fs();
    let mut names = match fs.list(Path::new(dir)) {
        Ok(names) => names,
        Err(_) => return Ok(Json::Object(Map::new())),
    };
    names.retain(|n| n.ends_with(".fact"));
    names.sort();
    let mut local = Map::new();
    for name in names {
        let path = format!("{}/{name}", dir.trim_end_matches('/'));
        let meta = fs
            .meta_follow(Path::new(&path))
            .map_err(|e| ModuleError::new(format!("{path}: {e}")))?;
        let Some(meta) = meta.filter(|m| m.kind == Kind::File) else {
            continue;
        };
        let base = name.trim_end_matches(".fact").to_owned();
        let text = if meta.mode & 0o111 != 0 {
            let ran = target
                .run(&Cmd::new(&[path.as_str()]))
                .map_err(|e| ModuleError::new(format!("running the fact script {path}: {e}")))?;
            if ran.rc != 0 {
                let failed = format!(
                    "Failure executing fact script ({path}), rc: {}, err: {}",
                    ran.rc, ran.stderr
                );
                warnings.push(failed.clone());
                local.insert(base, Json::String(failed));
                continue;
            }
            ran.stdout
        } else {
            String::from_utf8_lossy(&fs.read(Path::new(&path)).unwrap_or_default()).into_owned()
        };
        let fact = serde_json::from_str(&text).unwrap_or_else(|_| {
            ini_fact(&text).unwrap_or_else(|| {
                let error =
                    format!("error loading facts as JSON or ini - please check content: {path}");
                warnings.push(error.clone());
                Json::String(error)
            })
        });
        local.insert(base, fact);
    }
    Ok(Json::Object(local))
}

/// An INI fact as Python's `configparser` reads it for Ansible: sections of options, option
/// names lowercased, values as text; `None` where the text is not INI (an option before any
/// section).
fn ini_fact(text: &str) -> Option<Json> {
    let mut sections: Map<String, Json> = Map::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(section) = trimmed
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            sections
                .entry(section.to_owned())
                .or_insert_with(|| Json::Object(Map::new()));
            current = Some(section.to_owned());
            continue;
        }
        let section = current.as_ref()?;
        let split = trimmed.find(['=', ':']);
        let (key, value) = match split {
            Some(at) => (&trimmed[..at], trimmed[at + 1..].trim()),
            None => (trimmed, ""),
        };
        if let Some(Json::Object(options)) = sections.get_mut(section) {
            options.insert(key.trim().to_lowercase(), Json::String(value.to_owned()));
        }
    }
    Some(Json::Object(sections))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ini_facts_read_as_configparser_reads_them() {
        let text = "# site\n[Cluster]\nName = hpc1\nNodes: 4\n\n[empty]\n";
        assert_eq!(
            ini_fact(text),
            Some(json!({"Cluster": {"name": "hpc1", "nodes": "4"}, "empty": {}}))
        );
        assert_eq!(
            ini_fact("key = value\n"),
            None,
            "an option before any section"
        );
    }

    #[test]
    fn static_fact_files_are_read_as_json_then_ini() {
        let dir = tempfile::tempdir().expect("tempdir");
        let facts = dir.path().join("root/etc/ansible/facts.d");
        std::fs::create_dir_all(&facts).expect("mkdir");
        std::fs::write(facts.join("b.fact"), "[s]\nk=v\n").expect("write");
        std::fs::write(facts.join("a.fact"), "{\"n\": 1}").expect("write");
        std::fs::write(facts.join("bad.fact"), "not ini").expect("write");
        std::fs::write(facts.join("skipped.txt"), "{}").expect("write");
        std::fs::create_dir_all(dir.path().join("scratch")).expect("mkdir");
        let target =
            crate::target::DirTarget::new(&dir.path().join("root"), &dir.path().join("scratch"))
                .expect("target");
        let mut warnings = Vec::new();
        let local = local_facts(&target, FACT_PATH, &mut warnings).expect("facts");
        assert_eq!(local["a"], json!({"n": 1}));
        assert_eq!(local["b"], json!({"s": {"k": "v"}}));
        assert!(local["bad"]
            .as_str()
            .is_some_and(|e| e.contains("bad.fact")));
        assert!(local.get("skipped").is_none());
        assert_eq!(warnings.len(), 1);
        let none = local_facts(&target, "/etc/nowhere", &mut warnings).expect("none");
        assert_eq!(none, json!({}));
    }
}
