//! What the rules share about one image: its snapshot, the kernel the checks are made against
//! (and how it was chosen), how `modprobe` resolves names for that kernel, every module file,
//! and the traces of MOFED and NVIDIA found in it.

use std::collections::BTreeSet;

use crate::modinfo::Modinfo;
use crate::modprobe::{name_of_file, Resolution, Resolver};
use crate::snapshot::{Kind, Snapshot};

/// What the image should hold beyond what verify finds by itself (from the recipe, the
/// image's labels or the command line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expect {
    /// The pinned kernel; when not given, the image's only one.
    pub kernel: Option<String>,
    /// The MOFED version `ofed_info` must report.
    pub mofed: Option<String>,
    /// The DOCA version whose DOCA-OFED the image must hold (instead of MLNX_OFED).
    pub doca: Option<String>,
    /// The NVIDIA driver version its modules must carry.
    pub nvidia: Option<String>,
    /// The flavour of NVIDIA kernel modules it must carry.
    pub nvidia_flavor: Option<spec::NvidiaFlavor>,
    /// The recipe builds an initramfs.
    pub initramfs: bool,
    /// A subnet-manager image: `opensmd` may be enabled.
    pub allow_opensm: bool,
    /// The image must hold no compiler, kernel headers or DKMS (`build_only_packages`).
    pub no_build_tools: bool,
    /// The certificate every out-of-tree module must be signed with (the site's MOK).
    pub signer_cert: Option<crate::signature::SignerCert>,
}

/// How the kernel the checks use was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelSource {
    /// Given (`--kernel`, the recipe, or the image's label).
    Named,
    /// Nothing named one, and the image holds exactly one.
    OnlyOne,
}

/// A kernel module file of the image.
#[derive(Debug)]
pub struct ModuleFile<'a> {
    /// Its path, `/lib/modules/<K>/...`.
    pub path: String,
    /// The kernel folder it is in.
    pub kernel_dir: String,
    /// Its path inside the kernel folder (`extra/x.ko`).
    pub rel: String,
    /// Its modinfo, or why it could not be read.
    pub info: Result<&'a Modinfo, &'a str>,
}

impl ModuleFile<'_> {
    /// The module's name: `.modinfo`'s `name`, else the file's.
    pub fn name(&self) -> String {
        self.info
            .ok()
            .and_then(Modinfo::name)
            .map(crate::modprobe::canonical)
            .unwrap_or_else(|| name_of_file(&self.rel))
    }

    /// Built outside the kernel's own tree (MOFED, DKMS, vendor installers), wherever it was
    /// installed: the kernel's own modules carry `intree=Y` in their `.modinfo`.
    pub fn out_of_tree(&self) -> bool {
        self.info.ok().and_then(|i| i.get("intree")) != Some("Y")
    }
}

/// One image, ready for the rules.
pub struct Image<'a> {
    /// What was read.
    pub snapshot: &'a Snapshot,
    /// What was asked for.
    pub expect: &'a Expect,
    /// The `vmlinuz-*` kernels in `/boot`.
    pub boot_kernels: Vec<String>,
    /// The folders of `/lib/modules`.
    pub module_dirs: Vec<String>,
    /// The kernel the checks are made against, and how it was chosen.
    pub kernel: Option<(String, KernelSource)>,
    /// `modprobe` for that kernel.
    pub resolver: Resolver,
    /// Every module file of every kernel folder.
    pub modules: Vec<ModuleFile<'a>>,
    /// What shows MOFED is installed (empty: none).
    pub mofed_traces: Vec<String>,
    /// What shows the NVIDIA driver is installed (empty: none).
    pub nvidia_traces: Vec<String>,
}

/// The MOFED modules a node needs, each resolved as modprobe resolves it.
pub const MOFED_MODULES: &[&str] = &[
    "mlx5_core",
    "mlx5_ib",
    "ib_core",
    "ib_uverbs",
    "rdma_cm",
    "ib_ipoib",
];

