"""The typing stub pygpu/_C.pyi and the C docstrings stay in step with the
extension: every public name is documented, every C callable has a
signature, and the stub declares exactly the runtime's names with the
runtime's parameter names.  Runs in either build flavour (the CUDA build
and PYGPU_NO_CUDA=1 define the same names; the CPU-only one has stand-ins
for the CUDA functions, with the same signatures)."""
import ast
import inspect
import os
import pathlib
import types

import pytest

import pygpu
from pygpu import _C
from conftest import ROOT

STUB = pathlib.Path(_C.__file__).with_name("_C.pyi")
if not STUB.exists():  # a regular install run from the source tree
    STUB = pathlib.Path(pygpu.__file__).with_name("_C.pyi")

# C callables without an inspect.signature, and why.
NO_SIGNATURE = {
    "OutOfMemoryError": "an exception class: takes *args as any exception",
    "CudaError": "an exception class: takes *args as any exception",
}

C_CLASSES = [n for n in dir(_C) if isinstance(getattr(_C, n), type)]


# torch.Tensor names pygpu lacks, which pygpu/_missing.py puts on the type
# as markers that raise AttributeError: not the runtime's own names.
_MISSING = {n for n in vars(_C.Tensor)
            if type(vars(_C.Tensor)[n]).__name__ == "_Missing"}


def _public(names):
    return {n for n in names if not n.startswith("_") and n not in _MISSING}


def _non_dunder(names):
    return {n for n in names if not (n.startswith("__") and n.endswith("__"))}


def _parse_stub():
    """{name: node} for the module level and {class: {name: [nodes]}}."""
    tree = ast.parse(STUB.read_text(), str(STUB))
    top, aliases, classes = {}, set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.AnnAssign):
            top.setdefault(node.target.id, []).append(node)
        elif isinstance(node, ast.Assign):  # a type alias, stub-only
            aliases.update(t.id for t in node.targets)
        if isinstance(node, ast.ClassDef):
            members = classes[node.name] = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members.setdefault(item.name, []).append(item)
                elif isinstance(item, ast.AnnAssign):  # class-level data
                    members.setdefault(item.target.id, []).append(item)
    return top, aliases, classes


STUB_TOP, STUB_ALIASES, STUB_CLASSES = _parse_stub()


def _decorators(fn):
    return {d.id if isinstance(d, ast.Name) else
            getattr(d, "attr", None) for d in getattr(fn, "decorator_list", ())}


def _is_property(nodes):
    return any({"property", "setter"} & _decorators(n) for n in nodes)


def _stub_params(fn, drop_first):
    """[(name, kind)] of a stub function, as inspect names the kinds."""
    a = fn.args
    P = inspect.Parameter
    params = ([(x.arg, P.POSITIONAL_ONLY) for x in a.posonlyargs] +
              [(x.arg, P.POSITIONAL_OR_KEYWORD) for x in a.args])
    if drop_first:
        params = params[1:]
    if a.vararg:
        params.append((a.vararg.arg, P.VAR_POSITIONAL))
    params += [(x.arg, P.KEYWORD_ONLY) for x in a.kwonlyargs]
    if a.kwarg:
        params.append((a.kwarg.arg, P.VAR_KEYWORD))
    return params


def _runtime_params(obj):
    return [(p.name, p.kind) for p in inspect.signature(obj).parameters.values()]


def _check_params(label, obj, stub_nodes, drop_first):
    """The stub's parameters are the runtime's: for a single definition,
    the same names of the same kinds in the same order; for @overload
    variants, every keyword a variant accepts is one the runtime accepts
    (positional-only parameters of a variant are free)."""
    runtime = _runtime_params(obj)
    if drop_first and not isinstance(obj, type):
        runtime = runtime[1:]  # self, of an unbound method
    overloads = [n for n in stub_nodes if "overload" in _decorators(n)]
    if not overloads:
        assert len(stub_nodes) == 1, f"{label}: defined twice in the stub"
        stub = _stub_params(stub_nodes[0], drop_first)
        assert stub == runtime, (
            f"{label}: stub parameters {stub} != runtime {runtime}")
        return
    P = inspect.Parameter
    keywords = {n for n, k in runtime
                if k in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
    any_kw = any(k == P.VAR_KEYWORD for _, k in runtime)
    for variant in overloads:
        for name, kind in _stub_params(variant, drop_first):
            if kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY):
                assert any_kw or name in keywords, (
                    f"{label}: an overload takes keyword {name!r}, the "
                    f"runtime {runtime} does not")


def _constructor(cls_nodes):
    return cls_nodes.get("__init__") or cls_nodes.get("__new__")


# -- (a) docstrings ---------------------------------------------------------

def _doc(obj):
    return (getattr(obj, "__doc__", None) or "").strip()


@pytest.mark.parametrize("module", [_C, pygpu], ids=["_C", "pygpu"])
def test_every_public_name_has_a_docstring(module):
    names = (_public(dir(module)) if module is _C
             else set(pygpu.__all__))
    missing = sorted(n for n in names if not _doc(getattr(module, n)))
    assert not missing, f"no docstring: {missing}"


def _is_plain_data(obj):
    return obj is None or isinstance(obj, (int, float, str, tuple))


