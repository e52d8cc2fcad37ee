"""ember.fx: symbolic tracing, the graph's API and the generated code, checked against NumPy
and, where torch is installed, against torch.fx on the same program."""

import copy
import operator

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import fx


def _np(t):
    return t.detach().numpy()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.seq = nn.Sequential(nn.ReLU(), nn.Linear(3, 2))

    def forward(self, x):
        y = self.lin(x) * 2 + 1
        y = ember.relu(y) + F.gelu(y).sum(-1, keepdim=True)
        return self.seq(y.tanh()) + self.lin.weight.sum()


def test_trace_records_each_kind_of_node():
    m = Net()
    gm = fx.symbolic_trace(m)
    ops = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
           for n in gm.graph.nodes]
    assert ops == [
        ("placeholder", "x"), ("call_module", "lin"), ("call_function", "mul"),
        ("call_function", "add"), ("call_function", "relu"), ("call_function", "gelu"),
        ("call_method", "sum"), ("call_function", "add"), ("call_method", "tanh"),
        ("call_module", "seq.0"), ("call_module", "seq.1"), ("get_attr", "lin.weight"),
        ("call_method", "sum"), ("call_function", "add"), ("output", "output")]
    x = ember.randn(5, 4)
    np.testing.assert_array_equal(_np(gm(x)), _np(m(x)))
    # the parameters are the module's own, not copies
    assert gm.lin.weight is m.lin.weight


def test_generated_code_is_readable_python():
    gm = fx.symbolic_trace(Net())
    code = gm.code
    assert "def forward(self, x):" in code
    assert "lin = self.lin(x)" in code
    assert "mul = lin * 2" in code
    assert "relu = ember.relu(add)" in code
    assert "ember.nn.functional.gelu(add)" in code
    assert "sum_1 = gelu.sum(-1, keepdim = True)" in code
    assert 'getattr(self.seq, "0")(tanh)' in code
    assert "lin_weight = self.lin.weight" in code
    assert code.rstrip().endswith("return add_2")
    assert "graph():" in str(gm.graph)
    assert "%relu : [num_users=1] = call_function[target=ember.relu](args = (%add,)" \
        in str(gm.graph)


def test_print_tabular(capsys):
    gm = fx.symbolic_trace(Net())
    gm.graph.print_tabular()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert len(out) == 2 + len(gm.graph.nodes)
    assert out[2].split()[:3] == ["placeholder", "x", "x"]


def test_replace_pass_as_in_torch_fx_docs():
    def f(x, y):
        return ember.relu(x + y) * 3

    gm = fx.symbolic_trace(f)
    graph = gm.graph
    for node in graph.nodes:
        if node.op == "call_function" and node.target is ember.relu:
            with graph.inserting_after(node):
                new = graph.call_function(ember.sigmoid, node.args, node.kwargs)
            node.replace_all_uses_with(new)
            graph.erase_node(node)
    graph.lint()
    gm.recompile()
    assert "ember.sigmoid" in gm.code and "relu" not in gm.code
    x, y = ember.randn(6), ember.randn(6)
    expected = 3 / (1 + np.exp(-(_np(x) + _np(y))))
    np.testing.assert_allclose(_np(gm(x, y)), expected, rtol=1e-6)


def test_inserting_before_and_update_arg():
    def f(x):
        return x.exp()

    gm = fx.symbolic_trace(f)
    exp = next(n for n in gm.graph.nodes if n.target == "exp")
    with gm.graph.inserting_before(exp):
        neg = gm.graph.call_function(operator.neg, (exp.args[0],))
    exp.update_arg(0, neg)
    gm.recompile()
    x = ember.randn(5)
    np.testing.assert_allclose(_np(gm(x)), np.exp(-_np(x)), rtol=1e-6)
    assert [n.name for n in gm.graph.nodes] == ["x", "neg", "exp", "output"]


def test_erase_node_with_users_raises():
    gm = fx.symbolic_trace(lambda x: x.exp().sin())
    exp = next(n for n in gm.graph.nodes if n.target == "exp")
    with pytest.raises(RuntimeError, match="still had 1 users"):
        gm.graph.erase_node(exp)


def test_eliminate_dead_code_keeps_in_place_ops():
    def f(x):
        unused = x.exp()  # noqa: F841
        x.add_(1)
        return x * 2

    gm = fx.symbolic_trace(f)
    assert gm.graph.eliminate_dead_code()
    targets = [n.target for n in gm.graph.nodes]
    assert "exp" not in targets and "add_" in targets
    gm.recompile()
    x = ember.zeros(3)
    np.testing.assert_array_equal(_np(gm(x)), [2.0, 2.0, 2.0])


def test_lint_finds_a_use_before_definition():
    gm = fx.symbolic_trace(lambda x: x.exp().sin())
    nodes = list(gm.graph.nodes)
    nodes[1].prepend(nodes[2])  # sin before exp, which it reads
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        gm.graph.lint()


