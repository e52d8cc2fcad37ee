"""ember.cuda's modules import in any order: the op modules import helpers from ``_ops`` and only
``_dispatch`` imports them all (an import cycle made ``import ember.cuda._nn_ops`` fail when it
came first)."""

import pkgutil
import subprocess
import sys

import pytest

import ember.cuda

MODULES = sorted(m.name for m in pkgutil.iter_modules(ember.cuda.__path__))


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_first(module):
    r = subprocess.run([sys.executable, "-c", f"import ember.cuda.{module}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_hook_table_holds_every_modules_ops():
    from ember.cuda import _dispatch, _nn_ops, _optim_ops

    assert _dispatch.OPS["convolution"] is _nn_ops.NN_OPS["convolution"]
    assert _dispatch.OPS["_fused_sgd_"] is _optim_ops.OPTIM_OPS["_fused_sgd_"]
    assert "add" in _dispatch.OPS and "sort" in _dispatch.OPS
