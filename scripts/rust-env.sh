# Sourced by scripts/demo and .ci/run: finds Rust when they run under sudo. rustup installs the
# toolchain in the home of the user who ran sudo, and sudo's PATH leaves ~/.cargo/bin out; the
# toolchain is then used from there (RUSTUP_HOME), while what cargo downloads stays root's
# (CARGO_HOME), so nothing root-owned lands in the user's home.
if ! command -v cargo >/dev/null && [ -n "${SUDO_USER:-}" ]; then
    rust_user_home=$(getent passwd "$SUDO_USER" | cut -d: -f6)
    if [ -n "$rust_user_home" ] && [ -x "$rust_user_home/.cargo/bin/cargo" ]; then
        export PATH="$rust_user_home/.cargo/bin:$PATH"
        export RUSTUP_HOME="${RUSTUP_HOME:-$rust_user_home/.rustup}"
        export CARGO_HOME="${CARGO_HOME:-$(getent passwd root | cut -d: -f6)/.cargo}"
    fi
fi
if ! command -v cargo >/dev/null; then
    echo "no cargo found: imgbuild needs Rust 1.88 or newer (rust-version in Cargo.toml); install rustup's stable toolchain (curl https://sh.rustup.rs | sh) as this user or as root, then run this again" >&2
    exit 1
fi
