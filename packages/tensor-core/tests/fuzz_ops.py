"""A fuzzer of ember's Python surface: every public function of ``ember`` and method of
``ember.Tensor`` called with random arguments, as a new user's mistakes would be: 0-d,
zero-size, non-contiguous and expanded (overlapping) tensors of every dtype, NaN and inf, negative
and huge integers, out-of-range indices and dims, wrong Python types, ``out=`` tensors.

Ops declared in the op registry (``ember._C._ops()``) get half their calls built from their
schemas: every parameter a value of its type, mostly valid, sometimes hostile or mistyped.

Each call is generated as Python source over a module name ``m`` (``m.tensor(...)``,
``(m.arange(6.0).reshape(2, 3).t()).sum(-3)``), so that the same text runs on ember and, where
it is installed, on torch, and a failure's reproducer is the text itself. Calls run in worker
processes, so a crash or a hang is caught, reported with its reproducer, and the run goes on in
a fresh worker. Workers run with a cap on their address space, so a huge allocation is a
MemoryError rather than the machine's memory. With torch, a call ember does not finish within
the time limit is timed on torch alone: a hang if torch finishes it, else work that neither
finishes in the limit (a 16-bit window of 2**31 elements), reported as such.

Outcomes per call: ember returned, or raised which class; with torch, whether the two agree
(both raise the same class, or both return the same values). The test suite's quick form
(tests/test_fuzz.py) asserts no crash and no hang; the long form is
``python tests/fuzz_ops.py --calls 100000`` (nox session ``fuzz``), which also prints the
disagreements with torch by kind.
"""

from __future__ import annotations

import argparse
import collections
import math
import multiprocessing as mp
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass

import fuzz_torch_differences

# ---------------------------------------------------------------------------------------------
# what is not fuzzed, and why

# Functions that change process-wide state that later calls in the same worker would see (a
# reproducer must be one call), that wait for something, or that belong to other fuzzers.
SKIPPED = {
    "set_default_dtype": "process-wide state",
    "set_default_device": "process-wide state",
    "set_default_tensor_type": "process-wide state",
    "set_num_threads": "process-wide state (covered by the thread tests)",
    "set_num_interop_threads": "process-wide state",
    "set_printoptions": "process-wide state",
    "set_flush_denormal": "process-wide state",
    "use_deterministic_algorithms": "process-wide state",
    "set_grad_enabled": "process-wide state",
    "set_autocast_enabled": "process-wide state",
    "manual_seed": "process-wide state",
    "seed": "process-wide state",
    "load": "reads files: the crafted-checkpoint fuzzer covers it",
    "save": "writes files",
    "from_file": "reads files",
    "compile": "compiles programs",
    "share_memory_": "creates shared-memory segments (the mp tests cover them)",
}
# Ops whose results are random: compared by shape and dtype only.
RANDOM_WORDS = ("rand", "bernoulli", "normal", "multinomial", "dropout", "uniform", "exponential",
                "geometric", "cauchy", "log_normal", "random", "poisson", "empty", "seed",
                "rrelu", "lowrank", "binomial")

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128", "uint16", "uint32", "uint64")
SHAPES = ((), (0,), (1,), (3,), (2, 3), (3, 1), (1, 4, 1), (2, 0, 3), (4, 4), (2, 3, 4))
INTS = (0, 1, -1, 2, 3, -2, 5, 2**31, -(2**31) - 1, 2**62, -(2**62), 2**63 - 1, -(2**63))
FLOATS = ("0.5", "-2.5", "1e-30", "1e300", "nan", "inf", "-inf", "-0.0")
INT_LISTS = ("[]", "[1]", "[2, 3]", "[-1]", "[0, 0]", "[2**62, 4]", "[-2, 1]", "(1, 2, 3)",
             "[3, -1]", "(0,)", "[1, 1, 1, 1, 1, 1, 1, 1, 1]")
OTHERS = ("None", "True", "False", "'sum'", "'mean'", "'abc'", "'cpu'", "''", "[[1], 2]",
          "[1.5, 'a']", "object()", "{}", "slice(1, 2)", "...")


