"""Checks run by every rank under ``mpiexec -n N python mpi_checks.py WHAT`` (tests/test_mpi.py).

Each rank makes its inputs from its rank alone, so every rank can compute what every collective
must give with NumPy (the single-process reference) and asserts it. A rank prints
``ok <what> rank R/N: C checks`` at the end; any failure raises, which makes mpiexec fail.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import ember
import ember.distributed as dist

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"]
checks = 0
try:
    import ember.autograd  # noqa: F401
    HAS_AUTOGRAD = True
except ImportError:
    HAS_AUTOGRAD = False


def data(rank: int, dtype: str, shape=(3, 5)):
    """Rank ``rank``'s input as float64 NumPy values (small: no integer overflow in products)."""
    rng = np.random.default_rng(1000 + rank)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.float64)
    if dtype.startswith("float") or dtype == "bfloat16":
        return rng.uniform(0.5, 1.5, shape).round(2)
    return rng.integers(1, 4, shape).astype(np.float64)


def as_ember(values, dtype: str):
    return ember.from_numpy(np.asarray(values, dtype=np.float64)).to(getattr(ember, dtype))


def as_numpy(t):
    if t.dtype == ember.bfloat16 or t.dtype == ember.float16:
        return t.float().numpy().astype(np.float64)
    return t.numpy().astype(np.float64)


def reference(op: str, dtype: str, world: int):
    xs = np.stack([data(r, dtype) for r in range(world)])
    if dtype == "bool":
        b = xs.astype(bool)
        return {"SUM": b.any(0), "MAX": b.any(0), "BOR": b.any(0), "PRODUCT": b.all(0),
                "MIN": b.all(0), "BAND": b.all(0),
                "BXOR": np.logical_xor.reduce(b, 0)}[op].astype(np.float64)
    if op in ("BAND", "BOR", "BXOR"):
        ints = xs.astype(np.int64)
        f = {"BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}[op]
        return f.reduce(ints, 0).astype(np.float64)
    return {"SUM": xs.sum(0), "AVG": xs.mean(0), "PRODUCT": xs.prod(0), "MIN": xs.min(0),
            "MAX": xs.max(0), "PREMUL_SUM": (0.5 * xs).sum(0)}[op]


def valid(op: str, dtype: str) -> bool:
    floating = dtype.startswith("float") or dtype == "bfloat16"
    if op in ("BAND", "BOR", "BXOR"):
        return not floating
    if op in ("AVG", "PREMUL_SUM"):
        return floating
    return True


def rounded(values, dtype: str):
    """The reference as the dtype holds it (one rounding, as a float32 accumulation gives)."""
    return as_numpy(as_ember(values, dtype))


def check_close(got, want, dtype: str, what: str) -> None:
    global checks
    tol = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-12}.get(dtype, 0)
    np.testing.assert_allclose(got, rounded(want, dtype), rtol=tol, atol=tol, err_msg=what)
    checks += 1


def op_arg(op: str):
    return dist._make_nccl_premul_sum(0.5) if op == "PREMUL_SUM" else getattr(dist.ReduceOp, op)


