//! A role's own module (`library/<name>.py`, `.sh`, or no extension): run in the image as
//! Ansible runs it on its target. Its parameters are the module's own business, so they are
//! kept as written, under the module's name; the build hands them to the module.

use serde_json::{Map, Value as Json};

use super::spec::{Downloads, FreeForm, ModuleSpec, PlanTime};

/// The planned task's module name for a role's own module (no task can name it).
pub const MODULE: &str = "role_module";

/// The file names a role's own module `name` may have in the role's `library/`, in the order
/// Ansible's module finder takes them.
pub fn file_names(name: &str) -> [String; 3] {
    [format!("{name}.py"), format!("{name}.sh"), name.to_owned()]
}

/// A role module's arguments as the plan keeps them: its name and its own parameters.
pub fn wrap(name: &str, args: Map<String, Json>) -> Map<String, Json> {
    let mut wrapped = Map::new();
    wrapped.insert("module".into(), Json::from(name));
    wrapped.insert("args".into(), Json::Object(args));
    wrapped
}

fn normalize(args: Json) -> Result<Json, String> {
    match &args {
        Json::Object(map) if map.get("module").is_some_and(Json::is_string) => Ok(args),
        _ => Err("a role module's task needs its module name".into()),
    }
}

/// A role's own module.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: MODULE,
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize,
    plan_time: PlanTime::RoleModule,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
