"""Behaviour of the autograd API, compared with PyTorch's documented behaviour."""

from __future__ import annotations

import gc
import json
import threading
import warnings
import weakref

import numpy as np
import pytest

import ember
import ember.autograd as autograd
from ember.autograd import Function


def t(*vals, rg=True, dtype=None):
    return ember.tensor(list(vals), requires_grad=rg, dtype=dtype)


def lst(x):
    return np.round(x.detach().numpy(), 6).tolist()


# ---- basics -------------------------------------------------------------------------------


def test_import_resolves_and_registers_the_hook():
    assert ember._C._get_autograd_hook() is autograd._engine.hook
    assert ember.autograd is autograd


def test_leaf_nonleaf_and_grad_fn():
    x = t(1.0, 2.0)
    y = x * 2
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn.name() == "MulBackward0"
    (acc, nr), (none, _) = y.grad_fn.next_functions
    assert nr == 0 and acc.variable is x and none is None
    assert "grad_fn=<MulBackward0>" in repr(y) or "grad_fn=" in repr(y)
    z = ember.ones(2)
    assert z.is_leaf and (z * 2).grad_fn is None


def test_backward_accumulates_into_leaves():
    x = t(1.0, 2.0, 3.0)
    (x * x).sum().backward()
    assert lst(x.grad) == [2.0, 4.0, 6.0]
    (x * 3).sum().backward()
    assert lst(x.grad) == [5.0, 7.0, 9.0]
    x.grad = None
    (x * 3).sum().backward()
    assert lst(x.grad) == [3.0, 3.0, 3.0]


def test_grad_of_shared_input_sums_paths():
    x = t(2.0)
    y = x * x + x
    y.backward()
    assert lst(x.grad) == [5.0]


def test_nonscalar_backward_needs_gradient():
    x = t(1.0, 2.0)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(ember.tensor([1.0, 10.0]))
    assert lst(x.grad) == [2.0, 20.0]


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ember.ones(1).sum().backward()


def test_retain_graph():
    x = t(1.0, 2.0)
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert lst(x.grad) == lst(x.exp() * 4)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    # a graph whose nodes saved nothing can be walked again (as in torch)
    z = (x + 1).sum()
    z.backward()
    z.backward()


def test_saved_tensors_released_after_backward():
    x = t(1.0, 2.0)
    y = x.exp()
    s = y.sum()
    node = y.grad_fn
    assert node._saved
    s.backward()
    assert node._saved is None


def test_graph_freed_with_its_output():
    x = t(1.0, 2.0)
    y = (x * 2).exp().sum()
    ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert ref() is None


def test_recorded_inputs_finds_each_arguments_edge():
    """The core's scan of a recorded call's arguments (_engine._inputs): an edge per tensor
    requiring grad (a leaf's accumulator, made once and kept; a result's node), None for the
    rest; tensor lists flattened with a tuple of needs; any_need 2 with a complex tensor."""
    from ember.autograd import _engine

    leaf = t(1.0, 2.0)
    plain = ember.tensor([3.0, 4.0])
    made = leaf * 2
    edges, needs, any_need = _engine._inputs((leaf, 2.5, plain, [made, plain], (1, slice(0, 1)),
                                             [], made))
    acc = leaf._ag["_accum"]
    node = made.grad_fn
    assert edges == [(acc, 0), None, None, (node, 0), None, None, None, (node, 0)]
    assert needs == [True, False, False, (True, False), False, False, True]
    assert any_need == 1
    assert _engine._inputs((leaf,))[0][0][0] is acc  # the accumulator is kept
    assert _engine._inputs((plain, 1.0)) == ([None, None], [False, False], 0)
    z = ember.tensor([1 + 2j], requires_grad=True)
    assert _engine._inputs((leaf, z))[2] == 2
    assert _engine._inputs(([plain, z],))[2] == 2
    # what the scan feeds: gradients through a list argument and a scalar one
    ember.cat([made, plain]).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), [2.0, 2.0])


def test_version_counter_error():
    a = t(1.0, 2.0, 3.0)
    b = a * 2
    c = b * b
    b.add_(1)
    with pytest.raises(RuntimeError) as e:
        c.sum().backward()
    msg = str(e.value)
    assert msg.startswith("one of the variables needed for gradient computation has been "
                          "modified by an inplace operation: [ember.FloatTensor [3]], which is "
                          "output 0 of MulBackward0, is at version 1; expected version 0 "
                          "instead. Hint:")


