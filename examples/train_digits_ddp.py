"""The digits CNN of train_digits.py, trained data-parallel with DistributedDataParallel.

    mpiexec -n 2 python examples/train_digits_ddp.py                        # MPI's launcher
    python -m ember.distributed.run --nproc-per-node 2 examples/train_digits_ddp.py
    python -m ember.distributed.run --launcher processes --nproc-per-node 2 \\
        examples/train_digits_ddp.py --backend shm                        # no MPI needed
    python examples/train_digits_ddp.py                                    # one process

Each process trains on its own shard of every epoch (DistributedSampler) with batch 32 / world;
DDP averages the gradients, so every replica takes the same steps as one process with batch 32.
Rank 0 prints the progress and the test accuracy, and saves the checkpoint (model.module).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from train_digits import DigitNet, accuracy, load_data

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.optim as optim
from ember.nn.parallel import DistributedDataParallel
from ember.utils.data import DataLoader, DistributedSampler


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="one epoch, no accuracy target")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--batch-size", type=int, default=32, help="the global batch")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default=None, help="mpi (default) or shm")
    ap.add_argument("--out", default=None, help="folder for rank 0's checkpoint")
    args = ap.parse_args(argv)
    epochs = 1 if args.quick else args.epochs

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} is not divisible by {world} processes")

    ember.manual_seed(args.seed + rank)  # DDP replaces every replica's weights by rank 0's
    train, test = load_data(args.seed)
    sampler = DistributedSampler(train, seed=args.seed)
    train_loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler)
    test_loader = DataLoader(test, batch_size=256)

    model = DistributedDataParallel(DigitNet())
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)

    start = time.perf_counter()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)  # a new shuffle, the same on every rank
        losses = []
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()  # DDP averages the gradients over the ranks here
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        mean_loss = ember.tensor([float(np.mean(losses))])
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        if rank == 0:
            print(f"epoch {epoch + 1:2d}  loss {mean_loss.item():.4f}  "
                  f"test accuracy {accuracy(model.module, test_loader):.2%}", flush=True)
    acc = accuracy(model.module, test_loader)
    # every replica holds the same weights: check it on the first parameter
    first = next(model.module.parameters()).detach().reshape(-1)[:4].clone()
    copies = [ember.zeros_like(first) for _ in range(world)]
    dist.all_gather(copies, first)
    assert all(ember.equal(c, copies[0]) for c in copies), "the replicas drifted apart"
    if rank == 0:
        print(f"test accuracy {acc:.2%} after {epochs} epoch(s) on {world} process(es) "
              f"({dist.get_backend()}), {time.perf_counter() - start:.1f} s of training")
        out = args.out or tempfile.mkdtemp(prefix="ember-digits-ddp-")
        os.makedirs(out, exist_ok=True)
        ckpt = os.path.join(out, "digits.pt")
        ember.save(model.module.state_dict(), ckpt)
        print(f"checkpoint: {ckpt}")
    dist.destroy_process_group()
    if not args.quick and epochs >= 10 and acc < 0.97:
        raise SystemExit(f"test accuracy {acc:.2%} is below the 97% target")
    return acc


if __name__ == "__main__":
    main()
