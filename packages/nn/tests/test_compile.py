"""ember.compile: compiled models against eager ember (forward and gradients, to 1e-6 of the
largest value), reductions against NumPy, fallbacks, guards and recompilations, the kernel
cache, the backends and the generated sources."""

import importlib.util
import math
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import _dynamo
from ember._inductor import cpp

pytestmark = pytest.mark.skipif(cpp.compiler() is None, reason="no C++ compiler")

RTOL = 1e-6


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_CACHE_DIR", str(tmp_path / "cache"))
    cpp._loaded.clear()
    _dynamo.reset()
    yield
    cpp._loaded.clear()


def _close(a, b, rtol=RTOL):
    """Agreement to ``rtol`` of the largest magnitude (float32 rounding of the values)."""
    a, b = a.detach().numpy(), b.detach().numpy()
    assert a.shape == b.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    scale = max(np.abs(b[np.isfinite(b)]).max(initial=0.0), 1e-30)
    diff = np.abs(np.where(np.isfinite(b), a - b, 0.0)).max(initial=0.0)
    assert diff <= rtol * scale, f"max difference {diff} > {rtol} * {scale}"
    np.testing.assert_array_equal(a[~np.isfinite(b)], b[~np.isfinite(b)])


def new_gelu(x):
    return 0.5 * x * (1.0 + ember.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


class GeluMLP(nn.Module):
    def __init__(self, d=32, h=64):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)

    def forward(self, x):
        return x + self.fc2(new_gelu(self.fc1(x)))