def test_version_counter_error_on_saved_output():
    a = t(1.0, 2.0)
    b = a.exp()
    b.mul_(2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        b.sum().backward()


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        ember.ones(2, dtype=ember.int64).requires_grad_()


def test_no_formula_is_a_clear_error():
    x = t(1.0, 2.0)
    y = autograd._engine.hook("frobnicate", lambda a: a * 2, (x,), {})
    with pytest.raises(RuntimeError, match="derivative for frobnicate is not implemented"):
        y.sum().backward()


# ---- autograd.grad / backward ----------------------------------------------------------


def test_autograd_grad_does_not_accumulate():
    x, w = t(1.0, 2.0), t(3.0, 4.0)
    (gx, gw) = autograd.grad((x * w).sum(), (x, w))
    assert lst(gx) == [3.0, 4.0] and lst(gw) == [1.0, 2.0]
    assert x.grad is None and w.grad is None


def test_autograd_grad_unused():
    x, y = t(1.0), t(2.0)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have "
                                           "been used in the graph. Set allow_unused=True"):
        autograd.grad((x * 2).sum(), (x, y))
    gx, gy = autograd.grad((x * 2).sum(), (x, y), allow_unused=True)
    assert gy is None
    gx, gy = autograd.grad((x * 2).sum(), (x, y), materialize_grads=True)
    assert lst(gy) == [0.0]


def test_autograd_grad_of_intermediate():
    x = t(1.0, 2.0)
    h = x * 3
    y = (h * h).sum()
    (gh,) = autograd.grad(y, h)
    assert lst(gh) == [6.0, 12.0]


def test_create_graph_double_backward():
    x = t(2.0)
    y = x ** 3
    (g,) = autograd.grad(y, x, create_graph=True)
    assert lst(g) == [12.0] and g.requires_grad
    (g2,) = autograd.grad(g, x)
    assert lst(g2) == [12.0]
    x.grad = None
    y = x ** 3
    y.backward(create_graph=True)
    x.grad.backward()
    assert lst(x.grad) == [12.0 + 12.0]


def test_backward_inputs():
    x, w = t(1.0, 2.0), t(3.0, 4.0)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and lst(w.grad) == [1.0, 2.0]
    autograd.backward([(x * w).sum()], inputs=[x])
    assert lst(x.grad) == [3.0, 4.0]


# ---- hooks ----------------------------------------------------------------------------


def test_tensor_hooks_order_and_replacement():
    calls = []
    x = t(1.0, 2.0)
    y = x * 2
    y.register_hook(lambda g: calls.append("a") or g * 10)
    h = y.register_hook(lambda g: calls.append("b"))
    x.register_hook(lambda g: calls.append("leaf") or None)
    y.sum().backward()
    assert calls == ["a", "b", "leaf"]
    assert lst(x.grad) == [20.0, 20.0]
    h.remove()
    calls.clear()
    x.grad = None
    y2 = x * 2
    y2.sum().backward()
    assert calls == ["leaf"]


def test_node_hooks():
    x = t(1.0, 2.0)
    y = x * 3
    seen = {}
    y.grad_fn.register_prehook(lambda go: seen.update(pre=go[0].tolist()))
    y.grad_fn.register_hook(lambda gi, go: seen.update(post=(gi[0].tolist(), go[0].tolist())))
    y.sum().backward()
    assert seen["pre"] == [1.0, 1.0] and seen["post"] == ([3.0, 3.0], [1.0, 1.0])


def test_post_accumulate_grad_hook():
    x = t(1.0)
    got = []
    x.register_post_accumulate_grad_hook(lambda p: got.append(p.grad.tolist()))
    (x * 5).sum().backward()
    assert got == [[5.0]]
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda p: None)


def test_retain_grad():
    x = t(1.0, 2.0)
    y = x * 2
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert lst(y.grad) == [4.0, 8.0]


def test_nonleaf_grad_is_none_without_retain():
    x = t(1.0)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None


# ---- detach, grad modes ---------------------------------------------------------------


def test_detach():
    x = t(1.0, 2.0)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d._version == y._version
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None


def test_no_grad_enable_grad():
    x = t(1.0)
    with ember.no_grad():
        y = x * 2
        with ember.enable_grad():
            z = x * 2
    assert not y.requires_grad and z.requires_grad

    @ember.no_grad()
    def f(a):
        return a * 2

    assert not f(x).requires_grad
    with ember.inference_mode():
        assert not (x * 2).requires_grad


def test_grad_mode_is_thread_local():
    x = t(1.0)
    out = {}

    def worker():
        out["enabled"] = ember.is_grad_enabled()
        out["rg"] = (x * 2).requires_grad

    with ember.no_grad():
        th = threading.Thread(target=worker)
        th.start()
        th.join()
    assert out == {"enabled": True, "rg": True}


