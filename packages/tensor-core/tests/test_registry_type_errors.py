"""Wrong Python types given to the ops declared in the op registry (sorting and searching, shape
ops and views, matrix products) raise TypeError, as torch's argument parser does; where torch is installed,
each call is made on torch too and must raise the same class."""
import pytest

import ember


def _vec(m):
    return m.tensor([3.0, 1.0, 2.0, 5.0])


def _mat(m):
    return m.tensor([[1.0, 2.0], [3.0, 4.0]])


# (id, call(m)) with m the module: ember, or torch for the comparison
CASES = [
    # sorting and searching
    ("sort-dim-str", lambda m: m.sort(_vec(m), "0")),
    ("sort-dim-float", lambda m: m.sort(_vec(m), 0.5)),
    ("sort-positional-with-stable", lambda m: m.sort(_vec(m), 0, stable=True)),
    ("sort-method-descending-str", lambda m: _vec(m).sort(descending="yes")),
    ("sort-not-tensor", lambda m: m.sort([3, 1, 2])),
    ("sort-method-out", lambda m: _vec(m).sort(out=(_vec(m), _vec(m).long()))),
    ("argsort-too-many", lambda m: m.argsort(_vec(m), 0, False, True)),
    ("argsort-dim-none", lambda m: m.argsort(_vec(m), None)),
    ("topk-k-float", lambda m: m.topk(_vec(m), 2.0)),
    ("topk-k-bool", lambda m: m.topk(_vec(m), True)),
    ("topk-largest-int", lambda m: _vec(m).topk(2, largest=1)),
    ("topk-largest-int-positional", lambda m: _vec(m).topk(2, 0, 1)),
    ("kthvalue-k-str", lambda m: m.kthvalue(_vec(m), "1")),
    ("median-out-without-dim", lambda m: m.median(_vec(m), out=_vec(m))),
    ("median-dim-list", lambda m: _vec(m).median([0])),
    ("nanmedian-keepdim-str", lambda m: m.nanmedian(_vec(m), 0, "no")),
    ("mode-dim-str", lambda m: m.mode(_vec(m), "x")),
    ("cummax-no-dim", lambda m: m.cummax(_vec(m))),
    ("cummin-dim-float", lambda m: _vec(m).cummin(0.0)),
    ("searchsorted-seq-list", lambda m: m.searchsorted([1, 2, 3], _vec(m))),
    ("searchsorted-values-str", lambda m: m.searchsorted(_vec(m).sort()[0], "a")),
    ("searchsorted-right-positional", lambda m: m.searchsorted(_vec(m), _vec(m), False, True)),
    ("bucketize-boundaries-list", lambda m: m.bucketize(_vec(m), [1.0, 2.0])),
    ("histc-bins-float", lambda m: m.histc(_vec(m), 4.5)),
    ("histc-max-str", lambda m: m.histc(_vec(m), 4, 0, "a")),
    ("histogram-bins-str", lambda m: m.histogram(_vec(m), "4")),
    ("histogram-edges-with-range", lambda m: m.histogram(_vec(m), m.tensor([0.0, 6.0]), range=(0.0, 6.0))),
    ("bincount-minlength-float", lambda m: m.bincount(m.tensor([1, 2]), None, 2.5)),
    ("quantile-q-str", lambda m: m.quantile(_vec(m), "0.5")),
    ("quantile-interpolation-int", lambda m: m.quantile(_vec(m), 0.5, interpolation=3)),
    ("unique-dim-str", lambda m: m.unique(_vec(m), dim="0")),
    # shape ops
    ("cat-tensor-not-list", lambda m: m.cat(_vec(m))),
    ("cat-element-int", lambda m: m.cat([_vec(m), 1])),
    ("cat-dim-float", lambda m: m.cat([_vec(m)], 0.0)),
    ("cat-axis-and-dim", lambda m: m.cat([_vec(m)], 0, axis=0)),
    ("concatenate-dim-str", lambda m: m.concatenate([_vec(m)], "0")),
    ("flip-function-int", lambda m: m.flip(_vec(m), 0)),
    ("flip-dims-str", lambda m: _vec(m).flip("0")),
    ("flip-element-float", lambda m: _vec(m).flip((0.0,))),
    ("roll-shifts-float", lambda m: m.roll(_vec(m), 1.5)),
    ("tril-diagonal-float", lambda m: m.tril(_mat(m), 0.5)),
    ("triu_-diagonal-str", lambda m: _mat(m).triu_("1")),
    ("tril_indices-row-float", lambda m: m.tril_indices(3.0, 3)),
    ("triu_indices-dtype-str", lambda m: m.triu_indices(3, 3, dtype="int64")),
    ("constant_pad_nd-pad-int", lambda m: m.constant_pad_nd(_vec(m), 1)),
    ("constant_pad_nd-value-str", lambda m: m.constant_pad_nd(_vec(m), [1, 1], "a")),
    ("repeat_interleave-method-no-args", lambda m: _vec(m).repeat_interleave()),
    ("repeat_interleave-repeats-float", lambda m: m.repeat_interleave(_vec(m), 2.5)),
    ("diagonal-offset-float", lambda m: m.diagonal(_mat(m), 0.5)),
    ("diag_embed-dim1-str", lambda m: _vec(m).diag_embed(0, "a")),
    ("unfold-size-float", lambda m: _vec(m).unfold(0, 2.0, 1)),
    # views
    ("reshape-function-int", lambda m: m.reshape(_vec(m), 4)),
    ("reshape-method-float", lambda m: _vec(m).reshape(2.0, 2)),
    ("permute-function-varargs", lambda m: m.permute(_mat(m), 1, 0)),
    ("transpose-dim-str", lambda m: _mat(m).transpose(0, "1")),
    ("swapaxes-missing-dim", lambda m: m.swapaxes(_mat(m), 0)),
    ("t-extra-argument", lambda m: _mat(m).t(0)),
    ("squeeze-dim-none", lambda m: m.squeeze(_vec(m), None)),
    ("squeeze-element-str", lambda m: _vec(m).squeeze((0, "a"))),
    ("unsqueeze-no-dim", lambda m: _vec(m).unsqueeze()),
    ("flatten-start-bool", lambda m: m.flatten(_mat(m), start_dim=True)),
    ("unflatten-sizes-int", lambda m: _vec(m).unflatten(0, 4)),
    ("narrow-length-float", lambda m: m.narrow(_vec(m), 0, 0, 2.0)),
    ("select-index-bool", lambda m: m.select(_vec(m), 0, True)),
    ("as_strided-size-int", lambda m: _vec(m).as_strided(2, (1,))),
    ("detach-not-tensor", lambda m: m.detach([1.0])),
    ("clone-positional-format", lambda m: m.clone(_vec(m), None)),
    ("view-size-float", lambda m: _vec(m).view(2.0, 2)),
    ("view-dtype-str", lambda m: _vec(m).view("float32")),
    ("view_as-list", lambda m: _vec(m).view_as([1.0, 2.0, 3.0, 4.0])),
    ("expand-size-str", lambda m: _vec(m).expand("4")),
    ("expand_as-number", lambda m: _vec(m).expand_as(4)),
    ("reshape_as-missing", lambda m: _vec(m).reshape_as()),
    ("contiguous-positional", lambda m: _vec(m).contiguous(None)),
    # matrix products
    ("mm-second-list", lambda m: m.mm(_mat(m), [[1.0, 0.0], [0.0, 1.0]])),
    ("mm-method-out", lambda m: _mat(m).mm(_mat(m), out=_mat(m))),
    ("matmul-first-number", lambda m: m.matmul(2.0, _mat(m))),
    ("mv-vec-tuple", lambda m: m.mv(_mat(m), (1.0, 2.0))),
    ("dot-too-many", lambda m: m.dot(_vec(m), _vec(m), _vec(m))),
    ("outer-vec2-str", lambda m: _vec(m).outer("a")),
    ("addmm-beta-str", lambda m: m.addmm(_mat(m), _mat(m), _mat(m), beta="1")),
    ("addmm-beta-positional", lambda m: m.addmm(_mat(m), _mat(m), _mat(m), 1)),
    ("addmm_-alpha-list", lambda m: _mat(m).addmm_(_mat(m), _mat(m), alpha=[1])),
    ("baddbmm-batch2-missing", lambda m: m.baddbmm(_mat(m)[None], _mat(m)[None])),
]


