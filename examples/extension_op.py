"""A fused op written in C++, with its gradient, used in a model: ``silu_mul(a, b) = silu(a) * b``,
the gate of a SwiGLU feed-forward layer.

    python3 examples/extension_op.py            # checks, a speed comparison, 200 training steps
    python3 examples/extension_op.py --quick    # checks and 20 steps (for CI)

Composed from ember ops, ``F.silu(a) * b`` passes over memory three times and keeps temporaries;
the C++ kernel below reads a and b once and writes once, on ember's thread pool. The first run
compiles it (a few seconds); later runs load the cached build. docs/extensions.md is the guide.
"""

from __future__ import annotations

import argparse
import time

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.cpp_extension import load_inline

CPP = r"""
#include <cmath>

static void check_same(const ember::Tensor& a, const ember::Tensor& b, const char* op) {
  EMBER_CHECK(a.sizes() == b.sizes() && a.dtype() == b.dtype(), op, ": expected tensors of "
              "one shape and dtype, got ", a.sizes(), " ", a.dtype(), " and ", b.sizes(), " ",
              b.dtype());
}

ember::Tensor silu_mul(ember::Tensor a, ember::Tensor b) {
  check_same(a, b, "silu_mul");
  a = a.contiguous(), b = b.contiguous();
  ember::Tensor out = ember::empty_like(a);
  EMBER_DISPATCH_FLOATING_TYPES(a.dtype(), "silu_mul", [&] {
    const scalar_t *x = a.data_ptr<scalar_t>(), *y = b.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    ember::parallel_for(0, out.numel(), 16384, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) o[i] = x[i] / (1 + std::exp(-x[i])) * y[i];
    });
  });
  return out;
}

// d/da = g * b * s * (1 + a * (1 - s)) with s = sigmoid(a);  d/db = g * a * s
std::vector<ember::Tensor> silu_mul_backward(ember::Tensor g, ember::Tensor a, ember::Tensor b) {
  check_same(a, b, "silu_mul_backward"), check_same(g, a, "silu_mul_backward");
  g = g.contiguous(), a = a.contiguous(), b = b.contiguous();
  ember::Tensor ga = ember::empty_like(a), gb = ember::empty_like(b);
  EMBER_DISPATCH_FLOATING_TYPES(a.dtype(), "silu_mul_backward", [&] {
    const scalar_t *dy = g.data_ptr<scalar_t>(), *x = a.data_ptr<scalar_t>(),
                   *y = b.data_ptr<scalar_t>();
    scalar_t *dx = ga.data_ptr<scalar_t>(), *dz = gb.data_ptr<scalar_t>();
    ember::parallel_for(0, g.numel(), 16384, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const scalar_t s = 1 / (1 + std::exp(-x[i]));
        dx[i] = dy[i] * y[i] * s * (1 + x[i] * (1 - s));
        dz[i] = dy[i] * x[i] * s;
      }
    });
  });
  return {ga, gb};
}
"""


def load():
    """Compiles (or loads the cached build of) the kernels and registers ``mylib::silu_mul``,
    an op autograd records like a built-in."""
    ext = load_inline("silu_mul_ext", CPP, functions=["silu_mul", "silu_mul_backward"])

    @ember.library.custom_op("mylib::silu_mul", mutates_args=())
    def silu_mul(a: ember.Tensor, b: ember.Tensor) -> ember.Tensor:
        return ext.silu_mul(a, b)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return tuple(ext.silu_mul_backward(grad, a, b))

    silu_mul.register_autograd(backward, setup_context=setup_context)
    return silu_mul


class GatedMLP(nn.Module):
    """A SwiGLU feed-forward block: down(silu(gate(x)) * up(x)); `gate_fn` is the fused op or
    its composed form."""

    def __init__(self, dim: int, hidden: int, gate_fn) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, hidden)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.gate_fn = gate_fn

    def forward(self, x):
        return self.down(self.gate_fn(self.gate(x), self.up(x)))


def composed(a, b):
    return F.silu(a) * b


def train(model, steps: int, seed: int = 0) -> list[float]:
    """Fits the block to a fixed random map; returns the losses."""
    gen = ember.Generator().manual_seed(seed)
    x = ember.randn(64, 16, generator=gen)
    target = ember.tanh(x @ ember.randn(16, 16, generator=gen))
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 steps, small timing")
    args = parser.parse_args()

    started = time.perf_counter()
    silu_mul = load()
    print(f"compiled or loaded in {time.perf_counter() - started:.2f} s")

    a = ember.randn(5, 7, dtype=ember.float64, requires_grad=True)
    b = ember.randn(5, 7, dtype=ember.float64, requires_grad=True)
    print("gradcheck:", ember.autograd.gradcheck(silu_mul, (a, b)))
    print("grad_fn:", silu_mul(a, b).grad_fn.name())

    n = 1 << (18 if args.quick else 22)
    a, b = ember.randn(n), ember.randn(n)
    for name, fn in (("fused", silu_mul), ("composed", composed)):
        fn(a, b)
        t0 = time.perf_counter()
        for _ in range(10):
            fn(a, b)
        print(f"{name:>9}: {(time.perf_counter() - t0) / 10 * 1e3:.2f} ms for {n} floats")

    ember.manual_seed(0)
    model = GatedMLP(16, 32, silu_mul)
    losses = train(model, 20 if args.quick else 200)
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {len(losses)} steps")


if __name__ == "__main__":
    main()
