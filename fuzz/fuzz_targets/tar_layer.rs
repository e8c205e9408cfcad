//! The tar layer reader, as base layers use it (devices and whiteouts allowed): any input is
//! extracted or refused, and nothing is ever written outside the rootfs.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    if std::fs::create_dir_all(&root).is_err() || std::fs::create_dir_all(&outside).is_err() {
        return;
    }
    let Ok(fs) = engine::rootfs::RootFs::plain(&root) else {
        return;
    };
    let limits = engine::archive::Limits {
        max_entries: 10_000,
        max_bytes: 64 << 20,
        allow_devices: true,
        whiteouts: true,
    };
    let _ = engine::archive::extract_tar(data, &fs, Path::new("/"), limits);
    let escaped = std::fs::read_dir(&outside).map(|d| d.count()).unwrap_or(0);
    assert_eq!(escaped, 0, "a layer wrote outside its rootfs");
});
