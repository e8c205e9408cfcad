#!/usr/bin/env bash
# The whole recipe, side by side: the roles of IMAGE (default debian-12-compute) run by
# `ansible-playbook` with the community.general.chroot connection on a copy of the base, as a
# site without docker runs them today, and by `imgbuild build`. Measured in one run:
#   cold      imgbuild with an empty layer cache; Ansible on a fresh copy of the base
#   nochange  the same recipe again (Ansible reruns everything, as the site's pipeline does)
#   bump      nvidia_version bumped by one line (535.261.03 -> 535.309.01, from Debian's
#             security archive)
#   early     an early change: one package more for the first package role, so every layer
#             from it on is rebuilt (the DKMS compiles come from the compile cache); also timed
#             without the compile cache (IMGBUILD_NO_COMPILE_CACHE=1, another package), for
#             what the cache itself gives
#   jobs2     `imgbuild build --jobs 2` of the two versions' images from an empty layer cache,
#             against the two built one after the other (cold, then bump)
# The bump and jobs2 rows also show their floors: the DKMS compile and initramfs a bump must
# redo (bench/bump_floor.py); for jobs2, the layers both images share (the roles before nvidia,
# timed alone from an empty layer cache: one after the other, whoever schedules them), then each
# image's own DKMS compile and initramfs (timed by the --jobs 2 build's reports) over every core.
# Both sides get the same warm package caches (a warm-up build fills them first), so neither
# is timed on the network. After the cold round the two trees are compared path by path
# (bench/tree_diff.py). Prints each round's wall and CPU seconds and the ratios; the last line
# is machine-read:
#   pipeline: cold R bump R nochange R jobs2 R diffs N
# (each R imgbuild's wall time over Ansible's, jobs2 over serial; N the unexplained tree
# differences). Needs root, ansible (ansible-core with community.general), debootstrap, time,
# python3 and about 30 GB free under /var/tmp; KEEP=1 keeps the work folder. WARM_PACKAGES=DIR
# (the `packages` folder a kept run left) starts from those package caches instead of the
# warm-up build. ROUNDS=cold runs the cold round and the tree comparison only (its last line
# is then `pipeline: cold R diffs N`); ROUNDS=early the imgbuild cold round (which fills the
# layer and compile caches) and the early rounds (`pipeline: early R nocc R`).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
image=${IMAGE:-debian-12-compute}
bumped_version=${BUMPED_NVIDIA_VERSION:-535.309.01}
[ "$(id -u)" = 0 ] || { echo "builds run in a chroot: run as root" >&2; exit 1; }
for tool in ansible-playbook debootstrap /usr/bin/time python3 bc unshare; do
    command -v "$tool" >/dev/null ||
        { echo "needs $tool (apt-get install ansible debootstrap time python3 bc)" >&2; exit 1; }
done
(cd "$repo" && cargo build --release --locked -q -p imgbuild)
imgbuild=$repo/target/release/imgbuild
work=$(mktemp -d /var/tmp/imgbuild-pipeline.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

. "$repo/bench/servers.sh"
start_mirror
mirror=http://127.0.0.1:$mirror_port/

# The project, and the recipes both sides run (bench/pipeline_recipes.py says what differs
# from the recipe in images/ and why).
project=$work/project
mkdir -p "$project"
cp -a "$repo/images" "$repo/roles" "$repo/mirror.toml" "$project/"
python3 "$repo/bench/pipeline_recipes.py" "$project/images/$image.yml" "$work" "$bumped_version"
cat > "$work/vars.yml" <<EOF
mirror_server: "$mirror"
debian_security_archive: "$(python3 "$repo/bench/pipeline_recipes.py" --security-archive "$work/recipe.yml")"
EOF
echo "the one-line bump:"
diff "$work/recipe.yml" "$work/recipe-bumped.yml" || true

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}
export IMGBUILD_CACHE_MAX=${IMGBUILD_CACHE_MAX:-60G}
mkdir -p "$work/packages"
# An imgbuild cache folder with no layers, sharing the package caches.
fresh_cache() {
    rm -rf "$1"
    mkdir -p "$1"
    ln -s "$work/packages" "$1/packages"
}

# timed NAME FUNCTION ARGS...: runs a function of this script, its output in log-NAME; sets
# wall_NAME and cpu_NAME.
timed() {
    local name=$1 start end
    shift
    start=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$work/time-$name" bash -c '"$@"' sh "$@" >"$work/log-$name" 2>&1 ||
        { tail -30 "$work/log-$name"; echo "round $name failed" >&2; exit 1; }
    end=$(date +%s.%N)
    printf -v "wall_$name" '%.1f' "$(echo "$end - $start" | bc -l)"
    printf -v "cpu_$name" '%.1f' "$(awk '{print $1 + $2}' "$work/time-$name")"
    local wall=wall_$name cpu=cpu_$name
    printf '%-18s %8s s wall %8s s CPU\n' "$name" "${!wall}" "${!cpu}"
}