def collectives() -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "cpu:mpi,cuda:nccl", dist.get_backend()
    # all_reduce: every ReduceOp on every dtype it applies to
    for dtype in DTYPES:
        for op in OPS:
            if not valid(op, dtype):
                continue
            t = as_ember(data(rank, dtype), dtype)
            dist.all_reduce(t, op=op_arg(op))
            check_close(as_numpy(t), reference(op, dtype, world), dtype, f"all_reduce {op} {dtype}")
    # async, on a non-contiguous view and on a tensor that requires grad (written in place)
    base = as_ember(data(rank, "float32", (5, 3)), "float32")
    work = dist.all_reduce(base.t(), async_op=True)
    assert work.wait() and work.is_completed() and work.is_success()
    check_close(as_numpy(base), sum(data(r, "float32", (5, 3)) for r in range(world)), "float32",
                "async view")
    if HAS_AUTOGRAD:  # a leaf that requires grad (ember-mp alone has no autograd)
        w = as_ember(data(rank, "float64"), "float64").requires_grad_()
        dist.all_reduce(w, op=dist.ReduceOp.MAX)
        check_close(as_numpy(w.detach()), reference("MAX", "float64", world), "float64",
                    "grad leaf")
    # reduce to the last rank, broadcast from it
    last = world - 1
    for dtype in DTYPES:
        t = as_ember(data(rank, dtype), dtype)
        dist.reduce(t, dst=last, op=dist.ReduceOp.SUM)
        if rank == last:
            check_close(as_numpy(t), reference("SUM", dtype, world), dtype, f"reduce {dtype}")
        else:
            check_close(as_numpy(t), data(rank, dtype), dtype, "reduce leaves non-dst inputs")
        b = as_ember(data(rank, dtype), dtype)
        dist.broadcast(b, src=last)
        check_close(as_numpy(b), data(last, dtype), dtype, f"broadcast {dtype}")
    # gathers and scatters
    for dtype in DTYPES:
        mine = as_ember(data(rank, dtype), dtype)
        outs = [ember.zeros(3, 5, dtype=getattr(ember, dtype)) for _ in range(world)]
        dist.all_gather(outs, mine)
        for r in range(world):
            check_close(as_numpy(outs[r]), data(r, dtype), dtype, f"all_gather {dtype}")
        flat15 = [ember.zeros(15, dtype=getattr(ember, dtype)) for _ in range(world)]
        dist.all_gather(flat15, mine)  # outputs of another shape, as many elements
        for r in range(world):
            check_close(as_numpy(flat15[r]), data(r, dtype).reshape(-1), dtype, "all_gather flat")
        flat = ember.zeros(world * 3, 5, dtype=getattr(ember, dtype))
        dist.all_gather_into_tensor(flat, mine)
        check_close(as_numpy(flat), np.concatenate([data(r, dtype) for r in range(world)]), dtype,
                    "all_gather_into_tensor")
        glist = [ember.zeros(3, 5, dtype=getattr(ember, dtype)) for _ in range(world)] \
            if rank == 0 else None
        dist.gather(mine, glist, dst=0)
        if rank == 0:
            for r in range(world):
                check_close(as_numpy(glist[r]), data(r, dtype), dtype, "gather")
        got = ember.zeros(3, 5, dtype=getattr(ember, dtype))
        slist = [as_ember(data(100 + r, dtype), dtype) for r in range(world)] if rank == 1 else None
        dist.scatter(got, slist, src=1)
        check_close(as_numpy(got), data(100 + rank, dtype), dtype, "scatter")
    # reduce_scatter of every dtype (SUM: "any" for bools)
    for dtype in DTYPES:
        rows = [data(100 * r + 7, dtype, (world, 3)) for r in range(world)]
        out = ember.zeros(3, dtype=getattr(ember, dtype))
        dist.reduce_scatter_tensor(out, as_ember(rows[rank], dtype).reshape(-1))
        want = np.stack(rows).astype(bool).any(0) if dtype == "bool" else np.stack(rows).sum(0)
        check_close(as_numpy(out), want[rank].astype(np.float64), dtype,
                    f"reduce_scatter {dtype}")
    # reduce_scatter: rank r keeps rows r*2:(r+1)*2 of the reduction
    for op in ("SUM", "AVG", "MAX", "PREMUL_SUM"):
        full = np.stack([data(r, "float32", (world * 2, 3)) for r in range(world)])
        inp = as_ember(full[rank], "float32")
        out = ember.zeros(2, 3)
        dist.reduce_scatter_tensor(out, inp, op=op_arg(op))
        want = {"SUM": full.sum(0), "AVG": full.mean(0), "MAX": full.max(0),
                "PREMUL_SUM": (0.5 * full).sum(0)}[op]
        check_close(as_numpy(out), want[rank * 2:(rank + 1) * 2], "float32", f"reduce_scatter {op}")
        check_close(as_numpy(inp), full[rank], "float32", "reduce_scatter leaves its input")
    out = ember.zeros(4, dtype=ember.int64)
    dist.reduce_scatter(out, [ember.full((4,), rank + r, dtype=ember.int64) for r in range(world)])
    check_close(as_numpy(out), np.full(4, sum(q + rank for q in range(world))), "int64",
                "reduce_scatter list")
    # all_to_all: rank r sends r + j + 1 values of 10 r + j to rank j
    ins = [ember.full((rank + j + 1,), 10 * rank + j, dtype=ember.int32) for j in range(world)]
    outs = [ember.zeros(j + rank + 1, dtype=ember.int32) for j in range(world)]
    dist.all_to_all(outs, ins)
    for j in range(world):
        check_close(as_numpy(outs[j]), np.full(j + rank + 1, 10 * j + rank), "int32", "all_to_all")
    inp = ember.arange(world * 2, dtype=ember.float64) + 100 * rank
    out = ember.zeros(world * 2, dtype=ember.float64)
    dist.all_to_all_single(out, inp)
    check_close(as_numpy(out), np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 100 * j
                                               for j in range(world)]), "float64", "a2a single")
    in_splits = [j + 1 for j in range(world)]  # rank r sends j + 1 rows to rank j
    out_splits = [rank + 1] * world
    inp = ember.full((sum(in_splits), 2), float(rank))
    out = ember.zeros(sum(out_splits), 2)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    check_close(as_numpy(out), np.repeat(np.arange(world, dtype=np.float64), rank + 1)[:, None]
                .repeat(2, 1), "float32", "a2a single splits")
    # point to point, both orders, and from any source
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    big = ember.full((300_000,), float(rank))  # large enough for MPI's rendezvous protocol
    got = ember.zeros(300_000)
    reqs = [dist.irecv(got, prv), dist.isend(big, nxt)] if rank % 2 else \
        [dist.isend(big, nxt), dist.irecv(got, prv)]
    for r in reqs:
        r.wait()
    check_close(as_numpy(got[:3]), np.full(3, prv), "float32", "isend/irecv")
    if rank == 0:
        senders = set()
        for _ in range(world - 1):
            box = ember.zeros(1, dtype=ember.int64)
            senders.add(dist.recv(box))
            assert int(box.item()) == 7
        assert senders == set(range(1, world)), senders
    else:
        dist.send(ember.tensor([7]), dst=0)
    # objects
    objs = [{"rank": rank}, f"s{rank}"] if rank == 1 else [None, None]
    dist.broadcast_object_list(objs, src=1)
    assert objs == [{"rank": 1}, "s1"], objs
    everyone = [None] * world
    dist.all_gather_object(everyone, ("r", rank, "x" * rank))
    assert everyone == [("r", r, "x" * r) for r in range(world)], everyone
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(rank * 2, gathered, dst=0)
    assert rank != 0 or gathered == [2 * r for r in range(world)], gathered
    box = [None]
    dist.scatter_object_list(box, [f"to{r}" for r in range(world)] if rank == 0 else None, src=0)
    assert box == [f"to{rank}"], box
    if world >= 2:
        if rank == 0:
            dist.send_object_list([1, "two", {3}], dst=1)
        elif rank == 1:
            got_objs = [None] * 3
            assert dist.recv_object_list(got_objs, src=0) == 0
            assert got_objs == [1, "two", {3}]
    # a subgroup of the even ranks: global src/dst, group ranks, non-members
    evens = list(range(0, world, 2))
    sub = dist.new_group(evens)
    if rank % 2 == 0:
        assert dist.get_rank(sub) == rank and dist.get_world_size(sub) == len(evens)
        assert dist.get_group_rank(sub, rank) == rank // 2
        t = ember.tensor([float(rank)])
        dist.all_reduce(t, group=sub)
        check_close(as_numpy(t), np.array([float(sum(evens))]), "float32", "subgroup all_reduce")
        b = ember.tensor([float(rank)])
        dist.broadcast(b, src=evens[-1], group=sub)
        check_close(as_numpy(b), np.array([float(evens[-1])]), "float32", "subgroup broadcast")
    else:
        assert sub is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1
    dist.barrier()
    assert dist.barrier(async_op=True).wait()


