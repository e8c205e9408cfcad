//! Text shown after the options: examples, and the environment variables a command reads that
//! no option names (those an option takes say so beside it, as `[env: ...]`).

/// The files and variables every command reads.
macro_rules! env_site {
    () => {
        "  IMGBUILD_CONFIG        the one site defaults file to read, in place of\n                         /etc/imgbuild/config.toml and $XDG_CONFIG_HOME/imgbuild/config.toml\n  XDG_CONFIG_HOME        where the user's config.toml is (default ~/.config)\n  IMGBUILD_CACHE         the cache folder (over the site config's cache_dir)\n  XDG_CACHE_HOME         the cache's default place: $XDG_CACHE_HOME/imgbuild (~/.cache/imgbuild)\n"
    };
}

/// What progress reads.
macro_rules! env_progress {
    () => {
        "  TERM                   TERM=dumb gets plain lines, never cursor escapes\n  CI                     set: plain lines, as without a terminal\n  IMGBUILD_HEARTBEAT_SECS  seconds between plain `still running` lines (default 15)\n"
    };
}

/// What downloads and registries read.
macro_rules! env_network {
    () => {
        "  REGISTRY_AUTH_FILE     registry credentials (else $XDG_RUNTIME_DIR/containers/auth.json,\n                         /run/containers/$UID/auth.json, $DOCKER_CONFIG/config.json)\n  CONTAINERS_REGISTRIES_CONF  registries.conf (mirrors, insecure registries)\n  IMGBUILD_INSECURE_REGISTRIES  registries reached without TLS checks (comma-separated)\n  SSL_CERT_FILE, SSL_CERT_DIR  the site's CAs, beside the system's\n  HTTPS_PROXY, HTTP_PROXY, NO_PROXY  proxies, as Go reads them\n"
    };
}

/// What planning with vaulted values reads.
macro_rules! env_vault {
    () => {
        "  ANSIBLE_VAULT_PASSWORD_FILE  a vault password file, beside --vault-password-file\n  ANSIBLE_COLLECTIONS_PATH  where the machine's Ansible collections are\n"
    };
}

/// `imgbuild --help`'s environment.
pub const ROOT: &str = concat!(
    "Environment:\n",
    env_site!(),
    env_progress!(),
    env_network!(),
    env_vault!(),
    "\nSite defaults: /etc/imgbuild/config.toml, then ~/.config/imgbuild/config.toml, then the\nproject's mirror.toml, then options; `imgbuild config` shows what is in force."
);

/// `build`'s examples.
macro_rules! build_examples {
    () => {
        "Examples:
  imgbuild build rocky-9.5-compute
  imgbuild build -j 2 --progress plain rocky-9.5-compute ubuntu-24.04-compute
  imgbuild build --format docker-archive --warewulf 4.6 rocky-9.5-compute
  imgbuild build --push 'docker://registry.site/{image}:latest' \\
      --cache-to docker://registry.site/imgbuild-cache rocky-9.5-compute debian-12-compute
  imgbuild build --secret id=module-signing,src=/run/secrets/mok --boot --secure-boot \\
      rocky-9.5-compute
"
    };
}

/// `build -h`'s text after the options: examples.
pub const BUILD: &str = build_examples!();

/// `build --help`'s text after the options: examples and the environment.
pub const BUILD_LONG: &str = concat!(
    build_examples!(),
    "\nEnvironment:\n",
    env_site!(),
    "  SOURCE_DATE_EPOCH      every timestamp of the image (default: the inputs' newest commit)\n",
    env_progress!(),
    env_network!(),
    env_vault!(),
);

/// `apply --help`, `plan --help`, `mirror --help`: the environment.
pub const PLANNING: &str = concat!(
    "Environment:\n",
    env_site!(),
    env_progress!(),
    env_network!(),
    env_vault!(),
);

/// `cache --help`, `config --help`: the environment.
pub const CACHE: &str = concat!("Environment:\n", env_site!());

/// `verify --help`, `sbom --help`, `boot --help`: reading an image from a registry.
pub const IMAGES: &str = concat!("Environment:\n", env_site!(), env_network!());
