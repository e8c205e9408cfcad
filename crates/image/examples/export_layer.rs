//! Writes one folder as an image layer blob, the way `imgbuild build` writes each role's layer:
//! a sorted, reproducible tar streamed through a parallel compressor into a content-addressed
//! blob, hashing both streams in the same pass. Used by `bench/export.sh`.
//!
//! usage: export_layer TREE BLOB_DIR gzip|zstd

use std::path::PathBuf;
use std::time::Instant;

use image::blobs::BlobStore;
use image::compression::{Codec, Compression};
use image::layer::Source;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: export_layer TREE BLOB_DIR gzip|zstd";
    let tree = PathBuf::from(args.next().ok_or(usage)?);
    let blobs = BlobStore::new(&PathBuf::from(args.next().ok_or(usage)?))?;
    let codec = match args.next().as_deref() {
        Some("gzip") => Codec::gzip(6),
        Some("zstd") => Codec {
            compression: Compression::Zstd,
            level: 3,
        },
        _ => return Err(usage.into()),
    };
    let started = Instant::now();
    let blob = blobs.write_layer(&tree, Source::Tree, 1_700_000_000, codec)?;
    println!(
        "{} {} {} {:.3}",
        blob.digest,
        blob.size,
        blob.diff_size,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
