#!/usr/bin/env bash
# A matrix built by a fleet of CI runners with empty disks, sharing layers through the site
# registry as .github/workflows/images.yml does: `imgbuild affected --json` names the images
# that go first (one through each layer stage several images share, built with --cache-to)
# and those that follow (built with --cache-from). Four images of one matrix: the demo's
# debian-12-compute and three variants that add site roles at its end (softroce, rdma_tuning,
# both), so they share the base, MOFED, NVIDIA's DKMS compile and the initramfs.
# Rounds, each with an empty imgbuild cache folder, one after another, in one run:
#   cold       one image, no registry: what each runner does without the shared cache
#   first ...  the images `affected` puts first, with --cache-to
#   then ...   the others, with --cache-from
# Prints each round's wall and CPU seconds; the last line is machine-read:
#   fleet: images N runners R cold C ratio X
# (ratio: the runners' wall time, summed, over the cold build's; without sharing it is about N).
# Needs root, debootstrap, docker-registry, git, jq and about 30 GB free under /var/tmp.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "builds run in a chroot: run as root" >&2; exit 1; }
for tool in docker-registry debootstrap git jq /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install docker-registry debootstrap git jq time)" >&2; exit 1; }
done
# IMGBUILD=PATH runs that binary (the static one, for example) instead of building one.
if [ -z "${IMGBUILD:-}" ]; then
    (cd "$repo" && cargo build --release --locked -q -p imgbuild)
fi
imgbuild=${IMGBUILD:-$repo/target/release/imgbuild}
work=$(mktemp -d /var/tmp/imgbuild-fleet-bench.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

. "$repo/bench/servers.sh"
start_mirror
start_registry

# The project: the demo's image and its variants, each a copy of its recipe with site roles
# added after its last one, in a git repository (affected compares with a revision).
project=$work/project
mkdir -p "$project/images"
cp -a "$repo/roles" "$repo/mirror.toml" "$project/"
base=debian-12-compute
cp "$repo/images/$base.yml" "$project/images/"
variant() {
    local name=$1
    shift
    python3 - "$project/images/$base.yml" "$project/images/$name.yml" "$name" "$@" <<'EOF'
import sys
source, dest, name, *roles = sys.argv[1:]
image = source.rsplit("/", 1)[1].removesuffix(".yml")
text = open(source).read().replace(f"name: {image}.yml", f"name: {name}.yml")
text = text.replace(f'image_name: "{image}"', f'image_name: "{name}"')
text = text.rstrip("\n") + "\n" + "".join(f"    - {role}\n" for role in roles)
open(dest, "w").write(text)
EOF
}
variant "$base-roce" softroce
variant "$base-rdma" rdma_tuning
variant "$base-both" rdma_tuning softroce
git -C "$project" init -q
git -C "$project" add -A
git -C "$project" -c user.name=bench -c user.email=bench@localhost commit -qm matrix
empty_tree=$(git -C "$project" hash-object -t tree /dev/null)
affected=$("$imgbuild" -C "$project" affected --since "$empty_tree" --json 2>/dev/null)
mapfile -t first < <(echo "$affected" | jq -r '.first.include[].image')
mapfile -t then < <(echo "$affected" | jq -r '.then.include[].image')
echo "$affected" | jq -c '.shared[] | {images, layers: (.layers | length)}'
[ "${#first[@]}" -gt 0 ] || { echo "affected put no image first: the variants share nothing" >&2; exit 1; }

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}
export IMGBUILD_CACHE_MAX=${IMGBUILD_CACHE_MAX:-40G}

# round NAME IMAGE ARGS...: a build of IMAGE with an empty cache folder; adds its wall time to
# the fleet's (unless NAME is cold) and sets wall_cold for the cold one.
fleet_wall=0
round() {
    local name=$1 image=$2
    shift 2
    local cache=$work/cache-$name start end wall cpu
    mkdir -p "$cache"
    start=$(date +%s.%N)
    IMGBUILD_CACHE=$cache /usr/bin/time -f "%U %S" -o "$work/time-$name" \
        "$imgbuild" -C "$project" build "$image" --mirror "http://127.0.0.1:$mirror_port/" \
        --out "$work/out-$name" "$@" >"$work/log-$name" 2>&1 ||
        { tail -20 "$work/log-$name"; echo "round $name failed" >&2; exit 1; }
    end=$(date +%s.%N)
    wall=$(echo "$end - $start" | bc -l)
    cpu=$(awk '{print $1 + $2}' "$work/time-$name")
    local taken
    taken=$(grep -c 'from the registry cache' "$work/log-$name" || true)
    printf '%-34s %8.1f s wall %8.1f s CPU  %2d layers from the registry\n' \
        "$name $image" "$wall" "$cpu" "$taken"
    if [ "$name" = cold ]; then
        wall_cold=$wall
    else
        fleet_wall=$(echo "$fleet_wall + $wall" | bc -l)
    fi
    # The runner's disk is gone, as a CI runner's is; the layers stay in the registry.
    rm -rf "$cache" "$work/out-$name"
}

echo "$((${#first[@]} + ${#then[@]})) images, $(nproc) cores; each round starts with an empty imgbuild cache"
round cold "$base"
n=0
for image in "${first[@]}"; do
    n=$((n + 1))
    round "first-$n" "$image" --cache-to "$cache_repo"
done
for image in "${then[@]}"; do
    n=$((n + 1))
    round "then-$n" "$image" --cache-from "$cache_repo"
done
ratio=$(echo "scale=3; $fleet_wall / $wall_cold" | bc -l | sed 's/^\./0./')
printf 'the %d runners took %.1f s together; one cold build %.1f s: %s (goal <= 1.6)\n' \
    "$n" "$fleet_wall" "$wall_cold" "$ratio"
printf 'fleet: images %d runners %d cold %.1f ratio %s\n' "$n" "$n" "$wall_cold" "$ratio"
