//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::progress::mode::Progress;

/// The version, the commit and its date (`0.1.0 (commit 1a2b3c4d5e6f, 2026-11-29)`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("IMGBUILD_COMMIT"),
    ", ",
    env!("IMGBUILD_COMMIT_DATE"),
    ")"
);

/// Builds Warewulf-ready OCI images from Ansible-style recipes and roles.
#[derive(Debug, Parser)]
#[command(name = "imgbuild", version = VERSION, about, long_about = None)]
pub struct Cli {
    /// Run as if started in DIR (the project root or below it).
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print machine-readable JSON (progress as JSON events, as --progress json).
    #[arg(long, global = true)]
    pub json: bool,
    /// How progress is shown (auto: tty on a terminal, plain otherwise).
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "TYPE",
        default_value_t,
        env = "IMGBUILD_PROGRESS"
    )]
    pub progress: Progress,
    /// Show only errors and the final result.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Show every line of every command a task runs, not only a failed one's last lines.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Whether output is JSON: `--json` or `--progress json`.
    pub fn json(&self) -> bool {
        self.json || self.progress == Progress::Json
    }

    /// The progress settings the command line asks for.
    pub fn progress_mode(&self) -> crate::progress::mode::Mode {
        use crate::progress::mode::{Mode, Verbosity};
        let verbosity = match (self.quiet, self.verbose) {
            (true, _) => Verbosity::Quiet,
            (false, true) => Verbosity::Verbose,
            (false, false) => Verbosity::Normal,
        };
        Mode {
            progress: self.progress,
            verbosity,
        }
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the images of the project, one line each.
    List,
    /// Show the resolved tasks of an image, without running anything.
    Plan(PlanArgs),
    /// Show the version matrix (image, OS, kernel, MOFED, NVIDIA), or edit it with `matrix set`.
    Matrix(MatrixArgs),
    /// List tasks that would have no effect, or a surprising one, in an image build.
    Lint(LintArgs),
    /// List the images whose inputs changed since a git revision (for CI).
    Affected(AffectedArgs),
    /// Build images: base, one layer per role (cached), OCI layout and docker-archive.
    Build(Box<BuildArgs>),
    /// Run an image's tasks in an existing rootfs folder (no image is written).
    Apply(ApplyArgs),
    /// Manage the layer cache.
    Cache(CacheArgs),
    /// The site mirror: serve a local copy.
    Mirror(MirrorArgs),
    /// Check a finished image: one pinned kernel, modules built for it, MOFED, NVIDIA, services.
    Verify(VerifyArgs),
    /// Write an image's SBOM (CycloneDX 1.5 JSON): packages, kernel, out-of-tree modules, firmware, pins.
    Sbom(SbomArgs),
    /// Boot an image as Warewulf boots a node, in QEMU, and load its modules.
    Boot(BootArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (imgbuild.1, one imgbuild-<command>.1 per command) into DIR, as
    /// scripts/package does for the packages.
    #[command(hide = true)]
    ManPages {
        /// The folder to write them into (made if missing).
        dir: PathBuf,
    },
}

/// Variables and tag selection shared by commands that plan.
#[derive(Debug, Args, Clone, Default)]
pub struct VarArgs {
    /// Set a variable, highest precedence: KEY=VALUE, a JSON/YAML mapping, or @FILE.
    #[arg(short = 'e', long = "extra-vars", value_name = "K=V")]
    pub extra_vars: Vec<String>,
    /// Only tasks with these tags (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Leave out tasks with these tags (comma-separated).
    #[arg(long = "skip-tags", value_delimiter = ',')]
    pub skip_tags: Vec<String>,
    /// The site mirror URL, over mirror.toml and the recipe.
    #[arg(long, value_name = "URL")]
    pub mirror: Option<String>,
    /// Skip the recipe lints (for example nvidia before mofed).
    #[arg(long)]
    pub no_lint: bool,
    /// A vault password file, for vaulted values and files (run if it is executable; its
    /// output is the password). Repeatable.
    #[arg(
        long = "vault-password-file",
        alias = "vault-pass-file",
        value_name = "FILE"
    )]
    pub vault_password_files: Vec<PathBuf>,
    /// A vault password file for one vault id: [LABEL@]FILE. Repeatable; no prompt.
    #[arg(long = "vault-id", value_name = "[LABEL@]FILE")]
    pub vault_ids: Vec<String>,
}

