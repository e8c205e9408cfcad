//! The rules verify applies, one file each behind [`Rule`], listed once in [`RULES`]: adding a
//! rule is one file and one line here (docs/verify.md's rule list is checked against this table).

pub use rule::{Rule, Verdict};

mod bin_sh;
mod doca_version;
mod duplicate_modules;
mod initramfs;
mod modules_dep;
mod modules_signed;
mod mofed_modules;
mod mofed_rpm_owner;
mod no_build_tools;
mod no_huge_files;
pub mod no_private_keys;
mod nvidia_kernel_flavor;
mod nvidia_modules;
mod nvidia_version;
mod nvidia_versions_match;
mod ofed_info;
mod one_kernel;
mod openibd_enabled;
mod opensmd_disabled;
mod peermem_after_mofed;
pub(crate) mod rule;
mod vermagic;

/// Every rule, in the order reports list them.
pub static RULES: &[&dyn Rule] = &[
    &one_kernel::OneKernel,
    &vermagic::Vermagic,
    &modules_dep::ModulesDep,
    &duplicate_modules::DuplicateModules,
    &modules_signed::ModulesSigned,
    &mofed_modules::MofedModules,
    &mofed_rpm_owner::MofedRpmOwner,
    &ofed_info::OfedInfo,
    &doca_version::DocaVersion,
    &openibd_enabled::OpenibdEnabled,
    &opensmd_disabled::OpensmdDisabled,
    &nvidia_modules::NvidiaModules,
    &peermem_after_mofed::PeermemAfterMofed,
    &nvidia_version::NvidiaVersion,
    &nvidia_versions_match::NvidiaVersionsMatch,
    &nvidia_kernel_flavor::NvidiaKernelFlavor,
    &initramfs::Initramfs,
    &bin_sh::BinSh,
    &no_huge_files::NoHugeFiles,
    &no_private_keys::PrivateKeys,
    &no_build_tools::NoBuildTools,
];

/// docs/verify.md's rule list: one table row per rule, from this table.
pub fn rules_table() -> String {
    let mut table = String::from("| rule | what it checks |\n|---|---|\n");
    for rule in RULES {
        table.push_str(&format!("| `{}` | {} |\n", rule.id(), rule.summary()));
    }
    table
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_doca;
#[cfg(test)]
mod tests_rpm;
