#!/usr/bin/env python3
"""Compares two rootfs folders path by path: type, mode, owner, group, link target, content.

Usage: tree_diff.py ANSIBLE_ROOT IMGBUILD_ROOT

Prints every difference, each marked with why it is expected (docs/ansible.md's "Side by side with
ansible-playbook" section says more) or UNEXPLAINED, then a last line `diffs N` with N the
unexplained ones. Paths that change on every run, whoever makes the tree, are not compared
(VOLATILE below). Times are never compared.
"""

import fnmatch
import hashlib
import os
import stat
import sys

# Paths that differ between any two runs of the same job, by either tool: not compared.
VOLATILE = [
    # Logs: timestamps in every line (dpkg, apt, alternatives, debootstrap, DKMS builds).
    "var/log/*",
    "var/lib/dkms/*/build/make.log",
    "var/lib/dkms/*/*/build/make.log",
    "var/lib/dkms/*/*/*/*/log/make.log",
    # apt's binary caches and the package lists' download state, rebuilt at every update.
    "var/cache/apt/*.bin",
    "var/lib/apt/lists/partial",
    "var/lib/apt/lists/lock",
    "var/lib/apt/lists/auxfiles",
    # Backups dpkg and debconf keep of their own databases (the state before the last run).
    "var/lib/dpkg/*-old",
    "var/cache/debconf/*-old",
    # ldconfig's auxiliary cache holds file times.
    "var/cache/ldconfig/aux-cache",
    # The days-since-1970 of the last password change: the day of the run.
    "etc/shadow",
    "etc/shadow-",
    "etc/gshadow-",
    "etc/passwd-",
    "etc/group-",
    "etc/subuid-",
    "etc/subgid-",
    # systemd's journal catalog database (built with the run's time).
    "var/lib/systemd/catalog/database",
    # SSH host keys: openssh-server's postinst makes new random ones at every install.
    "etc/ssh/ssh_host_*",
    # Python's bytecode caches, written when a program (an Ansible module too) imports a module.
    "*/__pycache__",
    "*/__pycache__/*",
]

# Differences that are not volatile but expected, each with its reason (see docs/ansible.md).
EXPLAINED = [
    (
        "var/cache/apt/archives/*.deb",
        "downloaded packages: imgbuild keeps them in its package cache, out of the image; the "
        "Ansible side's apt leaves the ones no role cleaned up",
    ),
    (
        "var/cache/apt/archives/lock",
        "apt's download lock: imgbuild's package cache is mounted over the archives folder while "
        "a role runs, so apt's lock and its partial/ folder's mode change there, not in the image",
    ),
    (
        "var/cache/apt/archives/partial",
        "apt's download folder: left as the base has it under imgbuild's package cache mount",
    ),
]


def matches(path, patterns):
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def describe(root, rel):
    """What a path is, as compared: (kind, mode, uid, gid, link or size+digest)."""
    path = os.path.join(root, rel)
    st = os.lstat(path)
    mode = stat.S_IMODE(st.st_mode)
    owner = (st.st_uid, st.st_gid)
    if stat.S_ISLNK(st.st_mode):
        return ("link", mode, owner, os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", mode, owner, None)
    if stat.S_ISREG(st.st_mode):
        return ("file", mode, owner, st.st_size)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return ("dev", mode, owner, st.st_rdev)
    return ("other", mode, owner, None)


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def walk(root):
    """Every path below root (relative), not following links, skipping volatile ones."""
    paths = set()
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        rel_top = "" if rel_top == "." else rel_top
        kept = []
        for d in dirs:
            rel = os.path.join(rel_top, d)
            if matches(rel, VOLATILE):
                continue
            paths.add(rel)
            if not os.path.islink(os.path.join(top, d)):
                kept.append(d)
        dirs[:] = kept
        for f in files:
            rel = os.path.join(rel_top, f)
            if not matches(rel, VOLATILE):
                paths.add(rel)
    return paths


def difference(a_root, b_root, rel, in_a, in_b):
    if not in_b:
        return "only in Ansible's tree"
    if not in_a:
        return "only in imgbuild's tree"
    a, b = describe(a_root, rel), describe(b_root, rel)
    if a[0] != b[0]:
        return f"type {a[0]} / {b[0]}"
    if a[1] != b[1]:
        return f"mode {a[1]:04o} / {b[1]:04o}"
    if a[2] != b[2]:
        return f"owner {a[2][0]}:{a[2][1]} / {b[2][0]}:{b[2][1]}"
    if a[0] == "link" and a[3] != b[3]:
        return f"link {a[3]} / {b[3]}"
    if a[0] == "dev" and a[3] != b[3]:
        return "device numbers"
    if a[0] == "file":
        if a[3] != b[3]:
            return f"content (size {a[3]} / {b[3]})"
        if digest(os.path.join(a_root, rel)) != digest(os.path.join(b_root, rel)):
            return "content"
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a_root, b_root = sys.argv[1], sys.argv[2]
    a_paths, b_paths = walk(a_root), walk(b_root)
    unexplained = 0
    explained = {}
    for rel in sorted(a_paths | b_paths):
        what = difference(a_root, b_root, rel, rel in a_paths, rel in b_paths)
        if what is None:
            continue
        reason = next((r for p, r in EXPLAINED if fnmatch.fnmatchcase(rel, p)), None)
        if reason is None:
            unexplained += 1
            print(f"UNEXPLAINED /{rel}: {what}")
        else:
            explained.setdefault(reason, []).append(rel)
    for reason, paths in explained.items():
        print(f"explained ({len(paths)} paths, e.g. /{paths[0]}): {reason}")
    print(f"compared {len(a_paths | b_paths)} paths")
    print(f"diffs {unexplained}")


if __name__ == "__main__":
    main()