def test_lint_finds_a_missing_attribute():
    gm = fx.symbolic_trace(Net())
    with gm.graph.inserting_before(None):
        gm.graph.get_attr("nope")
    with pytest.raises(RuntimeError, match="nonexistent attribute"):
        gm.graph.lint()


def test_control_flow_on_a_proxy_is_a_trace_error():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fx.TraceError, match="control flow"):
        fx.symbolic_trace(f)


def test_tuple_unpacking_records_getitems():
    def f(x):
        a, b, c = x.split(2, dim=1)
        return a * b + c

    gm = fx.symbolic_trace(f)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"][:3] == \
        [operator.getitem] * 3
    x = ember.randn(3, 6)
    np.testing.assert_allclose(_np(gm(x)), _np(f(x)), rtol=1e-6)

    def g(x):
        return [t * 2 for t in x]  # a loop over a proxy: its length is unknown

    with pytest.raises(fx.TraceError, match="cannot be iterated"):
        fx.symbolic_trace(g)


def test_concrete_args_specialise():
    def f(x, flag):
        return x * 2 if flag else x

    gm = fx.symbolic_trace(f, concrete_args={"flag": True})
    x = ember.randn(3)
    np.testing.assert_array_equal(_np(gm(x)), _np(x) * 2)


def _my_len_function(x):
    return x.shape[0]


fx.wrap("_my_len_function")


def test_wrap_records_a_call():
    def f(x):
        return x + _my_len_function(x)

    gm = fx.symbolic_trace(f)
    assert any(n.op == "call_function" and n.target is _my_len_function
               for n in gm.graph.nodes)
    x = ember.zeros(4)
    np.testing.assert_array_equal(_np(gm(x)), [4.0] * 4)


def test_autowrapped_math_and_tensor_constants():
    import math

    c = ember.tensor([1.0, 2.0])

    def f(x):
        return x * math.sqrt(4.0) + c

    gm = fx.symbolic_trace(f)
    assert any(n.op == "get_attr" and n.target.startswith("_tensor_constant")
               for n in gm.graph.nodes)
    np.testing.assert_array_equal(_np(gm(ember.ones(2))), [3.0, 4.0])


