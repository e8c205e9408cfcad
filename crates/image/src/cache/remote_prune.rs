//! `cache prune --registry`: the registry cache's lifecycle. Every build that writes the cache
//! leaves a record of the cache tags it used ([`super::remote_builds`]); pruning keeps the
//! records of the recent builds (the last N that ended well, per image, or those of the last
//! days) and deletes every other record and every cache tag no kept record names. A build that
//! is running stops it, as a build in the local cache stops `cache prune`: its tags are in use.

use std::collections::{BTreeMap, BTreeSet};

use super::remote_builds::{BuildRecord, BUILD_RECORD_TYPE, BUILD_TAG_PREFIX};
use oci_spec::image::{ImageManifest, MediaType};
use registry::{Reference, RegistryError, Repository};

/// A record without an end younger than this is a build still running; an older one is taken
/// for a build that was killed.
pub const RUNNING_AT_MOST_SECONDS: u64 = 6 * 3600;
/// The prefixes of the tags the cache writes beside build records (layers, bases, compiles).
const CACHE_TAG_PREFIXES: [&str; 3] = ["layer-", "base-", "compiles-"];

/// Which builds' records are kept: the union of both rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keep {
    /// The last this many builds of each image that ended well.
    pub last: Option<usize>,
    /// Every build that ended within this many seconds.
    pub within_seconds: Option<u64>,
}

/// Why the registry cache was not pruned.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    /// A build is using the cache.
    #[error("a build of {image} is running (record {tag}, started at {started}); prune when it has ended (a build killed then is taken as ended {hours} hours after its start)", started = crate::oci::rfc3339(*started_at), hours = RUNNING_AT_MOST_SECONDS / 3600)]
    Running {
        /// Its image.
        image: String,
        /// Its record's tag.
        tag: String,
        /// When it started.
        started_at: u64,
    },
    /// The registry refused or was not reached.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// What the repository holds that pruning is about: build records and cache tags. Other tags
/// are never touched.
#[derive(Debug, Default)]
pub struct Listing {
    /// Each build record's tag and what it says.
    pub builds: Vec<(String, BuildRecord)>,
    /// The layer, base and compile-bundle tags.
    pub cache_tags: Vec<String>,
    /// Build-record tags whose record could not be read, with why: left alone.
    pub unreadable: Vec<(String, String)>,
}

/// What pruning deletes, and what it keeps.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruning {
    /// Build records to delete (ended and not kept, or killed).
    pub builds: Vec<String>,
    /// Cache tags no kept record names.
    pub tags: Vec<String>,
    /// Build records kept.
    pub kept_builds: usize,
    /// Cache tags kept.
    pub kept_tags: usize,
}

/// Decides what goes, at time `now`; refuses while a build runs.
pub fn plan(listing: &Listing, keep: Keep, now: u64) -> Result<Pruning, PruneError> {
    let mut by_image: BTreeMap<&str, Vec<&(String, BuildRecord)>> = BTreeMap::new();
    let mut pruning = Pruning::default();
    for entry in &listing.builds {
        let (tag, record) = entry;
        match record.ended_at {
            Some(_) => by_image.entry(&record.image).or_default().push(entry),
            None if now.saturating_sub(record.started_at) < RUNNING_AT_MOST_SECONDS => {
                return Err(PruneError::Running {
                    image: record.image.clone(),
                    tag: tag.clone(),
                    started_at: record.started_at,
                })
            }
            None => pruning.builds.push(tag.clone()),
        }
    }
    let mut kept_tags = BTreeSet::new();
    for records in by_image.values_mut() {
        records.sort_by_key(|(_, r)| std::cmp::Reverse((r.started_at, r.ended_at)));
        let mut good = 0;
        for (tag, record) in records.iter() {
            let recent = keep
                .within_seconds
                .is_some_and(|s| record.ended_at.unwrap_or(0) + s >= now);
            let last = record.succeeded && keep.last.is_some_and(|n| good < n);
            good += usize::from(record.succeeded);
            if recent || last {
                pruning.kept_builds += 1;
                kept_tags.extend(record.tags.iter().map(String::as_str));
            } else {
                pruning.builds.push(tag.clone());
            }
        }
    }
    for tag in &listing.cache_tags {
        if kept_tags.contains(tag.as_str()) {
            pruning.kept_tags += 1;
        } else {
            pruning.tags.push(tag.clone());
        }
    }
    Ok(pruning)
}

