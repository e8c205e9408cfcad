//! The integration tests that are not end-to-end image builds, in one test binary: each file of
//! `tests/` is a module here (`cargo test --test suite conformance::` runs one), so the
//! workspace links one test binary for them instead of one each (29 static binaries of 25 to
//! 107 MB, 1.5 GB together, each compiled and linked again when any crate changed). The
//! end-to-end tests of the signed and unsigned stacks and the tests of the installed packages
//! stay binaries of their own: `scripts/test` runs them in lanes of their own.

// Helpers the test files share, declared once: the differential harness's (ansible_diff and
// el_diff), then the others.
#[path = "support/boot_record.rs"]
#[allow(dead_code)]
mod boot_record;
#[path = "ansible_diff/case.rs"]
mod case;
mod common;
#[path = "support/counting_proxy.rs"]
mod counting_proxy;
#[path = "support/e2e_project.rs"]
mod e2e_project;
#[path = "support/framed_base.rs"]
mod framed_base;
#[path = "ansible_diff/oracle.rs"]
mod oracle;
#[path = "support/overlay.rs"]
mod overlay;
mod registry_server;
#[path = "ansible_diff/runs.rs"]
mod runs;
#[path = "support/site_pki.rs"]
mod site_pki;
#[path = "ansible_diff/tree.rs"]
mod tree;
#[path = "el_diff/world.rs"]
#[allow(dead_code)]
mod world;

// One module per test file.
mod ansible_diff;
mod base_layers;
mod broken_inputs;
mod ci_workflow;
mod conformance;
mod docs_links;
mod e2e_compile_cache;
mod el_bootstrap;
mod el_diff;
mod el_rocky;
mod engine_rootfs;
mod full_disk;
mod house_rules;
mod image_build;
mod interrupts;
mod matrix_workflow;
mod plan_contract;
mod plan_doca;
mod public_roles;
mod registry;
mod registry_cache;
mod rootless;
mod rust_version;
mod sbom;
mod secrets;
mod signatures;
mod site_registry;
mod slurm;
mod verify_signatures;
