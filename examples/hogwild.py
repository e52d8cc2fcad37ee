"""Hogwild training: 2 processes update one model's shared parameters, without locks.

    python3 examples/hogwild.py            # ~15 epochs per process, >= 97% test accuracy
    python3 examples/hogwild.py --quick    # 1 epoch, for CI

The model of train_digits.py is moved to shared memory with ``model.share_memory()``; each worker
process (forked through ember.multiprocessing) trains it with its own Adam on its own shuffle of
the training set, and every step writes straight into the shared parameters.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from train_digits import DigitNet, accuracy, load_data  # noqa: E402

import ember  # noqa: E402
import ember.multiprocessing as mp  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.optim as optim  # noqa: E402
from ember.utils.data import DataLoader  # noqa: E402


def train(rank, model, args):
    ember.set_num_threads(1)
    ember.manual_seed(args.seed + rank)
    train_set, _ = load_data(args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(args.epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="one epoch, no accuracy target")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.quick:
        args.epochs = 1
    ember.manual_seed(args.seed)
    model = DigitNet()
    model.share_memory()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=train, args=(r, model, args)) for r in range(args.processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a worker failed with exit code {p.exitcode}")
    _, test = load_data(args.seed)
    acc = accuracy(model, DataLoader(test, batch_size=256))
    print(f"hogwild test accuracy {acc:.2%} after {args.epochs} epoch(s) x {args.processes} "
          "processes")
    if not args.quick and args.epochs >= 10 and acc < 0.97:
        raise SystemExit(f"test accuracy {acc:.2%} is below the 97% target")
    return acc


if __name__ == "__main__":
    main()
