//! Unit tests of the sandbox's handshake with its helper.

use super::*;

#[test]
fn a_refused_overlay_reaches_the_caller_as_its_own_error() {
    let line = |hello: &Hello| serde_json::to_string(hello).expect("json");
    assert!(matches!(Hello::outcome(&line(&Hello::Ready)), Some(Ok(()))));
    let refused = Hello::NoOverlay("mounting the overlay: EINVAL".into());
    match Hello::outcome(&line(&refused)) {
        Some(Err(TargetError::NoOverlay(message))) => assert!(message.contains("EINVAL")),
        other => panic!("{other:?}"),
    }
    let fatal = Hello::Fatal("mounting /proc: EPERM".into());
    assert!(matches!(
        Hello::outcome(&line(&fatal)),
        Some(Err(TargetError::Sandbox(_)))
    ));
    assert!(Hello::outcome("the helper died").is_none());
}
