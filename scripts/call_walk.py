#!/usr/bin/env python3
"""The path of one Python statement through csrc/'s files, as gdb sees it.

  python scripts/call_walk.py [--setup CODE] [--root DIR] STATEMENT

Runs Python under gdb: the setup code (default: two small CPU tensors a, b
and a one-layer model with its loss) runs first, then a breakpoint on every
function of pygpu._C's csrc files records each call while STATEMENT runs.
Prints the files in the order they are entered (a file entered again right
after itself is one step), how many distinct files the walk visits, and
each call from a floor to one above it (scripts/check_layers.py's ranks;
--root: another checkout with its extension built, its files placed on
the floors where this checkout keeps a file of the same name).  Functions the compiler inlined are not seen; the extension needs
its debug information (setup.py builds with -g).  Needs gdb.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_layers  # noqa: E402
from check_layers import LAYERS, layer_of  # noqa: E402

HERE_CSRC = os.path.join(ROOT, "csrc")

SETUP = """
import pygpu
a = pygpu.randn(64, 64)
b = pygpu.randn(64, 64)
w = pygpu.randn(8, 64, requires_grad=True)
x = pygpu.randn(16, 64)
t = pygpu.tensor([i % 8 for i in range(16)])
loss = pygpu.nn.functional.cross_entropy(pygpu.nn.functional.linear(x, w), t)
"""

# Run inside gdb: stop at the first SIGTRAP (setup done), break on every
# function of the extension's csrc files, log each call until the second.
GDB_SCRIPT = r"""
import gdb, json, os
calls = []
class Logger(gdb.Breakpoint):
    def stop(self):
        f = gdb.selected_frame()
        sal = f.find_sal()
        if sal.symtab is not None:
            caller = f.older()
            csal = caller.find_sal() if caller is not None else None
            cfile = csal.symtab.filename if csal and csal.symtab else ""
            calls.append([sal.symtab.filename, f.name(), cfile])
        return False
gdb.execute("set pagination off")
gdb.execute("set breakpoint pending on")
gdb.execute("handle SIGTRAP stop nopass")
gdb.execute("run")
for src in json.loads(os.environ["WALK_SOURCES"]):
    for name in json.loads(os.environ["WALK_FUNCS_" + src.replace("/", "_").replace(".", "_")]):
        try:
            Logger(src + ":" + name, internal=True)
        except gdb.error:
            pass
gdb.execute("continue")
with open(os.environ["WALK_OUT"], "w") as fh:
    json.dump(calls, fh)
gdb.execute("kill")
"""

PROGRAM = """
import os, signal, sys
# This checkout's pygpu, whatever an editable install elsewhere points at.
sys.meta_path = [f for f in sys.meta_path
                 if "Editable" not in getattr(f, "__name__", "")]
sys.path.insert(0, {root!r})
import pygpu._C
assert pygpu._C.__file__.startswith({root!r}), pygpu._C.__file__
{setup}
os.kill(os.getpid(), signal.SIGTRAP)
{statement}
os.kill(os.getpid(), signal.SIGTRAP)
"""


def floor_path(rel):
    """rel (a path under csrc/ of the checkout walked) as this checkout
    files it: a file that moved to another floor keeps its name."""
    if os.path.exists(os.path.join(HERE_CSRC, rel)):
        return rel
    name = os.path.basename(rel)
    for d, _, files in os.walk(HERE_CSRC):
        if name in files:
            return os.path.relpath(os.path.join(d, name), HERE_CSRC)
    return rel


def rank(rel):
    return LAYERS.get(layer_of(rel) or "module", 99)


def main(argv):
    global ROOT
    setup = SETUP
    if "--root" in argv:
        i = argv.index("--root")
        ROOT = os.path.abspath(argv[i + 1])
        del argv[i:i + 2]
    if "--setup" in argv:
        i = argv.index("--setup")
        setup = argv[i + 1]
        del argv[i:i + 2]
    statement = " ".join(argv) or "a + b"
    # The names each C file defines, static ones included, as
    # check_layers reads them (macros expanded); a name gdb finds no
    # function for (a variable) is passed over.
    check_layers.CSRC = os.path.join(ROOT, "csrc")
    env = dict(os.environ)
    sources = []
    for rel, (_, defined, local, _, _) in sorted(check_layers.files().items()):
        if rel.endswith(".c"):
            src = os.path.join("csrc", rel)
            sources.append(src)
            key = "WALK_FUNCS_" + src.replace("/", "_").replace(".", "_")
            env[key] = json.dumps(sorted(defined | local))
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "prog.py")
        with open(prog, "w") as fh:
            fh.write(PROGRAM.format(setup=setup, statement=statement,
                                    root=ROOT))
        gdbpy = os.path.join(tmp, "walk_gdb.py")
        with open(gdbpy, "w") as fh:
            fh.write(GDB_SCRIPT)
        env["WALK_SOURCES"] = json.dumps(sources)
        env["WALK_OUT"] = os.path.join(tmp, "calls.json")
        subprocess.run(["gdb", "-q", "-batch", "-x", gdbpy, "--args",
                        sys.executable, prog], env=env, cwd=ROOT,
                       stdout=None if os.environ.get("WALK_DEBUG") else subprocess.DEVNULL,
                       stderr=None if os.environ.get("WALK_DEBUG") else subprocess.DEVNULL)
        if not os.path.exists(env["WALK_OUT"]):
            print("call_walk: gdb could not run the statement (set "
                  "WALK_DEBUG=1 to see why)", file=sys.stderr)
            return 2
        with open(env["WALK_OUT"]) as fh:
            calls = json.load(fh)
    steps = []
    up = []
    for filename, func, caller in calls:
        if "csrc/" not in filename:
            continue  # a header of Python's, inlined
        rel = floor_path(filename.split("csrc/", 1)[-1])
        if "csrc/" in caller:
            frm = floor_path(caller.split("csrc/", 1)[-1])
            if rank(frm) < rank(rel):
                how = (" through the rows cpu/ and cuda/ register"
                       if frm == "core/dispatch.c" else "")
                up.append(f"{frm} -> {rel} ({func}){how}")
        if not steps or steps[-1][0] != rel:
            steps.append([rel, [func]])
        elif func not in steps[-1][1]:
            steps[-1][1].append(func)
    print(f"walk of `{statement}`:")
    for rel, funcs in steps:
        print(f"  {rel}: {', '.join(funcs)}")
    for u in up:
        print(f"  call up: {u}")
    print(f"{len(steps)} steps, {len({s[0] for s in steps})} files, "
          f"{len(up)} calls to a floor above")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