# ---------------------------------------------------------------------------------------------
# generating a call


def tensor_src(rng: random.Random, shape=None, dtype=None) -> str:
    """Source of a tensor that ember and torch both build the same way."""
    shape = rng.choice(SHAPES) if shape is None else shape
    dtype = rng.choice(DTYPES) if dtype is None else dtype
    n = math.prod(shape)
    if dtype in ("float16", "bfloat16", "float32", "float64") and rng.random() < 0.15 and n:
        specials = "[nan, inf, -inf, -0.0, 1.5, -3.0, 65504.0, 1e-8]"
        base = f"m.tensor(({specials} * {n // 8 + 1})[:{n}], dtype=m.float64)"
    elif dtype.startswith("uint") or dtype == "bool":
        base = f"(m.arange({n}) % 7)"
    else:
        scale = rng.choice(("1", "0.5", "-0.75", "1.25"))
        base = f"((m.arange({n}) % 11 - 5) * {scale})"
    if dtype.startswith("complex"):  # an imaginary part too
        base = f"({base} * (1 - 0.5j))"
    src = f"{base}.reshape({list(shape)}).to(m.{dtype})"
    nd = len(shape)
    layout = rng.random()
    if layout < 0.15 and nd >= 2:
        src = f"{src}.transpose(0, {nd - 1})"
    elif layout < 0.25 and nd >= 1:
        src = f"{src}.unsqueeze(0).expand(2, {', '.join(str(s) for s in shape)})"  # stride 0
    elif layout < 0.32 and nd >= 1 and shape[-1] >= 2:
        src = f"{src}[..., ::2]"
    return src


def index_src(rng: random.Random) -> str:
    shape = rng.choice(((), (0,), (1,), (2,), (3,), (2, 2)))
    lo, hi = rng.choice(((0, 3), (-3, 3), (0, 100), (-(2**62), 2**62)))
    n = math.prod(shape)
    vals = [rng.randint(lo, hi) for _ in range(n)]
    return f"m.tensor({vals}, dtype=m.int64).reshape({list(shape)})"


def arg_src(rng: random.Random, self_shape=None, position: int = 0) -> str:
    """An argument at `position` after the tensor operand: mostly what ops take there (a
    tensor like self, a dim, a size), sometimes anything."""
    if rng.random() < 0.85:  # plausible
        if position == 0 and rng.random() < 0.5:
            return tensor_src(rng, self_shape if rng.random() < 0.7 else None)
        if rng.random() < 0.5:
            return str(rng.choice((0, 1, -1, 2, 3, -2)))
        return rng.choice(("[1]", "[2, 3]", "(0, 1)", "0.5", "-2.5", "True", index_src(rng)))
    r = rng.random()
    if r < 0.35:  # tensors like self (broadcastable), or any
        shape = self_shape if (self_shape is not None and rng.random() < 0.6) else None
        return tensor_src(rng, shape)
    if r < 0.55:
        return str(rng.choice(INTS))
    if r < 0.62:
        return rng.choice(FLOATS)
    if r < 0.72:
        return rng.choice(INT_LISTS)
    if r < 0.78:
        return f"m.{rng.choice(DTYPES)}"
    if r < 0.86:
        return index_src(rng)
    if r < 0.9:
        return f"m.tensor({[rng.random() < 0.5 for _ in range(3)]})"
    return rng.choice(OTHERS)


def kwargs_src(rng: random.Random, self_shape) -> list[str]:
    out = []
    if rng.random() < 0.2:
        out.append(f"dim={rng.choice((0, -1, 1, 2, 5, -7, 2**62))}")
    if rng.random() < 0.1:
        out.append(f"keepdim={rng.choice(('True', 'False'))}")
    if rng.random() < 0.08:
        out.append(f"dtype=m.{rng.choice(DTYPES)}")
    if rng.random() < 0.08:
        out.append(f"out={tensor_src(rng, rng.choice((self_shape, (0,), (7,))))}")
    return out