/// `imgbuild plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The image (a file name below images/, without .yml).
    #[arg(required_unless_present = "role", conflicts_with = "role")]
    pub image: Option<String>,
    /// Plan one role folder (a role you downloaded) instead of an image.
    #[arg(long, value_name = "PATH")]
    pub role: Option<PathBuf>,
    /// With --role: the OS whose facts the role is planned for.
    #[arg(
        long,
        value_name = "OS",
        default_value = "rocky-9.5",
        requires = "role"
    )]
    pub os: String,
    /// Variables and tags.
    #[command(flatten)]
    pub vars: VarArgs,
}

/// `imgbuild lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// The images (default: all).
    pub images: Vec<String>,
}

/// `imgbuild apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The image whose plan to run.
    pub image: String,
    /// The rootfs folder to run it in (its /etc/os-release must match the recipe).
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// Only these roles (comma-separated); default: all of the recipe's roles.
    #[arg(long, value_delimiter = ',')]
    pub roles: Vec<String>,
    /// Report what would change; change nothing.
    #[arg(long)]
    pub check: bool,
    /// Show before and after of changed files.
    #[arg(long)]
    pub diff: bool,
    /// Refuse downloads not pinned in mirror.lock.
    #[arg(long)]
    pub locked: bool,
    /// Seconds a download may send nothing before it counts as stalled (over mirror.toml's
    /// timeout_secs; default 30).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Variables, tags and mirror.
    #[command(flatten)]
    pub vars: VarArgs,
}

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

/// `imgbuild build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The images to build.
    #[arg(required = true)]
    pub images: Vec<String>,
    /// Where outputs go: OUT/<image>/{oci, <image>.tar, rootfs}.
    #[arg(long, value_name = "DIR", default_value = "out")]
    pub out: PathBuf,
    /// Outputs to write (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "oci,docker-archive"
    )]
    pub format: Vec<OutputFormat>,
    /// Refuse downloads not pinned in mirror.lock (for CI).
    #[arg(long)]
    pub locked: bool,
    /// Seconds a download may send nothing before it counts as stalled (over mirror.toml's
    /// timeout_secs; default 30).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Push each built image to a registry: docker://HOST/REPO[:TAG]; with several images,
    /// put {image} in it. Credentials come from REGISTRY_AUTH_FILE or ~/.docker/config.json.
    #[arg(long, value_name = "REF")]
    pub push: Option<String>,
    /// Before running a role, look for its layer in this registry repository
    /// (docker://HOST/REPO), as another machine's --cache-to left it; default
    /// $IMGBUILD_CACHE_FROM, else mirror.toml's cache_from.
    #[arg(long, value_name = "REF")]
    pub cache_from: Option<String>,
    /// Write every layer this build makes or uses to this registry repository
    /// (docker://HOST/REPO), for other machines' --cache-from; default $IMGBUILD_CACHE_TO,
    /// else mirror.toml's cache_to. Credentials as for --push.
    #[arg(long, value_name = "REF")]
    pub cache_to: Option<String>,
    /// Run every role, even those whose layer is cached.
    #[arg(long)]
    pub no_cache: bool,
    /// Do not run verify at the end.
    #[arg(long)]
    pub no_verify: bool,
    /// The signature policy bases are pulled under (containers/image's policy.json), instead
    /// of ~/.config/containers/policy.json or /etc/containers/policy.json
    #[arg(long, value_name = "FILE")]
    pub signature_policy: Option<PathBuf>,
    /// Also draw where the build's time went, every image a row (each image's own is
    /// OUT/<image>/timeline.svg)
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<PathBuf>,
    /// Then boot each image in QEMU as a node boots (`imgbuild boot`), add the boot to its
    /// report, and fail when a boot check fails.
    #[arg(long)]
    pub boot: bool,
    /// With --boot: a folder laid over the image at boot as Warewulf sends a node's overlays
    /// (a munge key, sssd.conf), so units that need the site's files start (repeatable).
    #[arg(long = "boot-overlay", value_name = "DIR", requires = "boot")]
    pub boot_overlays: Vec<PathBuf>,
    /// With --boot: Secure Boot, as `boot --secure-boot`.
    #[command(flatten)]
    pub boot_secure: SecureBootArgs,
    /// gzip level of the layers (1 fastest, 9 smallest).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub gzip_level: u32,
    /// Layer compression: gzip (what every consumer reads) or zstd (faster, smaller; needs
    /// a consumer that reads zstd layers). The base layer stays gzip.
    #[arg(long, value_enum, default_value_t = LayerCompression::Gzip)]
    pub compression: LayerCompression,
    /// The Warewulf that imports the image (4.5, 4.6, 4.7): a build it could import nothing of
    /// (an OCI layout alone, a zstd image pushed for 4.5/4.6) is refused before any work, and
    /// the import command printed is that version's. Default: 4.6's command, no check.
    #[arg(long, value_enum, value_name = "VERSION")]
    pub warewulf: Option<crate::warewulf::WarewulfVersion>,
    /// Write one layer holding the whole rootfs instead of one per role.
    #[arg(long)]
    pub squash: bool,
    /// Keep the cache under this size (K, M, G, T: powers of 1024) by removing the least
    /// recently used layers when the build ends; default $IMGBUILD_CACHE_MAX, else a tenth of
    /// the cache's filesystem (at least 4G).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub cache_max: Option<u64>,
    /// Build this many images at once (they share the download, base and layer caches).
    #[arg(long, short = 'j', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// A build secret, as BuildKit's: id=module-signing,src=DIR, DIR holding the site's module
    /// signing (MOK) key, unencrypted PEM named key.pem, mok.key or MOK.priv, and its
    /// certificate (PEM or DER) named cert.pem, cert.der, mok.pub, MOK.der or MOK.pem. The key
    /// must be the certificate's. Only the roles that build modules (the recipe's
    /// module_signing_roles, default mofed and nvidia) see it, at module_signing_key and
    /// module_signing_cert, while they run; it never enters a layer, the cache or the report.
    /// The image is labelled with the certificate and verify holds its modules to it.
    /// mirror.toml's [secrets] can name the folder a site mounts instead (this flag goes first).
    #[arg(long = "secret", value_name = "id=ID,src=DIR", value_parser = crate::secret::parse)]
    pub secrets: Vec<crate::secret::BuildSecret>,
    /// Variables, tags and mirror.
    #[command(flatten)]
    pub vars: VarArgs,
}

