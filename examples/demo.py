"""ember-tensor alone as a NumPy replacement (train_digits.py is the main job, every package).

It makes a labelled data set with ember's own random generator (nothing is downloaded), then
  1. fits a linear regression by gradient descent written with tensor ops (mm, sum, mean),
  2. clusters the points with k-means (broadcasting, argmin, masked means),
and checks both against closed-form / NumPy answers, printing what it does.
"""

from __future__ import annotations

import time

import numpy as np

import ember


def make_data(n: int = 20_000, d: int = 16, seed: int = 0):
    gen = ember.Generator().manual_seed(seed)
    x = ember.randn(n, d, generator=gen)
    true_w = ember.linspace(-1.0, 1.0, d).reshape(d, 1)
    noise = 0.05 * ember.randn(n, 1, generator=gen)
    y = x @ true_w + 0.5 + noise
    return x, y, true_w


def linear_regression(x, y, steps: int = 300, lr: float = 0.1):
    n, d = x.shape
    w = ember.zeros(d, 1)
    b = ember.zeros(1)
    for step in range(steps):
        err = x @ w + b - y  # (n, 1)
        grad_w = x.t() @ err / n  # d(MSE)/dw, by hand
        grad_b = err.mean()
        w -= lr * 2 * grad_w
        b -= lr * 2 * grad_b
        if step % 100 == 0:
            print(f"  step {step:3d}  mse {(err * err).mean().item():.5f}")
    return w, b


def kmeans(points, k: int = 4, iters: int = 20):
    centers = points[:k].clone()
    for _ in range(iters):
        # (n, 1, d) - (1, k, d) -> squared distances (n, k)
        dist = ((points.unsqueeze(1) - centers.unsqueeze(0)) ** 2).sum(dim=2)
        label = dist.argmin(dim=1)
        for c in range(k):
            mask = (label == c).unsqueeze(1).to(points.dtype)
            count = mask.sum()
            if count.item() > 0:
                centers[c] = (points * mask).sum(dim=0) / count
    return centers, label


def main() -> None:
    print(f"ember {ember.__version__}, {ember.get_num_threads()} threads")
    t0 = time.perf_counter()
    x, y, true_w = make_data()
    print(f"data: x {tuple(x.shape)}, y {tuple(y.shape)}")

    print("linear regression by gradient descent:")
    w, b = linear_regression(x, y)
    w_np, *_ = np.linalg.lstsq(
        np.hstack([x.numpy(), np.ones((x.shape[0], 1), np.float32)]), y.numpy(), rcond=None
    )
    err = np.abs(w.numpy().ravel() - w_np[:-1].ravel()).max()
    print(f"  max |w - lstsq| = {err:.2e}, bias {b.item():.4f} (true 0.5)")
    assert err < 1e-2, "gradient descent did not converge to the least-squares solution"

    print("k-means on 4 blobs:")
    gen = ember.Generator().manual_seed(1)
    offsets = ember.tensor([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0], [6.0, 6.0]])
    blobs = ember.randn(4, 500, 2, generator=gen) * 0.5 + offsets.unsqueeze(1)
    points = blobs.permute(1, 0, 2).reshape(-1, 2)  # interleaved, so the first 4 are one per blob
    centers, label = kmeans(points)
    found = sorted(tuple(round(v) for v in c) for c in centers.tolist())
    print(f"  centers {found}")
    assert found == [(0, 0), (0, 6), (6, 0), (6, 6)], "k-means did not find the four blobs"
    print(f"done in {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
