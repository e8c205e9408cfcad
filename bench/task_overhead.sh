#!/usr/bin/env bash
# Per-task overhead of the role engine: a play of N `shell: "true"` tasks run
#   1. by imgbuild (`imgbuild apply`, one sandbox for the role),
#   2. by ansible-playbook with the chroot connection (Debian's ansible package),
#   3. and the floor: a bash loop of `chroot <root> /bin/sh -c true`,
# then a play of N tasks of a module imgbuild does not implement (community.general.crypttab,
# run with Ansible's own code) by imgbuild and by ansible-playbook, then a play of
# ACTIONS (default 20) tasks of a role's action plugin (which imgbuild runs with ansible-core's
# executor, one play a task, in one runner process per build) by imgbuild and by
# ansible-playbook,
# all on the same Debian bookworm rootfs, in one run. Prints ms per task and the ratios.
# Needs root, debootstrap, ansible; the rootfs (with python3 for Ansible) is cached in
# $IMGBUILD_TEST_CACHE (default /var/tmp/imgbuild-test-cache).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tasks=${TASKS:-100}
cache=${IMGBUILD_TEST_CACHE:-/var/tmp/imgbuild-test-cache}
root=$cache/bench-bookworm-python
imgbuild=${IMGBUILD:-$here/target/release/imgbuild}
[ -x "$imgbuild" ] || (cd "$here" && cargo build --release -q -p imgbuild)
command -v ansible-playbook >/dev/null || { echo "needs ansible-playbook (apt-get install ansible)"; exit 1; }

