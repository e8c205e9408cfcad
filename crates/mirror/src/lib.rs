//! The site package mirror: `mirror.toml` (written by hand), `mirror.lock` (written by
//! imgbuild), URL joining, and downloads that are cached, pinned and verified.

mod config;
pub mod debian_archive;
mod fetch;
pub mod http;
mod lock;
mod probe;
pub mod serve;
mod url;

pub use config::{MirrorConfig, MirrorConfigError, PathSettings};
pub use fetch::{FetchError, FetchOptions, Fetcher, PathRule};
pub use lock::{url_path, Lock, LockError, Pin};
pub use probe::{Presence, Prober};
pub use url::{collapse_path_slashes, join_url, redact_credentials};
