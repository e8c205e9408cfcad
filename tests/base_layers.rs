//! Base layers are read whole and checked (issue 55, part 1): a `bootstrap: oci` base whose zstd
//! layer is two frames (concatenated `zstd` output, as `pzstd` and `zstd:chunked` write) or whose
//! gzip layer is two members builds with the files of its last frame, which a role's `stat`
//! finds; a blob cut short, a blob that is not its descriptor's digest, a tar that is not its
//! config's diff_id and data after the tar's end are each refused in one line naming the layer,
//! exit 1, with nothing cached and no output. The same bases pushed to Debian's docker-registry
//! on 127.0.0.1 (by skopeo, blobs as they are) and pulled as a `bootstrap: docker` base are held
//! to the same. Needs root, Debian's `zstd`, `gzip`, `skopeo` and `docker-registry`.

use crate::common;
use crate::framed_base;
use crate::registry_server;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use framed_base::*;

/// A base whose blob is `blob` builds, and the chroot output holds the last file.
fn builds_with_every_file(blob: &[u8], media_type: &str) {
    let p = project();
    let tar = base_tar();
    layout(
        &p.project.join("base"),
        blob,
        media_type,
        &sha256(&tar),
        (&sha256(blob), blob.len()),
    );
    let result = build(&p);
    assert!(result.status.success(), "{}", stderr(&result));
    let last = p.work.path().join("out/framed/rootfs/srv/last/file.txt");
    assert_eq!(
        std::fs::read_to_string(&last).expect("the last file"),
        "the last one\n"
    );
    assert!(p
        .work
        .path()
        .join("out/framed/rootfs/srv/first/00.txt")
        .is_file());
}

#[test]
fn a_zstd_layer_of_two_frames_builds_with_the_files_of_its_last_frame() {
    let blob = two_parts(&base_tar(), "zstd", &["-c", "-q"]);
    builds_with_every_file(&blob, "application/vnd.oci.image.layer.v1.tar+zstd");
}

#[test]
fn a_gzip_layer_of_two_members_builds_with_the_files_of_its_last_member() {
    let blob = two_parts(&base_tar(), "gzip", &["-c", "-n"]);
    builds_with_every_file(&blob, "application/vnd.oci.image.layer.v1.tar+gzip");
}