def errors() -> None:
    """Ranks that disagree all raise; the group stays usable after a checked mismatch."""
    rank, world = dist.get_rank(), dist.get_world_size()
    t = ember.ones(4 if rank == 0 else 5)
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        msg = str(e)
        assert "different collectives or passed different tensors" in msg, msg
        assert "rank 0: all_reduce(float32, 4 elements, op=SUM)" in msg, msg
        assert "rank 1: all_reduce(float32, 5 elements, op=SUM)" in msg, msg
    else:
        raise AssertionError("a shape mismatch passed")
    t = ember.ones(4, dtype=ember.float32 if rank else ember.float64)
    try:
        dist.broadcast(t, src=0)
    except RuntimeError as e:
        assert "rank 0: broadcast(float64, 4 elements, src=0)" in str(e), str(e)
    else:
        raise AssertionError("a dtype mismatch passed")
    try:
        if rank == 0:
            dist.all_reduce(ember.ones(2))
        else:
            dist.barrier()
    except RuntimeError as e:
        assert "all_reduce" in str(e) and "barrier" in str(e), str(e)
    else:
        raise AssertionError("different collectives passed")
    # all_to_all whose sizes do not pair up
    ins = [ember.zeros(2) for _ in range(world)]
    outs = [ember.zeros(3 if rank == 0 else 2) for _ in range(world)]
    try:
        dist.all_to_all(outs, ins)
    except RuntimeError as e:
        assert "split sizes disagree" in str(e), str(e)
    else:
        raise AssertionError("all_to_all size mismatch passed")
    # a receive into a tensor smaller than the message
    if rank == 0:
        dist.send(ember.ones(8), dst=1)
    elif rank == 1:
        try:
            dist.recv(ember.zeros(4), src=0)
        except RuntimeError as e:
            assert "more bytes than this tensor holds" in str(e) or "sent" in str(e), str(e)
        else:
            raise AssertionError("a truncated receive passed")
    # the group still works
    t = ember.ones(3)
    dist.all_reduce(t)
    assert t.tolist() == [float(world)] * 3
    global checks
    checks += 6


