//! Writes the CycloneDX SBOM of a workspace binary, as a release ships it beside the binary:
//!
//! ```sh
//! cargo metadata --format-version 1 --locked --filter-platform x86_64-unknown-linux-musl |
//!     cargo run -q -p sbom --example cargo_sbom -- Cargo.lock imgbuild > imgbuild.cdx.json
//! ```
//!
//! `cargo metadata`'s JSON comes on standard input; the arguments are the lock file and the
//! binary's package.

use std::io::{Read, Write};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(lock), Some(binary)) = (args.next(), args.next()) else {
        eprintln!("usage: cargo_sbom CARGO.LOCK PACKAGE < cargo-metadata.json");
        std::process::exit(2);
    };
    let mut metadata = Vec::new();
    std::io::stdin().read_to_end(&mut metadata)?;
    let lock = std::fs::read_to_string(&lock).map_err(|e| format!("{lock}: {e}"))?;
    let bom = sbom::cargo::of_binary(&metadata, &lock, &binary)?;
    std::io::stdout().write_all(&sbom::to_bytes(&bom)?)?;
    Ok(())
}
