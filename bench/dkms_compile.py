#!/usr/bin/env python3
"""The DKMS compile on Ansible's side of bench/pipeline.sh, from its rootfs's dpkg.log: the
seconds dpkg spent configuring each `*-dkms` package (its postinst runs the compile), charged
as imgbuild's report charges them (crates/engine/src/costs.rs: each interval between two log
lines goes to the action the last action line began). Put beside the floor that
bump_floor.py reads from imgbuild's report, it says whether the two sides' compiles took the
same time, so that the floor is the same for both.

  dkms_compile.py ROOT/var/log/dpkg.log

Prints one line per package and `dkms SECONDS`, their sum.
"""
import datetime
import sys

ACTIONS = {"install", "upgrade", "configure", "trigproc", "remove", "purge"}


def parse(line):
    words = line.split()
    if len(words) < 3:
        return None
    try:
        at = datetime.datetime.strptime(f"{words[0]} {words[1]}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return at.timestamp(), words[2:]


def dkms_seconds(lines):
    entries = [e for e in map(parse, lines) if e]
    seconds = {}
    current = None
    for (at, words), (next_at, _) in zip(entries, entries[1:]):
        if len(words) >= 2 and words[0] in ACTIONS:
            current = (words[0], words[1].split(":")[0])
        if current and current[0] == "configure" and current[1].endswith("-dkms"):
            seconds[current[1]] = seconds.get(current[1], 0.0) + max(next_at - at, 0.0)
    return seconds


def main():
    with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
        seconds = dkms_seconds(log)
    for package, spent in seconds.items():
        print(f"  {spent:7.1f} s  the DKMS compile ({package})")
    print(f"dkms {sum(seconds.values()):.1f}")


if __name__ == "__main__":
    main()
