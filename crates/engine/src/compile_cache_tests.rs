use super::*;
use std::process::Command;

/// A shim of the building machine's `gcc` over a cache in a temporary folder, as the sandbox
/// installs it (the script sourced from beside the shim).
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Option<Self> {
        Self::over("/usr/bin/gcc")
    }

    /// A shim over a `gcc` that counts its compiles (`compiles`, a line each) and takes a
    /// second over each, as a driver's long compiles do.
    fn slow() -> Option<Self> {
        Self::counting("sleep 1")
    }

    /// A shim over a `gcc` that counts its compiles (`compiles`) and its runs of the
    /// preprocessor (`preprocessed`), a line each, and runs `delay` before each compile.
    fn counting(delay: &str) -> Option<Self> {
        let bench = Self::over("/usr/bin/gcc")?;
        let counted = bench.path("counted-gcc");
        let d = bench.dir.path().display();
        let wrapper = format!(
            "#!/bin/sh\ncase \" $* \" in\n\
             *' -v '*) ;;\n\
             *' -c '*) echo compile >>{d}/compiles; {delay} ;;\n\
             *' -E '*) echo preprocess >>{d}/preprocessed ;;\nesac\n\
             exec /usr/bin/gcc \"$@\"\n"
        );
        make_executable(&counted, &wrapper);
        let shim = std::fs::read_to_string(bench.path("gcc")).expect("shim");
        let shim = shim.replace("real=/usr/bin/gcc", &format!("real={}", counted.display()));
        make_executable(&bench.path("gcc"), &shim);
        Some(bench)
    }

    /// A shim over the compiler `real`, its cache, state and source folders fresh.
    fn over(real: &str) -> Option<Self> {
        if !Path::new(real).exists() {
            eprintln!("no {real} on this machine: the compile cache's shim is not exercised");
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["cache", "state", "src", "tmp"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        let d = dir.path().display();
        std::fs::write(dir.path().join(SCRIPT_NAME), SCRIPT).expect("script");
        let shim = format!(
            "#!/bin/sh\nreal={real} cache={d}/cache state={d}/state\n. {d}/{SCRIPT_NAME}\n"
        );
        make_executable(&dir.path().join("gcc"), &shim);
        Some(Self { dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).expect("write");
    }

    /// Runs the shim with `args` in `src/`; returns its exit code and standard error.
    fn gcc(&self, args: &[&str]) -> (i32, String) {
        let out = Command::new(self.path("gcc"))
            .args(args)
            .current_dir(self.path("src"))
            .env("TMPDIR", self.path("tmp"))
            .output()
            .expect("run the shim");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code().unwrap_or(-1), stderr)
    }

    fn stats(&self) -> CompileStats {
        let log = std::fs::read_to_string(self.path("state/log")).unwrap_or_default();
        CompileLog::parse(&log).stats
    }

    fn compile(&self, extra: &[&str]) -> Vec<u8> {
        let mut args = vec![
            "-O2",
            "-g",
            "-Wall",
            "-Wp,-MMD,.one.o.d",
            "-c",
            "-o",
            "one.o",
        ];
        args.extend_from_slice(extra);
        args.push("one.c");
        let (rc, stderr) = self.gcc(&args);
        assert_eq!(rc, 0, "{stderr}");
        assert!(
            stderr.contains("unused variable"),
            "the warning is shown: {stderr}"
        );
        std::fs::read(self.path("src/one.o")).expect("object")
    }
}

fn make_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

const SOURCE: &str = "#include \"one.h\"\nint f(void) { int unused; return VALUE; }\n";

#[test]
fn the_same_compile_again_is_a_hit_with_the_same_bytes_dep_file_and_warnings() {
    let Some(bench) = Bench::new() else { return };
    bench.write("src/one.c", SOURCE);
    bench.write("src/one.h", "#define VALUE 1\n");
    let first = bench.compile(&[]);
    let dep = std::fs::read_to_string(bench.path("src/.one.o.d")).expect("dep file");
    assert!(dep.contains("one.h"), "{dep}");
    std::fs::remove_file(bench.path("src/one.o")).expect("rm");
    std::fs::remove_file(bench.path("src/.one.o.d")).expect("rm");
    let second = bench.compile(&[]);
    assert_eq!(first, second, "a hit gives the compile's bytes");
    assert_eq!(
        std::fs::read_to_string(bench.path("src/.one.o.d")).expect("dep file again"),
        dep
    );
    assert_eq!(
        bench.stats(),
        CompileStats {
            hits: 1,
            misses: 1,
            damaged: 0
        }
    );
}

#[test]
fn a_changed_header_or_flag_misses() {
    let Some(bench) = Bench::new() else { return };
    bench.write("src/one.c", SOURCE);
    bench.write("src/one.h", "#define VALUE 1\n");
    let first = bench.compile(&[]);
    bench.write("src/one.h", "#define VALUE 2\n");
    let changed = bench.compile(&[]);
    assert_ne!(first, changed, "the new header's value is compiled in");
    bench.compile(&["-DEXTRA=1"]);
    bench.compile(&["-O1"]);
    assert_eq!(bench.stats().misses, 4);
    assert_eq!(bench.stats().hits, 0);
}

#[test]
fn a_damaged_entry_is_found_and_compiled_again() {
    let Some(bench) = Bench::new() else { return };
    bench.write("src/one.c", SOURCE);
    bench.write("src/one.h", "#define VALUE 1\n");
    let first = bench.compile(&[]);
    let objects: Vec<PathBuf> = walk(&bench.path("cache"))
        .into_iter()
        .filter(|p| p.ends_with("obj"))
        .collect();
    assert_eq!(objects.len(), 1, "one entry: {objects:?}");
    std::fs::write(&objects[0], b"not an object").expect("damage");
    let again = bench.compile(&[]);
    assert_eq!(again, first, "the damaged entry is never used");
    let stats = bench.stats();
    assert_eq!((stats.hits, stats.misses, stats.damaged), (0, 2, 1));
    assert_eq!(bench.compile(&[]), first, "the entry made again is a hit");
    assert_eq!(bench.stats().hits, 1);
}

#[test]
fn builds_missing_the_same_key_at_once_compile_it_once() {
    let Some(bench) = Bench::slow() else { return };
    if Command::new("flock").arg("-V").output().is_err() {
        eprintln!("no flock on this machine: builds at once each compile");
        return;
    }
    bench.write("src/one.c", SOURCE);
    bench.write("src/one.h", "#define VALUE 1\n");
    let args = ["-O2", "-Wall", "-c", "-o", "one.o", "one.c"];
    let at_once: Vec<_> = (0..3)
        .map(|_| {
            Command::new(bench.path("gcc"))
                .args(args)
                .current_dir(bench.path("src"))
                .env("TMPDIR", bench.path("tmp"))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("run the shim")
        })
        .collect();
    for child in at_once {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("unused variable"),
            "each shows the warning: {stderr}"
        );
    }
    let compiles = std::fs::read_to_string(bench.path("compiles")).expect("compiles");
    assert_eq!(compiles.lines().count(), 1, "one compile for three builds");
    let stats = bench.stats();
    assert_eq!((stats.hits, stats.misses, stats.damaged), (2, 1, 0));
    let made = std::fs::read(bench.path("src/one.o")).expect("object");
    std::fs::remove_file(bench.path("src/one.o")).expect("rm");
    assert_eq!(bench.gcc(&args).0, 0);
    assert_eq!(
        std::fs::read(bench.path("src/one.o")).expect("object"),
        made
    );
    let left: Vec<PathBuf> = walk(&bench.path("cache"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".lock"))
        .collect();
    assert!(
        left.is_empty(),
        "the key's lock goes with its compile: {left:?}"
    );
}

