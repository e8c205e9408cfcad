#!/bin/sh
# mkdisk: format the node-local scratch disk when it holds no filesystem, and mount it.
# Settings come from /etc/mkdisk.conf (MKDISK_DEVICE, MKDISK_MOUNT, MKDISK_FSTYPE).
set -eu
[ -r /etc/mkdisk.conf ] && . /etc/mkdisk.conf
device=${MKDISK_DEVICE:-/dev/nvme0n1}
mount_point=${MKDISK_MOUNT:-/local_scratch}
fstype=${MKDISK_FSTYPE:-xfs}
if [ ! -b "$device" ]; then
    echo "mkdisk: $device is not a block device; nothing to do"
    exit 0
fi
if ! blkid "$device" >/dev/null 2>&1; then
    echo "mkdisk: creating $fstype on $device"
    mkfs -t "$fstype" "$device"
fi
mkdir -p "$mount_point"
mountpoint -q "$mount_point" || mount "$device" "$mount_point"
chmod 1777 "$mount_point"