/// Reads the build records and cache tags of `repository`.
pub fn list(repository: &Repository) -> Result<Listing, RegistryError> {
    let mut listing = Listing::default();
    for tag in repository.tags()? {
        if tag.starts_with(BUILD_TAG_PREFIX) {
            match read_build_record(repository, &tag)? {
                Ok(record) => listing.builds.push((tag, record)),
                Err(why) => listing.unreadable.push((tag, why)),
            }
        } else if CACHE_TAG_PREFIXES.iter().any(|p| tag.starts_with(p)) {
            listing.cache_tags.push(tag);
        }
    }
    Ok(listing)
}

/// The record under `tag`: `Err(why)` inside when it is not one imgbuild can read.
fn read_build_record(
    repository: &Repository,
    tag: &str,
) -> Result<Result<BuildRecord, String>, RegistryError> {
    let Some(bytes) = repository.manifest(tag)? else {
        return Ok(Err("the tag went away while it was read".into()));
    };
    let manifest = match ImageManifest::from_reader(&bytes[..]) {
        Ok(manifest) => manifest,
        Err(e) => return Ok(Err(format!("not an OCI manifest ({e})"))),
    };
    let config = manifest.config();
    if config.media_type() != &MediaType::Other(BUILD_RECORD_TYPE.into()) {
        return Ok(Err("not an imgbuild build record".into()));
    }
    let record = repository.blob_bytes(config.digest().as_ref(), 16 << 20)?;
    Ok(serde_json::from_slice(&record).map_err(|e| format!("a record imgbuild cannot read ({e})")))
}

/// What `prune` did.
#[derive(Debug)]
pub struct Pruned {
    /// What was decided.
    pub pruning: Pruning,
    /// Build records that could not be read, with why: left alone.
    pub unreadable: Vec<(String, String)>,
    /// Whether anything was deleted (false for a dry run).
    pub deleted: bool,
}

/// Prunes the registry cache `reference` by `keep` (with the credentials `--push` uses); only
/// says what it would delete when `dry_run`.
pub fn prune(reference: &Reference, keep: Keep, dry_run: bool) -> Result<Pruned, PruneError> {
    let credentials =
        registry::Credentials::for_reference(&reference.registry, &reference.repository)?;
    let repository = Repository::open_for_pruning(reference, credentials);
    let listing = list(&repository)?;
    let now = super::remote_builds::now();
    let pruning = plan(&listing, keep, now)?;
    if !dry_run {
        delete(&repository, &listing, &pruning, now)?;
    }
    Ok(Pruned {
        pruning,
        unreadable: listing.unreadable,
        deleted: !dry_run,
    })
}