# ---- in-place -------------------------------------------------------------------------


def test_inplace_on_leaf_is_refused():
    x = t(1.0, 2.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    with ember.no_grad():
        x.add_(1)  # allowed without grad mode
    assert lst(x) == [2.0, 3.0]


def test_inplace_records():
    a = t(1.0, -2.0, 3.0)
    x = a.clone()
    x.add_(1)
    x.mul_(x)
    x.relu_()
    assert x.grad_fn.name() == "ReluBackward0"
    x.sum().backward()
    # relu((a+1)^2) -> 2(a+1)
    assert lst(a.grad) == [4.0, -2.0, 8.0]


def test_inplace_makes_untracked_tensor_require_grad():
    w = t(1.0, 2.0)
    z = ember.zeros(2)
    z.add_(w * 3)
    assert z.requires_grad and not z.is_leaf
    z.sum().backward()
    assert lst(w.grad) == [3.0, 3.0]


def test_setitem():
    a = t(1.0, 2.0, 3.0)
    y = t(10.0)
    x = a.clone()
    x[0] = (y * 2).sum()
    (x * x).sum().backward()
    assert lst(a.grad) == [0.0, 4.0, 6.0]
    assert lst(y.grad) == [80.0]


def test_inplace_on_view_rebases_the_base():
    a = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x = a.clone()
    v = x[0]
    v.mul_(10)
    assert x.grad_fn is not None and x.grad_fn.name() == "CopySlicesBackward0"
    (x * x).sum().backward()
    # x = [[10a0, 10a1], [a2, a3]] -> d/da sum(x^2) = [[200 a0, 200 a1], [2 a2, 2 a3]]
    assert lst(a.grad) == [[200.0, 400.0], [6.0, 8.0]]


def test_view_grad_after_inplace_on_view():
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a.clone()
    v = x[1:]
    v.exp_()
    v.sum().backward()
    e = np.exp([2.0, 3.0])
    np.testing.assert_allclose(a.grad.numpy(), [0.0, *e], rtol=1e-6)


def test_copy_and_fill():
    a = t(1.0, 2.0)
    x = ember.zeros(2)
    x.copy_(a * 3)
    x.sum().backward()
    assert lst(a.grad) == [3.0, 3.0]
    b = a.clone()
    b.fill_(1.0)
    assert b.grad_fn is not None


def test_fill_with_a_tensor_value_records_its_gradient():
    # torch's FillBackward: the 0-d value's gradient is the sum of the output's; the filled
    # tensor's own values get none (found while running examples/programs)
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = ember.zeros(2, 3)
    z.fill_(a.sum() * 2)
    assert z.grad_fn is not None and lst(z.detach().reshape(-1)) == [12.0] * 6
    weights = ember.arange(6.0).view(2, 3)
    (z * weights).sum().backward()
    assert lst(a.grad) == [2.0 * 15.0] * 3  # d(sum(w * 2 * sum(a)))/da_i = 2 * sum(w)
    b = ember.tensor([1.0, 2.0], requires_grad=True)
    (b * 1).fill_(ember.tensor(5.0)).sum().backward()
    assert lst(b.grad) == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but "
                                           "got tensor with 1 dimensions"):
        ember.zeros(2).fill_(a)


def test_fill_with_a_tensor_value_matches_torch():
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (ember, torch):
        a = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
        z = (lib.ones(3, 2) * a[0]).fill_(a.prod())  # overwrites a gradient path to a[0]
        (z * lib.arange(6.0).view(3, 2)).sum().backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_random_inplace_gradient_is_zero():
    a = t(1.0, 2.0)
    x = a * 1
    x.uniform_()
    (x * 1).sum().backward()
    assert lst(a.grad) == [0.0, 0.0]


# ---- Function ---------------------------------------------------------------------------


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def test_function_basic():
    x = t(0.0, 1.0)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)
    assert autograd.gradcheck(Exp.apply, (t(0.5, 1.5, dtype=ember.float64),))


def test_function_setup_context_and_needs_input_grad():
    class Mul(Function):
        @staticmethod
        def forward(a, b):
            return a * b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.flags = ctx.needs_input_grad

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return (g * b if ctx.needs_input_grad[0] else None,
                    g * a if ctx.needs_input_grad[1] else None)

    a, b = t(2.0), t(3.0, rg=False)
    y = Mul.apply(a, b)
    y.backward()
    assert y.grad_fn.flags == (True, False)
    assert lst(a.grad) == [3.0]