@pytest.mark.parametrize("call", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_a_wrong_argument_type_is_a_type_error_as_torch(call):
    with pytest.raises(TypeError):
        call(ember)


@pytest.mark.parametrize("call", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_torch_raises_the_same_class(call):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        call(torch)


def test_the_messages_are_torchs():
    x = ember.tensor([3.0, 1.0, 2.0])
    with pytest.raises(TypeError, match=r"^topk\(\): argument 'k' \(position 2\) must be int, not float$"):
        ember.topk(x, 2.0)
    with pytest.raises(TypeError, match=r"^sort\(\) received an invalid combination of arguments - "
                                        r"got \(Tensor, int, stable=bool\), but expected one of:"):
        ember.sort(x, 0, stable=True)
    with pytest.raises(TypeError, match=r"^topk\(\): argument 'largest' must be bool, not int$"):
        x.topk(2, largest=1)  # given by keyword: no position in the message
    with pytest.raises(TypeError, match=r"^expected Tensor as element 1 in argument 0, but got int$"):
        ember.cat([x, 1])
    with pytest.raises(TypeError, match=r"^flip\(\): argument 'dims' \(position 1\) must be tuple of ints, but "
                                        r"found element of type float at pos 0$"):
        x.flip((0.0,))
    with pytest.raises(TypeError, match=r"^mm\(\) got an unexpected keyword argument 'out'$"):
        x.reshape(3, 1).mm(x.reshape(1, 3), out=x)


def test_the_rows_are_listed_with_their_families():
    rows = {(r["name"], tuple(r["variants"])): r for r in ember._C._ops()}
    assert rows[("sort", ("function", "method"))]["family"] == "sort"
    assert rows[("cat", ("function",))]["family"] == "shape"
    assert rows[("unfold", ("method",))]["hooked"]
    assert rows[("addmm_", ("function", "method"))]["binding"] == "generated"
    assert rows[("__matmul__", ("method",))]["binding"].startswith("manual:")
