"""ember.distributed's shm backend: collectives between processes, checked against NumPy."""

import glob
import os
import socket
import time
import traceback

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.multiprocessing as mp

WORLD = 3


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _data(rank, shape=(5, 7), dtype=np.float64):
    return np.random.default_rng(rank).uniform(0.5, 2.0, shape).astype(dtype)


def _launch(target, world, init_method, *extra, method="fork", env=None):
    """Runs target(rank, world, init_method, out, *extra) in `world` processes; returns
    {rank: what it put on out}, re-raising a child's error with its traceback."""
    ctx = mp.get_context(method)
    out = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(target, r, world, init_method, out, env, *extra))
             for r in range(world)]
    for p in procs:
        p.start()
    try:
        results = dict(out.get(timeout=40) for _ in procs)
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    for r, v in results.items():
        if isinstance(v, str) and v.startswith("Traceback"):
            raise AssertionError(f"rank {r} failed:\n{v}")
    return results


def _child(target, rank, world, init_method, out, env, *extra):
    try:
        if env is not None:
            os.environ.update({k: v.format(rank=rank) for k, v in env.items()})
            dist.init_process_group("shm", init_method=init_method)
        else:
            dist.init_process_group("shm", init_method=init_method, rank=rank, world_size=world,
                                    timeout=30)
        result = target(rank, world, *extra)
        dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - reported to the test
        result = traceback.format_exc()
    out.put((rank, result))


def _collectives(rank, world):
    assert dist.is_initialized() and dist.get_rank() == rank and dist.get_world_size() == world
    assert dist.get_backend() == "shm"
    res = {}
    for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
        t = ember.from_numpy(_data(rank))
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        res[op] = t.numpy()
    # a non-contiguous view, written in place
    base = ember.from_numpy(_data(rank, (7, 5)).copy())
    view = base.t()
    dist.all_reduce(view)
    res["view"] = base.numpy()
    # integers, and a tensor larger than the first segments (they grow)
    ints = ember.arange(100_003, dtype=ember.int64) * (rank + 1)
    dist.all_reduce(ints)
    res["ints"] = ints.numpy()
    b = ember.from_numpy(_data(rank)).float()
    dist.broadcast(b, src=1)
    res["broadcast"] = b.numpy()
    outs = [ember.zeros(2, 3, dtype=ember.int32) for _ in range(world)]
    dist.all_gather(outs, ember.full((2, 3), rank + 10, dtype=ember.int32))
    res["gather"] = [o.numpy() for o in outs]
    flags = ember.tensor([rank == 0, False])
    dist.all_reduce(flags)  # SUM of bools is "any"
    res["any"] = flags.tolist()
    assert dist.barrier() is None and dist.barrier(async_op=True).wait()
    return res


@pytest.mark.parametrize("how", ["file", "tcp", "env"])
def test_collectives_match_numpy(tmp_path, how):
    env = None
    if how == "file":
        init = f"file://{tmp_path}/rendezvous"
    elif how == "tcp":
        init = f"tcp://127.0.0.1:{_free_port()}"
    else:
        init, env = "env://", {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
                               "RANK": "{rank}", "WORLD_SIZE": str(WORLD)}
    results = _launch(_collectives, WORLD, init, env=env)
    xs = np.stack([_data(r) for r in range(WORLD)])
    want = {"SUM": xs.sum(0), "AVG": xs.mean(0), "MAX": xs.max(0), "MIN": xs.min(0),
            "PRODUCT": xs.prod(0)}
    for r in range(WORLD):
        got = results[r]
        for op, ref in want.items():
            np.testing.assert_allclose(got[op], ref, rtol=1e-12, err_msg=op)
        np.testing.assert_allclose(got["view"], sum(_data(q, (7, 5)) for q in range(WORLD)))
        np.testing.assert_array_equal(got["ints"], np.arange(100_003) * sum(range(1, WORLD + 1)))
        np.testing.assert_array_equal(got["broadcast"], _data(1).astype(np.float32))
        for q in range(WORLD):
            np.testing.assert_array_equal(got["gather"][q], np.full((2, 3), q + 10))
        assert got["any"] == [True, False]
    assert not os.path.exists(tmp_path / "rendezvous")  # rank 0 removes it once all have joined
    deadline = time.monotonic() + 10
    while _group_segments() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_segments()  # every rank left: the group's shared memory is gone


def _group_segments():
    return [p for p in glob.glob("/dev/shm/ember_pg_*")]


def _dp_child(rank, world, x, y):
    nn = pytest.importorskip("ember.nn")
    ember.set_default_dtype(ember.float64)
    ember.manual_seed(rank)  # different initial weights on each rank...
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    for p in model.parameters():  # ...replaced by rank 0's, as DistributedDataParallel does
        dist.broadcast(p.detach(), src=0)
    lo, hi = rank * len(x) // world, (rank + 1) * len(x) // world  # this rank's half batch
    out = model(ember.from_numpy(x[lo:hi]))
    ((out - ember.from_numpy(y[lo:hi])) ** 2).mean().backward()
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
    return [p.detach().numpy().copy() for p in model.parameters()], \
        [p.grad.numpy().copy() for p in model.parameters()]