/// Layer compressions of `build`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LayerCompression {
    /// gzip, parallel members.
    Gzip,
    /// zstd level 3, multithreaded.
    Zstd,
}

/// `imgbuild mirror`.
#[derive(Debug, Args)]
pub struct MirrorArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: MirrorAction,
}

/// Mirror actions.
#[derive(Debug, Subcommand)]
pub enum MirrorAction {
    /// Serve a folder over HTTP (GET, HEAD, Range) until stopped: a mirror for demos and tests.
    ///
    /// It listens on 127.0.0.1 unless --addr says otherwise and serves at most 64 connections at
    /// once. A site's mirror belongs on a real web server (nginx, Apache), which serves the same
    /// folder the same way.
    Serve {
        /// The folder to serve.
        dir: PathBuf,
        /// Address to listen on (loopback by default).
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: String,
    },
    /// Check that every artifact the images download is on the mirror (HEAD), and pinned.
    Check(MirrorImagesArgs),
    /// Download the artifacts mirror.lock does not pin yet, and pin them.
    Lock(MirrorImagesArgs),
}

/// `imgbuild mirror check|lock`.
#[derive(Debug, Args)]
pub struct MirrorImagesArgs {
    /// The images (default: all).
    pub images: Vec<String>,
    /// The site mirror URL, over mirror.toml and the recipe.
    #[arg(long, value_name = "URL")]
    pub mirror: Option<String>,
    /// Seconds a download may send nothing before it counts as stalled (`mirror lock`; over
    /// mirror.toml's timeout_secs; default 30).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
}

/// `imgbuild affected`.
#[derive(Debug, Args)]
pub struct AffectedArgs {
    /// The git revision to compare the working tree with (for example origin/main).
    #[arg(long, value_name = "REV")]
    pub since: String,
}