def timeout() -> None:
    """The last rank never joins: the others raise at their timeout (2 s), not hang."""
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == world - 1:
        time.sleep(4)
        print(f"ok timeout rank {rank}/{world}: 0 checks", flush=True)
        os._exit(0)  # noqa: SLF001 - leaves without MPI_Finalize, as a hung rank would be killed
    start = time.monotonic()
    try:
        dist.all_reduce(ember.ones(4))
    except RuntimeError as e:
        waited = time.monotonic() - start
        assert "timed out after 2 s" in str(e), str(e)
        assert waited < 3.5, waited
    else:
        raise AssertionError("no timeout")
    try:
        dist.barrier()
    except RuntimeError as e:
        assert "can no longer be used" in str(e), str(e)
    else:
        raise AssertionError("a broken group went on")
    global checks
    checks += 2


def dies() -> None:
    """The last rank's process exits: the others on this machine raise at once."""
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == world - 1:
        os._exit(3)
    start = time.monotonic()
    try:
        dist.all_reduce(ember.ones(4))
    except RuntimeError as e:
        # the last rank, or one that saw it die and left first
        assert " (pid " in str(e) and "exited" in str(e), str(e)
        assert time.monotonic() - start < 5  # the timeout is 60 s
    else:
        raise AssertionError("no error")
    global checks
    checks += 1


if __name__ == "__main__":
    what = sys.argv[1]
    import datetime

    seconds = {"timeout": 2, "dies": 60}.get(what, 120)
    dist.init_process_group(timeout=datetime.timedelta(seconds=seconds))
    {"collectives": collectives, "errors": errors, "timeout": timeout, "dies": dies}[what]()
    print(f"ok {what} rank {dist.get_rank()}/{dist.get_world_size()}: {checks} checks", flush=True)
    if what in ("timeout", "dies"):
        sys.stdout.flush()
        os._exit(0)  # a broken group: skip MPI_Finalize (ember skips it too)
    dist.destroy_process_group()