def _numpy_grads(params, x, y):
    """Full-batch gradients of mean((W2 tanh(W1 x + b1) + b2 - y)^2), by hand."""
    w1, b1, w2, b2 = params
    a = np.tanh(x @ w1.T + b1)
    o = a @ w2.T + b2
    d_o = 2 * (o - y) / o.size
    d_h = (d_o @ w2) * (1 - a * a)
    return [d_h.T @ x, d_h.sum(0), d_o.T @ a, d_o.sum(0)]


def test_data_parallel_gradients_equal_full_batch(tmp_path):
    pytest.importorskip("ember.nn")
    pytest.importorskip("ember.autograd")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 4)), rng.standard_normal((16, 3))
    results = _launch(_dp_child, 2, f"file://{tmp_path}/rdv", x, y)
    (params0, grads0), (params1, grads1) = results[0], results[1]
    for p0, p1 in zip(params0, params1):
        np.testing.assert_array_equal(p0, p1)  # the broadcast gave rank 1 rank 0's weights
    want = _numpy_grads(params0, x, y)
    for g0, g1, ref in zip(grads0, grads1, want):
        np.testing.assert_array_equal(g0, g1)
        np.testing.assert_allclose(g0, ref, rtol=1e-10, atol=1e-13)


def test_usage_errors(monkeypatch):
    assert ember.distributed is dist  # reachable after a plain `import ember`, as torch's
    assert not dist.is_initialized() and dist.is_available()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.all_reduce(ember.ones(2))
    if not dist.is_nccl_available():
        with pytest.raises(RuntimeError, match="nccl backend needs CuPy's NCCL"):
            dist.init_process_group("nccl", init_method="file:///nonexistent/x", rank=0,
                                    world_size=1)
    with pytest.raises(RuntimeError, match="no gloo backend"):
        dist.init_process_group("gloo", init_method="file:///nonexistent/x", rank=0, world_size=1)
    with pytest.raises(RuntimeError, match="invalid backend 'nccl' for cpu"):
        dist.init_process_group("cpu:nccl", init_method="file:///nonexistent/x", rank=0,
                                world_size=1)
    assert not dist.is_initialized()
    for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="env:// rendezvous: environment variable RANK expected"):
        dist.init_process_group("shm")
    with pytest.raises(ValueError, match="rank parameter missing"):
        dist.init_process_group("shm", init_method="tcp://127.0.0.1:1", world_size=2)
    with pytest.raises(ValueError, match="unsupported init_method"):
        dist.init_process_group("shm", init_method="udp://x:1", rank=0, world_size=1)


def test_world_of_one_in_this_process(tmp_path):
    dist.init_process_group("shm", init_method=f"file://{tmp_path}/one", rank=0, world_size=1)
    try:
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("shm", init_method=f"file://{tmp_path}/one", rank=0,
                                    world_size=1)
        t = ember.arange(5.0)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
        with pytest.raises(ValueError, match="floating-point"):
            dist.all_reduce(ember.arange(3), op=dist.ReduceOp.AVG)
        with pytest.raises(ValueError, match="Global rank 1 is not part of group"):
            dist.broadcast(t, src=1)
        with pytest.raises(ValueError, match="1 tensors, expected world_size=1|expected"):
            dist.all_gather([t, t], t)
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def _mismatched(rank, world):
    t = ember.ones(4)
    try:
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, src=0)
    except RuntimeError as e:
        return str(e)
    return "no error"


def test_ranks_calling_different_collectives_all_raise(tmp_path):
    results = _launch(_mismatched, 2, f"file://{tmp_path}/rdv")
    for r in (0, 1):
        assert "called different collectives" in results[r], results[r]
        assert "rank 0: all_reduce(float32, 16 bytes" in results[r], results[r]
        assert "rank 1: broadcast(float32, 16 bytes, src=0)" in results[r], results[r]


def _one_rank_leaves(rank, world):
    if rank == 1:
        os._exit(0)  # gone without a word
    t0 = time.monotonic()
    try:
        dist.all_reduce(ember.ones(4))
    except RuntimeError as e:
        return str(e), time.monotonic() - t0
    return "no error", 0.0


def test_a_rank_that_exits_fails_the_others_at_once(tmp_path):
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(_one_rank_leaves, r, 2, f"file://{tmp_path}/rdv",
                                              out, None)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        rank, (msg, waited) = out.get(timeout=40)
    finally:
        for p in procs:
            p.join(10)
    assert rank == 0 and "rank 1 (pid" in msg and "exited" in msg, msg
    assert waited < 10  # the group's timeout is 30 s: the death was noticed, not timed out
