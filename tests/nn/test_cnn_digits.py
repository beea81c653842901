"""The CNN digits example learns: a short run reaches 98% test accuracy
on held-out data, in float32 and with float16 autocast."""
import importlib.util
import os
import sys

import pytest

from conftest import ROOT, SANITIZED

pytest.importorskip("sklearn", reason="scikit-learn (the test extra) "
                    "provides the digits data")

spec = importlib.util.spec_from_file_location(
    "train_cnn_digits", os.path.join(ROOT, "examples", "train_cnn_digits.py"))
train_cnn_digits = importlib.util.module_from_spec(spec)
sys.modules["train_cnn_digits"] = train_cnn_digits
spec.loader.exec_module(train_cnn_digits)


@pytest.mark.skipif(SANITIZED, reason="a training run, too slow under the "
                    "sanitizers; its ops run there op by op")
@pytest.mark.parametrize("amp", [False, True])
def test_cnn_reaches_98_percent(device, amp):
    acc, seconds, losses = train_cnn_digits.train(device, amp=amp,
                                                  quiet=True)
    assert acc >= 0.98, (acc, losses)
    assert losses[-1] < 0.2 * losses[0]


def test_convolutions_run_in_autocast_dtype(device):
    import pygpu
    import pygpu.nn.functional as F
    x = pygpu.randn(2, 3, 6, 6, device=device)
    w = pygpu.randn(4, 3, 3, 3, device=device)
    b = pygpu.randn(4, device=device)
    dtype = pygpu.float16 if device == "cuda" else pygpu.bfloat16
    with pygpu.autocast(device):
        y = F.conv2d(x, w, b, padding=1)
        z = F.conv_transpose2d(x, w.transpose(0, 1), b)
    assert y.dtype == dtype and z.dtype == dtype
    ref = F.conv2d(x, w, b, padding=1)
    err = (y.float() - ref).abs().max().item() / ref.abs().max().item()
    assert 0 < err < 2e-2
