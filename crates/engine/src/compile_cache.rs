//! The compile cache: kernel modules (DKMS, kbuild, vendor installers) and every other C
//! compile in a role reuse the objects an earlier build compiled from the same input, so a role
//! rebuilt after an early change in the recipe does not compile unchanged drivers again.
//!
//! Each compiler the image has (`gcc`, `cc`, `gcc-12`, `x86_64-linux-gnu-gcc-12`, `g++`, ...) gets
//! a shim on the sandbox's `/run`, first in `PATH`. The shim (`compile_cache.sh`, run by the
//! image's own shell) keys a compile as ccache does: the compiler's identity by content, the
//! working folder, the arguments and the preprocessed source. So a changed compiler, header,
//! source or flag misses, and a hit gives the bytes that compile gave. A compile seen before
//! is found without preprocessing it (`compile_cache_direct.sh`, ccache's direct mode), by a
//! manifest that also records which included names each search folder holds, so a header
//! that appears earlier in the search path is never missed. Builds running at once
//! (a matrix's images, the signed and the unsigned build of one driver) compile a key once: the
//! first to miss it holds the key's lock (`flock`, when the image has it) while it compiles, the
//! others wait and hit. The entries live in imgbuild's cache folder, bound into the sandbox,
//! never in a layer. Only compilers present when the sandbox starts get a shim, so `command -v`
//! answers as it would without the cache.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The folder of the compiler shims inside the sandbox, put first in `PATH` (and in dpkg's, for
/// the DKMS builds of maintainer scripts).
pub use modules::shims::COMPILE_SHIM_DIR as SHIM_DIR;
/// Where the cache's entries are bound inside the sandbox.
const ENTRIES_INSIDE: &str = "/run/imgbuild/compile-cache";
/// This sandbox's own folder: the compilers' identities and the log of hits and misses.
const STATE_INSIDE: &str = "/run/imgbuild/cc-state";
/// The script every shim sources: the direct mode's functions, then the shim's own steps.
const SCRIPT: &str = concat!(
    include_str!("compile_cache_direct.sh"),
    include_str!("compile_cache.sh")
);
const SCRIPT_NAME: &str = ".compile-cache.sh";

/// The compile cache's folder on the building machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CompileCache {
    /// The entries' folder (made now when missing).
    pub dir: PathBuf,
}

impl CompileCache {
    /// The cache kept in `dir`.
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self {
            dir: dir.to_owned(),
        })
    }
}

/// What the compiles of one sandbox found in the cache.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompileStats {
    /// Objects taken from the cache.
    pub hits: usize,
    /// Objects compiled and kept.
    pub misses: usize,
    /// Entries whose checksums did not match: removed and compiled again.
    pub damaged: usize,
}

/// What one sandbox's compiles did: the counts, and the keys of the entries they used or made.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CompileLog {
    /// The counts.
    pub stats: CompileStats,
    /// The keys of the entries hit or made, each once, in the order first met.
    pub keys: Vec<String>,
}

impl CompileLog {
    /// Reads the log the shims wrote (`hit|miss|damaged <key> <source>` lines).
    pub fn parse(log: &str) -> Self {
        let mut keys = Vec::new();
        for line in log.lines() {
            let mut words = line.split_whitespace();
            if let (Some("hit" | "miss"), Some(key)) = (words.next(), words.next()) {
                let is_key = key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit());
                if is_key && !keys.iter().any(|k| k == key) {
                    keys.push(key.to_owned());
                }
            }
        }
        Self {
            stats: CompileStats::from_log(log),
            keys,
        }
    }

    /// Reads the log of the sandbox whose root is seen through `fs`.
    pub fn of(fs: &crate::rootfs::RootFs) -> Self {
        let log = Path::new(STATE_INSIDE).join("log");
        fs.read_text_opt(&log)
            .ok()
            .flatten()
            .map(|text| Self::parse(&text))
            .unwrap_or_default()
    }
}

/// Where the entry of `key` lives in the cache folder `dir` (`<dir>/<first two>/<key>`).
pub fn entry_dir(dir: &Path, key: &str) -> PathBuf {
    dir.join(key.get(..2).unwrap_or(key)).join(key)
}

impl CompileStats {
    /// No compile went through the cache.
    pub fn is_empty(&self) -> bool {
        self.hits + self.misses + self.damaged == 0
    }

    /// Counts the log the shims wrote (`hit|miss|damaged <source>` lines).
    pub fn from_log(log: &str) -> Self {
        let mut stats = Self::default();
        for word in log.lines().filter_map(|l| l.split_whitespace().next()) {
            match word {
                "hit" => stats.hits += 1,
                "miss" => stats.misses += 1,
                "damaged" => stats.damaged += 1,
                _ => {}
            }
        }
        stats
    }
}

/// Whether `name` is a C or C++ compiler driver of the GNU family: `cc`, `c++`, `gcc`, `g++`,
/// each maybe with a target prefix (`x86_64-linux-gnu-`) and a version suffix (`-12`).
pub fn is_compiler_name(name: &str) -> bool {
    let base = match name.rsplit_once('-') {
        Some((stem, version))
            if !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.') =>
        {
            stem
        }
        _ => name,
    };
    matches!(base, "cc" | "c++" | "gcc" | "g++") || base.ends_with("-gcc") || base.ends_with("-g++")
}

/// The compilers in the image's `/usr/bin` (`root` as seen from outside the chroot).
fn compilers(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join("usr/bin")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| is_compiler_name(name))
        .collect();
    names.sort();
    names
}

/// The shim of the compiler `name`.
fn shim(name: &str) -> String {
    format!(
        "#!/bin/sh\n# imgbuild: {name} through the compile cache ({SHIM_DIR}/{SCRIPT_NAME}).\n\
         real=/usr/bin/{name} cache={ENTRIES_INSIDE} state={STATE_INSIDE}\n\
         . {SHIM_DIR}/{SCRIPT_NAME}\n"
    )
}

/// Installs the shims of the image's compilers under `run` (the sandbox's `/run` seen from
/// outside the chroot) and binds the cache's entries there; returns the shims' folder for
/// `PATH`, or `None` when the image has no compiler yet.
pub fn install(root: &Path, run: &Path, cache: &CompileCache) -> Result<Option<String>, String> {
    use std::os::unix::fs::PermissionsExt;
    let names = compilers(root);
    if names.is_empty() {
        return Ok(None);
    }
    let inside = |path: &str| run.join(path.trim_start_matches("/run/"));
    let (shims, entries, state) = (
        inside(SHIM_DIR),
        inside(ENTRIES_INSIDE),
        inside(STATE_INSIDE),
    );
    let fail = |e: std::io::Error| format!("installing the compile cache's shims: {e}");
    for dir in [&shims, &entries, &state] {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    rustix::mount::mount_bind(&cache.dir, &entries)
        .map_err(|e| format!("binding the compile cache on {ENTRIES_INSIDE}: {e}"))?;
    std::fs::write(shims.join(SCRIPT_NAME), SCRIPT).map_err(fail)?;
    for name in &names {
        let file = shims.join(name);
        std::fs::write(&file, shim(name)).map_err(fail)?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).map_err(fail)?;
    }
    Ok(Some(SHIM_DIR.to_owned()))
}

#[cfg(test)]
#[path = "compile_cache_tests.rs"]
mod tests;