# ---- calls built from the op registry's schemas (ember._C._ops()) ----
# Half the calls of an op the registry declares follow one of its signatures: every parameter
# gets a value of its type (sometimes hostile: huge dims, NaN, a wrong Python type), optional
# ones are sometimes left out, keyword-only ones are passed by name. The rest stay free-form,
# as for the ops outside the registry, so that argument parsing itself is fuzzed too.


def registry_signatures(module) -> dict[tuple[str, str], list[str]]:
    """{(variant, name): signatures} for the registry's ops; empty without a registry."""
    ops = getattr(getattr(module, "_C", None), "_ops", None)
    if ops is None:
        return {}
    table: dict[tuple[str, str], list[str]] = {}
    for row in ops():
        for variant in row["variants"]:
            table[(variant, row["name"])] = row["signatures"]
    return table


def _schema_params(signature: str) -> list[tuple[str, str, bool, bool]]:
    """(type, name, has_default, keyword_only) per parameter of a schema string."""
    inner = signature[signature.index("(") + 1: signature.rindex(") ->")]
    params, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            params.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        params.append(cur.strip())
    out, kw_only = [], False
    for p in params:
        if p == "*":
            kw_only = True
            continue
        typ, _, rest = p.partition(" ")
        name, eq, _ = rest.partition("=")
        out.append((typ, name, bool(eq), kw_only))
    return out


def value_src(rng: random.Random, typ: str, self_shape) -> str:
    """A value of schema type `typ`: mostly valid, sometimes hostile, now and then mistyped."""
    if rng.random() < 0.06:
        return rng.choice(OTHERS)
    optional = typ.endswith("?")
    base = typ.rstrip("?")
    if optional and rng.random() < 0.25:
        return "None"
    if base == "Tensor":
        return tensor_src(rng, self_shape if rng.random() < 0.7 else None)
    if base == "Tensor[]":
        return f"[{', '.join(tensor_src(rng, self_shape) for _ in range(rng.choice((0, 1, 2, 3))))}]"
    if base == "Tensor|Scalar":
        return (tensor_src(rng, self_shape) if rng.random() < 0.6
                else rng.choice(("2", "-1", "0.5", "True", "nan", "2**63 - 1", "1e300")))
    if base in ("int", "SymInt"):
        return str(rng.choice((0, 1, -1, 2)) if rng.random() < 0.75 else rng.choice(INTS))
    if base.startswith("int["):
        if rng.random() < 0.3:
            return str(rng.choice((0, -1, 1)))
        return rng.choice(INT_LISTS) if rng.random() < 0.4 else rng.choice(("[0]", "[-1]", "(0, 1)"))
    if base == "float":
        return rng.choice(("0.5", "2.0", "1e-5") if rng.random() < 0.7 else FLOATS)
    if base == "bool":
        return rng.choice(("True", "False"))
    if base == "Scalar":
        return rng.choice(("2", "-1", "0.5", "True", "nan", "-inf", "2**70", "1e300"))
    if base == "ScalarType":
        return f"m.{rng.choice(DTYPES)}"
    if base == "str":
        return rng.choice(("'trunc'", "'floor'", "'fro'", "'abc'", "''"))
    return arg_src(rng, self_shape)


def schema_call_args(rng: random.Random, signature: str, self_shape, method: bool):
    """(source of the self tensor or None, argument sources) for one signature."""
    params = _schema_params(signature)
    self_src = None
    if method and params and params[0][0].rstrip("?").startswith("Tensor"):
        self_src = tensor_src(rng, self_shape)
        params = params[1:]
    args, by_name = [], False
    for typ, name, has_default, kw_only in params:
        if method and name == "out":
            continue
        if has_default and rng.random() < 0.5:
            by_name = True  # skipped: later ones must go by name
            continue
        value = value_src(rng, typ, self_shape)
        by_name = by_name or kw_only or rng.random() < 0.15  # once by name, the rest too
        args.append(f"{name}={value}" if by_name else value)
    return self_src, args


