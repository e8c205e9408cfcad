//! The plan as shown: every clear text that vault decrypted replaced by its marker.

use ansible::vault::{redact, redact_json};
use serde_json::Value as Json;

use crate::plan::{Plan, PlannedTask, Step};

fn redact_all<'a>(values: impl IntoIterator<Item = &'a mut Json>) {
    values.into_iter().for_each(redact_json);
}

fn redact_task(task: &mut PlannedTask) {
    task.name = redact(&task.name);
    redact_json(&mut task.args);
    for text in task
        .when
        .iter_mut()
        .chain(task.changed_when.iter_mut())
        .chain(task.failed_when.iter_mut())
        .chain(task.rendered.iter_mut())
        .chain(task.until.iter_mut().map(|u| &mut u.until))
        .chain(task.notify.iter_mut())
        .chain(task.listen.iter_mut())
    {
        *text = redact(text);
    }
    if let Some(item) = &mut task.item {
        redact_json(&mut item.value);
        redact_all(item.extended.iter_mut());
        if let Some(label) = &mut item.label {
            *label = redact(label);
        }
    }
    redact_all(task.loop_over.iter_mut());
    redact_all(task.ignore_errors.iter_mut());
    redact_all(task.environment.values_mut());
    redact_all(task.context.values_mut());
}

fn redact_step(step: &mut Step) {
    match step {
        Step::Task(task) => redact_task(task),
        Step::Block(block) => {
            block.name = redact(&block.name);
            if let Some(when) = &mut block.when {
                *when = redact(when);
            }
            for inner in block
                .block
                .iter_mut()
                .chain(block.rescue.iter_mut())
                .chain(block.always.iter_mut())
            {
                redact_step(inner);
            }
        }
    }
}

/// The plan with every registered clear text replaced by its marker, for showing it.
pub fn redact_plan(plan: &Plan) -> Plan {
    let mut plan = plan.clone();
    redact_all(plan.facts.values_mut());
    redact_all(plan.vars.values_mut());
    plan.tasks.iter_mut().for_each(redact_step);
    plan.handlers.iter_mut().for_each(redact_step);
    for warning in &mut plan.warnings {
        warning.message = redact(&warning.message);
    }
    plan
}
