#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time (FUZZ_SECONDS, default 60 each) on the corpus
# kept in tests/fuzz-corpus/<target>, which grows with what the fuzzer finds. Not part of CI:
# run it before a release or after changing a parser. Crashes land in fuzz/artifacts/<target>/.
# Needs cargo-fuzz (cargo install cargo-fuzz); the stable toolchain is used with
# RUSTC_BOOTSTRAP=1, as cargo-fuzz needs -Z flags for the sanitizer.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
seconds=${FUZZ_SECONDS:-60}
targets=${*:-recipe tar_layer image_archive modinfo}
command -v cargo-fuzz >/dev/null || { echo "needs cargo-fuzz (cargo install cargo-fuzz)"; exit 1; }
cd "$here/fuzz"
status=0
for target in $targets; do
    corpus=$here/tests/fuzz-corpus/$target
    mkdir -p "$corpus"
    echo "== $target ($seconds s)"
    if ! RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "$corpus" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>&1 \
        | grep -E '^(stat::number_of_executed_units|stat::new_units_added|==.*ERROR|SUMMARY|Done)' ; then
        :
    fi
    if compgen -G "artifacts/$target/crash-*" >/dev/null || compgen -G "artifacts/$target/timeout-*" >/dev/null; then
        echo "$target: found crashes or timeouts in fuzz/artifacts/$target"
        status=1
    fi
done
exit $status
