"""Wrong argument types for the index ops are TypeErrors, as torch's parser raises them.

Each case is written once against a module `M` (ember, or torch when installed) so that the same
call is checked against both: ember must raise TypeError, and so must torch.
"""
import pytest
from type_error_cases import case_ids, check_type_error_as_torch

import ember


def _x(M):
    return M.zeros(2, 3)


def _i(M):
    return M.tensor([[0, 1, 0]])


def _m(M):
    return M.zeros(2, 3) > 0


# (op, call, a fragment of ember's message)
CASES = [
    ("index_select", lambda M: M.index_select(_x(M), 0.5, M.tensor([0])), "argument 'dim' (position 2) must be int, not float"),
    ("index_select", lambda M: M.index_select(_x(M), 0, [0]), "argument 'index' (position 3) must be Tensor, not list"),
    ("index_select", lambda M: _x(M).index_select(0, M.tensor([0]), out=_x(M)), "unexpected keyword argument 'out'"),
    ("gather", lambda M: M.gather(_x(M), 1, _i(M), sparse_grad=None), "argument 'sparse_grad' must be bool, not NoneType"),
    ("gather", lambda M: _x(M).gather("1", _i(M)), "argument 'dim' (position 1) must be int, not str"),
    ("take", lambda M: M.take(_x(M), (0, 1)), "argument 'index' (position 2) must be Tensor, not tuple"),
    ("take_along_dim", lambda M: M.take_along_dim(_x(M), _i(M), dim=1.0), "take_along_dim(): argument 'dim' must be int, not float"),
    ("scatter", lambda M: M.scatter(_x(M), 1, _i(M)), "received an invalid combination of arguments"),
    ("scatter", lambda M: M.scatter(_x(M), 1, _i(M), "a"), "received an invalid combination of arguments"),
    ("scatter", lambda M: M.scatter(_x(M), 1, _i(M), 1.0, reduce=3), "received an invalid combination of arguments"),
    ("scatter_", lambda M: _x(M).scatter_(1, _i(M), [1.0]), "received an invalid combination of arguments"),
    ("scatter_add", lambda M: M.scatter_add(_x(M), 1, _i(M), 1.0), "argument 'src' (position 4) must be Tensor, not float"),
    ("scatter_reduce", lambda M: M.scatter_reduce(_x(M), 1, _i(M), _x(M), 3), "argument 'reduce' (position 5) must be str, not int"),
    ("scatter_reduce_", lambda M: _x(M).scatter_reduce_(1, _i(M), _x(M), "sum", include_self=1), "argument 'include_self' must be bool, not int"),
    ("index_add", lambda M: M.index_add(_x(M), 0, M.tensor([0]), M.ones(1, 3), alpha="a"), "argument 'alpha' must be Number, not str"),
    ("index_add_", lambda M: _x(M).index_add_(0, [0], M.ones(1, 3)), "argument 'index' (position 2) must be Tensor, not list"),
    ("index_copy", lambda M: M.index_copy(_x(M), 0, M.tensor([0]), 1.0), "argument 'source' (position 4) must be Tensor, not float"),
    ("index_fill", lambda M: M.index_fill(_x(M), 0, M.tensor([0]), "a"), "received an invalid combination of arguments"),
    ("index_fill_", lambda M: _x(M).index_fill_(None, M.tensor([0]), 1.0), "received an invalid combination of arguments"),
    ("index_put", lambda M: M.index_put(_x(M), M.tensor([0]), M.ones(3)), "argument 'indices' (position 2) must be tuple of Tensors, not Tensor"),
    ("index_put_", lambda M: _x(M).index_put_((None,), M.ones(3)), "expected Tensor as element 0 in argument 0, but got NoneType"),
    ("index_put_", lambda M: _x(M).index_put_((M.tensor([0]),), M.ones(3), accumulate="yes"), "index_put_(): argument 'accumulate' must be bool, not str"),
    ("masked_fill", lambda M: M.masked_fill(_x(M), _m(M), "a"), "received an invalid combination of arguments"),
    ("masked_fill_", lambda M: _x(M).masked_fill_([True], 1.0), "received an invalid combination of arguments"),
    ("masked_scatter", lambda M: M.masked_scatter(_x(M), _m(M), 1.0), "argument 'source' (position 3) must be Tensor, not float"),
    ("masked_select", lambda M: M.masked_select(_x(M), 1), "argument 'mask' (position 2) must be Tensor, not int"),
    ("nonzero", lambda M: M.nonzero(_x(M), as_tuple=None), "argument 'as_tuple' must be bool, not NoneType"),
    ("nonzero", lambda M: M.nonzero([1, 0]), "argument 'input' (position 1) must be Tensor, not list"),
    ("argwhere", lambda M: M.argwhere(_x(M), 0), "takes 1 positional argument but 2 were given"),
]


@pytest.mark.parametrize("op,call,message", CASES, ids=case_ids(CASES))
def test_a_wrong_argument_type_is_torchs_type_error(op, call, message):
    got = check_type_error_as_torch(call, message)
    assert got.startswith((op.rstrip("_"), "expected Tensor as element"))


def test_every_index_op_is_a_registered_row():
    rows = {r["name"]: r for r in ember._C._ops() if r["family"] == "indexing"}
    for name in ("index_select", "gather", "take", "take_along_dim", "scatter", "scatter_add",
                 "scatter_reduce", "index_add", "index_copy", "index_fill", "index_put",
                 "masked_fill", "masked_scatter", "masked_select", "nonzero", "argwhere"):
        assert name in rows, name
        assert rows[name]["binding"] == "generated"
        assert getattr(ember, name).__doc__.startswith(name + "(")
        assert getattr(ember.Tensor, name).__doc__.startswith(name + "(")