class Block(nn.Module):
    """LayerNorm, attention, GELU MLP: a transformer block."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = GeluMLP(d, 4 * d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = att - att.amax(-1, keepdim=True)
        att = att.exp()
        att = att / att.sum(-1, keepdim=True)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return self.mlp(self.ln2(x))


class Norms(nn.Module):
    """A layer norm written out (mean and variance reductions), silu, sigmoid, dropout (eval)."""

    def __init__(self, d=48):
        super().__init__()
        self.w = nn.Parameter(ember.randn(d))
        self.b = nn.Parameter(ember.randn(d))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        var = (xc * xc).mean(-1, keepdim=True)
        y = xc * ember.rsqrt(var + 1e-5) * self.w + self.b
        y = F.silu(y) + ember.sigmoid(y) * 0.5 - y.exp().log1p()
        return self.drop(y)


def _check_model(model, *inputs, loss=lambda y: (y * y).mean()):
    compiled = ember.compile(model)
    y = compiled(*inputs)
    _close(y, model(*inputs))
    params = [p for p in model.parameters()]
    grads_in = [t for t in inputs if t.requires_grad]
    model.zero_grad()
    for t in grads_in:
        t.grad = None
    loss(compiled(*inputs)).backward()
    compiled_grads = [p.grad.clone() for p in params] + [t.grad.clone() for t in grads_in]
    model.zero_grad()
    for t in grads_in:
        t.grad = None
    loss(model(*inputs)).backward()
    eager_grads = [p.grad for p in params] + [t.grad for t in grads_in]
    for a, b in zip(compiled_grads, eager_grads):
        _close(a, b)
    return compiled


@pytest.mark.parametrize("make, shape", [(GeluMLP, (16, 32)), (Block, (2, 8, 32)),
                                         (Norms, (6, 48))])
def test_models_match_eager_forward_and_gradients(make, shape):
    model = make()
    model.eval()  # dropout off: the compiled and eager runs see the same function
    x = ember.randn(*shape, requires_grad=True)
    compiled = _check_model(model, x)
    state = _dynamo.compiled_state(compiled)
    fused = [e for e in state.entries() if e.compiled is not None]
    assert fused and fused[-1].compiled.groups, state.report()


@pytest.mark.parametrize("op", sorted(__import__("ember._inductor.ops", fromlist=["x"]).UNARY
                                      | __import__("ember._inductor.ops", fromlist=["x"]).BINARY))
def test_every_fused_op_and_its_gradient(op):
    """Each op the fuser knows, inside a group, against the eager op: values and gradients
    (the gradient formulas of _inductor/ops.py against the autograd package's)."""
    from ember._inductor.ops import BINARY, GRADIENTS

    def f(x, y):
        a = x * 0.5 + 1.5  # positive, away from the kinks of abs/relu/sign/floor
        b = y * 0.25 + 1.25
        out = getattr(ember, op)(a, b) if op in BINARY else getattr(ember, op)(a)
        return out * 3.0

    x = ember.rand(40, dtype=ember.float64, requires_grad=True)
    y = ember.rand(40, dtype=ember.float64, requires_grad=True)
    compiled = ember.compile(f, fullgraph=True)
    with ember.no_grad():
        _close(compiled(x, y), f(x, y), 1e-12)
    if op not in GRADIENTS:
        return  # inference only (maximum/minimum): the group is not formed under autograd
    compiled(x, y).sum().backward()
    got = [None if t.grad is None else t.grad.clone() for t in (x, y)]
    x.grad = y.grad = None
    f(x, y).sum().backward()
    for a, t in zip(got, (x, y)):
        assert (a is None) == (t.grad is None)
        if a is not None:
            _close(a, t.grad, 1e-12)
    entries = _dynamo.compiled_state(compiled).entries()
    assert all(e.compiled is not None and e.compiled.groups for e in entries)


def test_float64_and_broadcast_inputs():
    def f(x, bias, scale):
        return ((x + bias) * scale).sigmoid().sum(-1)

    x = ember.randn(5, 7, dtype=ember.float64, requires_grad=True)
    bias = ember.randn(7, dtype=ember.float64, requires_grad=True)
    scale = ember.randn(5, 1, dtype=ember.float64, requires_grad=True)
    compiled = ember.compile(f)
    _close(compiled(x, bias, scale), f(x, bias, scale), 1e-12)
    compiled(x, bias, scale).sum().backward()
    got = [t.grad.clone() for t in (x, bias, scale)]
    for t in (x, bias, scale):
        t.grad = None
    f(x, bias, scale).sum().backward()
    for a, t in zip(got, (x, bias, scale)):
        assert a.shape == t.shape
        _close(a, t.grad, 1e-12)


@pytest.mark.parametrize("rows, cols", [(300, 257), (5, 2100), (40, 1100), (3, 7), (17, 1)])
def test_parallel_backward_kernels(rows, cols):
    """Above the grain the backward kernels split over threads; a bias's gradient is summed in
    tasks of (row chunk, column block): chunks with a remainder (300 rows in 16), fewer rows
    than chunks, a partial last column block (2100 = 1024 + 1024 + 52). The sums do not depend
    on the thread count."""
    def f(x, bias, scale):
        return (new_gelu(x + bias) * scale).sum()

    x = ember.randn(rows, cols, requires_grad=True)
    bias = ember.randn(cols, requires_grad=True)
    scale = ember.randn(rows, 1, requires_grad=True)
    compiled = ember.compile(f)
    by_threads = []
    threads = ember.get_num_threads()
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            for t in (x, bias, scale):
                t.grad = None
            compiled(x, bias, scale).backward()
            by_threads.append([t.grad.clone() for t in (x, bias, scale)])
    finally:
        ember.set_num_threads(threads)
    for a, b in zip(*by_threads):
        assert ember.equal(a, b)
    for t in (x, bias, scale):
        t.grad = None
    f(x, bias, scale).backward()
    for a, t in zip(by_threads[0], (x, bias, scale)):
        _close(a, t.grad)
    assert bias.grad.abs().sum().item() > 0


@pytest.mark.parametrize("rows, cols, want", [
    (512, 512, (16, 32, 512)),  # 16 chunks of 32 whole rows
    (300, 2100, (16, 19, 1024)),  # the last chunk has 15 rows; blocks of 1024 columns
    (5, 7, (5, 1, 7)),  # no more chunks than rows
    (64, 1 << 17, (8, 8, 1024)),  # partial sums capped at 2**20 per row input
    (4, 1 << 21, (1, 4, 1024)),  # wider than the cap: one chunk, the columns split
])
def test_row_tiles(rows, cols, want):
    assert cpp._row_tiles(rows, cols) == want


def test_backward_reads_the_expensive_values_the_forward_saved():
    """A training forward writes its tanh/exp/... values for the backward, which reads them
    instead of recomputing them (the cheap ops, and x ** 3 as products, are recomputed); the
    gradients are eager's, with a bias (summed in the kernel) and with a reduction."""
    def f(x, bias):
        h = x + bias
        return (new_gelu(h) * h.exp().sigmoid()).sum(-1)

    x = ember.randn(64, 33, requires_grad=True)
    bias = ember.randn(33, requires_grad=True)
    compiled = ember.compile(f)
    out = compiled(x, bias)
    _close(out, f(x, bias))
    out.sum().backward()
    got = [t.grad.clone() for t in (x, bias)]
    for t in (x, bias):
        t.grad = None
    f(x, bias).sum().backward()
    for a, t in zip(got, (x, bias)):
        _close(a, t.grad)
    entry = _dynamo.compiled_state(compiled).entries()[0]
    (group,) = entry.compiled.groups
    saved = cpp.saved_members(group)
    assert [group.ops[n][0] for n in saved] == ["tanh", "exp", "sigmoid"]  # (not the x ** 3)
    source = entry.compiled.source
    train = source[source.index("ember_fused_0_train("):source.index("ember_fused_0_backward(")]
    backward = source[source.index("ember_fused_0_backward("):]
    assert "sv2[o * N + j] = " in train
    assert "const T s0 = sv0[o * N + j];" in backward
    assert "fx_ops::tanh" not in backward and "fx_ops::exp" not in backward
    # without autograd the plain forward runs: nothing is saved
    with ember.no_grad():
        _close(compiled(x, bias), f(x, bias))


def test_double_backward_through_a_fused_kernel_is_refused():
    """A fused kernel's gradient is computed by a generated kernel with no graph of its own:
    create_graph=True gets a clear error (torch.compile's AOTAutograd refuses it too) rather
    than a gradient that silently does not require grad."""
    def f(x, b):
        return (x + b).tanh().sum()

    x = ember.randn(8, 5, requires_grad=True)
    b = ember.randn(5, requires_grad=True)
    compiled = ember.compile(f)
    with pytest.raises(RuntimeError, match="does not support double backward"):
        ember.autograd.grad(compiled(x, b), x, create_graph=True)
    (gx,) = ember.autograd.grad(compiled(x, b), x)
    (ex,) = ember.autograd.grad(f(x, b), x)
    _close(gx, ex)


def test_the_profiler_sees_each_fused_kernel():
    """A fused kernel is called from Python (ctypes), not through the core: it is one profiler
    event named as in the compile report, forward and (as its autograd node) backward."""
    from ember.profiler import profile

    def f(x, b):
        return (x * 2 + b).tanh()

    compiled = ember.compile(f)
    x, b = ember.randn(8, 5, requires_grad=True), ember.randn(5, requires_grad=True)
    compiled(x, b).sum().backward()  # compile both signatures outside the profile
    with ember.no_grad():
        compiled(x, b)
    with ember.no_grad(), profile() as prof:
        y = compiled(x, b)
    with profile() as prof_train:
        compiled(x, b).sum().backward()
    names = [e.name for e in prof.events()]
    assert names.count("fused_0") == 1 and "tanh" not in names, names
    train = {a.key: a.count for a in prof_train.key_averages()}
    assert train.get("fused_0") == 1 and train.get("_FusedFunctionBackward") == 1, train
    _close(y, f(x, b).detach())


@pytest.mark.parametrize("dims, keepdim", [((-1,), False), ((1, 2), True), (None, False)])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_fused_reductions_against_numpy(op, dims, keepdim):
    def f(x, y):
        z = (x * y + 1.0).tanh()
        if dims is None:
            return getattr(z, op)()
        return getattr(z, op)(dims, keepdim=keepdim)

    x, y = ember.randn(3, 4, 700), ember.randn(4, 700)
    with ember.no_grad():
        out = ember.compile(f)(x, y)
    z = np.tanh(x.numpy() * y.numpy() + np.float32(1.0)).astype(np.float64)
    npop = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min}[op]
    axis = None if dims is None else tuple(d % 3 for d in dims)
    expected = npop(z, axis=axis, keepdims=keepdim if dims is not None else False)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_large_tensors_use_the_parallel_paths():
    x = ember.randn(300, 1000)
    with ember.no_grad():
        compiled = ember.compile(lambda x: ((x * 2).exp() - 1).sum())
        _close(compiled(x), ((x * 2).exp() - 1).sum())
        compiled2 = ember.compile(lambda x: (x.sin() + x.cos()) * 3)
        _close(compiled2(x), (x.sin() + x.cos()) * 3)


