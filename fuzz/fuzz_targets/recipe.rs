//! The recipe and role parser with templating: the input is split at the first NUL into a
//! recipe and the role's tasks file; planning must end in a plan or an error, never a panic
//! or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (recipe, tasks) = text.split_once('\0').unwrap_or((text, "- debug: msg=hi\n"));
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let root = dir.path();
    let written = std::fs::create_dir_all(root.join("images"))
        .and_then(|()| std::fs::create_dir_all(root.join("roles/r/tasks")))
        .and_then(|()| std::fs::write(root.join("images/fuzz.yml"), recipe))
        .and_then(|()| std::fs::write(root.join("roles/r/tasks/main.yml"), tasks));
    if written.is_err() {
        return;
    }
    if let Ok(project) = planner::Project::at(root) {
        let _ = planner::plan(&project, "fuzz", &planner::PlanOptions::default());
    }
});
