//! A site's registry as a build meets it (issue 30): Debian's docker-registry speaking HTTPS
//! with a certificate from the site's own CA (made by `openssl` here), asking for a client
//! certificate and for credentials (token auth), and reachable only through the site's proxy
//! (its name, `registry.site.test`, resolves nowhere but in the proxy). The build gets nothing
//! but podman's own configuration: the CA and client certificate in the user's `certs.d`, the
//! credentials in `auth.json` under `XDG_RUNTIME_DIR`, the proxy in `HTTPS_PROXY`. One runner
//! builds, pushes and shares its layers; another, with an empty cache, builds on the pushed
//! image and takes every layer from the registry. Its docker-archive for Warewulf 4.6 is read
//! back as 4.6 imports it (skopeo, then umoci 0.4.7). Without the CA, the build stops with one
//! line naming the host and what to configure. Needs root, debootstrap, docker-registry,
//! python3, openssl, skopeo and umoci.

use crate::common;
use crate::counting_proxy;
use crate::registry_server;
use crate::site_pki;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use counting_proxy::CountingProxy;
use registry_server::*;

const NAME: &str = "registry.site.test";

/// The registry, its proxy and two runners' homes.
struct Site {
    work: tempfile::TempDir,
    project: PathBuf,
    proxy: CountingProxy,
    registry: Registry,
    /// `registry.site.test:PORT`.
    host: String,
}

impl Site {
    fn new() -> Site {
        require_root();
        let work = tempfile::Builder::new()
            .prefix("imgbuild-site-registry-")
            .tempdir_in("/var/tmp")
            .expect("work dir");
        let pki = work.path().join("pki");
        std::fs::create_dir_all(&pki).expect("pki");
        site_pki::make_site_pki(&pki, &[&format!("DNS:{NAME}")]);
        let tls = RegistryTls {
            certificate: pki.join("srv.pem"),
            key: pki.join("srv.key"),
            client_ca: pki.join("ca.pem"),
        };
        let registry = start_registry_with(true, Some(&tls), "token.site.test");
        let port = registry
            .host
            .rsplit(':')
            .next()
            .unwrap_or_default()
            .to_owned();
        let project = work.path().join("project");
        copy_fixture("images", &project);
        Site {
            host: format!("{NAME}:{port}"),
            project,
            proxy: CountingProxy::start(),
            registry,
            work,
        }
    }

    /// A runner's home with podman's configuration: the CA and client certificate in
    /// `~/.config/containers/certs.d/<host>/` when `with_ca`, the credentials in
    /// `$XDG_RUNTIME_DIR/containers/auth.json`.
    fn runner(&self, name: &str, with_ca: bool) -> Runner {
        let root = self.work.path().join(name);
        let home = root.join("home");
        let certs_d = home.join(".config/containers/certs.d").join(&self.host);
        std::fs::create_dir_all(&certs_d).expect("certs.d");
        let pki = self.work.path().join("pki");
        let mut files = vec![("client.cert", "client.cert"), ("client.key", "client.key")];
        if with_ca {
            files.push(("ca.pem", "ca.crt"));
        }
        for (from, to) in files {
            std::fs::copy(pki.join(from), certs_d.join(to)).expect("certs.d file");
        }
        let runtime = root.join("run");
        std::fs::create_dir_all(runtime.join("containers")).expect("runtime dir");
        let written = auth_file(&runtime.join("containers"), &self.host, PASSWORD);
        assert_eq!(written, runtime.join("containers/auth.json"));
        let cache = root.join("cache");
        shared_base_cache(&cache);
        Runner {
            home,
            runtime,
            cache,
            out: root.join("out"),
        }
    }

    fn cache_repository(&self) -> String {
        format!("docker://{}/site/layer-cache", self.host)
    }
}

/// One build machine's own folders.
struct Runner {
    home: PathBuf,
    runtime: PathBuf,
    cache: PathBuf,
    out: PathBuf,
}

impl Runner {
    /// `imgbuild build` with only podman's configuration and the site's proxy in its
    /// environment.
    fn build(&self, site: &Site, args: &[&str]) -> std::process::Output {
        self.build_with(site, args, &[])
    }

