# The build the tests run, sourced by scripts/test and .ci/run: release, for x86_64 musl, the
# static binary's own build (scripts/static-binary). So the end-to-end tests run the imgbuild a
# site installs, and the static binary is a by-product of the test build rather than a second
# compile of every crate (the dependencies' features are the same in both builds: see
# crates/imgbuild/Cargo.toml). Needs musl-tools (musl-gcc compiles the bundled C libraries)
# and rustup's musl target, added here.
test_target=x86_64-unknown-linux-musl
# shellcheck disable=SC2034 # used by the scripts that source this one
test_build=(--release --target "$test_target")
export CC_x86_64_unknown_linux_musl=${CC_x86_64_unknown_linux_musl:-musl-gcc}
if command -v rustup >/dev/null; then
    rustup target add "$test_target" >/dev/null 2>&1 || true
fi