def test_interpreter_and_transformer():
    def f(x, y):
        return (x + y).exp()

    gm = fx.symbolic_trace(f)
    x, y = ember.randn(4), ember.randn(4)
    np.testing.assert_array_equal(_np(fx.Interpreter(gm).run(x, y)), _np(gm(x, y)))

    class AddToMul(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is operator.add:
                target = operator.mul
            return super().call_function(target, args, kwargs)

    new = AddToMul(gm).transform()
    np.testing.assert_allclose(_np(new(x, y)), np.exp(_np(x) * _np(y)), rtol=1e-6)

    class Counting(fx.Interpreter):
        calls = 0

        def call_method(self, target, args, kwargs):
            Counting.calls += 1
            return super().call_method(target, args, kwargs)

    Counting(gm).run(x, y)
    assert Counting.calls == 1


def test_graph_module_from_dict_and_copy():
    graph = fx.Graph()
    x = graph.placeholder("x")
    w = graph.get_attr("w")
    out = graph.call_function(operator.mul, (x, w))
    graph.output(out)
    gm = fx.GraphModule({"w": ember.tensor([2.0, 3.0])}, graph)
    np.testing.assert_array_equal(_np(gm(ember.ones(2))), [2.0, 3.0])
    gm2 = copy.deepcopy(gm)
    assert gm2.code == gm.code
    np.testing.assert_array_equal(_np(gm2(ember.ones(2))), [2.0, 3.0])
    # the copy's graph is its own: changing it leaves the original's code alone
    (mul,) = [n for n in gm2.graph.nodes if n.target is operator.mul]
    mul.target = operator.add
    gm2.recompile()
    np.testing.assert_array_equal(_np(gm2(ember.ones(2))), [3.0, 4.0])
    np.testing.assert_array_equal(_np(gm(ember.ones(2))), [2.0, 3.0])


def test_leaf_module_override():
    class Tracer(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return False  # trace into every module

    graph = Tracer().trace(Net())
    targets = [n.target for n in graph.nodes if n.op == "call_module"]
    assert targets == []
    assert any(n.op == "get_attr" and n.target == "seq.1.weight" for n in graph.nodes)


def test_node_users_and_inputs_stay_consistent():
    gm = fx.symbolic_trace(lambda x: x.exp() + x.sin())
    x = next(iter(gm.graph.nodes))
    assert [u.target for u in x.users] == ["exp", "sin"]
    add = [n for n in gm.graph.nodes if n.target is operator.add][0]
    assert [n.target for n in add.all_input_nodes] == ["exp", "sin"]
    sin = add.args[1]
    add.replace_input_with(sin, x)
    assert add not in sin.users and add in x.users


def _parity_model(lib, nn, F):
    class Sub(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return F.relu(self.lin(x))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Sub()
            self.layers = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
            self.scale = nn.Parameter(lib.ones(4))

        def forward(self, x, y):
            n = x.shape[0]
            z = x.view(n, -1) + 2 * y
            z = self.sub(z)[:, :2]
            z = lib.cat([z, z], dim=1) * self.scale
            b = F.gelu(self.layers(z.softmax(dim=-1)))
            return b.sum(dim=1, keepdim=True) + self.sub.lin.weight.sum(), -b

    return M()


def test_same_graph_and_code_as_torch_fx():
    torch = pytest.importorskip("torch")
    import torch.fx as tfx

    t = tfx.symbolic_trace(_parity_model(torch, torch.nn, torch.nn.functional))
    e = fx.symbolic_trace(_parity_model(ember, nn, F))

    def summary(gm):
        return [(n.op, n.name, len(n.users), n.target if isinstance(n.target, str)
                 else n.target.__name__) for n in gm.graph.nodes]

    assert summary(t) == summary(e)
    # the generated code line by line, up to the library's name and torch's own spelling of
    # F.relu/F.gelu calls (torch.nn.functional.relu(x, inplace = False), torch._C._nn.gelu)
    tlines = [ln.strip() for ln in t.code.splitlines() if ln.strip()]
    elines = [ln.strip() for ln in e.code.splitlines() if ln.strip()]
    assert len(tlines) == len(elines)
    for a, b in zip(tlines, elines):
        a = a.replace("torch._C._nn.", "ember.nn.functional.").replace("torch.", "ember.")
        a = a.replace(", inplace = False", "")
        assert a == b
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    for a, b in zip(t(x, y), e(ember.tensor(x.numpy()), ember.tensor(y.numpy()))):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_shape_prop_pass():
    from ember.fx.passes.shape_prop import ShapeProp

    gm = fx.symbolic_trace(Net())
    ShapeProp(gm).propagate(ember.randn(5, 4))
    metas = {n.name: n.meta["tensor_meta"] for n in gm.graph.nodes if "tensor_meta" in n.meta}
    assert tuple(metas["lin"].shape) == (5, 3)
    assert tuple(metas["sum_1"].shape) == (5, 1)
    assert tuple(metas["add_2"].shape) == (5, 2)
    assert metas["lin"].dtype == ember.float32 and metas["lin"].stride == (3, 1)


def test_other_threads_are_not_traced():
    import threading

    started, release = threading.Event(), threading.Event()

    def f(x):
        started.set()
        release.wait(10)
        return x + 1

    results = {}
    thread = threading.Thread(target=lambda: results.setdefault("gm", fx.symbolic_trace(f)))
    thread.start()
    assert started.wait(10)
    other = nn.Linear(3, 3)  # used here while the other thread traces with the patches on
    z = ember.relu(other(ember.randn(2, 3)))
    release.set()
    thread.join()
    assert isinstance(z, ember.Tensor) and tuple(z.shape) == (2, 3)
    assert [n.op for n in results["gm"].graph.nodes] == ["placeholder", "call_function",
                                                         "output"]
    assert not hasattr(ember.relu, "__fx_original__")  # the patches are gone


def test_replace_pattern_as_in_torch_fx_docs():
    from ember.fx import subgraph_rewriter

    class M(nn.Module):
        def forward(self, x, w1, w2):
            m1 = ember.cat([w1, w2]).sum()
            m2 = ember.cat([w1, w2]).sum()
            return x + ember.max(m1) + ember.max(m2)

    def pattern(w1, w2):
        return ember.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return ember.stack([w1, w2])

    gm = fx.symbolic_trace(M())
    matches = subgraph_rewriter.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    gm.graph.lint()
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ember.cat not in targets and targets.count(ember.stack) == 2
    x, w1, w2 = ember.randn(2, 3), ember.randn(2, 3), ember.randn(2, 3)
    expected = _np(x) + 2 * np.stack([_np(w1), _np(w2)]).max()
    np.testing.assert_allclose(_np(gm(x, w1, w2)), expected, rtol=1e-6)


def test_replace_pattern_leaves_shared_values_alone():
    def f(x):
        y = x.exp()
        return y.sin() + y  # exp's value is read outside the pattern exp -> sin

    def pattern(a):
        return a.exp().sin()

    def replacement(a):
        return a.cos()

    gm = fx.symbolic_trace(f)
    assert fx.replace_pattern(gm, pattern, replacement) == []
    gm2 = fx.symbolic_trace(lambda x: x.exp().sin() * 2)
    assert len(fx.replace_pattern(gm2, pattern, replacement)) == 1
    x = ember.randn(4)
    np.testing.assert_allclose(_np(gm2(x)), np.cos(_np(x)) * 2, rtol=1e-6)
