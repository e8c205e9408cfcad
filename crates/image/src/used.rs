//! Marking cache files as used: their modification time is the cache collector's clock.

use std::path::Path;
use std::time::SystemTime;

/// Marks a cache file as used now (its modification time is the collector's clock).
pub(crate) fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}
