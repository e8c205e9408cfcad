#!/usr/bin/env python3
"""The recipes bench/pipeline.sh runs, made from one image recipe of images/.

Usage: pipeline_recipes.py RECIPE WORK NEW_NVIDIA_VERSION
       pipeline_recipes.py --security-archive RECIPE

Writes, in WORK:
  recipe.yml, recipe-bumped.yml   what imgbuild builds: the recipe, and the same with
                                  nvidia_version changed on its one line
  recipe-bumped-image.yml         the bumped recipe as an image of its own, <image>-bumped (for
                                  `--jobs 2` of both versions)
  recipe-early.yml, recipe-early-nocc.yml
                                  an early change: the recipe with one package more for the
                                  first package role (packages_extra), so every layer from that
                                  role on is rebuilt; -nocc another package, for the same round
                                  without the compile cache
  playbook-recipe.yml, playbook-recipe-bumped.yml, playbook-recipe-early.yml
                                  what ansible-playbook runs: the same roles and variables
and, beside RECIPE, <image>-base.yml: the recipe's base with no roles (the Ansible side's start),
and <image>-shared.yml: the roles before nvidia, which the bump leaves alone (what the two
images of `--jobs 2` share, built once and one role after the other: part of that round's floor).
(imgbuild builds an image by its file name, and a recipe's image_name must be that name.)

What differs from the recipe in images/, and why (findings, in docs/ansible.md too):
  - python3 and python3-apt join the base's packages: Ansible's modules run in the image's
    Python, and its apt module installs python3-apt into the image when it is missing (with
    distro-info-data and python-apt-common), so a site's image has both; imgbuild's recipe gets
    them too, so both trees hold them.
  - build_only_packages and boot_expect_failed are left out: they are imgbuild's (removing the
    build tools after the last role, the boot check); a playbook has no such step, and with it
    the trees would differ by every file of those packages.
  - The playbook drops `become` (the chroot connection runs as root; becoming root would need
    sudo in the image) and the variables only imgbuild reads (bootstrap, build_from,
    bootstrap_include, debootstrap_mirror), and targets `all` (the chroot's inventory).
With --security-archive: prints the security archive this machine's apt sources name for the
recipe's suite (`<suite>-security`), or nothing.
"""

import glob
import os
import sys

import yaml

IMGBUILD_ONLY = ["bootstrap", "build_from", "bootstrap_include", "debootstrap_mirror"]
# The early change: one small package more for the packages role (in Debian's main archive),
# and another for the round without the compile cache (so its layers are rebuilt too).
EARLY_PACKAGE = "tree"
EARLY_PACKAGE_NOCC = "file"
LEFT_OUT = ["build_only_packages", "boot_expect_failed"]


def load(path):
    with open(path) as f:
        plays = yaml.safe_load(f)
    if not isinstance(plays, list) or len(plays) != 1:
        sys.exit(f"{path}: a recipe is a playbook of one play")
    return plays


def dump(path, plays):
    with open(path, "w") as f:
        yaml.safe_dump(plays, f, default_flow_style=False, sort_keys=False, width=1000)


def security_archive(recipe):
    """The URI of `<suite>-security` in this machine's apt sources (one-line and deb822)."""
    suite = load(recipe)[0].get("vars", {}).get("build_from", "") + "-security"
    for path in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.list"):
        for line in open(path, errors="replace") if os.path.exists(path) else []:
            words = [w for w in line.split("#")[0].split() if not w.startswith("[")]
            if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                return words[1]
    for path in glob.glob("/etc/apt/sources.list.d/*.sources"):
        for stanza in open(path, errors="replace").read().split("\n\n"):
            fields = {}
            for line in stanza.splitlines():
                if ":" in line and not line.startswith((" ", "#")):
                    key, value = line.split(":", 1)
                    fields[key.strip().lower()] = value.split()
            if suite in fields.get("suites", []) and fields.get("uris"):
                return fields["uris"][0]
    return ""


def main():
    if sys.argv[1:2] == ["--security-archive"]:
        print(security_archive(sys.argv[2]))
        return
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    recipe, work, new_version = sys.argv[1:]
    plays = load(recipe)
    play = plays[0]
    variables = play.setdefault("vars", {})
    old_version = str(variables.get("nvidia_version", ""))
    if not old_version:
        sys.exit(f"{recipe}: no nvidia_version to bump")
    include = list(variables.get("bootstrap_include", []))
    for package in ["python3", "python3-apt"]:
        if package not in include:
            include.append(package)
    variables["bootstrap_include"] = include
    for key in LEFT_OUT:
        variables.pop(key, None)
    variables["nvidia_version"] = old_version
    dump(os.path.join(work, "recipe.yml"), plays)
    text = open(os.path.join(work, "recipe.yml")).read()
    old_line = yaml.safe_dump({"nvidia_version": old_version}).strip()
    new_line = yaml.safe_dump({"nvidia_version": new_version}).strip()
    if text.count(old_line) != 1:
        sys.exit(f"{recipe}: nvidia_version is not on one line of its own")
    with open(os.path.join(work, "recipe-bumped.yml"), "w") as f:
        f.write(text.replace(old_line, new_line))

    stem = os.path.splitext(os.path.basename(recipe))[0]
    bumped = dict(play, vars=dict(variables, nvidia_version=new_version))
    bumped["vars"]["image_name"] = f"{stem}-bumped"
    dump(os.path.join(work, "recipe-bumped-image.yml"), [bumped])
    base = dict(play, roles=[], vars=dict(variables, image_name=f"{stem}-base"))
    dump(os.path.join(os.path.dirname(recipe), f"{stem}-base.yml"), [base])
    roles = play.get("roles", [])
    if "nvidia" not in roles:
        sys.exit(f"{recipe}: no nvidia role to bump")
    shared_roles = roles[: roles.index("nvidia")]
    shared = dict(play, roles=shared_roles, vars=dict(variables, image_name=f"{stem}-shared"))
    dump(os.path.join(os.path.dirname(recipe), f"{stem}-shared.yml"), [shared])

    for name, extra in [("recipe-early", EARLY_PACKAGE), ("recipe-early-nocc", EARLY_PACKAGE_NOCC)]:
        early = dict(play, vars=dict(variables, packages_extra=[extra]))
        dump(os.path.join(work, f"{name}.yml"), [early])

    for name, version, extra in [
        ("recipe", old_version, None),
        ("recipe-bumped", new_version, None),
        ("recipe-early", old_version, EARLY_PACKAGE),
    ]:
        playbook = {
            "name": f"{stem} (ansible-playbook)",
            "hosts": "all",
            "vars": {k: v for k, v in variables.items() if k not in IMGBUILD_ONLY},
            "roles": play.get("roles", []),
        }
        playbook["vars"]["nvidia_version"] = version
        if extra:
            playbook["vars"]["packages_extra"] = [extra]
        dump(os.path.join(work, f"playbook-{name}.yml"), [playbook])


if __name__ == "__main__":
    main()
