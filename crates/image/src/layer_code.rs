//! What made a layer: imgbuild's version and the digest of the sources of the engine, the
//! planner and the Ansible language it was compiled from (`build.rs`). Part of every layer's
//! cache key, so a layer of older code is never reused; the cache collector removes such
//! layers first.

/// This binary's layer code.
pub fn layer_code() -> String {
    format!(
        "{} {}",
        env!("CARGO_PKG_VERSION"),
        env!("IMGBUILD_LAYER_CODE")
    )
}