imgbuild_build() { # CACHE IMAGE... [options]
    local cache=$1
    shift
    IMGBUILD_CACHE=$cache "$imgbuild" -C "$project" build "$@" --mirror "$mirror" \
        -e "@$work/vars.yml" --out "$work/out"
}

use_recipe() { cp "$work/$1" "$project/images/$image.yml"; }

# The warm-up fills the package caches (debootstrap's and apt's) from the network; its base,
# unpacked, is what the Ansible side starts from.
use_recipe recipe.yml
fresh_cache "$work/cache-warmup"
if [ -n "${WARM_PACKAGES:-}" ]; then
    echo "package caches from $WARM_PACKAGES"
    cp -al "$WARM_PACKAGES"/. "$work/packages/"
else
    echo "warm-up: one imgbuild build fills the package caches (not timed)"
    imgbuild_build "$work/cache-warmup" "$image" >"$work/log-warmup" 2>&1 ||
        { tail -30 "$work/log-warmup"; echo "the warm-up build failed" >&2; exit 1; }
fi
imgbuild_build "$work/cache-warmup" "$image-base" --format chroot --no-verify \
    >"$work/log-base" 2>&1 || { tail -30 "$work/log-base"; echo "unpacking the base failed" >&2; exit 1; }
base=$work/out/$image-base/rootfs
rm -rf "$work/cache-warmup"

# ansible_round ROOT: the site's job: a copy of the base, the shared package cache linked in
# (apt checks each package against its index, as on imgbuild's side), then the playbook in a
# chroot with what a container runtime gives a play (proc, sys, dev, fresh /tmp and /run).
ansible_round() {
    local root=$1
    rm -rf "$root"
    cp -a "$base" "$root"
    find "$work/packages/apt" -maxdepth 1 -name '*.deb' -exec ln {} "$root/var/cache/apt/archives/" \;
    mkdir -p "$work/ansible-home"
    printf '%s\n' "target ansible_connection=community.general.chroot ansible_host=$root ansible_python_interpreter=/usr/bin/python3" \
        > "$work/inventory"
    HOME=$work/ansible-home ANSIBLE_ROLES_PATH=$project/roles ANSIBLE_LOCAL_TEMP=$work/ansible-home/tmp \
        ANSIBLE_REMOTE_TMP=/tmp/.ansible-tmp ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 \
        ANSIBLE_COLLECTIONS_PATH=/usr/share/ansible/collections LC_ALL=C.UTF-8 \
        unshare --mount --propagation private sh -c '
            set -e
            r=$1; shift
            mount -t proc proc "$r/proc"; mount -t sysfs sysfs "$r/sys"
            mount --rbind /dev "$r/dev"; mount -t tmpfs tmpfs "$r/tmp"; mount -t tmpfs tmpfs "$r/run"
            exec "$@"' sh "$root" \
        ansible-playbook -i "$work/inventory" -e "@$work/vars.yml" "$work/playbook.yml"
}
export -f ansible_round imgbuild_build
export work base project imgbuild mirror

echo "image $image, $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); both sides with warm package caches"
rounds=${ROUNDS:-all}
use_recipe recipe.yml
cp "$work/playbook-recipe.yml" "$work/playbook.yml"
# ansible_dkms ROUND: the DKMS compile in Ansible's rootfs of ROUND (its dpkg.log), beside the
# one imgbuild's report times; kept in ROUND-dkms.
ansible_dkms() {
    python3 "$repo/bench/dkms_compile.py" "$work/$1/var/log/dpkg.log" >"$work/$1-dkms" ||
        echo "dkms unread" >"$work/$1-dkms"
}
case $rounds in
    jobs2 | early) ;;
    *) timed ansible_cold ansible_round "$work/ansible-cold"; ansible_dkms ansible-cold ;;
esac
fresh_cache "$work/cache-main"
timed imgbuild_cold imgbuild_build "$work/cache-main" "$image"
cp "$work/out/$image/report.json" "$work/report-cold.json"
# Where the cold build's time went (report.md keeps each layer's own build's costs).
cp "$work/out/$image/report.md" "$work/report-cold.md"
sed -n '/where the time went/,/<\/details>/p' "$work/report-cold.md"

