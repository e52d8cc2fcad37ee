"""examples/gan.py and examples/char_rnn.py run end to end in --quick mode (a few seconds each)."""

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
pytestmark = pytest.mark.skipif(not (EXAMPLES / "gan.py").is_file(),
                                reason="runs from a checkout of the repository only")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gan_quick(capsys):
    pytest.importorskip("ember.optim")
    gan = _load("gan")
    frac, modes = gan.main(["--quick"])
    out = capsys.readouterr().out
    assert "loss_D" in out and "loss_G" in out and "final:" in out
    losses = [float(w) for line in out.splitlines() if line.startswith("step")
              for w in line.split()[3:6:2]]
    assert losses and all(math.isfinite(v) and v > 0 for v in losses)
    assert 0.0 <= frac <= 1.0 and 1 <= modes <= gan.MODES


def test_gan_ring_sample_and_quality():
    gan = _load("gan")
    import ember

    ember.manual_seed(0)
    pts = gan.ring_sample(500)
    assert tuple(pts.shape) == (500, 2)
    frac, modes = gan.quality(pts)
    assert frac > 0.95 and modes == gan.MODES  # the data itself scores (almost) perfectly
    assert gan.quality(ember.zeros(100, 2)) == (0.0, 0)


def test_char_rnn_quick(capsys):
    pytest.importorskip("ember.optim")
    char_rnn = _load("char_rnn")
    train_ppl, val_ppl, text = char_rnn.main(["--quick"])
    out = capsys.readouterr().out
    ppl = [float(line.split()[4]) for line in out.splitlines() if line.startswith("epoch")]
    assert len(ppl) == 2 and ppl[1] < ppl[0]
    vocab = len(set(char_rnn.CORPUS.read_text(encoding="utf-8")))
    assert math.isfinite(val_ppl) and train_ppl < vocab  # better than a uniform guess
    assert text.startswith("Alice ") and len(text) == len("Alice ") + 80
    assert "sample:" in out


def test_char_rnn_batchify_and_truncated_bptt():
    char_rnn = _load("char_rnn")
    import ember
    from ember import nn

    data = char_rnn.batchify(ember.arange(23), 4)
    assert data.tolist()[1] == [5, 6, 7, 8, 9]
    ember.manual_seed(0)
    model = char_rnn.CharRNN(23, 4, 8, 1)
    nll = char_rnn.run_epoch(model, data, 2, nn.CrossEntropyLoss())
    assert math.isfinite(nll) and not model.training


def test_examples_run_as_scripts():
    """Both programs start as scripts (the command lines in their docstrings)."""
    pytest.importorskip("ember.optim")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for name in ("gan.py", "char_rnn.py"):
        proc = subprocess.run([sys.executable, str(EXAMPLES / name), "--help"],
                              capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0 and "--quick" in proc.stdout, proc.stdout + proc.stderr