@dataclass
class Call:
    index: int
    name: str
    src: str


def make_call(seed: int, index: int, functions: list[str], methods: list[str],
              signatures: dict | None = None) -> Call:
    """The `index`-th call of a run: the same (seed, index) always gives the same source.
    `signatures`: registry_signatures(ember), for calls built from the ops' schemas."""
    rng = random.Random(seed * 1_000_003 + index)
    is_method = rng.random() < 0.5
    name = rng.choice(methods if is_method else functions)
    self_shape = rng.choice(SHAPES)
    declared = (signatures or {}).get(("method" if is_method else "function", name))
    if declared and rng.random() < 0.5:
        self_src, args = schema_call_args(rng, rng.choice(declared), self_shape, is_method)
        if is_method and self_src is not None:
            src = f"({self_src}).{name}({', '.join(args)})"
        else:
            target = f"({tensor_src(rng, self_shape)})" if is_method else "m"
            src = f"{target}.{name}({', '.join(args)})"
        return Call(index, ("Tensor." if is_method else "") + name, src)
    args = [arg_src(rng, self_shape, i) for i in range(rng.choice((0, 0, 1, 1, 1, 2, 2, 3)))]
    args += kwargs_src(rng, self_shape)
    if is_method:
        src = f"({tensor_src(rng, self_shape)}).{name}({', '.join(args)})"
    else:
        if rng.random() < 0.7:  # most functions take a tensor first
            args.insert(0, tensor_src(rng, self_shape))
        src = f"m.{name}({', '.join(args)})"
    return Call(index, ("Tensor." if is_method else "") + name, src)


def surface(module) -> tuple[list[str], list[str]]:
    """The public functions of `module` and methods of its Tensor, minus SKIPPED."""
    functions = sorted(n for n in dir(module) if not n.startswith("_") and n not in SKIPPED
                       and callable(getattr(module, n, None))
                       and not isinstance(getattr(module, n), type(module)))
    methods = sorted(n for n in dir(module.Tensor) if not n.startswith("_") and n not in SKIPPED
                     and callable(getattr(module.Tensor, n, None)))
    return functions, methods


# ---------------------------------------------------------------------------------------------
# running a call and describing its outcome


def _to_numpy(x, module):
    import numpy as np

    if x.dtype == module.bfloat16:
        x = x.float()
    if hasattr(x, "resolve_conj"):  # torch's lazy conjugate and negative bits, written out
        x = x.resolve_conj().resolve_neg()
    return np.array(x.detach().cpu().numpy() if hasattr(x, "detach") else x.numpy(), copy=True)


def describe(result, module, depth: int = 0):
    """A comparable, fully read description of a result: every tensor's bytes are read (a bad
    view crashes here, inside the worker), tuples recursively."""
    if isinstance(result, module.Tensor):
        if result.numel() > 1_000_000:
            return ("tensor", tuple(result.shape), str(result.dtype).split(".")[-1], None)
        return ("tensor", tuple(result.shape), str(result.dtype).split(".")[-1],
                _to_numpy(result, module))
    if isinstance(result, (tuple, list)) and depth < 3:
        return ("seq", tuple(describe(r, module, depth + 1) for r in list(result)[:64]))
    if isinstance(result, (bool, int, float, complex, str, type(None))):
        return ("value", result)
    return ("object", type(result).__name__)


# Process-wide state that a call of an unskipped function can leave changed (torch's
# set_autocast_dtype, a no_grad's __enter__ without __exit__): saved before each call and put
# back after it, so that no call sees another's state (one left torch's autocast dtype at
# float16, and later calls in that worker failed inside torch). (getter, setter, arguments)
_PROCESS_STATE = (
    ("is_autocast_enabled", "set_autocast_enabled", ("cpu",)),
    ("is_autocast_enabled", "set_autocast_enabled", ("cuda",)),
    ("get_autocast_dtype", "set_autocast_dtype", ("cpu",)),
    ("get_autocast_dtype", "set_autocast_dtype", ("cuda",)),
    ("is_autocast_cache_enabled", "set_autocast_cache_enabled", ()),
    ("is_grad_enabled", "set_grad_enabled", ()),
    ("get_default_dtype", "set_default_dtype", ()),
)