if [ ! -x "$root/usr/bin/python3" ]; then
    suite_url=$(python3 - <<'PY'
import glob, re
for f in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*")):
    try: text = open(f).read()
    except OSError: continue
    for m in re.finditer(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s.*\bmain\b", text, re.M): print(m.group(1)); raise SystemExit
    for stanza in text.split("\n\n"):
        if re.search(r"^Suites:.*\bbookworm\b", stanza, re.M) and re.search(r"^Components:.*\bmain\b", stanza, re.M):
            m = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            if m: print(m.group(1)); raise SystemExit
PY
)
    rm -rf "$root.tmp"; mkdir -p "$cache"
    debootstrap --variant=minbase --include=python3 bookworm "$root.tmp" "$suite_url" >/dev/null
    mv "$root.tmp" "$root"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/images" "$work/roles/noop/tasks"
cat > "$work/images/bench.yml" <<YML
- hosts: localhost
  vars: {bootstrap: debootstrap, build_from: bookworm, kernel_version: "6.1.0-50-amd64"}
  roles: [noop]
YML
for i in $(seq "$tasks"); do printf -- '- name: noop %s\n  shell: "true"\n' "$i"; done > "$work/roles/noop/tasks/main.yml"
printf -- '- hosts: all\n  gather_facts: no\n  roles: [noop]\n' > "$work/play.yml"

now() { date +%s%N; }
ms_per_task() { echo "scale=2; ($2 - $1) / 1000000 / $tasks" | bc; }

# Warm the page cache and the binaries once.
"$imgbuild" -C "$work" apply bench --root "$root" >/dev/null 2>&1
t0=$(now); "$imgbuild" -C "$work" apply bench --root "$root" >/dev/null 2>&1; t1=$(now)
imgbuild_ms=$(ms_per_task "$t0" "$t1")

t0=$(now)
(cd "$work" && ANSIBLE_ROLES_PATH="$work/roles" ansible-playbook -i "$root," -c community.general.chroot \
    -e ansible_python_interpreter=/usr/bin/python3 play.yml >/dev/null 2>&1)
t1=$(now)
ansible_ms=$(ms_per_task "$t0" "$t1")

t0=$(now); for _ in $(seq "$tasks"); do chroot "$root" /bin/sh -c true; done; t1=$(now)
floor_ms=$(ms_per_task "$t0" "$t1")

# Ansible's own code: the same module run by both, imgbuild staging it as AnsiballZ does.
mkdir -p "$work/roles/foreign/tasks"
for i in $(seq "$tasks"); do
    printf -- '- name: foreign %s\n  community.general.crypttab: {name: "bench%s", backing_device: /dev/vdb%s, state: present, path: /tmp/bench-crypttab}\n' "$i" "$i" "$i"
done > "$work/roles/foreign/tasks/main.yml"
sed 's/roles: \[noop\]/roles: [foreign]/' "$work/images/bench.yml" > "$work/images/foreign.yml"
sed 's/roles: \[noop\]/roles: [foreign]/' "$work/play.yml" > "$work/foreign.yml"
rm -f "$root/tmp/bench-crypttab"
t0=$(now); "$imgbuild" -C "$work" apply foreign --root "$root" >/dev/null 2>&1; t1=$(now)
foreign_imgbuild_ms=$(ms_per_task "$t0" "$t1")
rm -f "$root/tmp/bench-crypttab"
t0=$(now)
(cd "$work" && ANSIBLE_ROLES_PATH="$work/roles" ansible-playbook -i "$root," -c community.general.chroot \
    -e ansible_python_interpreter=/usr/bin/python3 foreign.yml >/dev/null 2>&1)
t1=$(now)
foreign_ansible_ms=$(ms_per_task "$t0" "$t1")
rm -f "$root/tmp/bench-crypttab"

# A role's action plugin: imgbuild's runner runs a one-task play for each such task.
actions=${ACTIONS:-20}
mkdir -p "$work/roles/action/tasks" "$work/roles/action/action_plugins"
cat > "$work/roles/action/action_plugins/bench_true.py" <<'PY'
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(self._low_level_execute_command('true'))
        return result
PY
for i in $(seq "$actions"); do printf -- '- name: action %s\n  bench_true: {}\n' "$i"; done \
    > "$work/roles/action/tasks/main.yml"
sed 's/roles: \[noop\]/roles: [action]/' "$work/images/bench.yml" > "$work/images/action.yml"
sed 's/roles: \[noop\]/roles: [action]/' "$work/play.yml" > "$work/action.yml"
t0=$(now)
"$imgbuild" -C "$work" apply action --root "$root" >/dev/null 2>&1 || { echo "imgbuild apply failed on the action plugin round" >&2; exit 1; }
t1=$(now)
action_imgbuild_ms=$(tasks=$actions ms_per_task "$t0" "$t1")
t0=$(now)
(cd "$work" && ANSIBLE_ROLES_PATH="$work/roles" ansible-playbook -i "$root," -c community.general.chroot \
    -e ansible_python_interpreter=/usr/bin/python3 action.yml >/dev/null 2>&1)
t1=$(now)
action_ansible_ms=$(tasks=$actions ms_per_task "$t0" "$t1")

echo "per task, $tasks tasks of shell: true (ms):"
echo "  imgbuild apply          $imgbuild_ms"
echo "  ansible-playbook chroot $ansible_ms"
echo "  floor (chroot sh loop)  $floor_ms"
echo "  ansible / imgbuild      $(echo "scale=1; $ansible_ms / $imgbuild_ms" | bc)x"
echo "  imgbuild / floor        $(echo "scale=2; $imgbuild_ms / $floor_ms" | bc)x"
echo "per task, $tasks tasks of community.general.crypttab, Ansible's own code (ms):"
echo "  imgbuild apply          $foreign_imgbuild_ms"
echo "  ansible-playbook chroot $foreign_ansible_ms"
echo "  imgbuild / ansible      $(echo "scale=2; $foreign_imgbuild_ms / $foreign_ansible_ms" | bc)x"
echo "per task, $actions tasks of a role's action plugin, run by ansible-core's executor (ms):"
echo "  imgbuild apply          $action_imgbuild_ms"
echo "  ansible-playbook chroot $action_ansible_ms"
echo "  imgbuild / ansible      $(echo "scale=2; $action_imgbuild_ms / $action_ansible_ms" | bc)x"
