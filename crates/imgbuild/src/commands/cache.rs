//! `imgbuild cache list|prune`.

use std::process::ExitCode;

use anyhow::anyhow;
use image::cache::LayerCache;

use super::session::{cache_dir, cache_limit};
use crate::cli::{CacheAction, CacheArgs, PruneArgs};
use crate::Failure;

/// Lists or prunes the layer cache.
pub fn run(args: &CacheArgs, json: bool) -> Result<ExitCode, Failure> {
    let cache = LayerCache::new(&cache_dir())
        .map_err(|e| Failure::Run(anyhow!("{}: {e}", cache_dir().display())))?;
    match &args.action {
        CacheAction::List => {
            let entries = cache.list();
            if json {
                let list: Vec<serde_json::Value> = entries
                    .iter()
                    .map(|(key, e)| serde_json::json!({"key": key, "digest": e.blob.digest, "size": e.blob.size, "seconds": e.seconds, "built_at": e.built_at}))
                    .collect();
                println!("{}", serde_json::Value::Array(list));
            } else {
                println!(
                    "{:<12}  {:>10}  {:<71}  {:>8}  BUILT (UTC)",
                    "KEY", "SIZE", "LAYER DIGEST", "TOOK"
                );
                for (key, entry) in &entries {
                    let built = match entry.built_at {
                        0 => "-".to_owned(),
                        at => image::oci::rfc3339(at),
                    };
                    println!(
                        "{:<12}  {:>10}  {:<71}  {:>7.1}s  {built}",
                        &key[..12.min(key.len())],
                        entry.blob.size,
                        entry.blob.digest,
                        entry.seconds
                    );
                }
                println!("{} layers in {}", entries.len(), cache_dir().display());
            }
        }
        CacheAction::Prune(prune) if prune.registry.is_some() => {
            return prune_registry(prune, json)
        }
        CacheAction::Prune(_) => {
            let pruned = cache.prune().map_err(|e| {
                if e.kind() == std::io::ErrorKind::WouldBlock {
                    Failure::Run(anyhow!(
                        "a build is using {}; prune when it has ended",
                        cache_dir().display()
                    ))
                } else {
                    Failure::Run(anyhow!("pruning {}: {e}", cache_dir().display()))
                }
            })?;
            println!(
                "removed {} layers no last build uses, {} blobs nothing names and {} leftovers of interrupted builds",
                pruned.layers, pruned.blobs, pruned.leftovers
            );
        }
        CacheAction::Verify => return verify(&cache, json),
        CacheAction::Gc { max } => {
            let limit = cache_limit(*max)?;
            let done = cache
                .collect(limit, std::time::SystemTime::now())
                .map_err(|e| Failure::Run(anyhow!("collecting {}: {e}", cache_dir().display())))?
                .ok_or_else(|| {
                    Failure::Run(anyhow!(
                        "a build is using {}; it collects when it ends",
                        cache_dir().display()
                    ))
                })?;
            println!(
                "removed {} least recently used layers and {} unused blobs ({} bytes); the cache holds {} bytes, limit {limit}",
                done.layers, done.blobs, done.freed, done.held
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `cache prune --registry`: the registry cache's build records and tags no kept build used,
/// deleted (or listed, with `--dry-run`).
fn prune_registry(args: &PruneArgs, json: bool) -> Result<ExitCode, Failure> {
    use image::cache::remote_prune::{self, Keep, PruneError};
    let text = args.registry.as_deref().unwrap_or_default();
    let reference =
        registry::Reference::parse(text).map_err(|e| Failure::Input(anyhow!("--registry: {e}")))?;
    crate::settings::check_cache_repository(text)
        .map_err(|e| Failure::Input(anyhow!("--registry: {e}")))?;
    let keep = Keep {
        last: args.keep,
        within_seconds: args.older_than,
    };
    let pruned = remote_prune::prune(&reference, keep, args.dry_run).map_err(|e| match e {
        PruneError::Running { .. } => Failure::Run(anyhow!("{text}: {e}")),
        PruneError::Registry(e) => Failure::Run(anyhow!(e)),
    })?;
    let plan = &pruned.pruning;
    if json {
        let unreadable: Vec<serde_json::Value> = pruned
            .unreadable
            .iter()
            .map(|(tag, why)| serde_json::json!({"tag": tag, "problem": why}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"deleted": pruned.deleted, "builds": plan.builds, "tags": plan.tags, "kept_builds": plan.kept_builds, "kept_tags": plan.kept_tags, "unreadable": unreadable})
        );
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if pruned.deleted {
        "deleted"
    } else {
        "would delete"
    };
    for tag in plan.builds.iter().chain(&plan.tags) {
        println!("{verb} {text}:{tag}");
    }
    for (tag, why) in &pruned.unreadable {
        println!("left {text}:{tag}: {why}");
    }
    println!(
        "{verb} {} build records and {} cache tags; kept {} build records and the {} cache tags they used",
        plan.builds.len(),
        plan.tags.len(),
        plan.kept_builds,
        plan.kept_tags
    );
    Ok(ExitCode::SUCCESS)
}

/// `cache verify`: every entry checked, the damaged ones removed and listed.
fn verify(cache: &LayerCache, json: bool) -> Result<ExitCode, Failure> {
    let verified = cache
        .verify_all()
        .map_err(|e| Failure::Run(anyhow!("verifying {}: {e}", cache_dir().display())))?
        .ok_or_else(|| {
            Failure::Run(anyhow!(
                "a build is using {}; verify when it has ended",
                cache_dir().display()
            ))
        })?;
    if json {
        let removed: Vec<serde_json::Value> = verified
            .removed
            .iter()
            .map(|f| serde_json::json!({"entry": f.entry, "problem": f.problem}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"checked": verified.checked, "removed": removed})
        );
    } else {
        for finding in &verified.removed {
            println!("removed {}: {}", finding.entry, finding.problem);
        }
        println!(
            "{} entries checked in {}: {}",
            verified.checked,
            cache_dir().display(),
            match verified.removed.len() {
                0 => "all whole".to_owned(),
                n => format!("{n} damaged, removed (the next build makes them again)"),
            }
        );
    }
    Ok(if verified.removed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