/// `imgbuild verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A rootfs folder, a Warewulf chroot or image (`.img`, `.img.gz`), an OCI layout folder, an
    /// oci-archive or docker-archive tar, or `docker://REGISTRY/REPO:TAG`.
    pub image: String,
    /// The pinned kernel (default: the image's io.imgbuild.kernel label, else its one /boot/vmlinuz-*).
    #[arg(long, value_name = "KVER")]
    pub kernel: Option<String>,
    /// The MOFED version to expect (default: the io.imgbuild.mofed label).
    #[arg(long, value_name = "VERSION")]
    pub mofed: Option<String>,
    /// The DOCA version whose DOCA-OFED to expect in place of MOFED (default: the
    /// io.imgbuild.doca label).
    #[arg(long, value_name = "VERSION")]
    pub doca: Option<String>,
    /// The NVIDIA version to expect (default: the io.imgbuild.nvidia label).
    #[arg(long, value_name = "VERSION")]
    pub nvidia: Option<String>,
    /// The NVIDIA kernel modules to expect, open or proprietary (default: the
    /// io.imgbuild.nvidia-flavor label).
    #[arg(long, value_name = "FLAVOR", value_parser = parse_nvidia_flavor)]
    pub nvidia_flavor: Option<verify::NvidiaFlavor>,
    /// Require an initramfs for the kernel.
    #[arg(long)]
    pub initramfs: bool,
    /// A subnet-manager image: allow `opensmd` to be enabled.
    #[arg(long)]
    pub allow_opensm: bool,
    /// Require no compiler, kernel headers or DKMS (default: the io.imgbuild.no-build-tools
    /// label, set when the recipe names build_only_packages).
    #[arg(long)]
    pub no_build_tools: bool,
    /// Require every out-of-tree module to be signed by this certificate (PEM or DER: the
    /// site's MOK certificate, for nodes that boot with Secure Boot).
    #[arg(long, value_name = "FILE")]
    pub signer_cert: Option<std::path::PathBuf>,
    /// Fail when the image no longer matches this SBOM (a package, version, module or
    /// firmware digest added, removed or changed).
    #[arg(long, value_name = "FILE")]
    pub sbom: Option<PathBuf>,
    /// Also check the build's provenance (provenance.json beside the SBOM): that it vouches for
    /// the SBOM given with --sbom, which the image must still match
    #[arg(long, value_name = "FILE", requires = "sbom")]
    pub provenance: Option<PathBuf>,
}

/// `imgbuild sbom`.
#[derive(Debug, Args)]
pub struct SbomArgs {
    /// A rootfs folder, a Warewulf chroot or image (`.img`, `.img.gz`), an OCI layout folder, an
    /// oci-archive or docker-archive tar, or `docker://REGISTRY/REPO:TAG`.
    pub image: String,
    /// Write it to FILE (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Accelerators of `boot`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AccelArg {
    /// KVM where a short probe boot proves it works, TCG otherwise.
    Auto,
    /// KVM.
    Kvm,
    /// Software emulation.
    Tcg,
}

/// `imgbuild boot`.
#[derive(Debug, Args)]
pub struct BootArgs {
    /// An out/<image> folder, an OCI layout or a rootfs folder.
    pub image: PathBuf,
    /// VM memory (K, M, G); default sized from the image.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Seconds the boot may take before it is stopped.
    #[arg(long, value_name = "SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// The accelerator.
    #[arg(long, value_enum, default_value_t = AccelArg::Auto)]
    pub accel: AccelArg,
    /// Where the serial console is written (default: boot-console.log in an out/<image>
    /// folder, else in the current folder).
    #[arg(long, value_name = "FILE")]
    pub console: Option<PathBuf>,
    /// A folder laid over the image as one more archive, as Warewulf sends a node its system
    /// and runtime overlays (repeatable, in order).
    #[arg(long = "overlay", value_name = "DIR")]
    pub overlays: Vec<PathBuf>,
    /// A unit (or shell pattern) expected to fail without the site's overlays, beside those the
    /// recipe's boot_expect_failed names (repeatable).
    #[arg(long = "expect-failed", value_name = "UNIT")]
    pub expect_failed: Vec<String>,
    /// Secure Boot.
    #[command(flatten)]
    pub secure: SecureBootArgs,
}

