"""ember.utils.data's DataLoader beside torch.utils.data's, on the same datasets in one run.

- throughput: one epoch over a dataset that makes a (3, 64, 64) float32 image per item with
  NumPy (2048 items, batch 64), with 0 and with 2 workers (workers started per epoch, as with
  the default persistent_workers=False); ratio = torch's epoch time / ember's.
- worker memory: a dataset held as a Python list of 1M small objects, one epoch with 2 workers;
  the growth of each worker's private memory (USS, from /proc) between its first batch and the
  end of the epoch -- the copy-on-access cost of fork. Shown as MiB, ember beside torch.

    python benchmarks/bench_data.py [--quick] [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402

try:
    from ember.utils import data as edata  # noqa: E402
except ImportError:  # pragma: no cover - ember-data not installed
    edata = None


class ImageDataset:
    """Item i: a (3, side, side) float32 image made with NumPy, and its label."""

    def __init__(self, n: int, side: int) -> None:
        self.n, self.side = n, side

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        rng = H.np.random.default_rng(i)
        return rng.random((3, self.side, self.side), dtype=H.np.float32), i


class ListDataset:
    """A dataset held as a Python list of small objects (the copy-on-access case)."""

    def __init__(self, n: int) -> None:
        self.items = [(i, i * 0.5, str(i)) for i in range(n)]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        a, b, _ = self.items[i]
        return a, b


def epoch(loader) -> int:
    n = 0
    for _ in loader:
        n += 1
    return n


def bench_throughput(sizes) -> None:
    torch = H.torch
    ds = ImageDataset(sizes["items"], sizes["side"])
    rows = []
    for workers, target in ((0, 1.0), (2, 0.9)):
        kw = dict(batch_size=64, num_workers=workers)
        fns = {"ember": lambda kw=kw: epoch(edata.DataLoader(ds, **kw))}
        if torch is not None:
            fns["torch"] = lambda kw=kw: epoch(torch.utils.data.DataLoader(ds, **kw))
        times = H.measure_all(fns, warmup=1, settle=0.05)
        side = sizes["side"]
        case = f"epoch, {sizes['items']} x (3,{side},{side}) f32, {workers} workers"
        if torch is not None:
            rows.append(H.Row(case, times["ember"], "torch", times["torch"], target))
        else:
            rows.append(H.Row(case, times["ember"], "torch", None, target, "no torch"))
    H.report("DataLoader throughput (one epoch, batch 64)", rows)


def _uss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            kb = sum(int(line.split()[1]) for line in f
                     if line.startswith(("Private_Clean:", "Private_Dirty:")))
        return kb / 1024
    except OSError:
        return None


def _worker_growth(loader) -> float | None:
    it = iter(loader)
    next(it)
    pids = [w.pid for w in it._workers]
    before = [_uss_mib(p) for p in pids]
    for _ in range(len(loader) - 1):
        next(it)
    after = [_uss_mib(p) for p in pids]
    del it
    if None in before or None in after:
        return None
    return max(a - b for a, b in zip(after, before))


def bench_memory(sizes) -> None:
    torch = H.torch
    ds = ListDataset(sizes["list"])
    kw = dict(batch_size=1000, num_workers=2)
    ours = _worker_growth(edata.DataLoader(ds, **kw))
    theirs = _worker_growth(torch.utils.data.DataLoader(ds, **kw)) if torch is not None else None
    print(f"== worker memory over one epoch, dataset = list of {sizes['list']:,} small objects")
    print("growth of a worker's private memory (USS) from its first batch to the epoch's end:")
    fmt = lambda v: "n/a" if v is None else f"{v:.1f} MiB"  # noqa: E731
    print(f"  ember: {fmt(ours)}   torch: {fmt(theirs)}   (target: ember <= torch)")
    print()
    H._RESULTS.append({"title": "worker memory", "case": "USS growth (MiB)", "ember_s": ours,
                       "peer_name": "torch", "peer_s": theirs, "target": None, "status": "-",
                       "ratio": None, "note": "MiB, not seconds"})


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_data: ember.utils.data.DataLoader vs torch.utils.data.DataLoader", argv)
    if edata is None:
        print("ember-data is not installed: nothing to compare")
        return 0
    if H.np is None:
        print("NumPy is not installed: nothing to compare")
        return 0
    if H.SETTINGS.smoke:
        sizes = {"items": 128, "side": 8, "list": 10_000}
    else:
        sizes = {"items": 2048, "side": 64, "list": 1_000_000}
    ember.set_num_threads(H.SETTINGS.threads)
    bench_throughput(sizes)
    bench_memory(sizes)
    H.summary()
    H.save_json({"sizes": sizes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
