"""The digits example learns: a short run reaches 95% test accuracy on
held-out data (float32, and float16 autocast with a GradScaler)."""
import importlib.util
import os
import sys

import pytest

from conftest import ROOT, SANITIZED

pytest.importorskip("sklearn", reason="scikit-learn (the test extra) "
                    "provides the digits data")

spec = importlib.util.spec_from_file_location(
    "train_digits", os.path.join(ROOT, "examples", "train_digits.py"))
train_digits = importlib.util.module_from_spec(spec)
sys.modules["train_digits"] = train_digits
spec.loader.exec_module(train_digits)


@pytest.mark.skipif(SANITIZED, reason="a training run, too slow under the "
                    "sanitizers; its ops run there op by op")
@pytest.mark.parametrize("amp", [False, True])
def test_digits_reach_95_percent(device, amp):
    acc, seconds, losses = train_digits.train(device, epochs=8, amp=amp,
                                              quiet=True)
    assert acc >= 0.95, (acc, losses)
    assert losses[-1] < 0.5 * losses[0]
