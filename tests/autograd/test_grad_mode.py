"""Grad mode and inference mode: torch's per-thread flags, context managers
and decorators.  pygpu records no graph, so only the reported state and its
restoration are checked (and that computation runs unchanged)."""
import threading

import pytest

import pygpu
from pygpu import autograd


def _state():
    return pygpu.is_grad_enabled(), pygpu.is_inference_mode_enabled()


DEFAULT = (True, False)


@pytest.fixture(autouse=True)
def _clean_state():
    assert _state() == DEFAULT, "a test left the grad mode changed"
    yield
    pygpu.set_grad_enabled(True)
    assert _state() == DEFAULT


def test_names_are_shared_with_autograd():
    for name in autograd.__all__:
        if name not in ("backward", "grad", "gradcheck", "Function",
                        "Variable", "function"):
            assert getattr(pygpu, name) is getattr(autograd, name)


@pytest.mark.parametrize("cm,inside", [
    (lambda: pygpu.no_grad(), (False, False)),
    (lambda: pygpu.enable_grad(), (True, False)),
    (lambda: pygpu.set_grad_enabled(False), (False, False)),
    (lambda: pygpu.set_grad_enabled(True), (True, False)),
    (lambda: pygpu.inference_mode(), (False, True)),
    (lambda: pygpu.inference_mode(True), (False, True)),
    (lambda: pygpu.inference_mode(mode=False), (True, False)),
])
def test_inside_and_after(cm, inside):
    with cm() as value:
        assert value is None
        assert _state() == inside
    assert _state() == DEFAULT


def test_nesting_restores_each_outer_state():
    with pygpu.no_grad():
        with pygpu.enable_grad():
            assert _state() == (True, False)
            with pygpu.set_grad_enabled(False):
                assert _state() == (False, False)
            assert _state() == (True, False)
        assert _state() == (False, False)
        with pygpu.inference_mode():
            assert _state() == (False, True)
            # torch: turning inference mode off turns grad mode on
            with pygpu.inference_mode(False):
                assert _state() == (True, False)
                with pygpu.no_grad():
                    assert _state() == (False, False)
            assert _state() == (False, True)
        assert _state() == (False, False)
    assert _state() == DEFAULT


def test_one_object_entered_twice_nests():
    ng = pygpu.no_grad()
    with pygpu.inference_mode():
        with ng:
            with pygpu.enable_grad():
                with ng:
                    assert _state() == (False, True)
                assert _state() == (True, True)
        assert _state() == (False, True)
    assert _state() == DEFAULT


@pytest.mark.parametrize("make", [pygpu.no_grad, pygpu.enable_grad,
                                  pygpu.inference_mode,
                                  lambda: pygpu.set_grad_enabled(False)])
def test_exception_restores_the_state(make):
    with pygpu.no_grad():
        with pytest.raises(ValueError, match="boom"):
            with make():
                raise ValueError("boom")
        assert _state() == (False, False)
    assert _state() == DEFAULT


def test_set_grad_enabled_as_a_function():
    pygpu.set_grad_enabled(False)
    assert _state() == (False, False)
    pygpu.set_grad_enabled(True)
    assert _state() == DEFAULT
    with pytest.raises(TypeError, match="must be a bool"):
        pygpu.set_grad_enabled(0)
    assert _state() == DEFAULT


def test_set_grad_enabled_restores_the_mode_before_it():
    pygpu.set_grad_enabled(False)
    with pygpu.set_grad_enabled(True):
        assert pygpu.is_grad_enabled()
    assert not pygpu.is_grad_enabled()


@pytest.mark.parametrize("decorate,inside", [
    (pygpu.no_grad, (False, False)),
    (pygpu.no_grad(), (False, False)),
    (pygpu.enable_grad, (True, False)),
    (pygpu.enable_grad(), (True, False)),
    (pygpu.inference_mode, (False, True)),
    (pygpu.inference_mode(), (False, True)),
    (pygpu.inference_mode(False), (True, False)),
], ids=["no_grad", "no_grad()", "enable_grad", "enable_grad()",
        "inference_mode", "inference_mode()", "inference_mode(False)"])
def test_decorated_function(decorate, inside):
    def f(x, *, y):
        """f's doc."""
        assert (x, y) == (1, 2)
        return _state()

    g = decorate(f)
    assert g.__name__ == "f" and g.__doc__ == "f's doc."
    assert _state() == DEFAULT
    with pygpu.set_grad_enabled(not inside[0]):
        assert g(1, y=2) == inside
        assert pygpu.is_grad_enabled() is not inside[0]


def test_set_grad_enabled_decorator_leaves_the_mode_until_called():
    @pygpu.set_grad_enabled(False)
    def f():
        return _state()

    assert _state() == DEFAULT  # decorating did not switch it off
    assert f() == (False, False)
    assert _state() == DEFAULT


def test_decorated_function_that_raises():
    @pygpu.no_grad()
    def f():
        raise KeyError("k")

    with pytest.raises(KeyError):
        f()
    assert _state() == DEFAULT


def test_decorated_generator_holds_the_mode_in_its_body_only():
    seen = []

    @pygpu.no_grad()
    def gen(n):
        for i in range(n):
            got = yield i
            seen.append((got, _state()))
        return "done"

    g = gen(2)
    assert _state() == DEFAULT  # nothing ran yet
    assert next(g) == 0
    assert _state() == DEFAULT  # the caller between yields: unchanged
    assert g.send("a") == 1
    with pytest.raises(StopIteration) as stop:
        g.send("b")
    assert stop.value.value == "done"
    assert seen == [("a", (False, False)), ("b", (False, False))]
    assert _state() == DEFAULT


def test_decorated_generator_throw_and_close():
    log = []

    @pygpu.inference_mode()
    def gen():
        try:
            yield 1
        except ValueError:
            log.append(("caught", _state()))
            yield 2
        finally:
            log.append(("finally", _state()))

    g = gen()
    assert next(g) == 1
    assert g.throw(ValueError("x")) == 2
    assert _state() == DEFAULT
    g.close()
    assert log == [("caught", (False, True)), ("finally", (False, True))]
    assert _state() == DEFAULT


def test_state_is_per_thread():
    results = {}
    entered, release = threading.Event(), threading.Event()

    def worker():
        results["new thread"] = _state()  # a fresh thread: the defaults
        with pygpu.inference_mode():
            entered.set()
            release.wait(10)
            results["worker inside"] = _state()
        results["worker after"] = _state()

    with pygpu.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        assert entered.wait(10)
        results["main while worker inside"] = _state()
        release.set()
        t.join(10)
        results["main after join"] = _state()
    assert results == {
        "new thread": DEFAULT,
        "worker inside": (False, True),
        "worker after": DEFAULT,
        "main while worker inside": (False, False),
        "main after join": (False, False),
    }


def test_computation_is_unchanged():
    x = pygpu.tensor([[1.0, -2.0], [3.0, 4.0]])
    want = (x @ x.T + 1).relu().tolist()
    with pygpu.no_grad():
        assert (x @ x.T + 1).relu().tolist() == want
    with pygpu.inference_mode():
        y = pygpu.nn.Linear(2, 3)(x)
    assert y.shape == (2, 3)
