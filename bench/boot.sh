#!/usr/bin/env bash
# imgbuild boot on one image rootfs, in one run, warm page cache:
#   1. packing: imgbuild's newc writer + zstd, or gzip -1 for a kernel without zstd
#      initramfs support (as part of `imgbuild boot`), against what
#      `wwctl image build` runs, `find . | cpio -o -H newc | gzip -1`;
#   2. the boot itself under TCG: QEMU's start to the probe's last line.
# Usage (as root): bash bench/boot.sh ROOTFS, a rootfs folder with /boot/vmlinuz-* (for
# example the demo's image built with --format chroot). Needs cpio, gzip and qemu-system-x86.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rootfs=${1:?usage: bench/boot.sh ROOTFS}
imgbuild=${IMGBUILD:-$here/target/release/imgbuild}
[ -x "$imgbuild" ] || (cd "$here" && cargo build --release --locked -q -p imgbuild)
work=$(mktemp -d /var/tmp/imgbuild-boot-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Warm the page cache so neither side is timed on the disk.
tar -C "$rootfs" -cf - . >/dev/null

start=$(date +%s.%N)
(cd "$rootfs" && find . | cpio --quiet -o -H newc | gzip -1 > "$work/reference.cpio.gz")
end=$(date +%s.%N)

"$imgbuild" --json boot "$rootfs" --accel tcg --console "$work/console.log" > "$work/report.json" || true
python3 - "$work/report.json" "$start" "$end" "$work/reference.cpio.gz" <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1]))
reference = float(sys.argv[3]) - float(sys.argv[2])
print(f"packing: imgbuild {report['pack_seconds']:.1f}s, find | cpio | gzip -1 {reference:.1f}s "
      f"(ratio {report['pack_seconds'] / reference:.2f}; reference archive "
      f"{os.path.getsize(sys.argv[4]) / 1e6:.0f} MB)")
print(f"boot under {report['accel']}: {report['seconds']:.1f}s to the probe's end, "
      f"{report['memory_mb']} MB; passed: {report['ok']}")
PY
