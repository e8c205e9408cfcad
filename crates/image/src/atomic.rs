//! Files written whole or not at all, by builds that may run side by side: each writer fills a
//! temporary file of its own beside the target (named `.tmp…`, which `cache prune` removes when
//! a writer is killed) and renames it over the target, so a reader sees the old file or the new
//! one, and two writers of the same file never take each other's temporary file.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file of this writer's own and a rename; the
/// file is readable by everyone, as files written by `std::fs::write` are.
pub fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    crate::blobs::readable(tmp.path())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn writers_side_by_side_each_replace_the_file_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("report.json");
        let writers: Vec<_> = (0..8u8)
            .map(|n| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        write_file(&path, &vec![b'a' + n; 4096]).expect("write");
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().expect("writer");
        }
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len(), 4096);
        assert!(bytes.iter().all(|b| *b == bytes[0]), "one writer's file");
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["report.json"], "no temporary file left");
    }
}