/// A base that must be refused: exit 1, one error naming `needle`, no base cached, no output.
fn refused(blob: &[u8], diff_id: &str, descriptor: (&str, usize), needle: &str) {
    let p = project();
    layout(
        &p.project.join("base"),
        blob,
        "application/vnd.oci.image.layer.v1.tar+zstd",
        diff_id,
        descriptor,
    );
    let result = build(&p);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
    assert!(err.contains(descriptor.0), "names the layer: {err}");
    // No base tree (nor a half-made one) under any base's folder in the cache.
    let trees: Vec<PathBuf> = std::fs::read_dir(p.work.path().join("cache/bases"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|base| {
            std::fs::read_dir(base.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter(|e| e.file_name().to_string_lossy().starts_with("tree"))
        .map(|e| e.path())
        .collect();
    assert!(trees.is_empty(), "nothing cached: {trees:?}");
    assert!(!p.work.path().join("out/framed").exists(), "no output");
}

#[test]
fn a_layer_whose_tar_is_not_its_diff_id_is_refused_with_both_digests() {
    let tar = base_tar();
    let blob = two_parts(&tar, "zstd", &["-c", "-q"]);
    let lie = sha256(b"another tar");
    refused(&blob, &lie, (&sha256(&blob), blob.len()), &lie);
    // The message names the tar's real digest too.
    let p = project();
    layout(
        &p.project.join("base"),
        &blob,
        "application/vnd.oci.image.layer.v1.tar+zstd",
        &lie,
        (&sha256(&blob), blob.len()),
    );
    assert!(stderr(&build(&p)).contains(&sha256(&tar)));
}

#[test]
fn a_blob_cut_short_or_changed_is_refused_before_it_is_read() {
    let tar = base_tar();
    let blob = two_parts(&tar, "zstd", &["-c", "-q"]);
    let cut = &blob[..blob.len() - 40];
    // The descriptor names the whole blob: the cut one is another digest, another size.
    refused(
        cut,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
        "cut short",
    );
}

#[test]
fn a_last_frame_cut_short_is_an_error_not_an_early_end() {
    let tar = base_tar();
    let blob = two_parts(&tar, "zstd", &["-c", "-q"]);
    // A blob that is its own descriptor's digest (so a registry would serve it) but whose
    // last frame ends early.
    let cut = blob[..blob.len() - 40].to_vec();
    refused(
        &cut,
        &sha256(&tar),
        (&sha256(&cut), cut.len()),
        "base layer 0",
    );
}

#[test]
fn data_after_the_tars_end_is_refused() {
    let mut tar = base_tar();
    tar.extend_from_slice(b"trailing garbage");
    let blob = through("zstd", &["-c", "-q"], &tar);
    refused(
        &blob,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
        "data after the tar's end",
    );
}

/// The layout at `layout` pushed to `registry` as `site/framed:TAG` by skopeo, its blobs as
/// they are; the reference.
fn pushed(registry: &registry_server::Registry, layout: &Path, tag: &str) -> String {
    let reference = format!("{}/site/framed:{tag}", registry.host);
    let out = Command::new("skopeo")
        .args(["copy", "-q", "--dest-tls-verify=false"])
        .arg(format!("oci:{}", layout.display()))
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo (CI installs it)");
    assert!(out.status.success(), "{}", stderr(&out));
    reference
}

#[test]
fn a_registry_base_of_two_zstd_frames_builds_and_one_whose_diff_id_lies_is_refused() {
    let registry = registry_server::start_registry(false);
    let staging = tempfile::tempdir().expect("staging");
    let tar = base_tar();
    let blob = two_parts(&tar, "zstd", &["-c", "-q"]);
    let media = "application/vnd.oci.image.layer.v1.tar+zstd";
    let good = staging.path().join("good");
    layout(
        &good,
        &blob,
        media,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
    );
    let reference = pushed(&registry, &good, "frames");
    let p = project_from(&format!(
        "bootstrap: docker\n    build_from: \"{reference}\""
    ));
    let result = build(&p);
    assert!(result.status.success(), "{}", stderr(&result));
    let last = p.work.path().join("out/framed/rootfs/srv/last/file.txt");
    assert_eq!(
        std::fs::read_to_string(last).expect("last"),
        "the last one\n"
    );

    // Its config says another tar: refused, naming both digests, nothing cached.
    let lie = sha256(b"another tar");
    let lying = staging.path().join("lying");
    layout(&lying, &blob, media, &lie, (&sha256(&blob), blob.len()));
    let reference = pushed(&registry, &lying, "lying");
    let p = project_from(&format!(
        "bootstrap: docker\n    build_from: \"{reference}\""
    ));
    let result = build(&p);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(err.contains(&lie) && err.contains(&sha256(&tar)), "{err}");
    assert!(err.contains(&reference), "names the base: {err}");
    assert!(!p.work.path().join("out/framed").exists(), "no output");
    let trees = std::fs::read_dir(p.work.path().join("cache/bases"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|base| base.path().join("tree").exists())
        .count();
    assert_eq!(trees, 0, "no base cached");
}

#[test]
fn a_registry_serving_a_layer_that_is_not_its_digest_is_refused_and_nothing_is_cached() {
    let registry = registry_server::start_registry(false);
    let staging = tempfile::tempdir().expect("staging");
    let tar = base_tar();
    let blob = through("gzip", &["-c", "-n"], &tar);
    let media = "application/vnd.oci.image.layer.v1.tar+gzip";
    let base = staging.path().join("base");
    layout(
        &base,
        &blob,
        media,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
    );
    let reference = pushed(&registry, &base, "tampered");
    // The registry's stored copy changed behind its back: it serves other bytes of the same
    // length under the layer's digest.
    let digest = sha256(&blob);
    let hex = &digest[7..];
    let stored = registry
        .data
        .join("docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    let mut bytes = std::fs::read(&stored).expect("the stored layer");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&stored, bytes).expect("tamper");
    let p = project_from(&format!(
        "bootstrap: docker\n    build_from: \"{reference}\""
    ));
    let result = build(&p);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(err.contains(&digest), "names the layer's digest: {err}");
    assert!(err.contains(&reference), "names the base: {err}");
    assert!(!p.work.path().join("out/framed").exists(), "no output");
    let bases = p.work.path().join("cache/bases");
    let trees = std::fs::read_dir(&bases)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|b| b.path().join("tree").exists())
        .count();
    assert_eq!(trees, 0, "no base cached");
    let kept = std::process::Command::new("find")
        .arg(p.work.path().join("cache"))
        .args(["-name", &format!("*{hex}*")])
        .output()
        .expect("find");
    assert!(
        kept.stdout.is_empty(),
        "the bad blob is not kept: {}",
        String::from_utf8_lossy(&kept.stdout)
    );
}