def test_function_mark_dirty_and_non_differentiable():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class Sort(Function):
        @staticmethod
        def forward(ctx, x):
            idx = ember.argmax(x)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, gidx):
            return g * 2

    a = t(1.0, 2.0)
    x = a.clone()
    y = AddOneInplace.apply(x)
    assert y is x and x.grad_fn.name() == "AddOneInplaceBackward"
    y.sum().backward()
    assert lst(a.grad) == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="leaf Variable"):
        AddOneInplace.apply(t(1.0))
    v, i = Sort.apply(t(1.0, 3.0))
    assert v.requires_grad and not i.requires_grad


def test_function_materialize_grads_and_once_differentiable():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        @autograd.once_differentiable
        def backward(ctx, g1, g2):
            seen.append((g1, ember.is_grad_enabled()))
            return g2 * 2

    x = t(1.0)
    a, b = Two.apply(x)
    b.sum().backward()
    assert seen[0] == (None, False)
    assert lst(x.grad) == [2.0]


def test_function_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        Bad.apply(t(1.0), t(2.0)).backward()


def test_function_saved_tensor_version_check():
    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    a = t(1.0, 2.0)
    x = a * 1
    y = Sq.apply(x)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---- saved tensor hooks, anomaly mode, profiler ---------------------------------------


def test_saved_tensors_hooks():
    packed = []

    def pack(x):
        packed.append(x.shape)
        return x.detach().numpy().copy()

    def unpack(a):
        return ember.tensor(a)

    x = t(1.0, 2.0)
    with autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    y.backward()
    assert len(packed) == 2 and lst(x.grad) == [2.0, 4.0]


def test_detect_anomaly_names_the_forward_op():
    x = t(0.0, 1.0)
    with autograd.detect_anomaly():
        y = x.sqrt() * 0.0  # d sqrt at 0 is inf, times 0 -> nan
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values "
                                                   "in its 0th output."):
                y.sum().backward()
        assert any("Traceback of forward call" in str(m.message) and "x.sqrt()" in str(m.message)
                   for m in w)
    assert not autograd.is_anomaly_enabled()


def test_profiler(tmp_path):
    from ember.autograd.profiler import profile, record_function

    x = t(1.0, 2.0)
    with profile() as prof:
        with record_function("my_block"):
            y = (x * x).exp().sum()
        y.backward()
    table = prof.key_averages().table(sort_by="cpu_time_total")
    for name in ("mul", "exp", "sum", "my_block", "MulBackward0", "ExpBackward0"):
        assert name in table
    counts = {a.key: a.count for a in prof.key_averages()}
    # as in torch, the ops a backward node runs are events too: x * x's backward multiplies
    # twice, exp's once, so 4 "mul" events in all, 1 of them in the forward
    assert counts["mul"] == 4 and counts["MulBackward0"] == 1 and counts["exp"] == 1
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert {e["name"] for e in trace["traceEvents"]} >= {"mul", "my_block"}
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in trace["traceEvents"])
    with pytest.raises(ValueError):
        prof.key_averages().table(sort_by="nonsense")


# ---- functional, forward AD -----------------------------------------------------------


def test_functional():
    from ember.autograd import functional as F

    x = ember.tensor([1.0, 2.0], dtype=ember.float64)
    v = ember.tensor([1.0, -1.0], dtype=ember.float64)

    def f(a):
        return a ** 3

    out, vj = F.vjp(f, x, v)
    assert lst(out) == [1.0, 8.0] and lst(vj) == [3.0, -12.0]
    out, jv = F.jvp(f, x, v)
    assert lst(jv) == [3.0, -12.0]
    assert lst(F.jacobian(f, x)) == [[3.0, 0.0], [0.0, 12.0]]
    assert lst(F.hessian(lambda a: (a ** 3).sum(), x)) == [[6.0, 0.0], [0.0, 12.0]]
    assert lst(F.hvp(lambda a: (a ** 3).sum(), x, v)[1]) == [6.0, -12.0]
    assert lst(F.vhp(lambda a: (a ** 3).sum(), x, v)[1]) == [6.0, -12.0]


def test_forward_ad_matches_reverse():
    import ember.autograd.forward_ad as fwAD
    from ember.autograd import functional as F

    x = ember.tensor([[0.5, -1.0], [2.0, 0.3]], dtype=ember.float64)
    tan = ember.tensor([[1.0, 0.5], [-2.0, 1.0]], dtype=ember.float64)
    w = ember.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=ember.float64)

    def f(a):
        return ((a @ w).tanh() * a + a.sum(dim=0)).softmax(1).log() + ember.atan2(a, w).mean()

    with fwAD.dual_level():
        d = fwAD.make_dual(x, tan)
        p, tg = fwAD.unpack_dual(f(d))
    _, ref = F.jvp(f, x, tan)
    np.testing.assert_allclose(tg.numpy(), ref.numpy(), rtol=1e-10)
    assert fwAD.unpack_dual(d).tangent is None  # tangents end with their level
    with pytest.raises(RuntimeError, match="dual level"):
        fwAD.make_dual(x, tan)


