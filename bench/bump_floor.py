#!/usr/bin/env python3
"""The floor of a driver bump, from imgbuild's report.json of that build: the work a bump
must redo whoever does it, as the rebuilt layers measured it. bench/pipeline.sh also reads
each `--jobs 2` image's report with it: what that image must do on its own.

  * the DKMS compile of the new driver: the configure seconds dpkg logged for each
    `*-dkms` package (its postinst runs the compile);
  * the image's initramfs, built again because the modules in it changed: the tasks whose
    name says they build the initramfs (the dracut role's own build, or imgbuild's one
    build for the packages' hooks).

Cached layers cost a bump nothing and are skipped. Prints `floor SECONDS` and what it is
made of, one line each.
"""
import json
import sys


def floor(report):
    parts = []
    for layer in report.get("layers", []):
        if layer.get("cached"):
            continue
        for cost in layer.get("costs", []):
            phases = cost.get("packages") or {}
            for name, seconds in phases.get("slowest", []):
                if name.split(":")[0].endswith("-dkms"):
                    parts.append((f"{layer['role']}: the DKMS compile ({name})", seconds))
            if "initramfs" in cost.get("task", ""):
                parts.append((f"{layer['role']}: {cost['task']}", cost["seconds"]))
    return parts


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        parts = floor(json.load(f))
    for what, seconds in parts:
        print(f"  {seconds:7.1f} s  {what}")
    print(f"floor {sum(s for _, s in parts):.1f}")


if __name__ == "__main__":
    main()
