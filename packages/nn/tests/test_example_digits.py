"""examples/train_digits.py (the README's first command) runs end to end in --quick mode."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "train_digits.py"


@pytest.mark.skipif(not EXAMPLE.is_file(), reason="runs from a checkout of the repository only")
def test_train_digits_quick(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("ember.utils.data")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test accuracy" in proc.stdout
    assert (tmp_path / "digits.pt").is_file()
    assert "reloaded model's test accuracy" in proc.stdout
