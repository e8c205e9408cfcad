#!/usr/bin/env bash
# Layer export throughput on one tree of at least 500 MB (a bookworm rootfs with the pinned
# linux-headers and build-essential), in one run, warm page cache:
#   1. imgbuild's layer writer, gzip -6 and zstd -3 (crates/image/examples/export_layer.rs),
#   2. tar --sort=name -cf - . | pigz -6,
#   3. tar --sort=name -cf - . | zstd -3 -T0,
#   4. umoci repack (gzip),
#   5. buildah commit --disable-compression=false (vfs storage driver, gzip).
# Prints seconds, MB/s of uncompressed tree, output size and peak memory, and the ratios
# against imgbuild. Needs root, debootstrap, pigz, zstd, umoci, buildah and GNU time.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${IMGBUILD_TEST_CACHE:-/var/tmp/imgbuild-test-cache}
tree=${TREE:-$cache/bench-export-tree}
kernel=${KERNEL:-6.1.0-50-amd64}
work=$(mktemp -d /var/tmp/imgbuild-export-bench.XXXXXX)
trap 'umount -q "$tree/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
for tool in pigz zstd umoci buildah /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install pigz zstd umoci buildah time)"; exit 1; }
done

if [ ! -d "$tree/usr/src/linux-headers-$kernel" ]; then
    base=$cache/bookworm-minbase
    if [ ! -x "$base/bin/sh" ]; then
        echo "run the image tests once first (cargo test --test suite image_build::): they cache $base" >&2
        exit 1
    fi
    rm -rf "$tree.tmp" && cp -a "$base" "$tree.tmp"
    cp /etc/resolv.conf "$tree.tmp/etc/resolv.conf" 2>/dev/null || true
    mount -t proc proc "$tree.tmp/proc"
    chroot "$tree.tmp" /bin/sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends linux-headers-$kernel build-essential" >/dev/null
    umount "$tree.tmp/proc"
    chroot "$tree.tmp" apt-get clean
    rm -rf "$tree" && mv "$tree.tmp" "$tree"
fi

(cd "$here" && cargo build --release -q -p image --example export_layer)
export_layer=$here/target/release/examples/export_layer
tree_bytes=$(du -sb --apparent-size "$tree" | cut -f1)
tree_mb=$(( tree_bytes / 1000000 ))
echo "tree: $tree ($tree_mb MB, $(nproc) cores)"
# Warm the page cache: every tool reads the same tree from memory.
tar -cf - -C "$tree" . >/dev/null

results=()
# measure NAME OUTPUT_FILE_OR_DIR COMMAND...: seconds, size, peak RSS (kB).
measure() {
    local name=$1 output=$2
    shift 2
    local log=$work/time-$name
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$log" "$@"
    end=$(date +%s.%N)
    local seconds size rss
    seconds=$(echo "$end - $start" | bc -l)
    size=$(du -sb --apparent-size "$output" | cut -f1)
    rss=$(tail -1 "$log")
    results+=("$name $seconds $size $rss")
    printf '%-24s %7.2f s  %7.1f MB/s  %6d MB out  %6d MB peak\n' "$name" "$seconds" \
        "$(echo "$tree_mb / $seconds" | bc -l)" $(( size / 1000000 )) $(( rss / 1000 ))
}

measure imgbuild-gzip "$work/blobs-gzip" sh -c "'$export_layer' '$tree' '$work/blobs-gzip' gzip >/dev/null"
measure imgbuild-zstd "$work/blobs-zstd" sh -c "'$export_layer' '$tree' '$work/blobs-zstd' zstd >/dev/null"
measure tar-pigz-6 "$work/pigz.tar.gz" sh -c "tar --sort=name -cf - -C '$tree' . | pigz -6 > '$work/pigz.tar.gz'"
measure tar-zstd-3-T0 "$work/zstd.tar.zst" sh -c "tar --sort=name -cf - -C '$tree' . | zstd -q -3 -T0 > '$work/zstd.tar.zst'"

# umoci: an empty image, its bundle filled with the tree, then the timed repack.
umoci init --layout "$work/umoci" >/dev/null
umoci new --image "$work/umoci:bench" >/dev/null
umoci unpack --image "$work/umoci:bench" "$work/bundle" >/dev/null
cp -a "$tree/." "$work/bundle/rootfs/"
before=$(du -sb "$work/umoci/blobs" | cut -f1)
measure umoci-repack "$work/umoci/blobs" umoci repack --image "$work/umoci:bench" "$work/bundle"
rm -rf "$work/bundle"

# buildah: a scratch container with the tree copied into its (vfs) root, then the timed commit.
export STORAGE_DRIVER=vfs
storage=(--root "$work/buildah-root" --runroot "$work/buildah-run" --storage-driver vfs)
ctr=$(buildah "${storage[@]}" from scratch)
mnt=$(buildah "${storage[@]}" mount "$ctr")
cp -a "$tree/." "$mnt/"
measure buildah-commit "$work/buildah.oci" buildah "${storage[@]}" commit -q --disable-compression=false "$ctr" "oci-archive:$work/buildah.oci"
buildah "${storage[@]}" rm "$ctr" >/dev/null

echo
echo "ratios (time of the reference tool / time of imgbuild; >1 means imgbuild is faster):"
gzip_s=$(echo "${results[0]}" | cut -d' ' -f2)
zstd_s=$(echo "${results[1]}" | cut -d' ' -f2)
for r in "${results[@]:2}"; do
    read -r name seconds size _ <<<"$r"
    case $name in *zstd*) ours=$zstd_s ;; *) ours=$gzip_s ;; esac
    printf '  %-16s %5.2fx\n' "$name" "$(echo "$seconds / $ours" | bc -l)"
done
echo "(umoci's size includes its empty base; it started at $before bytes)"
