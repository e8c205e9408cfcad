//! A client for the OCI distribution API (what registries speak), with no daemon involved:
//! image references, credentials from `REGISTRY_AUTH_FILE` or `~/.docker/config.json`, anonymous
//! and basic bearer-token auth, registries.conf mirrors, manifest lists resolved to linux/amd64, every blob verified
//! against its digest while it streams, pushes that upload only the blobs a registry lacks, and
//! the site's signature policy (`policy.json`, GPG signatures from a `registries.d` lookaside).

mod attachments;
mod auth;
mod auth_files;
mod client;
mod error;
mod identity;
mod lookaside;
pub mod policy;
mod reference;
mod referrers;
mod registries_conf;
mod repository;
pub mod signature;
pub mod signer;
mod sigstore;
mod transfer;
pub mod yaml;

pub use auth::{Credentials, CredentialsSource};
pub use client::Client;
pub use error::RegistryError;
pub use reference::{Reference, Scheme};
pub use referrers::{Descriptor, Referrer, EMPTY_CONFIG};
pub use registries_conf::{is_short_name, pull_via, PullSource, RegistriesConf};
pub use repository::Repository;
pub use transfer::{pull, push, PulledImage, PulledLayer, PushBlob, Pushed};
