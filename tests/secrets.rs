//! Mirror credentials in a URL (`http://user:token@mirror/`) never reach the output, the
//! errors, the plan, the build report or the image. Needs root and debootstrap.

mod common;

use std::path::Path;

use common::*;

const TOKEN: &str = "S3cr3t-m1rror-t0ken";

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_mirror_token_stays_out_of_output_reports_and_the_image() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-secrets-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    copy_fixture("interrupts", &project);
    let cache = work.path().join("cache");
    shared_base_cache(&cache);
    let served = work.path().join("mirror");
    std::fs::create_dir_all(&served).expect("mkdir");
    std::fs::write(served.join("slow.bin"), b"the artifact\n").expect("write");
    let base = serve_dir(&served);
    let mirror = base.replacen("http://", &format!("http://bot:{TOKEN}@"), 1);
    let out = work.path().join("out");
    let env = [
        ("IMGBUILD_CACHE", cache.as_path()),
        ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
    ];
    let out_arg = out.to_string_lossy().into_owned();
    let build = |marker: &str| {
        imgbuild_env(
            &project,
            &[
                "build",
                "slow",
                "--no-verify",
                "--out",
                &out_arg,
                "--mirror",
                &mirror,
                "-e",
                "download=true",
                "-e",
                marker,
            ],
            &env,
        )
    };

    let built = build("marker=secret-one");
    assert!(built.status.success(), "{}", stderr(&built));
    assert!(!contains(&built.stdout, TOKEN) && !contains(&built.stderr, TOKEN));
    for file in ["report.json", "report.md", "slow.tar"] {
        let bytes = std::fs::read(out.join("slow").join(file)).expect(file);
        assert!(!contains(&bytes, TOKEN), "the token is in {file}");
    }
    for args in [
        vec!["plan", "slow", "--mirror", &mirror, "-e", "download=true"],
        vec![
            "--json",
            "plan",
            "slow",
            "--mirror",
            &mirror,
            "-e",
            "download=true",
        ],
    ] {
        let plan = imgbuild_env(&project, &args, &env);
        assert!(plan.status.success(), "{}", stderr(&plan));
        assert!(
            stdout(&plan).contains("bot:***@"),
            "the URL is shown, redacted"
        );
        assert!(!contains(&plan.stdout, TOKEN), "the token is in the plan");
    }

    // A failing download: the error names the URL without the token.
    std::fs::remove_file(served.join("slow.bin")).expect("rm");
    std::fs::remove_dir_all(cache.join("downloads")).expect("forget the download");
    let failed = build("marker=secret-two");
    assert_eq!(failed.status.code(), Some(1));
    assert!(stderr(&failed).contains("slow.bin"), "{}", stderr(&failed));
    assert!(
        !contains(&failed.stdout, TOKEN) && !contains(&failed.stderr, TOKEN),
        "{}",
        stderr(&failed)
    );
}
