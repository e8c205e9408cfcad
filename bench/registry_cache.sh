#!/usr/bin/env bash
# The layer cache shared through a registry, as CI runners with empty disks use it. One image
# (IMAGE, default debian-12-compute from the demo mirror) built three times, each with an empty
# imgbuild cache folder, in one run:
#   1. cold: no registry (what every runner does without the shared cache),
#   2. runner A: cold, sharing every layer with --cache-to (what the export adds),
#   3. runner B: --cache-from only (what a runner gains from A's layers).
# The registry is Debian's docker-registry on 127.0.0.1. Prints each round's wall and CPU
# seconds and the ratios; the last line is machine-read:
#   registry-cache: runnerB R export R
# (runnerB: B's wall time over the cold build's; export: A's over the cold build's).
# Needs root, debootstrap, docker-registry and about 20 GB free under /var/tmp.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
image=${IMAGE:-debian-12-compute}
[ "$(id -u)" = 0 ] || { echo "builds run in a chroot: run as root" >&2; exit 1; }
for tool in docker-registry debootstrap /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install docker-registry debootstrap time)" >&2; exit 1; }
done
(cd "$repo" && cargo build --release --locked -q -p imgbuild)
imgbuild=$repo/target/release/imgbuild
work=$(mktemp -d /var/tmp/imgbuild-registry-bench.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

. "$repo/bench/servers.sh"
start_mirror
start_registry

mkdir -p "$work/project"
cp -a "$repo/images" "$repo/roles" "$repo/mirror.toml" "$work/project/"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}
export IMGBUILD_CACHE_MAX=${IMGBUILD_CACHE_MAX:-40G}

# round NAME ARGS...: a build of the image with an empty cache folder; sets wall_NAME, cpu_NAME.
round() {
    local name=$1
    shift
    local cache=$work/cache-$name start end
    mkdir -p "$cache"
    start=$(date +%s.%N)
    IMGBUILD_CACHE=$cache /usr/bin/time -f "%U %S" -o "$work/time-$name" \
        "$imgbuild" -C "$work/project" build "$image" --mirror "http://127.0.0.1:$mirror_port/" \
        --out "$work/out-$name" "$@" >"$work/log-$name" 2>&1 ||
        { tail -20 "$work/log-$name"; echo "round $name failed" >&2; exit 1; }
    end=$(date +%s.%N)
    printf -v "wall_$name" '%.1f' "$(echo "$end - $start" | bc -l)"
    printf -v "cpu_$name" '%.1f' "$(awk '{print $1 + $2}' "$work/time-$name")"
    printf -v "manifest_$name" '%s' "$(grep -m1 '^[a-z0-9.-]*: sha256:' "$work/log-$name" | cut -d' ' -f2)"
    local wall=wall_$name cpu=cpu_$name manifest=manifest_$name
    printf '%-10s %8s s wall %8s s CPU   %s\n' "$name" "${!wall}" "${!cpu}" "${!manifest}"
    # The layers stay in the registry; the runner's disk is gone, as a CI runner's is.
    rm -rf "$cache" "$work/out-$name"
}

echo "image $image, $(nproc) cores; each round starts with an empty imgbuild cache"
round cold
round runnerA --cache-to "$cache_repo"
round runnerB --cache-from "$cache_repo"
[ "$manifest_runnerA" = "$manifest_runnerB" ] || { echo "runner B's image differs from runner A's" >&2; exit 1; }
taken=$(grep -c 'from the registry cache' "$work/log-runnerB" || true)
echo "runner B took $taken layers from the registry (the base's is a note, each role's a layer line)"
ratio() { echo "scale=3; $1 / $2" | bc -l | sed 's/^\./0./'; }
runner_b=$(ratio "$wall_runnerB" "$wall_cold")
export_ratio=$(ratio "$wall_runnerA" "$wall_cold")
echo "runner B / cold: $runner_b (goal <= 0.15); runner A with --cache-to / cold: $export_ratio (goal <= 1.10)"
echo "registry-cache: runnerB $runner_b export $export_ratio"