def test_nan_and_inf_behave_as_eager():
    def f(x):
        return (x * 2).exp().sigmoid() + x.sqrt() - x.relu()

    x = ember.tensor([float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 100.0, 1e-3])
    with ember.no_grad():
        _close(ember.compile(f)(x), f(x))


def test_data_dependent_control_flow_falls_back_with_reason():
    def f(x):
        y = x.exp()
        if y.sum() > 10:
            return y * 2
        return y - 1

    compiled = ember.compile(f)
    x = ember.randn(8)
    with pytest.warns(UserWarning, match="runs eagerly: capture failed: data-dependent"):
        _close(compiled(x), f(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning comes once
        _close(compiled(x * 3), f(x * 3))
    state = _dynamo.compiled_state(compiled)
    assert "data-dependent control flow" in state.fallback_reasons[0]
    explained = _dynamo.explain(f)(x)
    assert explained.graph_count == 0 and explained.graph_break_count == 1
    assert "data-dependent" in str(explained)
    with pytest.raises(_dynamo.Unsupported, match="data-dependent"):
        ember.compile(f, fullgraph=True)(x)


def test_shape_questions_have_answers():
    def f(x):
        n = len(x)
        if x.dim() == 2 and x.shape[-1] == 3:
            x = x * n
        first, *rest = x.unbind(0)
        return (first + sum(rest)).exp()

    x = ember.randn(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _close(ember.compile(f, fullgraph=True)(x), f(x))


def test_compiler_controls():
    seen = []

    @ember.compiler.disable
    def clip_by_data(y):
        return y * 0 if y.sum() > 1e9 else y  # branches on data: kept out of the graph

    def f(x):
        seen.append(ember.compiler.is_compiling())
        return clip_by_data(x.exp() + 1).sin() * 2

    x = ember.randn(5)
    compiled = ember.compile(f, fullgraph=True)
    _close(compiled(x), f(x))
    assert seen == [True, False]  # the capture, then the eager reference call
    graph = _dynamo.compiled_state(compiled).entries()[0].graph_module.graph
    assert any(n.op == "call_function" and n.target.__name__ == "clip_by_data"
               for n in graph.nodes)
    assert not ember.compiler.is_compiling()
    ember.compiler.reset()
    assert _dynamo.compiled_state(compiled).entries() == []


def test_item_is_data_dependent():
    compiled = ember.compile(lambda x: x * x.max().item())
    x = ember.randn(4)
    with pytest.warns(UserWarning, match=r"Tensor.item\(\)"):
        _close(compiled(x), x * x.max().item())


def test_recompilations_are_counted_and_printable():
    model = GeluMLP()
    compiled = ember.compile(model)
    with ember.no_grad():
        compiled(ember.randn(4, 32))
        compiled(ember.randn(4, 32))
        state = _dynamo.compiled_state(compiled)
        assert state.recompilations == []
        compiled(ember.randn(6, 32))
        compiled(ember.randn(6, 32, dtype=ember.float64).float())
    assert len(state.recompilations) == 1
    assert "shape changed from (4, 32) to (6, 32)" in state.recompilations[0].reason
    assert _dynamo.counters["recompiles"]["GeluMLP"] == 1
    report = compiled.compile_report
    assert "1 recompilation(s)" in report and "shape changed" in report
    # grad mode and train/eval are guarded too
    compiled(ember.randn(6, 32))
    assert state.recompilations[-1].reason == "grad mode changed from False to True"
    model.eval()
    compiled(ember.randn(6, 32))
    assert len(state.recompilations) == 3
    assert "training flag" in state.recompilations[-1].reason


def test_in_place_ops_and_non_contiguous_inputs():
    def f(x):
        y = x * 2
        z = y.exp()
        y.add_(1)  # z must see y before, the sum after
        w = (z + y).sin()
        return w * w, y

    x = ember.randn(6, 5).t()  # a transposed (non-contiguous) input
    with ember.no_grad():
        got = ember.compile(f)(x)
    for a, b in zip(got, f(x)):
        _close(a, b)


def test_frozen_parameters_recompile_and_hooks_fall_back():
    model = GeluMLP()
    compiled = ember.compile(model)
    x = ember.randn(4, 32)
    compiled(x).sum().backward()
    model.fc1.weight.requires_grad_(False)
    model.zero_grad()
    compiled(x).sum().backward()
    assert model.fc1.weight.grad is None and model.fc1.bias.grad is not None
    model.fc1.weight.requires_grad_(True)
    model.zero_grad()
    compiled(x).sum().backward()
    g = model.fc1.weight.grad.clone()
    model.zero_grad()
    model(x).sum().backward()
    _close(g, model.fc1.weight.grad)
    state = _dynamo.compiled_state(compiled)
    assert state.recompilations[0].reason == "a parameter's requires_grad changed"

    seen = []
    model.fc2.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    hooked = ember.compile(model)
    with pytest.warns(UserWarning, match="module hooks are not captured \\('fc2' has hooks"):
        hooked(x)
    assert seen == [(4, 32)]


def test_kernel_cache_on_disk(tmp_path):
    def f(x):
        return (x.exp() + 1).log()

    x = ember.randn(10)
    before = dict(cpp.counters)
    with ember.no_grad():
        ember.compile(f)(x)
    assert cpp.counters["compiled"] == before["compiled"] + 1
    sources = list((tmp_path / "cache").glob("*.cpp"))
    assert len(sources) == 1 and "ember::fx_ops::exp" in sources[0].read_text()
    cpp._loaded.clear()  # a new process: the library comes from the disk cache
    with ember.no_grad():
        _close(ember.compile(f)(x), f(x))
    assert cpp.counters["compiled"] == before["compiled"] + 1
    assert cpp.counters["disk_hits"] == before["disk_hits"] + 1
    with ember.no_grad():
        ember.compile(f)(ember.randn(11))  # another shape: another source
    assert cpp.counters["compiled"] == before["compiled"] + 2


def test_generated_code_can_be_read():
    model = GeluMLP()
    compiled = ember.compile(model)
    with ember.no_grad():
        compiled(ember.randn(4, 32))
    entry = _dynamo.compiled_state(compiled).entries()[0]
    assert "fused_0(" in entry.graph_module.code
    assert "ember::fx_ops::tanh<T>" in entry.compiled.source
    assert "#pragma omp simd" in entry.compiled.source
    assert "fused_0: " in compiled.compile_report


def test_backends_and_arguments():
    def f(x):
        return (x + 1).relu() * 2

    x = ember.randn(5)
    _close(ember.compile(f, backend="eager")(x), f(x))
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm.forward

    _close(ember.compile(f, backend=backend)(x), f(x))
    assert seen[0][1] == [(5,)] and "relu" in seen[0][0].code
    with pytest.raises(_dynamo.InvalidBackend, match="Invalid backend: 'nope'"):
        ember.compile(f, backend="nope")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(f, mode="max-autotune", options={"cpp.threads": 1})
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ember.compile(f, mode="fastest")
    with pytest.raises(RuntimeError, match="Unexpected optimization option"):
        ember.compile(f, options={"bogus": 1})
    _close(ember.compile(f, options={"cpp.threads": 1})(x), f(x))
    assert "inductor" in _dynamo.list_backends()
    assert ember.compile(f, disable=True) is f

    @ember.compile(fullgraph=True)
    def g(x):
        return x.exp() * 2

    _close(g(x), x.exp() * 2)


def test_without_a_compiler_runs_eagerly(monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    monkeypatch.setattr(cpp, "_warned_no_compiler", False)
    cpp._compiler_info.pop("/nonexistent/c++", None)
    x = ember.randn(6)
    with pytest.warns(UserWarning, match="no C\\+\\+ compiler"):
        _close(ember.compile(lambda x: x.exp() + 1)(x), x.exp() + 1)


def test_training_steps_match_eager():
    ember.manual_seed(1)
    a = GeluMLP()
    b = GeluMLP()
    b.load_state_dict(a.state_dict())
    ca = ember.compile(a)
    opt_a = ember.optim.SGD(a.parameters(), lr=0.1)
    opt_b = ember.optim.SGD(b.parameters(), lr=0.1)
    for _ in range(3):
        x = ember.randn(8, 32)
        for model, opt in ((ca, opt_a), (b, opt_b)):
            opt.zero_grad()
            (model(x) ** 2).mean().backward()
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        _close(pa, pb, 1e-5)


def test_train_mode_dropout_runs_the_eager_op():
    model = Norms()
    model.train()
    compiled = ember.compile(model)
    x = ember.randn(4, 48)
    ember.manual_seed(3)
    got = compiled(x)
    ember.manual_seed(3)
    _close(got, model(x))


def test_capture_runs_in_place_updates_once():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", ember.zeros(1))
            self.bn = nn.BatchNorm1d(3)

        def forward(self, x):
            self.calls.add_(1)
            return self.bn(x).exp() * 2 + self.calls

    model = Counter()
    compiled = ember.compile(model)
    x = ember.randn(4, 3)
    with ember.no_grad():
        _close(compiled(x), model.bn(x).exp() * 2 + 1)
        assert model.calls.item() == 1.0
        assert model.bn.num_batches_tracked.item() == 2  # one call each
        compiled(x)
    assert model.calls.item() == 2.0
    assert model.bn.num_batches_tracked.item() == 3


def _cupy_group():
    from ember._dynamo import _CaptureTracer
    from ember._inductor.fusion import find_groups

    def f(x, b):
        return ((x + b) * 0.5).tanh().exp()

    x, b = ember.randn(4, 6), ember.randn(6)
    tracer = _CaptureTracer({"x": x, "b": b}, True)
    graph = tracer.trace(f)
    (group,) = find_groups(graph, False)
    return group, x, b, f


def _run_cupy_body(src, columns, tmp_path):
    """Runs the body of a CuPy ElementwiseKernel (its ``operation`` and ``preamble``), compiled
    here as C++ (no GPU needed), once per row of ``columns`` (one float32 array per input
    parameter); returns one array per output parameter."""
    names = [p.split()[-1] for p in src.in_params.split(", ")]
    outs = [p.split()[-1] for p in src.out_params.split(", ")]
    harness = tmp_path / f"{src.name}.cpp"
    harness.write_text(
        "#include <cmath>\n#include <cstdio>\n#include <algorithm>\nusing namespace std;\n"
        "#define __device__\ntemplate <typename T> T rsqrt(T x) { return T(1) / sqrt(x); }\n"
        + src.preamble + "\nint main() { using T = float; float "
        + ", ".join(names + outs) + "; while (scanf(\"" + " ".join(["%f"] * len(names))
        + "\", " + ", ".join("&" + n for n in names) + f") == {len(names)}) {{ "
        + src.operation + " printf(\"" + " ".join(["%.9g"] * len(outs)) + "\\n\", "
        + ", ".join(outs) + "); } }\n")
    exe = tmp_path / src.name
    subprocess.run([cpp.compiler()[0], "-O1", str(harness), "-o", str(exe)], check=True)
    flat = [np.asarray(c, dtype=np.float32).ravel().tolist() for c in columns]
    text = "\n".join(" ".join(repr(v) for v in row) for row in zip(*flat))
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    values = np.array([[float(v) for v in line.split()] for line in out.stdout.splitlines()],
                      dtype=np.float32)
    return [values[:, m] for m in range(len(outs))]


def test_cupy_elementwise_source_computes_the_same_values(tmp_path):
    """The CuPy kernel's body, compiled here as C++ (no GPU needed), gives eager's values."""
    from ember._inductor.cupy import cupy_source

    group, x, b, f = _cupy_group()
    src = cupy_source(group, "k")
    assert src.kind == "ElementwiseKernel"
    assert src.in_params == "T in0, T in1" and src.out_params == "T out0"
    assert "cupy.ElementwiseKernel('T in0, T in1', 'T out0'" in src.python()
    (got,) = _run_cupy_body(src, np.broadcast_arrays(x.numpy(), b.numpy()), tmp_path)
    np.testing.assert_allclose(got.reshape(4, 6), f(x, b).numpy(), rtol=2e-6)


@pytest.mark.parametrize("reduce", [None, "sum", "mean"])
def test_cupy_backward_source_gives_autograds_gradients(tmp_path, reduce):
    """The CuPy backward kernel's body (run as C++ here) against autograd's gradients: every
    op with a gradient in one group, then a sum or mean over the last dim (its gradient
    broadcast from the keepdim shape)."""
    from ember._dynamo import _CaptureTracer
    from ember._inductor.cupy import cupy_backward_source
    from ember._inductor.fusion import find_groups

    def f(x, b):
        y = ((x * b + 1.5).sin() * x).cos() + b
        y = ((y / (y * y + 1)).tanh().exp() * x * 0.5).sigmoid() * b
        y = (y.abs() + 1.0).sqrt().log() ** 2.0 - x
        y = (y.square() + 2).rsqrt() * b
        y = (y.neg().erf() * x + 1.0).reciprocal() * 0.1
        y = (y.expm1() * y).log1p() + (y + x).relu()
        y = y - (y * 3).floor()
        return y if reduce is None else getattr(y, reduce)(-1)

    x = ember.randn(4, 6, requires_grad=True)
    b = ember.randn(6, requires_grad=True)
    graph = _CaptureTracer({"x": x, "b": b}, True).trace(f)
    (group,) = find_groups(graph, True)
    assert [n.name for n in group.inputs] == ["x", "b"]
    src = cupy_backward_source(group, f"bw_{reduce}", [True, True])
    assert src.out_params == "T gin0, T gin1"
    y = f(x, b)
    gout = ember.randn(*y.shape)
    y.backward(gout)
    g = gout.numpy() if reduce is None else gout.numpy()[:, None]
    columns = np.broadcast_arrays(x.detach().numpy(), b.detach().numpy(), g)
    gx, gb = _run_cupy_body(src, columns, tmp_path)
    np.testing.assert_allclose(gx.reshape(4, 6), x.grad.numpy(), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(gb.reshape(4, 6).sum(0), b.grad.numpy(), rtol=2e-5, atol=2e-5)


def test_cupy_reduction_source():
    from ember._dynamo import _CaptureTracer
    from ember._inductor.cupy import cupy_source
    from ember._inductor.fusion import find_groups

    def f(x):
        return (x * 2).exp().mean(-1)

    graph = _CaptureTracer({"x": ember.randn(3, 5)}, True).trace(f)
    (group,) = find_groups(graph, False)
    src = cupy_source(group, "r")
    assert src.kind == "ReductionKernel"
    assert src.reduce_expr == "a + b" and src.identity == "0"
    assert "_in_ind.size() / _out_ind.size()" in src.post_map_expr
    assert "r_map(in0)" == src.operation and "exp(v0)" in src.preamble
    if shutil.which("nvcc") is None:
        return  # no CUDA here: the source is checked, not run


PROGRAMS = Path(__file__).resolve().parents[3] / "examples" / "programs"


def _program(name):
    spec = importlib.util.spec_from_file_location(f"_program_{name}", PROGRAMS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (PROGRAMS / "char_gpt.py").is_file(),
                    reason="runs from a checkout of the repository only")
@pytest.mark.parametrize("name", ["char_gpt", "vae", "resnet"])
def test_example_programs_compile(name):
    """The PyTorch-style example programs' models, compiled as written (embeddings, weight
    tying, random sampling, batch norm, residuals, tuples out)."""
    mod = _program(name)
    if name == "char_gpt":
        model = mod.GPT(20, 16)
        args = (ember.randint(0, 20, (4, 16)), ember.randint(0, 20, (4, 16)))
    elif name == "vae":
        model, args = mod.VAE(), (ember.rand(8, 784),)
    else:
        model, args = mod.resnet18(10, 8), (ember.randn(2, 3, 16, 16),)
    model.eval()
    compiled = ember.compile(model)

    def run(m):
        ember.manual_seed(1)
        out = m(*args)
        outs = out if isinstance(out, tuple) else (out,)
        model.zero_grad()
        sum((o * o).mean() for o in outs).backward()
        return outs, [p.grad.clone() for p in model.parameters() if p.grad is not None]

    outs_c, grads_c = run(compiled)
    outs_e, grads_e = run(model)
    assert not _dynamo.compiled_state(compiled).fallback_reasons
    assert _dynamo.compiled_state(compiled).entries()[0].compiled.groups
    for a, b in zip(outs_c + tuple(grads_c), outs_e + tuple(grads_e)):
        _close(a, b)


# ---- batch norm in eval mode as a per-channel affine map, fused with the ReLU after it ----

def _bn_model(dtype):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8, affine=False), nn.Tanh(),
                      nn.Flatten(), nn.Linear(8 * 6 * 6, 10), nn.BatchNorm1d(10)).to(dtype)
    rng = np.random.default_rng(1)
    for b in m:
        if isinstance(b, (nn.BatchNorm1d, nn.BatchNorm2d)):
            b.running_mean.copy_(ember.tensor(rng.uniform(-1, 1, b.num_features), dtype=dtype))
            b.running_var.copy_(ember.tensor(rng.uniform(0.5, 2, b.num_features), dtype=dtype))
            if b.affine:
                with ember.no_grad():
                    b.weight.copy_(ember.tensor(rng.uniform(0.5, 1.5, b.num_features), dtype=dtype))
                    b.bias.copy_(ember.tensor(rng.uniform(-1, 1, b.num_features), dtype=dtype))
    return m.eval()


@pytest.mark.parametrize("dtype,rtol", [(ember.float32, RTOL), (ember.float64, 1e-12)])
def test_eval_batch_norm_fuses_with_relu(dtype, rtol):
    m = _bn_model(dtype)
    compiled = ember.compile(m)
    x = ember.randn(2, 3, 6, 6, dtype=dtype)
    with ember.no_grad():
        _close(compiled(x), m(x), rtol)
    entry = _dynamo.compiled_state(compiled).entries()[0]
    modules = [n.target for n in entry.graph_module.graph.nodes if n.op == "call_module"]
    assert not any(isinstance(m.get_submodule(t), nn.BatchNorm2d) for t in modules)
    groups = [g.describe() for g in entry.compiled.groups]
    assert any("relu" in g and "mul" in g and "add" in g for g in groups), groups
    # the coefficients are read from the buffers at each call: new statistics are followed
    m[1].running_var.mul_(3.0)
    with ember.no_grad():
        _close(compiled(x), m(x), rtol)


def test_batch_norm_not_rewritten_with_autograd_or_in_training():
    m = _bn_model(ember.float32)
    compiled = ember.compile(m)
    x = ember.randn(2, 3, 6, 6, requires_grad=True)
    out = compiled(x)  # grad mode on: the module stays, gradients as eager
    _close(out, m(x))
    (g,) = ember.autograd.grad(out.sum(), x)
    (g_eager,) = ember.autograd.grad(m(x).sum(), x)
    _close(g, g_eager)
    entry = _dynamo.compiled_state(compiled).entries()[-1]
    bns = [n for n in entry.graph_module.graph.nodes if n.op == "call_module"
           and isinstance(m.get_submodule(n.target), (nn.BatchNorm1d, nn.BatchNorm2d))]
    assert len(bns) == 3
    m.train()  # batch statistics: not an affine map of the input
    with ember.no_grad():
        _close(compiled(x), m(x))


def test_a_long_fused_kernel_runs_without_the_gil():
    """A kernel above the grain is called with the GIL released (long_work): a pure-Python
    thread counts on while back-to-back calls run; with long_work=False (the control) it gets
    almost nothing. Calls from C (map over the core's builtin): no bytecode between them."""
    import collections
    import itertools
    import threading
    import time

    from ember import _inductor

    def f(x):
        return (x * 1.5).tanh().exp()

    x = ember.randn(1 << 20)
    compiled = ember.compile(f)
    _close(compiled(x), f(x))
    (group_node,) = [n for n in _dynamo.compiled_state(compiled).entries()[0].compiled
                     .graph_module.graph.nodes if isinstance(n.target, _inductor.FusedKernel)]
    kernel = group_node.target
    assert kernel.long_work
    count, go, stop = [0], threading.Event(), [False]

    def counting():
        while not stop[0]:
            go.wait()
            while go.is_set() and not stop[0]:
                count[0] += 1

    thread = threading.Thread(target=counting, daemon=True)
    thread.start()

    def share(long_work):
        args = (kernel._forward, [x], [x.shape], x.dtype, 1, long_work)
        work = map(ember._C._run_kernel, *(itertools.repeat(a, 20) for a in args))
        go.set()
        time.sleep(0.005)
        c0, t0 = count[0], time.perf_counter()
        collections.deque(work, maxlen=0)
        rate = (count[0] - c0) / (time.perf_counter() - t0)
        go.clear()
        time.sleep(0.005)
        return rate

    threads = ember.get_num_threads()
    try:
        released, held = share(True), share(False)
    finally:
        stop[0] = True
        go.set()
        thread.join(timeout=10)
        ember.set_num_threads(threads)
    assert released > 3 * held, (released, held)
    (out,) = ember._C._run_kernel(kernel._forward, [x], [x.shape], x.dtype, 1, True)
    _close(out, f(x))


def test_guard_signatures_come_from_the_core():
    """The guards read on every call: a tensor's signature and the parameters' requires_grad
    flags, built in the core (the same values as the attributes give)."""
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    assert _dynamo._signature(x) == ("tensor", (2, 3), ember.float64, False, True)
    assert _dynamo._signature(x[0].detach()) == ("tensor", (3,), ember.float64, False, False)
    assert _dynamo._signature(3) == ("value", int, 3)
    layer = nn.Linear(3, 2)
    layer.bias.requires_grad_(False)
    assert ember._C._requires_grad_flags(list(layer.parameters())) == (True, False)
    assert ember._C._requires_grad_flags([]) == ()