#[test]
fn links_stdin_probes_and_failures_run_the_compiler_as_it_is() {
    let Some(bench) = Bench::new() else { return };
    bench.write("src/main.c", "int main(void) { return 0; }\n");
    let (rc, stderr) = bench.gcc(&["-o", "main", "main.c"]);
    assert_eq!(rc, 0, "{stderr}");
    assert!(bench.path("src/main").exists(), "a link runs");
    let (rc, _) = bench.gcc(&["-Werror", "-c", "-x", "c", "/dev/null", "-o", "probe.o"]);
    assert_eq!(rc, 0, "kbuild's cc-option probe compiles /dev/null");
    bench.write("src/bad.c", "int f(void) { return nope; }\n");
    let (rc, stderr) = bench.gcc(&["-c", "-o", "bad.o", "bad.c"]);
    assert_eq!(rc, 1);
    assert!(stderr.contains("nope"), "{stderr}");
    let (rc, _) = bench.gcc(&["-c", "-o", "bad.o", "bad.c"]);
    assert_eq!(rc, 1, "a failed compile is never kept");
    assert_eq!(bench.stats(), CompileStats::default());
    assert!(walk(&bench.path("cache")).is_empty(), "nothing kept");
    assert!(walk(&bench.path("tmp")).is_empty(), "no work folder left");
}

/// Compiles NVIDIA's way a probe `conftest<pid>.c` of `code`, without `-o`: its exit code, its
/// messages and whether the object was made.
fn probe(bench: &Bench, pid: u32, code: &str) -> (i32, String, bool) {
    let name = format!("conftest{pid}");
    bench.write(&format!("src/{name}.c"), code);
    // NVIDIA's flags name the PID of the conftest.sh that made them, not this probe's.
    let basename = format!("-DKBUILD_BASENAME=\"#conftest{}\"", pid + 7);
    let (rc, stderr) = bench.gcc(&["-O2", &basename, "-c", &format!("{name}.c")]);
    let object = bench.path(&format!("src/{name}.o"));
    let made = object.exists();
    let _ = std::fs::remove_file(object);
    (rc, stderr, made)
}

