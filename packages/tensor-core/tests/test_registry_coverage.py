"""Every op of the registry (``ember._C._ops()``) is tested: a new op without a test fails here.

An op counts as tested when it has an entry in the op database (``ember.testing.opdb``'s
elementwise and parametrised ops, ``ember.testing.reduction_db``'s reductions,
``ember.testing.sort_db``'s sorting and selecting ops, and the modules their ``ELSEWHERE`` name), when a test of one of the repository's packages calls it by its name or
by the public form ``PUBLIC_FORM`` names, or, for a ``<op>_backward`` kernel, when its forward op
is tested (autograd's gradient tests of the forward run it). The generic tests of the families
not yet in the database (linalg, shape, indexing, pooling, ...) are the open part of the op
database; this test keeps every op at least reached until they are.
"""

from __future__ import annotations

import pathlib
import re

import pytest

import ember
from ember.testing import opdb, reduction_db, sort_db

PACKAGES = pathlib.Path(__file__).resolve().parents[2]

# Private kernels reached through a public function or method of another name.
PUBLIC_FORM = {
    "_uniform_": "uniform_", "_normal_": "normal_", "_exponential_": "exponential_",
    "_bernoulli_": "bernoulli_", "_random_": "random_",
}


def _tests_text() -> str:
    files = sorted(PACKAGES.glob("*/tests/*.py"))
    if not files:
        pytest.skip("the repository's test folders are not here (an installed copy)")
    return "\n".join(f.read_text() for f in files)


def _database_names() -> set:
    names = set(opdb.OPS) | set(opdb.PARAM_OPS) | set(reduction_db.REDUCTIONS)
    names |= {op.registry_name for op in sort_db.SORTS.values()}
    return names | set(reduction_db.ELSEWHERE) | set(sort_db.ELSEWHERE)


def _base(name: str) -> str:
    """The database's name of a bound op: no in-place underscore, torch.special's and
    div_trunc's private binding names without their leading underscore."""
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    if name.startswith("_special_") or name == "_div_trunc":
        name = name[1:]
    return name


def test_every_registered_op_is_tested():
    text = _tests_text()
    database = _database_names()

    def called(name: str) -> bool:
        return re.search(r"[.\s(\[,\"']" + re.escape(name) + r"[(\"']", text) is not None

    def tested(name: str) -> bool:
        if name in database or _base(name) in database:
            return True
        if called(name) or called(_base(name)) or called(PUBLIC_FORM.get(name, "\0")):
            return True
        if name.endswith("_backward"):  # run by the gradient tests of its forward op
            forward = name.removesuffix("_backward").lstrip("_").replace("_with_indices", "")
            return tested(forward)
        return False

    untested = sorted(row["name"] for row in ember._C._ops() if not tested(row["name"]))
    assert not untested, f"registered ops that no test calls: {untested}"
