# The helper imgbuild runs Python plugins with, as Ansible's controller runs them.
#
# argv[1] is JSON: {"files": [[kind, path], ...], "names": [[kind, name], ...], "basedir": dir}.
# It loads the plugin files (filter and test plugins by their FilterModule/TestModule, a lookup
# plugin by its LookupModule, named as its file), skipping a file that does not load as
# Ansible's plugin loader skips it, then finds each of the other names with Ansible's own
# loaders (ansible-core's plugins, the installed collections, their routing). It prints where
# each name comes from (a file's index, or null for Ansible's loaders) and the files it skipped,
# then answers one JSON call a line, {"kind", "name", "args", "kwargs", "variables"}, with
# {"ok": result} or {"error": text}. A Python without ansible says so and stops.
import functools, importlib.util, json, os, sys
try:
    from ansible.plugins.loader import filter_loader, test_loader, lookup_loader
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from jinja2.nodes import EvalContext
    from jinja2.utils import _PassArg
except ImportError as e:
    print(json.dumps({"no_ansible": str(e)}), flush=True)
    sys.exit(3)

request = json.loads(sys.argv[1])
plugins = {"filter": {}, "test": {}, "lookup": {}}
origin = {"filter": {}, "test": {}, "lookup": {}}
skipped = []


def defined(kind, module, path):
    if kind == "filter":
        return module.FilterModule().filters() if hasattr(module, "FilterModule") else {}
    if kind == "test":
        return module.TestModule().tests() if hasattr(module, "TestModule") else {}
    if not hasattr(module, "LookupModule"):
        return {}
    return {os.path.splitext(os.path.basename(path))[0]: module.LookupModule}


for i, (kind, path) in enumerate(request["files"]):
    try:
        spec = importlib.util.spec_from_file_location("imgbuild_plugin_%d" % i, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found = defined(kind, module, path)
    except Exception as e:
        skipped.append("%s: %s: %s" % (path, type(e).__name__, e))
        continue
    for name, function in found.items():
        plugins[kind][name] = function
        origin[kind][name] = i


def ansible_plugin(kind, name):
    """The plugin Ansible's loaders find for name, or None."""
    try:
        if kind == "lookup":
            return lookup_loader.get(name, class_only=True)
        found = (filter_loader if kind == "filter" else test_loader).get(name)
        return found.j2_function if found is not None else None
    except Exception:
        return None


for kind, name in request["names"]:
    if name in plugins[kind]:
        continue
    function = ansible_plugin(kind, name)
    if function is not None:
        plugins[kind][name] = function
        origin[kind][name] = None

print(json.dumps({"origin": origin, "skipped": skipped}), flush=True)

loader = DataLoader()
if request.get("basedir"):
    loader.set_basedir(request["basedir"])
templar = Templar(loader=loader)


def with_jinja_argument(function):
    """The function with what Jinja passes first to a pass_environment, pass_eval_context or
    pass_context filter or test (Ansible's environment; a context without variables)."""
    passed = _PassArg.from_obj(function)
    if passed is _PassArg.environment:
        return functools.partial(function, templar.environment)
    if passed is _PassArg.eval_context:
        return functools.partial(function, EvalContext(templar.environment))
    if passed is _PassArg.context:
        context = templar.environment.from_string("").new_context({})
        return functools.partial(function, context)
    return function


def run(call):
    kind, name = call["kind"], call["name"]
    if kind != "lookup":
        return with_jinja_argument(plugins[kind][name])(*call["args"], **call["kwargs"])
    # As Ansible's Templar._lookup: the terms as given, the task's variables.
    variables = call.get("variables") or {}
    templar.available_variables = variables
    instance = plugins["lookup"][name](loader=loader, templar=templar)
    return instance.run(call["args"], variables=variables, **call["kwargs"])


for line in sys.stdin:
    call = json.loads(line)
    try:
        answer = json.dumps({"ok": run(call)}, default=list)
    except Exception as e:
        answer = json.dumps({"error": "%s: %s" % (type(e).__name__, e)})
    print(answer, flush=True)