def _saved_state(module) -> list:
    saved = []
    for getter, setter, args in _PROCESS_STATE:
        try:
            saved.append((getattr(module, setter), args, getattr(module, getter)(*args)))
        except Exception:  # noqa: BLE001 - a framework without this switch
            pass
    return saved


def _restore_state(saved) -> None:
    for setter, args, value in saved:
        try:
            setter(*args, value)
        except Exception:  # noqa: BLE001
            pass


def run_one(src: str, module):
    """('ok', description) or ('raise', class name, message)."""
    import warnings

    env = {"m": module, "nan": math.nan, "inf": math.inf}
    saved = _saved_state(module)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = eval(src, env)
            return ("ok", describe(result, module))
    except Exception as e:  # noqa: BLE001 - the class is the outcome
        return ("raise", type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
    finally:
        _restore_state(saved)


def same_description(a, b, random_op: bool) -> bool:
    import numpy as np

    if a[0] != b[0]:
        return False
    if a[0] == "tensor":
        if a[1] != b[1] or a[2] != b[2]:
            return False
        if random_op or a[3] is None or b[3] is None:
            return True
        x, y = a[3], b[3]
        if x.dtype.kind in "fc":
            tol = {"float16": 1e-3, "bfloat16": 1e-2}.get(a[2], 1e-5)
            return bool(np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True))
        return bool(np.array_equal(x, y))
    if a[0] == "seq":
        return len(a[1]) == len(b[1]) and all(
            same_description(p, q, random_op) for p, q in zip(a[1], b[1]))
    if a[0] == "value":
        if isinstance(a[1], float) and isinstance(b[1], float):
            return (math.isnan(a[1]) and math.isnan(b[1])) or math.isclose(
                a[1], b[1], rel_tol=1e-5, abs_tol=1e-6) or random_op
        return a[1] == b[1] or random_op or isinstance(a[1], str)
    return True  # other objects: compared by kind only


def compare(name: str, ours, theirs) -> str:
    """The kind of (dis)agreement of ember's outcome with torch's."""
    random_op = any(w in name.lower() for w in RANDOM_WORDS)
    if ours[0] == "raise" and theirs[0] == "raise":
        # (torch.linalg.LinAlgError is the class torch._C._LinAlgError)
        same = ours[1] == theirs[1].replace("_LinAlgError", "LinAlgError")
        return "agree" if same else "exception class differs"
    if ours[0] == "raise":
        return "ember refuses what torch accepts"
    if theirs[0] == "raise":
        return "ember accepts what torch refuses"
    return "agree" if same_description(ours[1], theirs[1], random_op) else "result differs"


# ---------------------------------------------------------------------------------------------
# workers


def _limit_memory(nbytes: int) -> None:
    import resource

    if "asan" in os.environ.get("LD_PRELOAD", ""):  # ASan reserves terabytes of shadow memory
        return
    resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))


def _worker(conn, seed: int, with_torch: bool, memory: int) -> None:
    _limit_memory(memory)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import ember

    ember.set_num_threads(1)
    torch = None
    if with_torch:
        import torch

        torch.set_num_threads(1)
    functions, methods = surface(ember)
    signatures = registry_signatures(ember)
    while True:
        index = conn.recv()
        if index is None:
            return
        torch_only = isinstance(index, tuple)  # ("torch", index): timing torch's side alone
        index = index[1] if torch_only else index
        call = make_call(seed, index, functions, methods, signatures)
        if not torch_only:
            ours = run_one(call.src, ember)
            conn.send(("ember", index, ours))
        if torch is not None:
            name = call.name.split(".")[-1]
            exists = hasattr(torch.Tensor if call.name.startswith("Tensor.") else torch, name)
            conn.send(("torch", index, run_one(call.src, torch) if exists else None))