#[test]
fn a_probe_under_another_pid_hits_and_its_compile_error_is_served_again() {
    let Some(bench) = Bench::new() else { return };
    let present = "const char *p = KBUILD_BASENAME;\n";
    assert_eq!(probe(&bench, 111, present), (0, String::new(), true));
    assert_eq!(probe(&bench, 222, present), (0, String::new(), true));
    let absent = "int f(void) { return nope; }\n";
    let (rc, first, made) = probe(&bench, 333, absent);
    assert_eq!((rc, made), (1, false));
    assert!(first.contains("nope"), "{first}");
    let (rc, again, made) = probe(&bench, 444, absent);
    assert_eq!((rc, made), (1, false), "the probe fails again");
    assert_eq!(
        again,
        first.replace("333", "444"),
        "with the first failure's messages, naming this probe"
    );
    assert_eq!(
        bench.stats(),
        CompileStats {
            hits: 2,
            misses: 2,
            damaged: 0
        }
    );
    let (rc, _, made) = probe(&bench, 555, "int g(void) { return 1; }\n");
    assert_eq!((rc, made), (0, true), "another probe compiles");
    assert_eq!(bench.stats().misses, 3);
}

#[test]
fn a_compile_without_o_writes_and_serves_the_source_s_object() {
    let Some(bench) = Bench::new() else { return };
    bench.write("src/two.c", "int two(void) { return 2; }\n");
    let (rc, stderr) = bench.gcc(&["-c", "two.c"]);
    assert_eq!(rc, 0, "{stderr}");
    let first = std::fs::read(bench.path("src/two.o")).expect("two.o");
    std::fs::remove_file(bench.path("src/two.o")).expect("rm");
    let (rc, stderr) = bench.gcc(&["-c", "two.c"]);
    assert_eq!(rc, 0, "{stderr}");
    assert_eq!(
        std::fs::read(bench.path("src/two.o")).expect("two.o"),
        first
    );
    assert_eq!(bench.stats().hits, 1);
}

/// Direct mode: the counts of compiles and preprocessor runs since the last call.
fn runs(bench: &Bench) -> (usize, usize) {
    let mut counts = [0, 0];
    for (count, name) in counts.iter_mut().zip(["compiles", "preprocessed"]) {
        let path = bench.path(name);
        *count = std::fs::read_to_string(&path).map_or(0, |t| t.lines().count());
        let _ = std::fs::remove_file(path);
    }
    (counts[0], counts[1])
}

/// Compiles `one.c` with `-Ia -Ib` (its `#include <x.h>`); returns the object.
fn compile_searching(bench: &Bench) -> Vec<u8> {
    let args = [
        "-O2",
        "-Ia",
        "-I./b",
        "-Wp,-MMD,.one.o.d",
        "-c",
        "-o",
        "one.o",
        "one.c",
    ];
    let (rc, stderr) = bench.gcc(&args);
    assert_eq!(rc, 0, "{stderr}");
    std::fs::read(bench.path("src/one.o")).expect("object")
}

#[test]
fn a_compile_seen_before_is_served_without_preprocessing_it() {
    let Some(bench) = Bench::counting(":") else {
        return;
    };
    bench.write("src/one.c", SOURCE);
    bench.write("src/one.h", "#define VALUE 1\n");
    let first = bench.compile(&[]);
    assert_eq!(runs(&bench), (1, 1), "a miss preprocesses and compiles");
    std::fs::remove_file(bench.path("src/one.o")).expect("rm");
    assert_eq!(bench.compile(&[]), first, "the same bytes");
    assert_eq!(runs(&bench), (0, 0), "a direct hit runs neither");
    bench.write("src/one.h", "#define VALUE 2\n");
    assert_ne!(bench.compile(&[]), first, "a changed header is compiled in");
    assert_eq!(runs(&bench), (1, 1));
    bench.compile(&["-DEXTRA"]);
    assert_eq!(runs(&bench), (1, 1), "a changed flag misses");
    bench.write("src/one.h", "#define VALUE 1\n");
    assert_eq!(bench.compile(&[]), first);
    assert_eq!(
        runs(&bench),
        (0, 1),
        "the first entry, found by preprocessing"
    );
    assert_eq!(bench.compile(&[]), first);
    assert_eq!(runs(&bench), (0, 0), "and directly again");
}