@pytest.mark.parametrize("name", C_CLASSES)
def test_every_public_attribute_of_a_c_class_has_a_docstring(name):
    cls = getattr(_C, name)
    assert _doc(cls)
    # Plain data (CudaError.code: None until raised) has no docstring to
    # carry; the stub declares it (test_stub_class_members_match_runtime).
    missing = sorted(n for n in _public(vars(cls))
                     if not _is_plain_data(vars(cls)[n])
                     and not _doc(vars(cls)[n]))
    assert not missing, f"{name}: no docstring for {missing}"


def test_tensor_methods_have_a_summary_line():
    # The signature line is not a summary: help() should say something.
    for n in _public(vars(_C.Tensor)):
        obj = vars(_C.Tensor)[n]
        if callable(obj):
            assert inspect.getdoc(obj).strip(), f"Tensor.{n}: no summary"


# -- (b) signatures ---------------------------------------------------------

def _c_callables():
    for n in sorted(_non_dunder(dir(_C))):
        obj = getattr(_C, n)
        if callable(obj):
            yield n, obj
        if isinstance(obj, type):
            for m in sorted(_public(vars(obj))):
                if callable(getattr(obj, m)):
                    yield f"{n}.{m}", getattr(obj, m)


@pytest.mark.parametrize("label,obj", list(_c_callables()),
                         ids=[n for n, _ in _c_callables()])
def test_every_c_callable_has_a_signature(label, obj):
    if label in NO_SIGNATURE:
        with pytest.raises(ValueError):
            inspect.signature(obj)
        return
    inspect.signature(obj)


def test_no_signature_exceptions_are_current():
    for n in NO_SIGNATURE:
        assert hasattr(_C, n), f"{n} is listed but gone"


# -- (c) the stub declares exactly the runtime's names ----------------------

def test_stub_module_names_match_runtime():
    runtime = _non_dunder(dir(_C))
    stub = _non_dunder(STUB_TOP)
    assert not (runtime - stub), f"missing from _C.pyi: {sorted(runtime - stub)}"
    assert not (stub - runtime), f"_C.pyi only: {sorted(stub - runtime)}"
    assert not (STUB_ALIASES & runtime), "a stub type alias hides a name"
    assert all(a.startswith("_") for a in STUB_ALIASES)


def test_stub_classes_are_the_runtime_classes():
    assert set(STUB_CLASSES) == set(C_CLASSES)


@pytest.mark.parametrize("name", C_CLASSES)
def test_stub_class_members_match_runtime(name):
    cls = getattr(_C, name)
    members = STUB_CLASSES[name]
    runtime, stub = _public(vars(cls)), _public(members)
    assert not (runtime - stub), (
        f"{name}: missing from _C.pyi: {sorted(runtime - stub)}")
    assert not (stub - runtime), f"{name}: _C.pyi only: {sorted(stub - runtime)}"
    for m in sorted(runtime):
        is_method = callable(getattr(cls, m))
        as_data = _is_property(members[m]) or isinstance(
            members[m][0], ast.AnnAssign)
        assert is_method != as_data, (
            f"{name}.{m}: a {'method' if is_method else 'attribute'} at run "
            "time, not in the stub")


def test_stub_dunders_exist_at_runtime():
    # Slot methods the stub declares (operators) must exist.
    for cname, members in STUB_CLASSES.items():
        cls = getattr(_C, cname)
        for m in members:
            if m.startswith("__") and m not in ("__init__", "__new__"):
                assert hasattr(cls, m), f"_C.pyi: {cname}.{m} does not exist"


# -- (d) parameter names of C callables -------------------------------------

def _function_names():
    return sorted(n for n in _non_dunder(dir(_C))
                  if isinstance(getattr(_C, n), types.BuiltinFunctionType))


@pytest.mark.parametrize("name", _function_names())
def test_stub_function_parameters_match_runtime(name):
    _check_params(name, getattr(_C, name), STUB_TOP[name], drop_first=False)


def _methods():
    for c in C_CLASSES:
        cls = getattr(_C, c)
        for m in sorted(_public(vars(cls))):
            if callable(getattr(cls, m)):
                yield c, m


@pytest.mark.parametrize("cname,method", list(_methods()),
                         ids=[f"{c}.{m}" for c, m in _methods()])
def test_stub_method_parameters_match_runtime(cname, method):
    _check_params(f"{cname}.{method}", getattr(getattr(_C, cname), method),
                  STUB_CLASSES[cname][method], drop_first=True)


@pytest.mark.parametrize("name", [c for c in C_CLASSES if c not in NO_SIGNATURE])
def test_stub_constructor_parameters_match_runtime(name):
    cls = getattr(_C, name)
    if cls.__flags__ & (1 << 7):  # Py_TPFLAGS_DISALLOW_INSTANTIATION
        assert _constructor(STUB_CLASSES[name]) is None, (
            f"{name} cannot be created from Python; the stub says it can")
        return
    nodes = _constructor(STUB_CLASSES[name])
    assert nodes, f"{name}: no __init__ or __new__ in the stub"
    _check_params(f"{name}()", cls, nodes, drop_first=True)


def test_stub_ships_with_the_package():
    assert STUB.exists()
    assert STUB.with_name("py.typed").exists()


def test_typing_example_runs():
    # CI type-checks this file with mypy; here it must also run.
    import runpy
    runpy.run_path(os.path.join(ROOT, "tests", "typing_example.py"))