def test_inference_mode_is_thread_local():
    out = {}

    def worker():
        out["inference"] = ember.is_inference_mode_enabled()
        out["grad"] = ember.is_grad_enabled()

    with ember.inference_mode():
        assert ember.is_inference_mode_enabled()
        th = threading.Thread(target=worker)
        th.start()
        th.join()
    assert out == {"inference": False, "grad": True}
    assert not ember.is_inference_mode_enabled()


def test_history_survives_the_python_wrapper():
    # The base's Python object is gone when the view is modified in place: its history lives in
    # the TensorImpl (Tensor._ag), so `_base` comes back with it and the base is rebased.
    a = ember.ones(2, 3, requires_grad=True)
    x = a * 2
    v = x[0]
    del x
    gc.collect()
    v.mul_(3)
    base = v._base
    assert base.grad_fn is not None and base.grad_fn.name() == "CopySlicesBackward0"
    (base * 1).sum().backward()
    assert lst(a.grad) == [[6.0, 6.0, 6.0], [2.0, 2.0, 2.0]]


def test_grad_survives_the_python_wrapper():
    a = ember.ones(2, requires_grad=True)
    b = a[:]  # a view: its _base is `a`'s TensorImpl
    (b * 3).sum().backward()
    del a
    gc.collect()
    base = b._base
    assert lst(base.grad) == [3.0, 3.0]


def test_grads_are_never_shared_between_leaves_or_with_the_caller():
    a, b = t(1.0, 2.0), t(3.0, 4.0)
    v = ember.tensor([1.0, 1.0])
    (a + b).backward(v)
    (a + b).backward(v)
    assert lst(a.grad) == [2.0, 2.0] and lst(b.grad) == [2.0, 2.0]
    assert lst(v) == [1.0, 1.0]
    a.grad.zero_()
    assert lst(b.grad) == [2.0, 2.0]
    c = t(1.0, 2.0, 3.0, 4.0)
    c[1:3].sum().backward()
    assert c.grad._base is None and lst(c.grad) == [0.0, 1.0, 1.0, 0.0]


def test_round_and_nan_to_num_in_place_record():
    a = t(1.5, float("nan"), 2.5)
    x = a * 1
    x.nan_to_num_(nan=5.0)
    assert lst(x.detach()) == [1.5, 5.0, 2.5] and x.grad_fn is not None
    x.sum().backward()
    assert lst(a.grad) == [1.0, 0.0, 1.0]
    b = t(1.4, 2.6)
    y = b * 1
    y.round_()
    assert lst(y.detach()) == [1.0, 3.0]
    y.sum().backward()
    assert lst(b.grad) == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="leaf Variable"):
        b.round_()
    with pytest.raises(RuntimeError, match="out="):
        ember.nan_to_num(b, out=ember.zeros(2))


