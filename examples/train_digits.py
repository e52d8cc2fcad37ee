"""Train a small CNN on scikit-learn's handwritten digits with ember, PyTorch style.

    python3 examples/train_digits.py            # ~15 epochs, >= 97% test accuracy
    python3 examples/train_digits.py --quick    # 1 epoch, for CI

The 1797 8x8 images ship inside scikit-learn (no download). The script trains with
ember.optim.Adam over an ember.utils.data.DataLoader, shows a tqdm bar per epoch, prints the
test accuracy, saves a loss curve (matplotlib, Agg backend) and a checkpoint
(ember.save(model.state_dict())) into --out DIR or a new temporary folder (printed first), then
loads the checkpoint into a fresh model and checks that it scores the same. tqdm and matplotlib
are optional: without them there is no bar / no plot.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import ember
import ember.nn as nn
import ember.optim as optim
from ember.utils.data import DataLoader, TensorDataset

try:
    from tqdm import tqdm
except ImportError:  # the bar is a nicety
    def tqdm(iterable, **kwargs):
        return iterable


class DigitNet(nn.Module):
    """conv(1->16, 3x3) -> ReLU -> maxpool 2 -> conv(16->32, 3x3) -> ReLU -> linear(128->64->10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.relu = nn.ReLU()
        self.fc1 = nn.Linear(32 * 2 * 2, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool(self.relu(self.conv1(x)))      # 16 x 4 x 4
        x = self.pool(self.relu(self.conv2(x)))      # 32 x 2 x 2
        x = x.reshape(x.shape[0], -1)
        return self.fc2(self.relu(self.fc1(x)))


def load_data(seed: int):
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # N x 1 x 8 x 8, in [0, 1]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    n_test = len(y) // 5
    train = TensorDataset(ember.tensor(x[n_test:]), ember.tensor(y[n_test:]))
    test = TensorDataset(ember.tensor(x[:n_test]), ember.tensor(y[:n_test]))
    return train, test


def accuracy(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = total = 0
    with ember.no_grad():
        for xb, yb in loader:
            pred = model(xb).argmax(1)
            correct += int((pred == yb).sum().item())
            total += yb.shape[0]
    model.train()
    return correct / total


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="one epoch, no accuracy target")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="folder for the plot and checkpoint "
                                                "(default: a temporary folder)")
    args = ap.parse_args(argv)
    epochs = 1 if args.quick else args.epochs
    out = args.out or tempfile.mkdtemp(prefix="ember-digits-")
    os.makedirs(out, exist_ok=True)
    print(f"writing the loss curve and checkpoint to {out}" + ("" if args.out else " (--out DIR)"))

    ember.manual_seed(args.seed)
    train, test = load_data(args.seed)
    train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test, batch_size=256)

    model = DigitNet()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)

    losses = []
    start = time.perf_counter()
    for epoch in range(epochs):
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{epochs}", leave=False)
        for xb, yb in bar:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
        scheduler.step()
        print(f"epoch {epoch + 1:2d}  loss {np.mean(losses[-len(train_loader):]):.4f}  "
              f"test accuracy {accuracy(model, test_loader):.2%}")
    elapsed = time.perf_counter() - start
    acc = accuracy(model, test_loader)
    print(f"test accuracy {acc:.2%} after {epochs} epoch(s), {elapsed:.1f} s of training")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(losses, lw=0.8)
        ax.set(xlabel="step", ylabel="cross-entropy", yscale="log", title="ember: digits CNN")
        fig.tight_layout()
        plot = os.path.join(out, "loss.png")
        fig.savefig(plot, dpi=100)
        print(f"loss curve: {plot}")
    except ImportError:
        print("matplotlib is not installed: no loss curve")

    ckpt = os.path.join(out, "digits.pt")
    ember.save(model.state_dict(), ckpt)
    restored = DigitNet()
    restored.load_state_dict(ember.load(ckpt))
    acc2 = accuracy(restored, test_loader)
    print(f"checkpoint: {ckpt}; reloaded model's test accuracy {acc2:.2%}")
    assert acc2 == acc, "the reloaded checkpoint scores differently"
    if not args.quick and epochs >= 10 and acc < 0.97:
        raise SystemExit(f"test accuracy {acc:.2%} is below the 97% target")
    return acc


if __name__ == "__main__":
    main()
