//! `imgbuild build`'s options, under headings: outputs, cache and registry, boot, secrets,
//! variables. A doc comment's first paragraph is `-h`'s line; the rest shows with `--help`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::shared::{parse_size, SecureBootArgs, VarArgs};

/// Output formats of `build`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum OutputFormat {
    /// An OCI image layout folder.
    Oci,
    /// A docker-archive tar (what Warewulf imports).
    DockerArchive,
    /// A plain rootfs folder.
    Chroot,
}

/// Layer compressions of `build`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LayerCompression {
    /// gzip, parallel members.
    Gzip,
    /// zstd level 3, multithreaded.
    Zstd,
}

/// `imgbuild build`.
#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    /// The images to build.
    #[arg(required = true)]
    pub images: Vec<String>,
    /// Build this many images at once (they share the download, base and layer caches).
    #[arg(long, short = 'j', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// Refuse downloads not pinned in mirror.lock (for CI).
    #[arg(long)]
    pub locked: bool,
    /// Seconds a download may send nothing before it counts as stalled.
    ///
    /// Over mirror.toml's timeout_secs; default 30.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Do not run verify at the end.
    #[arg(long)]
    pub no_verify: bool,
    /// Where outputs go: OUT/<image>/{oci, <image>.tar, rootfs}.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "out",
        help_heading = "Outputs"
    )]
    pub out: PathBuf,
    /// Outputs to write (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "oci,docker-archive",
        help_heading = "Outputs"
    )]
    pub format: Vec<OutputFormat>,
    /// Push each built image to a registry: docker://HOST/REPO[:TAG].
    ///
    /// With several images, put {image} in it. Credentials come from REGISTRY_AUTH_FILE,
    /// $XDG_RUNTIME_DIR/containers/auth.json (or /run/containers/$UID/auth.json) or
    /// ~/.docker/config.json.
    #[arg(long, value_name = "REF", help_heading = "Outputs")]
    pub push: Option<String>,
    /// The Warewulf that imports the image (4.5, 4.6, 4.7).
    ///
    /// A build it could import nothing of (an OCI layout alone, a zstd image pushed for 4.5/4.6)
    /// is refused before any work, and the import command printed is that version's. Default:
    /// the site config's `warewulf`, else 4.6's command and no check.
    #[arg(long, value_enum, value_name = "VERSION", help_heading = "Outputs")]
    pub warewulf: Option<crate::warewulf::WarewulfVersion>,
    /// Layer compression: gzip (what every consumer reads) or zstd.
    ///
    /// zstd is faster and smaller but needs a consumer that reads zstd layers. The base layer
    /// stays gzip.
    #[arg(long, value_enum, default_value_t = LayerCompression::Gzip, help_heading = "Outputs")]
    pub compression: LayerCompression,
    /// gzip level of the layers (1 fastest, 9 smallest).
    ///
    /// A cached layer is kept as it was first written, whatever the level asked later.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=9), env = "IMGBUILD_GZIP_LEVEL", hide_env_values = true, help_heading = "Outputs")]
    pub gzip_level: u32,
    /// Write one layer holding the whole rootfs instead of one per role.
    #[arg(long, help_heading = "Outputs")]
    pub squash: bool,
    /// Also draw where the build's time went, every image a row.
    ///
    /// Each image's own is OUT/<image>/timeline.svg.
    #[arg(long, value_name = "FILE.svg", help_heading = "Outputs")]
    pub timeline: Option<PathBuf>,
    /// Run every role, even those whose layer is cached.
    #[arg(long, help_heading = "Cache and registry")]
    pub no_cache: bool,
    /// Keep the cache under this size (K, M, G, T: powers of 1024).
    ///
    /// The least recently used layers are removed when the build ends. Default: the site
    /// config's cache_max, else a tenth of the cache's filesystem (at least 4G).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, env = "IMGBUILD_CACHE_MAX", help_heading = "Cache and registry")]
    pub cache_max: Option<u64>,
    /// Look for each role's layer in this registry repository (docker://HOST/REPO) first.
    ///
    /// As another machine's --cache-to left it. Default: mirror.toml's cache_from, else the
    /// site config's.
    #[arg(
        long,
        value_name = "REF",
        env = "IMGBUILD_CACHE_FROM",
        help_heading = "Cache and registry"
    )]
    pub cache_from: Option<String>,
    /// Write every layer this build makes or uses to this registry repository.
    ///
    /// docker://HOST/REPO, for other machines' --cache-from. Default: mirror.toml's cache_to,
    /// else the site config's. Credentials as for --push.
    #[arg(
        long,
        value_name = "REF",
        env = "IMGBUILD_CACHE_TO",
        help_heading = "Cache and registry"
    )]
    pub cache_to: Option<String>,
    /// The signature policy bases are pulled under (containers/image's policy.json).
    ///
    /// Instead of ~/.config/containers/policy.json or /etc/containers/policy.json.
    #[arg(long, value_name = "FILE", help_heading = "Cache and registry")]
    pub signature_policy: Option<PathBuf>,
    /// Then boot each image in QEMU as a node boots (`imgbuild boot`).
    ///
    /// The boot is added to its report, and the build fails when a boot check fails.
    #[arg(long, help_heading = "Boot")]
    pub boot: bool,
    /// With --boot: a folder laid over the image at boot (repeatable).
    ///
    /// As Warewulf sends a node's overlays (a munge key, sssd.conf), so units that need the
    /// site's files start.
    #[arg(
        long = "boot-overlay",
        value_name = "DIR",
        requires = "boot",
        help_heading = "Boot"
    )]
    pub boot_overlays: Vec<PathBuf>,
    /// With --boot: Secure Boot, as `boot --secure-boot`.
    #[command(flatten, next_help_heading = "Boot")]
    pub boot_secure: SecureBootArgs,
    /// A build secret, as BuildKit's: id=module-signing,src=DIR or id=image-signing,src=FILE.
    ///
    /// id=module-signing: DIR holds the site's module signing (MOK) key, unencrypted PEM named
    /// key.pem, mok.key or MOK.priv, and its certificate (PEM or DER) named cert.pem, cert.der,
    /// mok.pub, MOK.der or MOK.pem. The key must be the certificate's. Only the roles that build
    /// modules (the recipe's module_signing_roles, default mofed and nvidia) see it, at
    /// module_signing_key and module_signing_cert, while they run; it never enters a layer, the
    /// cache or the report. The image is labelled with the certificate and verify holds its
    /// modules to it. mirror.toml's [secrets], else the site config's, can name the folder a
    /// site mounts instead (this flag goes first).
    #[arg(long = "secret", value_name = "id=ID,src=DIR", value_parser = crate::secret::parse, help_heading = "Secrets")]
    pub secrets: Vec<crate::secret::BuildSecret>,
    /// Variables, tags and mirror.
    #[command(flatten, next_help_heading = "Variables")]
    pub vars: VarArgs,
}