@dataclass
class Report:
    calls: int = 0
    crashes: list = None
    hangs: list = None
    torch_crashes: list = None
    slow: list = None  # calls that neither ember nor torch finished within the time limit
    ember_raised: collections.Counter = None
    kinds: collections.Counter = None
    listed: collections.Counter = None  # deliberate disagreements, by reason
    unlisted: collections.Counter = None  # the others, by kind
    examples: dict = None  # the unlisted disagreements, by kind
    seconds: float = 0.0

    def __post_init__(self):
        self.crashes, self.hangs, self.torch_crashes, self.slow = [], [], [], []
        self.ember_raised = collections.Counter()
        self.kinds = collections.Counter()
        self.listed = collections.Counter()
        self.unlisted = collections.Counter()
        self.examples = collections.defaultdict(list)


def run(calls: int, seed: int = 0, workers: int = 2, with_torch: bool = False,
        timeout: float = 20.0, memory: int = 6 << 30, progress: bool = False,
        keep: int = 2000) -> Report:
    """Runs `calls` generated calls over `workers` worker processes; keeps up to `keep`
    disagreements with torch of each kind."""
    import ember

    functions, methods = surface(ember)
    signatures = registry_signatures(ember)
    ctx = mp.get_context("spawn")
    report = Report()
    start = time.monotonic()
    pending = iter(range(calls))
    slots = []

    def spawn():
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(child, seed, with_torch, memory), daemon=True)
        p.start()
        child.close()
        return {"proc": p, "conn": parent, "index": None, "since": 0.0, "stage": None}

    # Calls ember did not finish in time, to be timed with torch alone: a call that torch
    # cannot finish in that time either (a window of 2**31 elements) is work, not a hang.
    pending_torch: list = []

    def feed(slot) -> bool:
        if pending_torch:
            index = pending_torch.pop()
            slot["index"], slot["since"], slot["stage"] = index, time.monotonic(), "torch-alone"
            slot["conn"].send(("torch", index))
            return True
        index = next(pending, None)
        if index is None:
            slot["conn"].send(None)
            return False
        slot["index"], slot["since"], slot["stage"] = index, time.monotonic(), "ember"
        slot["conn"].send(index)
        return True

    def record_failure(slot, what: str):
        call = make_call(seed, slot["index"], functions, methods, signatures)
        if slot["stage"] == "torch-alone":
            # torch timed alone on a call ember did not finish: a hang only if torch finishes
            if what == "hang":
                report.slow.append(call.src)
                report.calls += 1  # a call that ran, for as long as torch's
            else:
                report.hangs.append(call.src)
        elif slot["stage"] == "torch":
            report.torch_crashes.append((call.src, what))
        elif what == "hang" and with_torch:
            pending_torch.append(slot["index"])  # decided once torch's time is known
        elif what == "hang":
            report.hangs.append(call.src)
        else:
            report.crashes.append((call.src, what))
        slot["proc"].kill()
        slot["proc"].join()

    for _ in range(workers):
        s = spawn()
        if feed(s):
            slots.append(s)
        else:
            s["proc"].join()
    while slots:
        for slot in list(slots):
            conn, proc = slot["conn"], slot["proc"]
            if conn.poll(0.01):
                try:
                    who, index, outcome = conn.recv()
                except (EOFError, ConnectionResetError):
                    proc.join()
                    record_failure(slot, f"worker died with exit code {proc.exitcode}")
                    slots.remove(slot)
                    fresh = spawn()
                    if feed(fresh):
                        slots.append(fresh)
                    continue
                if slot["stage"] == "torch-alone":  # torch finished what ember did not
                    report.hangs.append(
                        make_call(seed, index, functions, methods, signatures).src)
                elif who == "ember":
                    report.calls += 1
                    slot["ours"] = outcome
                    if outcome[0] == "raise":
                        report.ember_raised[outcome[1]] += 1
                    if with_torch:
                        slot["stage"] = "torch"
                        continue
                else:
                    call = make_call(seed, index, functions, methods, signatures)
                    if outcome is None:
                        report.kinds["torch has no such name"] += 1
                    else:
                        kind = compare(call.name, slot["ours"], outcome)
                        report.kinds[kind] += 1
                        reason = None if kind == "agree" else fuzz_torch_differences.reason_for(
                            call.name, kind, slot["ours"], outcome, call.src)
                        if reason is not None:
                            report.listed[reason] += 1
                        elif kind != "agree":
                            report.unlisted[kind] += 1
                        if reason is None and kind != "agree" and len(report.examples[kind]) < keep:
                            report.examples[kind].append((call.name, call.src, slot["ours"],
                                                          outcome))
                if progress and report.calls % 1000 == 0 and who == "ember":
                    print(f"  {report.calls} calls, {len(report.crashes)} crashes, "
                          f"{len(report.hangs)} hangs", file=sys.stderr, flush=True)
                if not feed(slot):
                    proc.join()
                    slots.remove(slot)
            elif not proc.is_alive():
                proc.join()
                record_failure(slot, f"worker died with exit code {proc.exitcode}")
                slots.remove(slot)
                fresh = spawn()
                if feed(fresh):
                    slots.append(fresh)
            elif time.monotonic() - slot["since"] > timeout:
                record_failure(slot, "hang")
                slots.remove(slot)
                fresh = spawn()
                if feed(fresh):
                    slots.append(fresh)
    report.seconds = time.monotonic() - start
    return report