# early_rounds: the recipe with one package more for the packages role, after the cold round
# filled the caches: ansible-playbook runs the whole recipe again, as always; imgbuild rebuilds
# the layers from that role on, its compiles served by the compile cache; then the same with
# another package and the compile cache off. Sets early and early_nocc (imgbuild over Ansible).
early_rounds() {
    use_recipe recipe-early.yml
    cp "$work/playbook-recipe-early.yml" "$work/playbook.yml"
    timed ansible_early ansible_round "$work/ansible-early"
    rm -rf "$work/ansible-early"
    timed imgbuild_early imgbuild_build "$work/cache-main" "$image"
    grep -q "compile cache: [0-9]* of" "$work/log-imgbuild_early" ||
        { echo "the early change compiled nothing through the compile cache" >&2; exit 1; }
    grep "compile cache" "$work/log-imgbuild_early" || true
    use_recipe recipe-early-nocc.yml
    IMGBUILD_NO_COMPILE_CACHE=1 timed imgbuild_early_nocc imgbuild_build "$work/cache-main" "$image"
    use_recipe recipe.yml
    cp "$work/playbook-recipe.yml" "$work/playbook.yml"
    early=$(ratio "$wall_imgbuild_early" "$wall_ansible_early")
    early_nocc=$(ratio "$wall_imgbuild_early_nocc" "$wall_ansible_early")
    echo "| early change | $wall_ansible_early s / $cpu_ansible_early s | $wall_imgbuild_early s / $cpu_imgbuild_early s (without the compile cache: $wall_imgbuild_early_nocc s / $cpu_imgbuild_early_nocc s, $early_nocc) | $early (<= 0.30) |" |
        tee "$work/early-row"
}
# Rounded to 3 places, not cut: bc's scale=3 cut 0.5008 to 0.500, under a 0.5 goal it missed.
ratio() { LC_ALL=C printf '%.3f' "$(echo "scale=6; $1 / $2" | bc -l)"; }
if [ "$rounds" = early ]; then
    early_rounds
    echo "pipeline: early $early nocc $early_nocc"
    exit 0
fi

# Same tree: imgbuild's rootfs (all layers cached now) against Ansible's.
[ "$rounds" = jobs2 ] || {
imgbuild_build "$work/cache-main" "$image" --format chroot --no-verify >"$work/log-chroot" 2>&1 ||
    { tail -30 "$work/log-chroot"; echo "writing imgbuild's rootfs failed" >&2; exit 1; }
python3 "$repo/bench/tree_diff.py" "$work/ansible-cold" "$work/out/$image/rootfs" | tee "$work/tree-diff"
diffs=$(awk '/^diffs / {print $2}' "$work/tree-diff")
rm -rf "$work/ansible-cold" "$work/out/$image/rootfs"
}
if [ "$rounds" = cold ]; then
    echo "pipeline: cold $(ratio "$wall_imgbuild_cold" "$wall_ansible_cold") diffs $diffs"
    exit 0
fi

if [ "$rounds" != jobs2 ]; then
    timed imgbuild_nochange imgbuild_build "$work/cache-main" "$image"
    timed ansible_nochange ansible_round "$work/ansible-nochange"
    rm -rf "$work/ansible-nochange"
    early_rounds
fi

use_recipe recipe-bumped.yml
cp "$work/playbook-recipe-bumped.yml" "$work/playbook.yml"
if [ "$rounds" != jobs2 ]; then
    timed ansible_bump ansible_round "$work/ansible-bump"
    ansible_dkms ansible-bump
    rm -rf "$work/ansible-bump"
fi
timed imgbuild_bump imgbuild_build "$work/cache-main" "$image"
cp "$work/out/$image/report.json" "$work/report-bump.json"
grep -q "nvidia.*built" "$work/log-imgbuild_bump" || { echo "the bump rebuilt no nvidia layer" >&2; exit 1; }
# The bump's floor: the DKMS compile and the initramfs, which any tool must redo (bump_floor.py).
echo "what the bump must redo, whoever builds (imgbuild's bump report):"
python3 "$repo/bench/bump_floor.py" "$work/out/$image/report.json" | tee "$work/bump-floor"
floor_bump=$(awk '/^floor / {print $2}' "$work/bump-floor")
rm -rf "$work/cache-main"

# --jobs 2: the two versions' images from an empty layer cache, against cold + bump (the same
# two images built one after the other, the second on the first's layers).
use_recipe recipe.yml
cp "$work/recipe-bumped-image.yml" "$project/images/$image-bumped.yml"
fresh_cache "$work/cache-jobs"
timed imgbuild_jobs2 imgbuild_build "$work/cache-jobs" --jobs 2 "$image" "$image-bumped"
# What the two images share, alone: the part of jobs2 that runs one role after the other.
fresh_cache "$work/cache-shared"
timed imgbuild_shared imgbuild_build "$work/cache-shared" "$image-shared" --no-verify
rm -rf "$work/cache-shared"
cp "$work/out/$image/report.json" "$work/report-jobs2-$image.json"
cp "$work/out/$image-bumped/report.json" "$work/report-jobs2-$image-bumped.json"
rm -rf "$work/cache-jobs"
printf -v wall_serial '%.1f' "$(echo "$wall_imgbuild_cold + $wall_imgbuild_bump" | bc -l)"

