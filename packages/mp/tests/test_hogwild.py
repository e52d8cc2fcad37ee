"""examples/hogwild.py: 2 processes train one shared model (quick run)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "hogwild.py"


def test_module_share_memory():
    nn = pytest.importorskip("ember.nn")
    m = nn.Linear(3, 2)
    m.share_memory()
    assert all(p.is_shared() for p in m.parameters())


def test_hogwild_quick():
    pytest.importorskip("sklearn")
    pytest.importorskip("ember.nn")
    pytest.importorskip("ember.utils.data")
    if not EXAMPLE.is_file():
        pytest.skip("examples/ not in this checkout")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, str(EXAMPLE), "--quick"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "hogwild test accuracy" in r.stdout
    assert ember is not None