def print_report(report: Report, examples: int = 5) -> None:
    print(f"{report.calls} calls in {report.seconds:.0f} s: {len(report.crashes)} crashes, "
          f"{len(report.hangs)} hangs, {len(report.torch_crashes)} torch crashes")
    for src, what in report.crashes:
        print(f"  CRASH ({what}): {src}")
    for src in report.hangs:
        print(f"  HANG: {src}")
    for src, what in report.torch_crashes:
        print(f"  torch crash ({what}): {src}")
    for src in report.slow:
        print(f"  slow in both (torch did not finish in the limit either: work, not a hang): {src}")
    print("ember raised:", dict(report.ember_raised.most_common()))
    if report.kinds:
        print("against torch:", dict(report.kinds.most_common()))
        print(f"deliberate (tests/fuzz_torch_differences.py): {sum(report.listed.values())}")
        for reason, n in report.listed.most_common():
            print(f"  {n:6d}  {reason[:110]}")
        print(f"not listed: {sum(report.unlisted.values())} {dict(report.unlisted.most_common())}")
        for kind, items in report.examples.items():
            by_name = collections.Counter(name for name, *_ in items)
            print(f"\n== {kind}: {len(items)} calls; by op: {dict(by_name.most_common(25))}")
            for _name, src, ours, theirs in items[:examples]:
                print(f"  {src}\n    ember: {ours[:3] if ours[0] == 'raise' else 'returned'}"
                      f"\n    torch: {theirs[:3] if theirs[0] == 'raise' else 'returned'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--torch", action="store_true", help="compare every call with torch")
    parser.add_argument("--dump", metavar="PATH",
                        help="write every disagreement with torch to PATH, one JSON line each")
    parser.add_argument("--examples", type=int, default=5,
                        help="examples printed per kind of disagreement")
    args = parser.parse_args(argv)
    try:
        report = run(args.calls, args.seed, args.workers, args.torch, progress=True,
                     keep=args.calls if args.dump else 2000)
    except Exception:
        traceback.print_exc()
        return 2
    if args.dump:
        import json

        with open(args.dump, "w") as f:
            for kind, items in report.examples.items():
                for name, src, ours, theirs in items:
                    f.write(json.dumps({"kind": kind, "name": name, "src": src,
                                        "ember": list(ours[:3]) if ours[0] == "raise" else "ok",
                                        "torch": list(theirs[:3]) if theirs[0] == "raise"
                                        else "ok"}, default=str) + "\n")
    print_report(report, args.examples)
    return 1 if report.crashes or report.hangs else 0


if __name__ == "__main__":
    sys.exit(main())