#[test]
fn a_header_that_appears_earlier_in_the_search_is_never_missed() {
    let Some(bench) = Bench::counting(":") else {
        return;
    };
    for sub in ["src/a", "src/b", "src/sub"] {
        std::fs::create_dir_all(bench.path(sub)).expect("mkdir");
    }
    bench.write(
        "src/one.c",
        "#include \"sub/s.h\"\nint f(void) { return VALUE + Y; }\n",
    );
    // A quoted include in sub/ found through -I: sub/ itself is looked in first.
    bench.write("src/sub/s.h", "#include <x.h>\n#include \"y.h\"\n");
    bench.write("src/b/x.h", "#define VALUE 1\n");
    bench.write("src/b/y.h", "#define Y 10\n");
    let kernel = compile_searching(&bench);
    compile_searching(&bench);
    assert_eq!(runs(&bench), (1, 1), "compiled once, then served directly");
    // As MOFED's compat headers shadow the kernel's: the same name, earlier in the search.
    bench.write("src/a/x.h", "#define VALUE 2\n");
    let shadowed = compile_searching(&bench);
    assert_ne!(shadowed, kernel, "the shadowing header is compiled in");
    assert_eq!(runs(&bench), (1, 1));
    bench.write("src/sub/y.h", "#define Y 20\n");
    let beside = compile_searching(&bench);
    assert_ne!(
        beside, shadowed,
        "the header beside its includer is compiled in"
    );
    assert_eq!(runs(&bench), (1, 1));
    std::fs::remove_file(bench.path("src/a/x.h")).expect("rm");
    std::fs::remove_file(bench.path("src/sub/y.h")).expect("rm");
    assert_eq!(
        compile_searching(&bench),
        kernel,
        "gone again: the first entry"
    );
    assert_eq!(runs(&bench), (0, 1));
    assert_eq!(compile_searching(&bench), kernel);
    assert_eq!(runs(&bench), (0, 0));
}

#[test]
fn a_source_using_the_time_or_has_include_is_always_preprocessed() {
    let Some(bench) = Bench::counting(":") else {
        return;
    };
    for (name, text) in [
        ("src/stamp.c", "const char *when = __TIME__;\n"),
        (
            "src/maybe.c",
            "#if __has_include(<maybe.h>)\nint m;\n#endif\nint n;\n",
        ),
    ] {
        bench.write(name, text);
        let source = name.trim_start_matches("src/");
        for _ in 0..2 {
            let (rc, stderr) = bench.gcc(&["-c", "-o", "t.o", source]);
            assert_eq!(rc, 0, "{stderr}");
        }
        assert_eq!(runs(&bench).1, 2, "{source}: preprocessed each time");
    }
}

#[test]
fn a_damaged_manifest_is_passed_over_and_written_again() {
    let Some(bench) = Bench::counting(":") else {
        return;
    };
    bench.write("src/one.c", SOURCE);
    bench.write("src/one.h", "#define VALUE 1\n");
    let first = bench.compile(&[]);
    let manifests: Vec<PathBuf> = walk(&bench.path("cache"))
        .into_iter()
        .filter(|p| p.ends_with("key"))
        .collect();
    assert_eq!(manifests.len(), 1, "one manifest: {manifests:?}");
    std::fs::write(&manifests[0], "0".repeat(64)).expect("damage");
    runs(&bench);
    assert_eq!(bench.compile(&[]), first);
    assert_eq!(runs(&bench), (0, 1), "found by preprocessing");
    assert_eq!(bench.compile(&[]), first);
    assert_eq!(runs(&bench), (0, 0), "the manifest written again");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn compiler_names() {
    for name in [
        "cc",
        "gcc",
        "g++",
        "c++",
        "gcc-12",
        "x86_64-linux-gnu-gcc-12",
        "x86_64-redhat-linux-gcc",
    ] {
        assert!(is_compiler_name(name), "{name}");
    }
    for name in [
        "gcc-ar",
        "gcc-nm-12",
        "x86_64-linux-gnu-gcc-ar-12",
        "gccgo",
        "clang",
        "ccache",
    ] {
        assert!(!is_compiler_name(name), "{name}");
    }
}

#[test]
fn the_log_counts_hits_misses_and_damage_and_lists_the_keys() {
    let (a, b) = ("a".repeat(64), "b".repeat(64));
    let log = format!("hit {a} a.c\nmiss {b} b.c\nhit {a} c.c\ndamaged {b} d.c\nmiss {b} d.c\n");
    assert_eq!(CompileLog::parse(&log).keys, [a.clone(), b.clone()]);
    assert_eq!(entry_dir(Path::new("/c"), &a), Path::new("/c/aa").join(&a));
    let stats = CompileLog::parse(&log).stats;
    assert_eq!(
        stats,
        CompileStats {
            hits: 2,
            misses: 2,
            damaged: 1
        }
    );
}