impl<'a> Image<'a> {
    /// Reads what the rules need from `snapshot`.
    pub fn new(snapshot: &'a Snapshot, expect: &'a Expect) -> Image<'a> {
        let boot_kernels: Vec<String> = snapshot
            .list("/boot")
            .into_iter()
            .filter_map(|n| n.strip_prefix("vmlinuz-").map(str::to_owned))
            .collect();
        let module_dirs = snapshot.list("/lib/modules");
        let kernel = match &expect.kernel {
            Some(k) => Some((k.clone(), KernelSource::Named)),
            None if boot_kernels.len() == 1 => {
                Some((boot_kernels[0].clone(), KernelSource::OnlyOne))
            }
            None => None,
        };
        let resolver = kernel
            .as_ref()
            .map(|(k, _)| Resolver::new(snapshot, k))
            .unwrap_or_default();
        let modules = module_files(snapshot, &module_dirs);
        let mut image = Image {
            snapshot,
            expect,
            boot_kernels,
            module_dirs,
            kernel,
            resolver,
            modules,
            mofed_traces: Vec::new(),
            nvidia_traces: Vec::new(),
        };
        image.mofed_traces = image.find_mofed();
        image.nvidia_traces = image.find_nvidia();
        image
    }

    /// The kernel's name, when there is one to check against.
    pub fn kernel_name(&self) -> Option<&str> {
        self.kernel.as_ref().map(|(k, _)| k.as_str())
    }

    /// The module files of the checked kernel.
    pub fn kernel_modules(&self) -> impl Iterator<Item = &ModuleFile<'a>> {
        let kernel = self.kernel_name().map(str::to_owned);
        self.modules
            .iter()
            .filter(move |m| Some(m.kernel_dir.as_str()) == kernel.as_deref())
    }

    /// What `modprobe name` does, and the module file it loads (when it loads one).
    pub fn modprobe(&self, name: &str) -> (Resolution, Option<&ModuleFile<'a>>) {
        let resolution = self.resolver.resolve(name);
        let file = match &resolution {
            Resolution::File { file, .. } => self.kernel_modules().find(|m| m.rel == *file),
            _ => None,
        };
        (resolution, file)
    }

    fn find_mofed(&self) -> Vec<String> {
        let mut traces: Vec<String> = [
            "/usr/bin/ofed_info",
            "/etc/infiniband/openib.conf",
            "/usr/lib/systemd/system/openibd.service",
            "/lib/systemd/system/openibd.service",
            "/etc/init.d/openibd",
            "/usr/src/ofa_kernel",
        ]
        .iter()
        .filter(|p| self.snapshot.entry(p).is_some())
        .map(|p| (*p).to_owned())
        .collect();
        let mofed_names: BTreeSet<&str> = MOFED_MODULES.iter().copied().collect();
        traces.extend(
            self.kernel_modules()
                .filter(|m| {
                    m.rel.starts_with("extra/mlnx-ofa_kernel/")
                        || (m.rel.starts_with("updates/") && mofed_names.contains(&*m.name()))
                })
                .map(|m| m.path.clone())
                .take(3),
        );
        traces
    }

    fn find_nvidia(&self) -> Vec<String> {
        let mut traces: Vec<String> = self
            .kernel_modules()
            // Out-of-tree only: the kernel has its own nvidia-named modules (nvidia-wmi-ec-backlight).
            .filter(|m| m.out_of_tree() && m.name().starts_with("nvidia"))
            .map(|m| m.path.clone())
            .take(3)
            .collect();
        traces.extend(
            ["/usr/bin/nvidia-smi"]
                .iter()
                .filter(|p| self.snapshot.entry(p).is_some())
                .map(|p| (*p).to_owned()),
        );
        traces
    }

    /// The units enabled by a link in `/etc/systemd/system/*.wants` or `*.requires`.
    pub fn enabled_units(&self) -> BTreeSet<String> {
        let base = "/etc/systemd/system";
        self.snapshot
            .list(base)
            .into_iter()
            .filter(|d| d.ends_with(".wants") || d.ends_with(".requires"))
            .flat_map(|d| self.snapshot.list(&format!("{base}/{d}")))
            .collect()
    }
}

fn module_files<'a>(snapshot: &'a Snapshot, module_dirs: &[String]) -> Vec<ModuleFile<'a>> {
    let mut modules = Vec::new();
    for dir in module_dirs {
        let root = format!("/lib/modules/{dir}");
        for (rel, entry) in snapshot.walk_under(&root) {
            if entry.kind != Kind::File || !crate::modinfo::is_module(&rel) {
                continue;
            }
            let path = format!("{root}/{rel}");
            let info = match snapshot.modinfo(&path) {
                Some(Ok(info)) => Ok(info),
                Some(Err(e)) => Err(e.as_str()),
                None => Err("not read"),
            };
            modules.push(ModuleFile {
                path,
                kernel_dir: dir.clone(),
                rel,
                info,
            });
        }
    }
    modules
}
