"""Checkpoints beside PyTorch (and NumPy's .npz): ember.save / ember.load in PyTorch's zip format,
memory-mapped loading, and safetensors (ember's native writer beside the safetensors library).
Ratios are peer_time / ember_time (> 1: ember is faster). Files go to a temporary folder, so
the times include the page cache, not the disk.

    python benchmarks/bench_serialization.py [--quick] [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
from bench_core import run_case  # noqa: E402

import ember  # noqa: E402


def sizes() -> dict[str, Any]:
    if H.SETTINGS.smoke:
        return {"big": (4, (64, 64)), "small": 50}
    return {"big": (16, (1024, 1024)), "small": 2000}  # 64 MB of float32; many tiny tensors


def state_dicts(count: int, shape: tuple[int, ...]) -> dict[str, dict[str, Any]]:
    parts = [H.inputs(shape, seed=i) for i in range(count)]
    return {lib: {f"w{i}": p[lib] for i, p in enumerate(parts)}
            for lib in ("ember", "torch", "numpy") if lib in parts[0]}


def roundtrip(save, load, obj):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf)


def bench_checkpoints(sz: dict[str, Any], folder: str) -> None:
    torch, np = H.torch, H.np
    count, shape = sz["big"]
    sd = state_dicts(count, shape)
    mb = count * int(np.prod(shape)) * 4 >> 20 if np is not None else 0
    rows = run_case(
        f"save + load, {count} tensors ({mb} MB float32), in memory",
        {
            "ember": lambda: roundtrip(ember.save, ember.load, sd["ember"])["w0"],
            "torch": (lambda: roundtrip(torch.save, torch.load, sd["torch"])["w0"]) if torch
            else None,
            "numpy": lambda: roundtrip(lambda o, f: np.savez(f, **o), np.load, sd["numpy"])["w0"],
        },
        {"torch": 0.8},
        requires=("save", "load"),
    )
    paths = {lib: os.path.join(folder, f"{lib}.pt") for lib in ("ember", "torch")}
    ember.save(sd["ember"], paths["ember"])
    if torch:
        torch.save(sd["torch"], paths["torch"])
    rows += run_case(
        "load(mmap=True) of the same file",
        {
            "ember": lambda: ember.load(paths["ember"], mmap=True)["w0"],
            "torch": (lambda: torch.load(paths["torch"], mmap=True)["w0"]) if torch else None,
        },
        {"torch": 0.8},
        requires=("save", "load"),
    )
    small = {f"b{i}": H.inputs((4,), seed=i) for i in range(sz["small"])}
    rows += run_case(
        f"save + load, {sz['small']} tensors of 4 float32 (pickle overhead)",
        {
            "ember": lambda: roundtrip(ember.save, ember.load,
                                       {k: v["ember"] for k, v in small.items()})["b0"],
            "torch": (lambda: roundtrip(torch.save, torch.load,
                                        {k: v["torch"] for k, v in small.items()})["b0"])
            if torch else None,
        },
        {"torch": 0.8},
        requires=("save", "load"),
    )
    H.report("checkpoints (ember.save / ember.load)", rows)


def bench_safetensors(sz: dict[str, Any], folder: str) -> None:
    torch = H.torch
    try:
        from safetensors import torch as lib
    except ImportError:
        lib = None
    from ember.utils import safetensors as est

    count, shape = sz["big"]
    sd = state_dicts(count, shape)
    pe, pt = os.path.join(folder, "e.safetensors"), os.path.join(folder, "t.safetensors")

    def ember_rt():
        est.save_file(sd["ember"], pe)
        return est.load_file(pe)["w0"]

    def lib_rt():
        lib.save_file(sd["torch"], pt)
        return lib.load_file(pt)["w0"]

    rows = run_case(
        f"safetensors save_file + load_file, {count} tensors",
        {"ember": ember_rt, "torch": lib_rt if (torch and lib) else None},
        {"torch": 0.8},
    )
    if rows:  # the peer needs torch and the safetensors library
        H.report("safetensors (peer: the safetensors library with torch)", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_serialization: checkpoints and safetensors vs PyTorch (CPU)", argv)
    sz = sizes()
    with tempfile.TemporaryDirectory() as folder:
        bench_checkpoints(sz, folder)
        bench_safetensors(sz, folder)
    H.summary()
    H.save_json({"sizes": {k: str(v) for k, v in sz.items()}})
    return 0  # benchmarks report; they do not fail on a slow row


if __name__ == "__main__":
    sys.exit(main())
