"""The names of torch.autograd that ember.autograd adds for programs written against torch:
graph.register_multi_grad_hook, get_gradient_edge, allow_mutation_on_saved_tensors, the
grad_mode module, the multithreading switch, Function's vmap statics."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd as autograd
from ember.autograd import graph

# What programs import from torch.autograd that ember had not (the rest of dir(torch.autograd)
# missing here is typing re-exports, profiler internals and TorchScript helpers).
NAMES = ["set_grad_enabled", "inference_mode", "no_grad", "enable_grad", "Function",
         "NestedIOFunction", "is_multithreading_enabled", "set_multithreading_enabled",
         "is_view_replay_enabled", "grad_mode", "function", "graph", "functional", "forward_ad",
         "variable", "Variable", "is_tensor_like", "kineto_available"]
GRAPH_NAMES = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
               "register_multi_grad_hook", "get_gradient_edge", "GradientEdge",
               "allow_mutation_on_saved_tensors", "Node", "increment_version", "Variable",
               "RemovableHandle"]


def test_names_exist():
    assert [n for n in NAMES if not hasattr(autograd, n)] == []
    assert [n for n in GRAPH_NAMES if not hasattr(graph, n)] == []
    assert autograd.Function.generate_vmap_rule is False
    assert autograd.is_tensor_like(ember.ones(1)) and not autograd.is_tensor_like([1.0])
    assert isinstance(ember.ones(1, requires_grad=True).register_hook(lambda g: g),
                      graph.RemovableHandle)


def test_names_exist_in_torch_too():
    torch = pytest.importorskip("torch")
    assert [n for n in NAMES if not hasattr(torch.autograd, n)] == []
    assert [n for n in GRAPH_NAMES if not hasattr(torch.autograd.graph, n)] == []


def test_multi_grad_hook_all_and_any():
    x = ember.ones(3, requires_grad=True)
    y = ember.ones(3, requires_grad=True)
    calls = []
    handle = graph.register_multi_grad_hook((x, y), calls.append)
    (x * 2).sum().backward()
    assert len(calls) == 1 and calls[0][1] is None
    np.testing.assert_array_equal(calls[0][0].numpy(), [2.0, 2.0, 2.0])
    (x * y * 3).sum().backward()
    assert len(calls) == 2
    np.testing.assert_array_equal(calls[1][1].numpy(), [3.0, 3.0, 3.0])
    handle.remove()
    (x * y).sum().backward()
    assert len(calls) == 2
    first = []
    graph.register_multi_grad_hook((x, y), first.append, mode="any")
    (x * y).sum().backward()
    (x * y).sum().backward()
    assert len(first) == 2  # once per backward


def test_gradient_edge_and_multithreading_flag():
    x = ember.ones(2, requires_grad=True)
    y = x * 3
    edge = graph.get_gradient_edge(y)
    assert edge.node is y.grad_fn and edge.output_nr == 0
    with pytest.raises(RuntimeError, match="does not require gradients"):
        graph.get_gradient_edge(ember.ones(2))
    assert autograd.is_multithreading_enabled()
    with autograd.set_multithreading_enabled(False):
        assert not autograd.is_multithreading_enabled()
    assert autograd.is_multithreading_enabled()


def test_allow_mutation_on_saved_tensors_against_hand_gradient():
    a = ember.tensor([1.0, 2.0]).requires_grad_()
    with graph.allow_mutation_on_saved_tensors():
        b = a * 1
        c = b * b  # saves b
        b.mul_(10)  # would make backward refuse b without the context
        c.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])  # d(a^2)/da at the forward's a
    a.grad = None
    b = a * 1
    c = b * b
    b.mul_(10)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()
