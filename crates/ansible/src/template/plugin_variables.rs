//! The variables a Python lookup plugin is given, as Ansible gives its `run(terms, variables)`:
//! every variable of the render that resolves now. A variable only the build knows, or one that
//! fails to render, is left out and leaves the render as it was (the lookup does not make the
//! task deferred or failed by a variable it may never read).

use std::sync::Arc;

use minijinja::State;
use serde_json::{Map, Value as Json};

use super::templar::LazyContext;

/// The variables of the render `state` belongs to that resolve now, as JSON.
pub(super) fn settled(state: &State) -> Map<String, Json> {
    let mut settled = Map::new();
    let Some(context) = state
        .lookup("vars")
        .and_then(|vars| LazyContext::of_view(&vars))
    else {
        return settled;
    };
    for name in context.scope.names() {
        if let Some(json) = resolve_quietly(&context, name) {
            settled.insert(name.to_owned(), json);
        }
    }
    settled
}

/// `name`'s value, or `None` (with the render's state as before) when resolving it deferred or
/// failed.
fn resolve_quietly(context: &Arc<LazyContext>, name: &str) -> Option<Json> {
    let (deferred, missing, fatal) = {
        let state = context.lock();
        (state.deferred, state.missing.len(), state.fatal.is_some())
    };
    // Serialized before the state is read: a mapping resolves its own values as it is read.
    let json = context
        .resolve(name)
        .filter(|v| !v.is_undefined())
        .and_then(|v| serde_json::to_value(&v).ok());
    let mut state = context.lock();
    let settled = !state.deferred || deferred;
    let clean = state.missing.len() == missing && (state.fatal.is_some() == fatal);
    state.deferred = deferred;
    state.missing.truncate(missing);
    if !fatal {
        state.fatal = None;
    }
    json.filter(|_| settled && clean)
}