    /// The same with more environment variables.
    fn build_with(
        &self,
        site: &Site,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> std::process::Output {
        let out = self.out.to_string_lossy().into_owned();
        let mut all = vec!["--json", "build", "--no-verify", "--out", &out];
        all.extend_from_slice(args);
        let mut command = Command::new(env!("CARGO_BIN_EXE_imgbuild"));
        command
            .arg("-C")
            .arg(&site.project)
            .args(&all)
            .env_remove("REGISTRY_AUTH_FILE")
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .env_remove("DOCKER_CONFIG")
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("HTTPS_PROXY", site.proxy.url())
            .env("HTTP_PROXY", site.proxy.url())
            .env("IMGBUILD_CACHE", &self.cache)
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .envs(envs.iter().copied());
        command.output().expect("run imgbuild")
    }
}

fn write_pulling_recipe(site: &Site, base: &str) {
    std::fs::write(
        site.project.join("images/site-pulled.yml"),
        format!(
            "- name: site-pulled.yml\n  hosts: localhost\n  vars:\n    bootstrap: docker\n    build_from: \"{base}\"\n    image_name: site-pulled\n    kernel_version: \"6.1.0-50-amd64\"\n    greeting: pulled\n  facts: {{distribution: Debian, distribution_version: \"12\"}}\n  roles: [plain]\n"
        ),
    )
    .expect("recipe");
}

#[test]
fn a_build_through_the_sites_https_registry_and_proxy_with_podmans_configuration() {
    let site = Site::new();
    let base = format!("{}/site/base:v1", site.host);
    let cache = site.cache_repository();

    // Runner A: builds the base image, pushes it and shares its layers.
    let a = site.runner("a", true);
    let pushed = built_event(&a.build(
        &site,
        &[
            "repro-test",
            "--push",
            &format!("docker://{base}"),
            "--cache-to",
            &cache,
        ],
    ));
    let through_proxy = site.proxy.forwarded();
    assert!(
        through_proxy > 0,
        "the registry is reached only through the proxy"
    );
    let manifest = pushed["manifest"].as_str().unwrap_or_default().to_owned();
    let stored = site
        .registry
        .data
        .join("docker/registry/v2/repositories/site/base/_manifests/revisions/sha256")
        .join(manifest.trim_start_matches("sha256:"));
    assert!(
        stored.is_dir(),
        "the registry holds the pushed manifest {manifest}"
    );

    // Runner B, an empty cache: builds on the pushed image, every layer from the registry,
    // and writes a docker-archive for Warewulf 4.6.
    write_pulling_recipe(&site, &base);
    let b = site.runner("b", true);
    let first = built_event(&b.build(
        &site,
        &[
            "site-pulled",
            "--cache-to",
            &cache,
            "--format",
            "docker-archive",
            "--warewulf",
            "4.6",
        ],
    ));
    let c = site.runner("c", true);
    let again = built_event(&c.build(
        &site,
        &[
            "site-pulled",
            "--cache-from",
            &cache,
            "--format",
            "docker-archive",
            "--warewulf",
            "4.6",
        ],
    ));
    assert_eq!(
        again["manifest"], first["manifest"],
        "the same image from shared layers"
    );
    let layers = again["layers"].as_array().cloned().unwrap_or_default();
    assert!(!layers.is_empty());
    assert!(
        layers
            .iter()
            .all(|l| l["from_registry"] == true || l["cached"] == true),
        "runner C takes its layers from the registry: {layers:#?}"
    );
    assert!(site.proxy.forwarded() > through_proxy);
    warewulf_4_6_imports(&c.out.join("site-pulled"));

    // Without the site's CA: one line naming the registry and where the CA goes, exit 1,
    // nothing written.
    let d = site.runner("d", false);
    let refused = d.build(
        &site,
        &[
            "repro-test",
            "--push",
            &format!("docker://{}/site/other:v1", site.host),
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let text = stderr(&refused);
    assert!(
        text.contains(&format!("{} is not trusted", site.host)),
        "{text}"
    );
    assert!(text.contains("certs.d"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
    assert!(
        !site
            .registry
            .data
            .join("docker/registry/v2/repositories/site/other")
            .exists(),
        "nothing pushed"
    );

    // The same runner with the registry marked insecure: its certificate is taken unverified
    // (the client certificate still offered), with a warning naming the host.
    let other = format!("docker://{}/site/other:v1", site.host);
    let taken = d.build_with(
        &site,
        &["repro-test", "--push", &other],
        &[("IMGBUILD_INSECURE_REGISTRIES", site.host.as_str())],
    );
    built_event(&taken);
    let warned = stderr(&taken);
    assert!(
        warned.contains(&format!(
            "the TLS certificate of {} is not verified",
            site.host
        )),
        "{warned}"
    );
    assert!(site
        .registry
        .data
        .join("docker/registry/v2/repositories/site/other")
        .exists());
}

/// Reads the docker-archive in `out` as Warewulf 4.6 imports it: containers/image copies it
/// to an OCI layout (skopeo), umoci 0.4.7 unpacks that.
fn warewulf_4_6_imports(out: &Path) {
    let archive = std::fs::read_dir(out)
        .expect("outputs")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "tar"))
        .expect("a docker-archive");
    let layout = out.join("ww-layout");
    let copied = Command::new("skopeo")
        .arg("copy")
        .arg(format!("docker-archive:{}", archive.display()))
        .arg(format!("oci:{}:ww", layout.display()))
        .output()
        .expect("skopeo");
    assert!(copied.status.success(), "skopeo copy: {}", stderr(&copied));
    let bundle = out.join("ww-bundle");
    let unpacked = Command::new("umoci")
        .args(["unpack", "--image"])
        .arg(format!("{}:ww", layout.display()))
        .arg(&bundle)
        .output()
        .expect("umoci");
    assert!(
        unpacked.status.success(),
        "umoci unpack: {}",
        stderr(&unpacked)
    );
    let greeting =
        std::fs::read_to_string(bundle.join("rootfs/srv/plain/greeting")).unwrap_or_default();
    assert!(
        greeting.starts_with("pulled from"),
        "the role's file: {greeting:?}"
    );
    assert!(
        bundle.join("rootfs/usr/bin").is_dir(),
        "the pulled base below it"
    );
}