jobs2=$(ratio "$wall_imgbuild_jobs2" "$wall_serial")
# jobs2's floor: the shared layers' wall time (they are built one role after the other, timed
# alone) and what each image must then do on its own, whoever schedules it: its DKMS compile and
# its initramfs, as the `--jobs 2` build's reports timed them (bump_floor.py on each), packed
# onto every core. Each ran on its role's share of the cores (one core each, two images on 2),
# so its seconds are its one-core time, and their sum over the cores is the least wall time any
# split can give them (less, if part of a task waits on the disk rather than a core).
# (An earlier floor, the rest of the serial builds' CPU over the cores, was crossed by a
# 2026-11-28 run: the serial builds' CPU is not work --jobs 2 must do.)
cores=$(nproc)
cpu_serial=$(echo "$cpu_imgbuild_cold + $cpu_imgbuild_bump" | bc -l)
echo "what each image of --jobs 2 must do on its own (its report):"
for report in "$work/report-jobs2-$image.json" "$work/report-jobs2-$image-bumped.json"; do
    python3 "$repo/bench/bump_floor.py" "$report"
done | tee "$work/jobs2-floor"
own_jobs2=$(awk '/^floor / {s += $2} END {printf "%.1f", s}' "$work/jobs2-floor")
floor_jobs2_s=$(echo "$wall_imgbuild_shared + $own_jobs2 / $cores" | bc -l)
floor_jobs2=$(ratio "$floor_jobs2_s" "$wall_serial")
floor_jobs2_note="the shared layers' $wall_imgbuild_shared s, then each image's compile and initramfs ($own_jobs2 s) over $cores cores: $floor_jobs2"
if [ "$rounds" = jobs2 ]; then
    echo "two images: serial $wall_serial s / $cpu_serial s CPU, --jobs 2 $wall_imgbuild_jobs2 s / $cpu_imgbuild_jobs2 s CPU; the floor, $floor_jobs2_note"
    echo "pipeline: jobs2 $jobs2"
    exit 0
fi
cold=$(ratio "$wall_imgbuild_cold" "$wall_ansible_cold")
nochange=$(ratio "$wall_imgbuild_nochange" "$wall_ansible_nochange")
bump=$(ratio "$wall_imgbuild_bump" "$wall_ansible_bump")
echo
echo "| round | ansible-playbook wall / CPU | imgbuild wall / CPU | ratio (goal) |"
echo "|---|---|---|---|"
echo "| cold | $wall_ansible_cold s / $cpu_ansible_cold s | $wall_imgbuild_cold s / $cpu_imgbuild_cold s | $cold (<= 0.8) |"
echo "| no change | $wall_ansible_nochange s / $cpu_ansible_nochange s | $wall_imgbuild_nochange s / $cpu_imgbuild_nochange s | $nochange (<= 0.02) |"
echo "| nvidia bump | $wall_ansible_bump s / $cpu_ansible_bump s | $wall_imgbuild_bump s / $cpu_imgbuild_bump s | $bump (<= 0.5; the floor, its compile and initramfs: $floor_bump s, $(ratio "$floor_bump" "$wall_ansible_bump")) |"
cat "$work/early-row"
echo "| two images | serial $wall_serial s | --jobs 2 $wall_imgbuild_jobs2 s / $cpu_imgbuild_jobs2 s | $jobs2 (<= 0.7; the floor, $floor_jobs2_note) |"
# The DKMS compile each side's cold and bump rounds timed: the floor's biggest part, and the one
# that moves most from round to round on this machine.
dkms_of() { awk '/^dkms / {print $2}' "$1"; }
python3 "$repo/bench/bump_floor.py" "$work/report-cold.json" >"$work/imgbuild-cold-floor"
imgbuild_dkms() { awk '/the DKMS compile/ {s += $1} END {printf "%.1f", s}' "$1"; }
echo "the DKMS compile: cold, ansible-playbook $(dkms_of "$work/ansible-cold-dkms") s, imgbuild $(imgbuild_dkms "$work/imgbuild-cold-floor") s; bump, ansible-playbook $(dkms_of "$work/ansible-bump-dkms") s, imgbuild $(imgbuild_dkms "$work/bump-floor") s"
echo "pipeline: cold $cold bump $bump nochange $nochange early $early jobs2 $jobs2 diffs $diffs"
