//! The docker-archive reader behind `imgbuild verify <image.tar>`: any input unpacks or fails
//! with an error, never a panic, and writes only below its destination.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let input = dir.path().join("image.tar");
    let dest = dir.path().join("work/rootfs");
    if std::fs::write(&input, data).is_err() || std::fs::create_dir_all(dir.path().join("work")).is_err() {
        return;
    }
    let _ = image::unpack::unpack(&input, &dest);
    let stray: Vec<_> = std::fs::read_dir(dir.path())
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        stray.iter().all(|n| n == "image.tar" || n == "work"),
        "the reader wrote beside its destination: {stray:?}"
    );
});
