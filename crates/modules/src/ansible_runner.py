# imgbuild's action runner: one process per build that runs the tasks of action plugins as
# ansible-playbook runs them (ansible-core's Playbook and TaskQueueManager over the play's
# connection), started once instead of once a task. It reads one request a line on stdin (JSON:
# the task's folder with its play.yml and inventory.yml, the plugin folders, check and diff) and
# answers one line on stdout: {"ran": true} once the play ran (the result is in the folder's
# result.json), or {"error": "..."} with Ansible's message (never the play's text, which holds
# the task's arguments). It ends when stdin ends: with the build that started it.
import json
import os
import sys


def answer(out, **fields):
    out.write(json.dumps(fields) + "\n")
    out.flush()


def main():
    out = sys.stdout
    # What Ansible prints goes to stderr; stdout carries the answers only.
    sys.stdout = sys.stderr
    try:
        from ansible import constants as C
        from ansible import context
        from ansible.errors import AnsibleError
        from ansible.executor.task_queue_manager import TaskQueueManager
        from ansible.inventory.manager import InventoryManager
        from ansible.module_utils.common.collections import ImmutableDict
        from ansible.parsing.dataloader import DataLoader
        from ansible.playbook import Playbook
        from ansible.plugins.callback import CallbackBase
        from ansible.plugins.loader import action_loader, module_loader, module_utils_loader
        from ansible.utils.display import Display
        from ansible.vars.manager import VariableManager
    except Exception as e:  # an Ansible this runner cannot drive: the caller runs ansible-playbook
        answer(out, unsupported="cannot load ansible-core's executor: %s" % e)
        return
    loaders = (action_loader, module_loader, module_utils_loader)
    if not all(hasattr(l, "_extra_dirs") and hasattr(l, "_clear_caches") for l in loaders):
        answer(out, unsupported="this ansible-core's plugin loaders cannot change folders per task")
        return
    initial = {id(l): list(l._extra_dirs) for l in loaders}

    class Result(CallbackBase):
        """Keeps the task's result in the folder's result.json, as the callback of a run of
        ansible-playbook does."""

        CALLBACK_VERSION = 2.0
        CALLBACK_TYPE = "stdout"
        CALLBACK_NAME = "imgbuild_result"

        def __init__(self, path):
            super().__init__()
            self._path = path

        def _keep(self, result, status):
            from ansible.parsing.ajson import AnsibleJSONEncoder

            with open(self._path, "w") as kept:
                json.dump({"status": status, "result": result._result}, kept, cls=AnsibleJSONEncoder)

        def v2_runner_on_ok(self, result):
            self._keep(result, "ok")

        def v2_runner_on_failed(self, result, ignore_errors=False):
            self._keep(result, "failed")

        def v2_runner_on_skipped(self, result):
            self._keep(result, "skipped")

        def v2_runner_on_unreachable(self, result):
            self._keep(result, "unreachable")

    answer(out, ready=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError as e:
            answer(out, error="a request that is not JSON: %s" % e)
            continue
        folder = request["dir"]
        for loader, extra in (
            (action_loader, request.get("action_plugins", [])),
            (module_loader, request.get("library", [])),
            (module_utils_loader, request.get("module_utils", [])),
        ):
            wanted = initial[id(loader)] + list(extra)
            # Another role's folders: what the loader found in the last ones is forgotten.
            if loader._extra_dirs != wanted:
                loader._extra_dirs = wanted
                loader._clear_caches()
        local = os.path.join(folder, "local")
        os.makedirs(local, exist_ok=True)
        C.DEFAULT_LOCAL_TMP = local
        context.CLIARGS = ImmutableDict(
            check=bool(request.get("check")),
            diff=bool(request.get("diff")),
            tags=("all",),
            skip_tags=(),
            forks=1,
            verbosity=0,
            become=False,
            become_method="sudo",
            become_user=None,
            connection="smart",
            module_path=None,
            start_at_task=None,
            syntax=False,
            listhosts=False,
            listtasks=False,
            listtags=False,
            subset=None,
        )
        Display().verbosity = 0
        loader = DataLoader()
        tqm = None
        try:
            inventory = InventoryManager(loader=loader, sources=[os.path.join(folder, "inventory.yml")])
            variables = VariableManager(loader=loader, inventory=inventory)
            playbook = Playbook.load(os.path.join(folder, "play.yml"), variable_manager=variables, loader=loader)
            for play in playbook.get_plays():
                tqm = TaskQueueManager(
                    inventory=inventory,
                    variable_manager=variables,
                    loader=loader,
                    passwords={},
                    stdout_callback=Result(os.path.join(folder, "result.json")),
                )
                tqm.run(play)
                tqm.cleanup()
                tqm = None
            answer(out, ran=True)
        except AnsibleError as e:
            # The message without the excerpt of the play Ansible adds to it.
            said = getattr(e, "_message", None) or str(e)
            answer(out, error="ERROR! " + str(said).splitlines()[0])
        except Exception as e:
            answer(out, error="ERROR! %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        finally:
            if tqm is not None:
                tqm.cleanup()
            loader.cleanup_all_tmp_files()


if __name__ == "__main__":
    main()
