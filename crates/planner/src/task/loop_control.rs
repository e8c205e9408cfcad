//! `loop_control:`, the keys that shape a task's loop.

use std::path::Path;

use super::{located, text, wrong, TaskDef};
use crate::error::{suggest, ErrorKind, Result};
use crate::yaml::Node;

/// Reads `loop_control`'s keys into `def`.
pub(super) fn parse(def: &mut TaskDef, value: &Node, file: &Path) -> Result<()> {
    let controls = value
        .as_map()
        .ok_or_else(|| wrong(file, value, "loop_control", "a mapping"))?;
    for (ck, cv) in controls {
        match ck.name.as_str() {
            "loop_var" => def.loop_var = text(cv, "loop_var", file)?,
            "index_var" => def.index_var = Some(text(cv, "index_var", file)?),
            "label" => def.loop_label = Some(cv.to_json()),
            "extended" => {
                def.loop_extended = cv
                    .to_json()
                    .as_bool()
                    .unwrap_or_else(|| crate::template::ansible_bool_str(&cv.to_json().to_string()))
            }
            "pause" => {
                let seconds = cv.to_json();
                def.loop_pause = seconds
                    .as_f64()
                    .or_else(|| seconds.as_str().and_then(|s| s.trim().parse().ok()))
                    .filter(|s| *s > 0.0);
            }
            "extended_allitems" => {}
            other => {
                return Err(located(
                    file,
                    ck.line,
                    ErrorKind::UnknownKey {
                        context: "loop_control key",
                        key: other.into(),
                        suggestion: suggest(
                            other,
                            ["loop_var", "index_var", "label", "pause", "extended"],
                        ),
                    },
                ))
            }
        }
    }
    Ok(())
}
