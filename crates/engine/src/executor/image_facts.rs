//! Facts that Ansible's `setup` reads from the host's Python and userspace, which an image
//! build knows only from the image itself ([`planner::facts::IMAGE_FACTS`]): gathered once,
//! with the image's own interpreter, when the first role runs (Ansible gathers them when the
//! play starts).

use std::sync::Arc;

use planner::vars::VarValue;
use serde_json::{Map, Value as Json};

use crate::target::{Cmd, Target};

/// Ansible's python, platform and selinux fact code, reduced to these facts: prints one JSON
/// object. SELinux is as the image's interpreter sees it in the sandbox (the building machine's
/// kernel), as under Ansible's chroot connection.
const SCRIPT: &str = r#"
import json, platform, sys
try:
    import ssl
    has_sslcontext = hasattr(ssl, "SSLContext")
except ImportError:
    has_sslcontext = False
try:
    kind = sys.implementation.name
except AttributeError:
    kind = None
bits = platform.architecture()[0].replace("bit", "")
machine = platform.machine()
arch = machine
if machine == "x86_64" and bits == "32":
    arch = "i386"
try:
    import selinux
    selinux_present = True
    status = "enabled" if selinux.is_selinux_enabled() == 1 else "disabled"
except ImportError:
    selinux_present = False
    status = "Missing selinux Python library"
print(json.dumps({
    "selinux": {"status": status},
    "selinux_python_present": selinux_present,
    "python": {
        "version": {"major": sys.version_info[0], "minor": sys.version_info[1],
                    "micro": sys.version_info[2], "releaselevel": sys.version_info[3],
                    "serial": sys.version_info[4]},
        "version_info": list(sys.version_info),
        "executable": sys.executable,
        "has_sslcontext": has_sslcontext,
        "type": kind,
    },
    "python_version": platform.python_version(),
    "userspace_bits": bits,
    "userspace_architecture": arch,
}))
"#;

/// The facts, without `ansible_`, from the image's interpreter (`interpreter` when the plan
/// names one, as `ansible_python_interpreter` does); none when the image has no Python, as a
/// host Ansible cannot run modules on has none.
pub(super) fn gather(target: &dyn Target, interpreter: Option<&str>) -> Map<String, Json> {
    let candidates: Vec<&str> = match interpreter {
        Some(one) => vec![one],
        None => crate::modules::required::INTERPRETERS.to_vec(),
    };
    let script = candidates
        .iter()
        .map(|p| format!("[ -x {p} ] && exec {p} -c \"$0\"; "))
        .collect::<String>()
        + "exit 127";
    let cmd = Cmd::new(&["/bin/sh", "-c", &script, SCRIPT]);
    let Ok(out) = target.run(&cmd) else {
        return Map::new();
    };
    if out.rc != 0 {
        return Map::new();
    }
    match serde_json::from_str(out.stdout.trim()) {
        Ok(Json::Object(facts)) => facts,
        _ => Map::new(),
    }
}

impl super::state::Executor<'_> {
    /// Gathers the image's facts once, into the facts every task sees.
    pub(super) fn gather_image_facts(&mut self, target: &dyn Target) {
        if std::mem::replace(&mut self.image_facts_gathered, true) {
            return;
        }
        let interpreter = self
            .plan
            .vars
            .get("ansible_python_interpreter")
            .and_then(Json::as_str);
        let gathered = gather(target, interpreter);
        let base = Arc::make_mut(&mut self.base);
        for (name, value) in &gathered {
            base.insert(format!("ansible_{name}"), VarValue::Raw(value.clone()));
        }
        if let Some(VarValue::Raw(Json::Object(facts))) = base.get_mut("ansible_facts") {
            facts.extend(gathered);
        }
    }
}