/// Deletes what `pruning` says, by manifest digest, never a manifest a kept tag also names.
/// Builds recorded since the listing are looked at first: a running one stops it, and the tags
/// an ended one used are kept.
fn delete(
    repository: &Repository,
    listing: &Listing,
    pruning: &Pruning,
    now: u64,
) -> Result<(), PruneError> {
    let since: Vec<_> = list(repository)?
        .builds
        .into_iter()
        .filter(|(tag, _)| !listing.builds.iter().any(|(t, _)| t == tag))
        .collect();
    let protected: BTreeSet<String> = since.iter().flat_map(|(_, r)| r.tags.clone()).collect();
    let since = Listing {
        builds: since,
        ..Listing::default()
    };
    plan(&since, Keep::default(), now)?;
    let going: BTreeSet<&str> = pruning
        .builds
        .iter()
        .chain(&pruning.tags)
        .map(String::as_str)
        .filter(|t| !protected.contains(*t))
        .collect();
    let mut kept_digests = BTreeSet::new();
    let mut digests = Vec::new();
    let tags = listing
        .builds
        .iter()
        .map(|(t, _)| t)
        .chain(&listing.cache_tags);
    for tag in tags {
        let Some(bytes) = repository.manifest(tag)? else {
            continue;
        };
        let digest = crate::hashing::digest_of(&bytes);
        if going.contains(tag.as_str()) {
            digests.push(digest);
        } else {
            kept_digests.insert(digest);
        }
    }
    for digest in digests.iter().filter(|d| !kept_digests.contains(*d)) {
        repository.delete_manifest(digest)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;
    const DAY: u64 = 86_400;

    fn record(image: &str, days_ago: u64, succeeded: bool, tags: &[&str]) -> BuildRecord {
        BuildRecord {
            image: image.into(),
            started_at: NOW - days_ago * DAY - 600,
            ended_at: Some(NOW - days_ago * DAY),
            succeeded,
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn listing(builds: Vec<(&str, BuildRecord)>, tags: &[&str]) -> Listing {
        Listing {
            builds: builds.into_iter().map(|(t, r)| (t.to_owned(), r)).collect(),
            cache_tags: tags.iter().map(|t| t.to_string()).collect(),
            unreadable: Vec::new(),
        }
    }

    fn last(n: usize) -> Keep {
        Keep {
            last: Some(n),
            within_seconds: None,
        }
    }

    #[test]
    fn the_last_builds_of_each_image_keep_what_they_used() {
        let listing = listing(
            vec![
                ("build-a-old", record("a", 9, true, &["base-1", "layer-1"])),
                ("build-a-new", record("a", 1, true, &["base-1", "layer-2"])),
                ("build-b-old", record("b", 8, true, &["base-1", "layer-3"])),
            ],
            &["base-1", "layer-1", "layer-2", "layer-3", "compiles-x"],
        );
        let pruning = plan(&listing, last(1), NOW).expect("no build runs");
        assert_eq!(pruning.builds, ["build-a-old"]);
        assert_eq!(pruning.tags, ["layer-1", "compiles-x"]);
        assert_eq!((pruning.kept_builds, pruning.kept_tags), (2, 3));
    }

    #[test]
    fn a_failed_build_is_not_one_of_the_last_but_counts_while_recent() {
        let builds = vec![
            ("build-good", record("a", 5, true, &["layer-good"])),
            ("build-failed", record("a", 1, false, &["layer-failed"])),
        ];
        let tags = ["layer-good", "layer-failed"];
        let pruning = plan(&listing(builds.clone(), &tags), last(1), NOW).expect("plan");
        assert_eq!(pruning.builds, ["build-failed"]);
        assert_eq!(pruning.tags, ["layer-failed"]);
        let within = Keep {
            last: None,
            within_seconds: Some(2 * DAY),
        };
        let pruning = plan(&listing(builds, &tags), within, NOW).expect("plan");
        assert_eq!(pruning.builds, ["build-good"]);
        assert_eq!(pruning.tags, ["layer-good"]);
    }

    #[test]
    fn a_running_build_stops_pruning_and_a_killed_one_goes() {
        let mut running = record("a", 0, false, &[]);
        running.ended_at = None;
        running.started_at = NOW - 3600;
        let listing_running = listing(vec![("build-run", running.clone())], &["layer-1"]);
        let refused = plan(&listing_running, last(1), NOW);
        assert!(
            matches!(refused, Err(PruneError::Running { .. })),
            "{refused:?}"
        );
        running.started_at = NOW - RUNNING_AT_MOST_SECONDS - 1;
        let killed = listing(vec![("build-run", running)], &["layer-1"]);
        let pruning = plan(&killed, last(1), NOW).expect("a killed build does not stop it");
        assert_eq!(pruning.builds, ["build-run"]);
        assert_eq!(pruning.tags, ["layer-1"]);
    }
}
