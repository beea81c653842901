"""csrc/ follows its layers (scripts/check_layers.py): no include cycle, no
include or call of a layer above or beside, no folder cycle, no folder over
a quarter of the lines; and the check itself catches each of these on small
trees written here."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, SANITIZED
SCRIPT = os.path.join(ROOT, "scripts", "check_layers.py")
FOLDERS = ("kernels", "core", "memory", "cpu", "cuda", "ops", "autograd",
           "interop", "dist", "tensor")
# The layout the calls are checked against has csrc/module.c at the top;
# before it, csrc/ keeps the module init, autograd and the Tensor type in
# ops/ and is known to call up.
OLD_LAYOUT = not os.path.isfile(os.path.join(ROOT, "csrc", "module.c"))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args],
                          capture_output=True, text=True, timeout=120)


def check(tmp_path, files, *args, balance=True):
    """Run the check on a csrc/ of files; balance pads every layer folder
    to the same number of lines, so that no folder holds over 25%."""
    lines = {}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        folder = name.split("/")[0] if "/" in name else None
        lines[folder] = lines.get(folder, 0) + text.count("\n")
    most = max(lines.values())
    for folder in FOLDERS if balance else ():
        if most > lines.get(folder, 0):
            (tmp_path / folder).mkdir(exist_ok=True)
            pad = "/* pad */\n" * (most - lines.get(folder, 0))
            (tmp_path / folder / "pad.h").write_text(pad)
    return run("--csrc", str(tmp_path), *args)


def function(name, *calls, static=False):
    """A definition in the CPython style, calling calls."""
    body = "".join(f"    {c}();\n" for c in calls)
    return f"{'static ' if static else ''}int\n{name}(void)\n{{\n{body}" \
           f"    return 0;\n}}\n"


def test_csrc_includes_follow_their_layers():
    r = run()
    assert "0 include cycles" in r.stdout, r.stdout
    assert "0 includes against the layers" in r.stdout, r.stdout


@pytest.mark.xfail(OLD_LAYOUT, strict=True,
                   reason="csrc/ before ops/ was split into ops, autograd, "
                          "interop, tensor and module.c calls up")
def test_csrc_follows_its_layers():
    r = run()
    assert r.returncode == 0, r.stdout
    assert "0 folder cycles" in r.stdout
    assert "0 calls against the layers" in r.stdout


def test_check_catches_upward_includes_and_cycles(tmp_path):
    files = {
        "core/a.h": '#include "ops/b.h"\n',       # up
        "ops/b.h": '#include "core/c.h"\n',
        "core/c.h": '#include "core/d.h"\n',
        "core/d.h": '#include "c.h"\n',           # cycle c -> d -> c
        "cpu/e.c": '#include "cuda/f.h"\n',       # sideways
        "cuda/f.h": "",
        "misc/loose.c": '#include <stdio.h>\n',   # outside the layers
        "module.c": '#include "ops/b.h"\n',       # the top may include all
    }
    r = check(tmp_path, files)
    assert r.returncode == 1
    assert "core/a.h includes ops/b.h: core may not include ops" in r.stdout
    assert ("cpu/e.c includes cuda/f.h: cpu and cuda are layers of one "
            "level") in r.stdout
    assert "include cycle: core/c.h -> core/d.h -> core/c.h" in r.stdout
    assert "misc/loose.c: not in a layer folder" in r.stdout
    assert "module.c includes" not in r.stdout
    assert "1 include cycles" in r.stdout
    assert "2 includes against the layers" in r.stdout


def test_call_up_is_reported(tmp_path):
    files = {
        "core/layout.c": function("core_view", "ops_dispatch"),
        "ops/dispatch.c": function("ops_dispatch"),
        # Global data, and a call through a header's macro.
        "memory/alloc.c": "int\nmemory_size(void)\n{\n"
                          "    return ops_table[0];\n}\n",
        "ops/table.c": "const int ops_table[] = {1, 2};\n",
        "core/core.h": "#define CORE_RUN() ops_dispatch()\n",
    }
    r = check(tmp_path, files)
    assert r.returncode == 1, r.stdout
    assert ("core/layout.c calls ops_dispatch (defined in ops/dispatch.c): "
            "core may not call ops, a layer above it") in r.stdout
    assert ("memory/alloc.c calls ops_table (defined in ops/table.c): "
            "memory may not call ops, a layer above it") in r.stdout
    assert "core/core.h calls ops_dispatch" in r.stdout
    assert "3 cross-folder uses" in r.stdout
    assert "0 folder cycles" in r.stdout
    assert "3 calls against the layers" in r.stdout


def test_sideways_calls_are_reported(tmp_path):
    files = {
        "cpu/rows.c": function("cpu_rows", "cuda_sync"),
        "cuda/runtime.c": function("cuda_sync"),
        "autograd/engine.c": function("autograd_run", "interop_export"),
        "interop/dlpack.c": function("interop_export"),
    }
    r = check(tmp_path, files)
    assert r.returncode == 1, r.stdout
    assert ("cpu/rows.c calls cuda_sync (defined in cuda/runtime.c): "
            "cpu and cuda are layers of one level") in r.stdout
    assert ("autograd/engine.c calls interop_export (defined in "
            "interop/dlpack.c): autograd and interop are layers of one "
            "level") in r.stdout
    assert "2 calls against the layers" in r.stdout


def test_static_functions_of_one_name_are_not_confused(tmp_path):
    files = {
        # Two file-local helpers of one name: neither is a symbol.
        "cpu/a.c": function("helper", static=True)
        + function("cpu_a", "helper"),
        "cuda/b.c": function("helper", static=True)
        + function("cuda_b", "helper"),
        # A static helper hides an external one of the same name above.
        "core/c.c": "static int helper(void);\n"
        + function("core_c", "helper") + function("helper", static=True),
        "ops/d.c": function("helper"),
    }
    r = check(tmp_path, files, "--calls")
    assert r.returncode == 0, r.stdout
    assert "0 cross-folder uses" in r.stdout
    assert "0 calls against the layers" in r.stdout


def test_folder_cycle_by_calls_is_reported(tmp_path):
    files = {
        "core/a.c": function("core_a", "memory_b"),              # up
        "memory/b.c": '#include "ops/c.h"\n'                      # up
        + function("memory_b"),
        "ops/c.h": "",
        "ops/c.c": function("ops_c", "core_a"),                  # down
        "cpu/d.c": function("cpu_d", "core_a"),
    }
    r = check(tmp_path, files)
    assert r.returncode == 1, r.stdout
    assert "folder cycle: core -> memory -> ops -> core" in r.stdout
    assert "1 folder cycles" in r.stdout


def test_calls_down_pass(tmp_path):
    files = {
        "kernels/kernels.h": "#include <stdint.h>\n"
        'extern "C" int pygpu_cuda_fill(int *out, int64_t n);\n',
        "kernels/fill.cu": '#include "kernels.h"\n'
        "template <typename T> __global__ void fill_kernel(T *o, int64_t n)"
        "\n{\n}\n\n"
        'extern "C" int pygpu_cuda_fill(int *out, int64_t n)\n{\n'
        "    fill_kernel<<<1, 1>>>(out, n);\n    return 0;\n}\n",
        "core/core.h": "extern int core_count;\n"
        "static inline int\ncore_twice(void)\n{\n"
        "    return 2 * core_count;\n}\n",
        "core/count.c": "int core_count = 0;\n",
        "cuda/rows.c": '#include "kernels/kernels.h"\n'
        "int\ncuda_rows(int *out)\n{\n"
        "    return pygpu_cuda_fill(out, 4) + core_twice();\n}\n",
        "ops/front.c": function("ops_front", "cuda_rows", "core_twice"),
        "tensor/methods.c": function("tensor_add", "ops_front"),
        "module.c": function("PyInit__C", "tensor_add", "cuda_rows"),
    }
    r = check(tmp_path, files, "--calls", "--folders")
    assert r.returncode == 0, r.stdout
    assert ("cuda/rows.c -> pygpu_cuda_fill (kernels/fill.cu)"
            in r.stdout.splitlines())
    assert "core/core.h -> core_count" not in r.stdout   # its own folder
    assert "module.c -> tensor_add (tensor/methods.c)" in r.stdout
    assert "cuda -> kernels 2 (1 uses, 1 includes)" in r.stdout
    assert "5 cross-folder uses" in r.stdout
    assert "0 calls against the layers" in r.stdout


def test_comments_strings_and_prototypes_are_no_uses(tmp_path):
    files = {
        "ops/dispatch.c": function("ops_dispatch"),
        "core/pygpu.h": "int ops_dispatch(void);  /* a prototype */\n",
        "core/layout.c": "/* ops_dispatch() would call up */\n"
        "// ops_dispatch();\n"
        'static const char *name = "ops_dispatch()";\n'
        "static const char c = 'o';\n"
        "int\ncore_view(struct view *v)\n{\n"
        "    return v->ops_dispatch + v[0].ops_dispatch;  /* members */\n"
        "}\n",
    }
    r = check(tmp_path, files)
    assert r.returncode == 0, r.stdout
    assert "0 cross-folder uses" in r.stdout


def test_macros_at_file_level_define_symbols(tmp_path):
    files = {
        "ops/binary.c": "#define BINARY(name) \\\n"
        "    int ops_##name(void) { return 0; } \\\n"
        "    static int name##_fn(void) { return ops_##name(); }\n"
        "BINARY(add)\nBINARY(mul)\n",
        "core/args.c": function("core_args", "ops_mul", "add_fn"),
    }
    r = check(tmp_path, files)
    assert r.returncode == 1, r.stdout
    assert "core/args.c calls ops_mul (defined in ops/binary.c)" in r.stdout
    assert "add_fn" not in r.stdout                      # static


def test_folder_over_a_quarter_of_the_lines_fails(tmp_path):
    files = {f"{folder}/a.c": "/* line */\n" * 10 for folder in FOLDERS}
    files["ops/b.c"] = "/* line */\n" * 30
    r = check(tmp_path, files, "--lines", balance=False)
    assert r.returncode == 1, r.stdout
    assert "ops/ holds 31% of csrc's lines, more than 25%" in r.stdout
    assert "ops 40 lines, 30.8%" in r.stdout
    assert "lines: ops 31%, " in r.stdout
    files["ops/b.c"] = "/* line */\n" * 10
    r = check(tmp_path, files, balance=False)
    assert r.returncode == 0, r.stdout
    assert "lines: ops 18%, " in r.stdout


WALK = os.path.join(ROOT, "scripts", "call_walk.py")


@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")
@pytest.mark.skipif(SANITIZED, reason="gdb and the sanitizers' runtime do "
                    "not share a process")
def test_a_plus_b_walks_down_through_the_floors():
    """`a + b` enters the Python face first, then autograd's wrapper, then
    the op, and reaches the CPU rows through the dispatch lookup."""
    r = subprocess.run([sys.executable, WALK, "a + b"], capture_output=True,
                       text=True, timeout=300)
    if r.returncode == 2:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    files = [line.split(":")[0].strip() for line in r.stdout.splitlines()
             if line.startswith("  ")]
    first = {}
    for i, f in enumerate(files):
        first.setdefault(f.split("/")[0], i)
    assert first["tensor"] == 0, files
    assert first["tensor"] < first["autograd"] < first["ops"], files
    assert "core/dispatch.c" in files and "cpu/cpu_dispatch.c" in files
    assert files.index("core/dispatch.c") < files.index("cpu/cpu_dispatch.c")