/// Booting under Secure Boot (`boot`, `build --boot`).
#[derive(Debug, Args, Clone, Default)]
pub struct SecureBootArgs {
    /// Boot as a Warewulf 4.5+ node with Secure Boot boots: Debian's Secure Boot OVMF
    /// (Microsoft's keys), shim, Debian's signed GRUB, the image's own signed kernel, which
    /// then enforces module signatures; the modules' signer (the image's label) is enrolled as
    /// a MOK. Needs ovmf, shim-signed, grub-efi-amd64-signed, mtools and dosfstools.
    #[arg(long)]
    pub secure_boot: bool,
    /// With --secure-boot: the certificate (PEM or DER) to enrol as the MOK, instead of the
    /// image's module-signer label's.
    #[arg(
        long,
        value_name = "FILE",
        requires = "secure_boot",
        conflicts_with = "no_mok"
    )]
    pub mok_cert: Option<PathBuf>,
    /// With --secure-boot: enrol no MOK (modules signed with the site's key are then refused).
    #[arg(long, requires = "secure_boot")]
    pub no_mok: bool,
}

impl SecureBootArgs {
    /// The boot crate's request, when Secure Boot is asked for.
    pub fn request(&self) -> Option<boot::SecureBootRequest> {
        self.secure_boot.then(|| boot::SecureBootRequest {
            mok_cert: self.mok_cert.clone(),
            no_mok: self.no_mok,
        })
    }
}

/// `imgbuild cache`.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: CacheAction,
}

/// Cache actions.
#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// The cached layers: key, size, image role that made them.
    List,
    /// Remove layers no image's last build uses, blobs nothing names, and leftovers of
    /// interrupted builds.
    Prune,
    /// Check every entry in full (blobs and downloads hashed, layer and base folders against
    /// their stamps) and remove the damaged ones; exit 1 if any was.
    Verify,
    /// Remove the least recently used layers until the cache fits in a size.
    Gc {
        /// The size to keep under (K, M, G, T: powers of 1024); default $IMGBUILD_CACHE_MAX,
        /// else a tenth of the cache's filesystem (at least 4G).
        #[arg(long, value_name = "SIZE", value_parser = parse_size)]
        max: Option<u64>,
    },
}

/// Reads a size: bytes, or a number with K, M, G or T (powers of 1024; `G`, `GB`, `GiB` alike).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let number: u64 = number.parse().map_err(|_| {
        format!(
            "'{text}' is not a size: write bytes or a number with K, M, G or T (for example 20G)"
        )
    })?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}'; use K, M, G or T (for example 20G)"
            ))
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// Output formats of `matrix`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum MatrixFormat {
    /// Aligned columns.
    Table,
    /// A Markdown table.
    Markdown,
    /// A JSON array.
    Json,
    /// Comma-separated values.
    Csv,
}

/// `imgbuild matrix`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct MatrixArgs {
    /// Edit the matrix.
    #[command(subcommand)]
    pub action: Option<MatrixAction>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = MatrixFormat::Table)]
    pub format: MatrixFormat,
    /// Compare with the matrix at this git revision and mark the cells that changed.
    #[arg(long, value_name = "REV")]
    pub diff: Option<String>,
}

/// Matrix edits.
#[derive(Debug, Subcommand)]
pub enum MatrixAction {
    /// Set recipe variables in place, keeping comments, quoting and order: `set IMAGE VAR=VALUE...`.
    Set(MatrixSetArgs),
}

/// `imgbuild matrix set`.
#[derive(Debug, Args)]
pub struct MatrixSetArgs {
    /// The image, then VAR=VALUE assignments (only assignments with --all-images).
    #[arg(required = true, value_name = "IMAGE VAR=VALUE")]
    pub args: Vec<String>,
    /// Edit every recipe that sets the variable (narrow with --where).
    #[arg(long)]
    pub all_images: bool,
    /// With --all-images: only recipes where VAR currently equals VALUE.
    #[arg(long = "where", value_name = "VAR=VALUE", requires = "all_images")]
    pub filters: Vec<String>,
}

/// `--nvidia-flavor`: `open` or `proprietary`.
fn parse_nvidia_flavor(text: &str) -> Result<verify::NvidiaFlavor, String> {
    verify::NvidiaFlavor::parse(text)
        .ok_or_else(|| format!("'{text}' is no NVIDIA kernel module flavour: open or proprietary"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("20G"), Ok(20 << 30));
        assert_eq!(parse_size("20GiB"), Ok(20 << 30));
        assert_eq!(parse_size("300mb"), Ok(300 << 20));
        assert_eq!(parse_size(" 2T "), Ok(2 << 40));
        assert!(parse_size("20 parsecs").is_err_and(|e| e.contains("unknown unit")));
        assert!(parse_size("G").is_err_and(|e| e.contains("for example 20G")));
    }
}
