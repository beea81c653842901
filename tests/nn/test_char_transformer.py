"""The character-level transformer example learns: a short run of
examples/train_char_transformer.py lowers the loss well below its start
and decodes text of the right length from the prompt."""
import importlib.util
import math
import os
import sys

import pytest

from conftest import ROOT, SANITIZED

spec = importlib.util.spec_from_file_location(
    "train_char_transformer",
    os.path.join(ROOT, "examples", "train_char_transformer.py"))
example = importlib.util.module_from_spec(spec)
sys.modules["train_char_transformer"] = example
spec.loader.exec_module(example)


def test_text_is_the_zen():
    text = example.zen()
    assert text.startswith("The Zen of Python, by Tim Peters")
    assert "Beautiful is better than ugly." in text


@pytest.mark.skipif(SANITIZED, reason="a training run, too slow under the "
                    "sanitizers; its ops run there op by op")
def test_loss_falls(device):
    losses, seconds, sample = example.train(device, steps=40, quiet=True,
                                            sample_chars=20)
    vocab = len(set(example.zen()))
    assert abs(losses[0] - math.log(vocab)) < 0.5  # starts near chance
    assert sum(losses[-5:]) / 5 < 0.8 * losses[0], losses
    assert all(math.isfinite(x) for x in losses)
    assert sample.startswith("Beautiful is ") and \
        len(sample) == len("Beautiful is ") + 20


def test_main_prints_progress_loss_and_sample(capsys):
    example.main(["--steps", "3", "--batch", "4"])
    out = capsys.readouterr().out
    assert "step     1/3  loss" in out and "step     3/3" in out
    assert "final loss" in out and "sample:\nBeautiful is " in out
