//! The command line.

use std::path::PathBuf;

mod build;
mod help;
mod shared;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use build::{BuildArgs, LayerCompression, OutputFormat};
pub use shared::{parse_age, parse_size, SecureBootArgs, VarArgs};

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
#[command(name = "imgbuild", version = VERSION, about, long_about = None, after_long_help = help::ROOT)]
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
    #[command(after_long_help = help::PLANNING)]
    Plan(PlanArgs),
    /// Show the version matrix (image, OS, kernel, MOFED, NVIDIA), or edit it with `matrix set`.
    Matrix(MatrixArgs),
    /// List tasks that would have no effect, or a surprising one, in an image build.
    Lint(LintArgs),
    /// List the images whose inputs changed since a git revision (for CI).
    ///
    /// With --json, a CI matrix of them (`include`), the layer stages several of them share
    /// (`shared`: the images and the layers, as their plans predict them), and the order to
    /// build them in: `first`, one image through each shared stage, to build with --cache-to;
    /// `then`, the rest, to build after them with --cache-from.
    Affected(AffectedArgs),
    /// Build images: base, one layer per role (cached), OCI layout and docker-archive.
    #[command(after_help = help::BUILD, after_long_help = help::BUILD_LONG)]
    Build(Box<BuildArgs>),
    /// Run an image's tasks in an existing rootfs folder (no image is written).
    #[command(after_long_help = help::PLANNING)]
    Apply(ApplyArgs),
    /// Manage the layer cache.
    #[command(after_long_help = help::CACHE)]
    Cache(CacheArgs),
    /// The site mirror: serve a local copy, check it, pin its artifacts.
    #[command(after_long_help = help::PLANNING)]
    Mirror(MirrorArgs),
    /// Check a finished image: one pinned kernel, modules built for it, MOFED, NVIDIA, services.
    #[command(after_long_help = help::IMAGES)]
    Verify(VerifyArgs),
    /// Write an image's SBOM (CycloneDX 1.5 JSON): packages, kernel, out-of-tree modules, firmware, pins.
    #[command(after_long_help = help::IMAGES)]
    Sbom(SbomArgs),
    /// Boot an image as Warewulf boots a node, in QEMU, and load its modules.
    #[command(after_long_help = help::IMAGES)]
    Boot(BootArgs),
    /// Print the site defaults in force and where each comes from.
    ///
    /// Read in order, each over the one before: the defaults, /etc/imgbuild/config.toml, then
    /// $XDG_CONFIG_HOME/imgbuild/config.toml (~/.config), then the project's mirror.toml, then
    /// environment variables and options. IMGBUILD_CONFIG names one file to read in place of
    /// the first two.
    #[command(after_long_help = help::CACHE)]
    Config,
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
    pub nvidia_flavor: Option<spec::NvidiaFlavor>,
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
    /// interrupted builds; with --registry, the tags of a registry cache no recent build used.
    ///
    /// With --registry, every build that writes that cache (--cache-to) leaves a record of the
    /// tags it used. Records of the builds kept (--keep, --older-than: either keeps) stay with
    /// the tags they name; every other record and cache tag is deleted through the registry's
    /// API (the registry frees their blobs in its own garbage collection). A build still
    /// running stops it. Credentials as for --push; the registry must allow deletes.
    Prune(PruneArgs),
    /// Check every entry in full (blobs and downloads hashed, layer and base folders against
    /// their stamps) and remove the damaged ones; exit 1 if any was.
    Verify,
    /// Remove the least recently used layers until the cache fits in a size.
    Gc {
        /// The size to keep under (K, M, G, T: powers of 1024).
        ///
        /// Default: the site config's cache_max, else a tenth of the cache's filesystem (at
        /// least 4G).
        #[arg(long, value_name = "SIZE", value_parser = parse_size, env = "IMGBUILD_CACHE_MAX")]
        max: Option<u64>,
    },
}

/// `cache prune`'s options.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("rule").args(["keep", "older_than"]).multiple(true)))]
pub struct PruneArgs {
    /// Prune this registry cache (docker://HOST/REPOSITORY, as --cache-to names it) instead of
    /// the local cache.
    #[arg(long, value_name = "REPOSITORY", requires = "rule")]
    pub registry: Option<String>,
    /// Keep what the last N builds of each image that ended well used.
    #[arg(long, value_name = "N", requires = "registry")]
    pub keep: Option<usize>,
    /// Keep what builds that ended within AGE used (30d, 12h, 90m, 2w).
    #[arg(long, value_name = "AGE", value_parser = parse_age, requires = "registry")]
    pub older_than: Option<u64>,
    /// Say what would be deleted, and delete nothing.
    #[arg(long, requires = "registry")]
    pub dry_run: bool,
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
fn parse_nvidia_flavor(text: &str) -> Result<spec::NvidiaFlavor, String> {
    spec::NvidiaFlavor::parse(text)
        .ok_or_else(|| format!("'{text}' is no NVIDIA kernel module flavour: open or proprietary"))
}