def test_requires_grad_imports_autograd_lazily():
    import subprocess
    import sys

    code = ("import sys, ember; assert 'ember.autograd' not in sys.modules; "
            "x = ember.ones(2, requires_grad=True); (x * 2).sum().backward(); "
            "print(x.grad.tolist(), 'ember.autograd' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2.0, 2.0] True"


def test_requires_grad_of_non_leaf_cannot_be_unset():
    y = t(1.0) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    y.requires_grad_(True)
    x = t(1.0)
    x.requires_grad_(False)
    assert not x.requires_grad


def test_gradcheck_detects_a_wrong_gradient():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g  # should be 2 x g

    x = ember.tensor([0.3, 0.7], dtype=ember.float64, requires_grad=True)
    with pytest.raises(autograd.GradcheckError, match="Jacobian mismatch for output 0 with "
                                                      "respect to input 0"):
        autograd.gradcheck(Wrong.apply, (x,))
    assert autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    assert issubclass(autograd.GradcheckError, RuntimeError)
    with pytest.warns(UserWarning, match="not a double precision"):
        autograd.gradcheck(lambda a: a * 2, (t(1.0),), eps=1e-2, atol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        autograd.gradcheck(lambda a: a * 2, (ember.ones(2, dtype=ember.float64),))


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_rounding_modes_record(mode):
    x = t(3.0, -5.0)
    y = ember.div(x, 2.0, rounding_mode=mode)
    assert y.requires_grad
    z = x * 1
    z.div_(2.0, rounding_mode=mode)
    (y + z).sum().backward()
    assert lst(x.grad) == [0.0, 0.0]


def test_intermediate_gradients_are_freed_during_the_sweep():
    x = t(1.0, 2.0)
    ys = [x]
    for _ in range(5):
        ys.append(ys[-1].exp() * 1.5)
    refs = {}
    for i in (2, 3, 4):
        ys[i].register_hook(lambda g, i=i: refs.__setitem__(i, weakref.ref(g)))
    alive_at_1 = {}
    ys[1].register_hook(lambda g: alive_at_1.update({i: r() is not None for i, r in refs.items()}))
    ys[-1].sum().backward()
    # when y1's gradient arrives, those of y2..y4 (used up) are gone
    assert alive_at_1 == {2: False, 3: False, 4: False}


def test_data_setter_shares_storage_and_takes_shape_and_dtype():
    x = ember.zeros(3, requires_grad=True)
    y = ember.ones(2, 2, dtype=ember.float64)
    x.data = y
    assert x.shape == (2, 2) and x.dtype == ember.float64 and x.requires_grad and x.is_leaf
    y[0, 0] = 5.0  # shared, as in torch
    assert x[0, 0].item() == 5.0
    (x * 2).sum().backward()
    assert x.grad.dtype == ember.float64 and x.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(TypeError, match="must be a Tensor"):
        x.data = [1.0]


def test_a_view_gradient_is_adopted_only_when_nothing_else_holds_its_base():
    # x.t() backward hands AccumulateGrad a transposed view of a fresh tensor: adopted as is
    x = ember.randn(3, 4, requires_grad=True)
    (x.t() * 2).sum().backward()
    assert x.grad.is_contiguous() and x.grad.tolist() == [[2.0] * 4] * 3
    # the caller's gradient is a view whose base the caller holds: copied, never adopted
    w = ember.randn(3, 3, requires_grad=True)
    base = ember.ones(3, 3)
    given = base.t()
    w.t().backward(given)
    w.t().backward(given)  # accumulates into w.grad in place
    assert base.tolist() == [[1.0] * 3] * 3 and w.grad.tolist() == [[2.0] * 3] * 3


class _WrongJvp(Function):
    """x * x with the right backward and a forward-mode derivative that is off by x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.x = x
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

    @staticmethod
    def jvp(ctx, tx):
        return ctx.x * tx  # should be 2 x tx


class _Nondeterministic(Function):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        _Nondeterministic.calls += 1
        return g * 3 + 1e-7 * _Nondeterministic.calls  # within gradcheck's atol, not reentrant


def test_gradcheck_forward_mode_checks_the_jvp():
    x = ember.tensor([0.3, 0.7, -1.2], dtype=ember.float64, requires_grad=True)
    assert autograd.gradcheck(ember.sin, (x,), check_forward_ad=True)
    assert autograd.gradcheck(lambda a, b: a * b + a.exp(), (x, x.detach().clone()
                                                           .requires_grad_()),
                              check_forward_ad=True, check_backward_ad=False)
    # the backward is right, so only the forward-mode check can catch it
    assert autograd.gradcheck(_WrongJvp.apply, (x,))
    with pytest.raises(autograd.GradcheckError, match=r"input 0 \(forward mode\)"):
        autograd.gradcheck(_WrongJvp.apply, (x,), check_forward_ad=True)
    with pytest.raises(ValueError, match="at least one of check_forward_ad or check_backward_ad"):
        autograd.gradcheck(ember.sin, (x,), check_backward_ad=False)


def test_gradcheck_fast_mode_checks_a_random_projection():
    x = ember.tensor([[0.3, 0.7], [-1.2, 0.4]], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([[1.5, -0.5], [0.25, 2.0]], dtype=ember.float64, requires_grad=True)
    assert autograd.gradcheck(lambda a, b: (a @ b).tanh(), (x, w), fast_mode=True)
    assert autograd.gradcheck(lambda a, b: (a @ b).tanh(), (x, w), fast_mode=True,
                              check_forward_ad=True)
    y = ember.tensor([0.3, 0.7], dtype=ember.float64, requires_grad=True)

    class Wrong(Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(autograd.GradcheckError, match="fast mode"):
        autograd.gradcheck(Wrong.apply, (y,), fast_mode=True)
    assert autograd.gradcheck(Wrong.apply, (y,), fast_mode=True, raise_exception=False) is False
    with pytest.raises(autograd.GradcheckError, match=r"forward mode"):
        autograd.gradcheck(_WrongJvp.apply, (y,), fast_mode=True, check_forward_ad=True)


def test_gradcheck_reentrancy_and_grad_dtypes():
    x = ember.tensor([0.3, 0.7], dtype=ember.float64, requires_grad=True)
    with pytest.raises(autograd.GradcheckError, match="Backward is not reentrant"):
        autograd.gradcheck(_Nondeterministic.apply, (x,))
    assert autograd.gradcheck(_Nondeterministic.apply, (x,), nondet_tol=1e-5,
                              check_undefined_grad=False)

    class HalfGrad(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).float().double().float()  # a float32 gradient for a float64 input

    # the engine casts a gradient to its input's dtype (as torch's does), so the check passes
    assert autograd.gradcheck(HalfGrad.apply, (x,), atol=1e-4, check_grad_dtypes=True)
    assert x.dtype == ember.float64


def test_gradcheck_zero_output_gradients_give_zero_input_gradients():
    class Leaky(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + 0.0 * g + (g == 0).to(g.dtype) * 1e-9  # nonzero for a zero gradient

    x = ember.tensor([0.3, 0.7], dtype=ember.float64, requires_grad=True)
    with pytest.raises(autograd.GradcheckError, match="zero gradients for input 0"):
        autograd.gradcheck(Leaky.apply, (x,))
    assert autograd.gradcheck(Leaky.apply, (x,), check_undefined_grad=False)


@pytest.mark.parametrize("fn, kwargs", [
    ("gradcheck", {"check_batched_grad": True}),
    ("gradcheck", {"check_batched_forward_grad": True}),
    ("gradcheck", {"masked": True}),
    ("gradgradcheck", {"check_batched_grad": True}),
    ("gradgradcheck", {"check_fwd_over_rev": True}),
])
def test_gradchecks_refuse_what_they_cannot_check(fn, kwargs):
    x = ember.tensor([0.3, 0.7], dtype=ember.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match=next(iter(kwargs))):
        getattr(autograd, fn)(ember.sin, (x,), **kwargs)


def test_gradgradcheck_options():
    x = ember.tensor([[0.3, 0.7], [-1.2, 0.4]], dtype=ember.float64, requires_grad=True)
    assert autograd.gradgradcheck(lambda a: (a * a).sin(), (x,), gen_non_contig_grad_outputs=True)
    assert autograd.gradgradcheck(lambda a: (a * a).sin(), (x,), fast_mode=True)
    with pytest.raises(ValueError, match="check_rev_over_rev"):
        autograd.gradgradcheck(ember.sin, (x,), check_rev_over_rev=False)


def test_profiler_records_shapes_memory_and_stacks():
    x = ember.randn(4, 5, requires_grad=True)
    w = ember.randn(5, 3, requires_grad=True)
    with autograd.profiler.profile(record_shapes=True, profile_memory=True,
                                   with_stack=True) as prof:
        y = (x @ w).relu()
        z = (x * x).sum()
    mm = [e for e in prof.function_events() if e.name == "matmul"]
    assert mm and mm[0].input_shapes == [[4, 5], [5, 3]]
    mul = [e for e in prof.function_events() if e.name == "mul"]
    assert mul and mul[0].input_shapes == [[4, 5], [4, 5]]
    # the matmul's result (4 x 3 float32) stays allocated: its event accounts for it
    assert mm[0].cpu_memory_usage >= 4 * 3 * 4
    assert any(__file__ in frame for frame in mm[0].stack)
    groups = prof.key_averages(group_by_input_shape=True)
    assert any(a.key == "matmul" and a.input_shapes == [[4, 5], [5, 3]] for a in groups)
    table = groups.table(sort_by="cpu_memory_usage")
    assert "Input Shapes" in table and "[[4, 5], [5, 3]]" in table and "CPU Mem" in table
    assert prof.key_averages(group_by_stack_n=2)
    del y, z


def test_profiler_sees_ops_that_record_nothing():
    # inference (no_grad) and tensors that do not require grad: every op is an event, as in
    # torch's profiler (it used to see only ops that autograd records)
    from ember.autograd.profiler import profile

    x, w = ember.randn(6, 4), ember.randn(4, 3)
    model = ember.nn.Sequential(ember.nn.Linear(4, 5), ember.nn.ReLU())
    with ember.no_grad(), profile(record_shapes=True) as prof:
        y = model(x)
        z = ember.softmax(x @ w + 1.0, dim=1).sum()
    with profile() as prof_grad_mode:  # grad mode on, nothing requires grad
        (x * 2).exp()
    counts = {a.key: a.count for a in prof.key_averages()}
    for name in ("matmul", "add", "softmax", "sum", "relu"):
        assert counts.get(name) == 1, (name, counts)
    assert any(a.key == "addmm" for a in prof.key_averages()), counts  # the Linear's product
    mm = next(e for e in prof.function_events() if e.name == "matmul")
    assert mm.input_shapes == [[6, 4], [4, 3]]
    assert {a.key: a.count for a in prof_grad_mode.key_averages()} == {"mul": 1, "exp": 1}
    # results are the unprofiled ones
    np.testing.assert_allclose(y.numpy(), model(x).detach().numpy())
    np.testing.assert_allclose(z.item(), ember.softmax(x @ w + 1.0, dim=1).sum().item(),
                               rtol=1e-6)
    assert not ember._C._is_profiling()  # off once the profile closes


def test_profiler_ops_inside_backward_nodes_and_failed_ops():
    from ember.autograd.profiler import profile

    x = ember.randn(5, requires_grad=True)
    with profile() as prof:
        (x * 3.0).sum().backward()
        with pytest.raises(RuntimeError, match="size"):
            ember.ones(2) + ember.ones(3)  # the failed op's event is closed, then the next
        ember.ones(2).neg()
    events = prof.function_events()
    node = next(e for e in events if e.name == "MulBackward0")
    inner = [e for e in events if e.name == "mul" and
             node.start_us <= e.start_us <= node.start_us + node.dur_us]
    assert inner and node.self_us < node.dur_us  # the formula's product, inside the node
    assert [e.name for e in events][-5:] == ["ones", "ones", "add", "ones", "neg"]
    assert all(e.self_us == pytest.approx(e.dur_us) for e in events if e.name in ("add", "neg"))
    assert x.grad.tolist() == [3.0] * 5


def test_profiler_nested_profiles_and_threads():
    from ember.autograd.profiler import profile

    with profile() as outer:
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass
        ember.ones(3).exp()
    assert not ember._C._is_profiling()
    assert [e.name for e in outer.function_events()] == ["ones", "exp"]
    # a profile open in one thread times the ops another thread runs meanwhile (torch's
    # profiler records every thread too); the events carry the thread's id
    seen = []
    with profile() as prof:
        th = threading.Thread(target=lambda: seen.append(ember.ones(4).sin()))
        th.start()
        th.join()
    assert any(e.name == "sin" and e.thread == th.ident for e in prof.function_events())


def test_profiler_refuses_what_it_cannot_record():
    for kwargs in ({"with_flops": True}, {"with_modules": True}, {"use_cuda": True},
                   {"use_device": "cuda"}):
        with pytest.raises(NotImplementedError, match=next(iter(kwargs))):
            autograd.profiler.profile(**kwargs)
    with autograd.profiler.profile() as prof:
        (ember.ones(2, requires_grad=True) * 2).sum()
    with pytest.raises(RuntimeError, match="record_shapes=True"):
        prof.key_averages(group_by_input_shape=True)
    assert "Input Shapes" not in prof.key_averages().table()


def test_as_subclass_stays_in_the_graph():
    class Marked(ember.Tensor):
        pass

    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    y = (x * 2).as_subclass(Marked)
    assert type(y) is Marked and y.requires_grad and y.grad_fn is not None
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * x.detach().numpy())  # d/dx (2x)^2
    with ember.no_grad():
        assert not x.as_subclass(Marked).requires_grad
    assert not ember.ones(2).as_subclass(Marked).requires_grad


def test_grad_dtype_casts_accumulated_gradients_and_checks_assignments():
    x = ember.ones(3, requires_grad=True)
    assert x.grad_dtype == ember.float32  # the tensor's dtype by default
    x.grad_dtype = ember.float64
    (x * 2).sum().backward()
    assert x.grad.dtype == ember.float64 and x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="already a gradient with dtype 'double'"):
        x.grad_dtype = ember.int64
    with pytest.raises(RuntimeError, match="grad_dtype 'Double'"):
        x.grad = ember.zeros(3)
    x.grad = None
    x.grad_dtype = None  # any dtype is kept
    x.grad = ember.zeros(3, dtype=ember.float64)
    assert x.grad.dtype == ember.float64
    h = ember.ones(2, dtype=ember.float16, requires_grad=True)
    h.grad_dtype = ember.float32  # a half parameter with a float32 gradient
    (h.float() * 3).sum().backward()
    assert h.grad.dtype == ember.float32 and h.grad.tolist() == [3.0, 3.0]
    y = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad_dtype 'Float'"):
        y.grad = ember.zeros(2, dtype=ember.float64)
    v = x * 2
    with pytest.raises(RuntimeError, match="can only be set on leaf tensors"):
        v.grad_dtype = ember.float64
    with pytest.raises(RuntimeError, match="can only be accessed on leaf tensors"):
        _ = v.grad_dtype
