"""ember.func and ember.utils.checkpoint beside torch.func / torch.utils.checkpoint (CPU): ratios.

  1. per-sample gradients, ``vmap(grad(loss), in_dims=(None, 0, 0))`` of a 2-layer MLP
     (32 -> 64 -> 10, cross-entropy) over a batch of 64: ember runs the function once per element
     (no batching rules), torch vectorises; ember's vmap beside a plain Python loop of grad calls
     shows what the vmap wrapper itself costs;
  2. ``jacrev`` and ``jacfwd`` of x -> tanh(W x), 64 -> 64;
  3. forward + backward of an 8-layer 512-wide tanh chain (batch 64) with every layer
     checkpointed (``use_reentrant=False``), beside the same without checkpointing.

Rows carry no target: ember's vmap is per element by design (docs/func.md), the rows say what
that costs.

    python benchmarks/bench_func.py [--quick] [--smoke] [--json PATH] [--threads N] [--no-torch]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember.func  # noqa: E402
import ember.utils.checkpoint  # noqa: E402


def _mlp(lib, F, batch, seed=0):
    rng = np.random.default_rng(seed)
    params = {"w1": lib.tensor(rng.standard_normal((64, 32)) * 0.1, dtype=lib.float32),
              "w2": lib.tensor(rng.standard_normal((10, 64)) * 0.1, dtype=lib.float32)}
    x = lib.tensor(rng.standard_normal((batch, 32)), dtype=lib.float32)
    y = lib.tensor(rng.integers(0, 10, batch), dtype=lib.int64)

    def loss(p, xi, yi):
        h = (xi @ p["w1"].t()).tanh() @ p["w2"].t()
        return F.cross_entropy(h.unsqueeze(0), yi.unsqueeze(0))

    return params, x, y, loss


def bench_per_sample(batch) -> list[H.Row]:
    import ember.nn.functional as EF

    p, x, y, loss = _mlp(ember, EF, batch)
    fn = ember.func.vmap(ember.func.grad(loss), in_dims=(None, 0, 0))
    g = ember.func.grad(loss)
    fns = {"ember": lambda: fn(p, x, y),
           "loop": lambda: [g(p, x[i], y[i]) for i in range(batch)]}
    torch = H.torch
    if torch is not None:
        import torch.func
        import torch.nn.functional as TF

        tp, tx, ty, tloss = _mlp(torch, TF, batch)
        tfn = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
        fns["torch"] = lambda: tfn(tp, tx, ty)
        np.testing.assert_allclose(fns["ember"]()["w1"].numpy(), fns["torch"]()["w1"].numpy(),
                                   rtol=1e-4, atol=1e-6)
    t = H.measure_all(fns)
    case = f"vmap(grad(mlp loss)), batch {batch}"
    return [H.Row(case, t["ember"], "torch", t.get("torch"), None,
                  "" if torch is not None else "torch not installed"),
            H.Row(case, t["ember"], "ember loop of grad", t["loop"], None)]


def bench_jacobians(n) -> list[H.Row]:
    rng = np.random.default_rng(1)
    wn, xn = rng.standard_normal((n, n)) / n ** 0.5, rng.standard_normal(n)
    w, x = ember.tensor(wn, dtype=ember.float32), ember.tensor(xn, dtype=ember.float32)
    rows = []
    torch = H.torch
    if torch is not None:
        import torch.func

        tw, tx = torch.tensor(wn, dtype=torch.float32), torch.tensor(xn, dtype=torch.float32)
    for name in ("jacrev", "jacfwd"):
        fns = {"ember": lambda name=name: getattr(ember.func, name)(lambda v: (w @ v).tanh())(x)}
        if torch is not None:
            fns["torch"] = lambda name=name: getattr(torch.func, name)(
                lambda v: (tw @ v).tanh())(tx)
        t = H.measure_all(fns)
        rows.append(H.Row(f"{name} of tanh(W x), {n} -> {n}", t["ember"], "torch", t.get("torch"),
                          None, "" if torch is not None else "torch not installed"))
    return rows


def bench_checkpoint(depth, width, batch) -> list[H.Row]:
    rng = np.random.default_rng(2)
    wn = [rng.standard_normal((width, width)) / width ** 0.5 for _ in range(depth)]
    xn = rng.standard_normal((batch, width))

    def make(lib, cp):
        ws = [lib.tensor(w, dtype=lib.float32).requires_grad_() for w in wn]
        x = lib.tensor(xn, dtype=lib.float32)

        def layer(w):
            return lambda h: (h @ w).tanh()

        def plain():
            h = x
            for w in ws:
                h = layer(w)(h)
            h.sum().backward()

        def checkpointed():
            h = x
            for w in ws:
                h = cp(layer(w), h, use_reentrant=False)
            h.sum().backward()

        return plain, checkpointed

    e_plain, e_cp = make(ember, ember.utils.checkpoint.checkpoint)
    fns = {"ember": e_cp, "ember plain": e_plain}
    torch = H.torch
    if torch is not None:
        import torch.utils.checkpoint

        t_plain, t_cp = make(torch, torch.utils.checkpoint.checkpoint)
        fns["torch"] = t_cp
    t = H.measure_all(fns)
    case = f"checkpointed {depth}x tanh({width}x{width}), batch {batch}, fwd+bwd"
    return [H.Row(case, t["ember"], "torch checkpointed", t.get("torch"), None,
                  "" if torch is not None else "torch not installed"),
            H.Row(case, t["ember"], "ember without checkpoint", t["ember plain"], None)]


def main() -> int:
    s = H.setup(__doc__.splitlines()[0])
    small = s.smoke
    rows = bench_per_sample(4 if small else 64)
    rows += bench_jacobians(4 if small else 64)
    rows += bench_checkpoint(2 if small else 8, 8 if small else 512, 4 if small else 64)
    H.report("ember.func and checkpoint (no targets: per-element vmap by design)", rows)
    H.summary()
    H.save_json()
    return 0


if __name__ == "__main__":
    sys.exit(main())
