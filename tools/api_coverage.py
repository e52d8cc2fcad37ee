#!/usr/bin/env python3
"""How much of torch's public API ember has, per namespace.

    python3 tools/api_coverage.py                  # the table of coverage per namespace
    python3 tools/api_coverage.py --missing 15     # ... and the first 15 missing names of each
    python3 tools/api_coverage.py --missing all --namespace Tensor
    python3 tools/api_coverage.py --write-snapshot # refresh the snapshot from the installed torch
    python3 tools/api_coverage.py --write-names    # ember/_torch_names.py, after editing absences
    python3 tools/api_coverage.py --strict         # exit 1 on stale or unknown absence entries

torch's public names come from the installed torch, or, without torch, from the snapshot checked
in beside this script (``api_coverage_torch.json``, written by ``--write-snapshot``). A name is
public when the namespace lists it in ``__all__`` or, for a name ``dir()`` shows, when it does not
start with ``_`` and is torch's own (not ``typing.Optional`` imported into the module); a module
attribute counts only when it is the namespace's own submodule.

Names ember leaves out on purpose are listed in ``api_absences.toml`` (beside this script), each
with its reason; they are excluded from the coverage figure and reported in their own column.
The computation (``coverage``) takes plain name collections, so that it runs without torch.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib
import json
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SNAPSHOT = HERE / "api_coverage_torch.json"
# What `import ember` reads to say what a missing top-level name is (ember/__init__.py's
# __getattr__): torch's top-level names and the deliberate absences among them, from the
# snapshot and ABSENCES (written with the snapshot; --check-names says whether it is current).
TORCH_NAMES_MODULE = HERE.parent / "packages/tensor-core/ember/_torch_names.py"
ABSENCES = HERE / "api_absences.toml"

# Report row -> (torch's object, ember's object), as dotted paths; "Tensor" is the class.
NAMESPACES: dict[str, tuple[str, str]] = {
    "torch": ("torch", "ember"),
    "torch.<submodule>": ("torch", "ember"),
    "Tensor": ("torch.Tensor", "ember.Tensor"),
    "nn": ("torch.nn", "ember.nn"),
    "nn.modules": ("torch.nn.modules", "ember.nn.modules"),  # the module paths scripts import
    "nn.functional": ("torch.nn.functional", "ember.nn.functional"),
    "nn.init": ("torch.nn.init", "ember.nn.init"),
    "nn.utils": ("torch.nn.utils", "ember.nn.utils"),
    "optim": ("torch.optim", "ember.optim"),
    "optim.lr_scheduler": ("torch.optim.lr_scheduler", "ember.optim.lr_scheduler"),
    "utils.data": ("torch.utils.data", "ember.utils.data"),
    "autograd": ("torch.autograd", "ember.autograd"),
    "linalg": ("torch.linalg", "ember.linalg"),
    "special": ("torch.special", "ember.special"),
    "fft": ("torch.fft", "ember.fft"),
    "distributions": ("torch.distributions", "ember.distributions"),
}

# The reasons an absence may give: the word before the first ':' of its reason.
REASONS = {
    "deprecated": "deprecated in torch (its replacement is what ember implements)",
    "internal": "an implementation detail torch exposes without documenting it",
    "torchscript": "TorchScript / JIT / FX / export machinery",
    "complex": "complex parts not built yet (complex32, some complex linear algebra)",
    "quantization": "quantized tensors and their ops",
    "sparse": "sparse layouts",
    "named-tensor": "named tensors (torch's prototype)",
    "backend": "a device or library ember does not target (XPU, MPS, MKL-DNN, FBGEMM, ...)",
    "storage": "typed storages and legacy tensor types (FloatTensor, ...)",
    "nested": "nested and jagged tensors",
    "other": "anything else; the text says what",
}


# ---- torch's side: names of a namespace ----

def _resolve(path: str):
    """The module at a dotted path, or the class when the path ends in ".Tensor"."""
    if path.endswith(".Tensor"):
        return importlib.import_module(path[: -len(".Tensor")]).Tensor
    return importlib.import_module(path)


def kind_of(value) -> str:
    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, type):
        return "class"
    if callable(value):
        return "function"
    return "other"


def _own(value) -> bool:
    """Whether `value` is torch's own (not a typing/stdlib name a torch module imports)."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return True
    module = getattr(value, "__module__", None)
    if module is None:  # a dtype, a layout, a memory format: instances of torch's C types
        module = type(value).__module__
    return isinstance(module, str) and module.split(".")[0] == "torch"


def public_names(obj, row: str) -> dict[str, str]:
    """name -> kind for the public names of one of torch's namespaces (see the module docstring;
    a class's public attributes are all those without a leading underscore).

    The "torch" row holds the top level's non-module names; "torch.<submodule>" its submodules."""
    declared = set(getattr(obj, "__all__", ())) if isinstance(obj, types.ModuleType) else set()
    base = getattr(obj, "__name__", "torch")
    found: dict[str, str] = {}
    for name in sorted(set(dir(obj)) | declared):
        if name.startswith("_"):
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is not public
            continue
        kind = kind_of(value)
        if kind == "module":
            if value.__name__ != f"{base}.{name}" and name not in declared:
                continue  # an imported module (math, warnings), not a submodule
        elif isinstance(obj, types.ModuleType) and name not in declared and not _own(value):
            continue
        if row == "torch" and kind == "module" or row == "torch.<submodule>" and kind != "module":
            continue
        found[name] = kind
    return found


def torch_names(rows) -> dict[str, dict[str, str]]:
    import torch  # noqa: F401 - the submodules below need it loaded
    for path in {p for p, _ in NAMESPACES.values()}:
        _resolve(path)
    return {row: public_names(_resolve(NAMESPACES[row][0]), row) for row in rows}


def load_snapshot(path: Path = SNAPSHOT) -> tuple[str, dict[str, dict[str, str]]]:
    data = json.loads(path.read_text())
    return data["torch_version"], data["namespaces"]


def write_snapshot(path: Path = SNAPSHOT) -> None:
    import torch

    names = torch_names(list(NAMESPACES))
    data = {"torch_version": torch.__version__.split("+")[0], "namespaces": names}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    write_torch_names_module()


def write_torch_names_module(check: bool = False) -> bool:
    """Writes ember/_torch_names.py from the snapshot; with `check`, only says if it is current."""
    version, names = load_snapshot()
    text = torch_names_module(names, load_absences(), version)
    if check:
        return TORCH_NAMES_MODULE.exists() and TORCH_NAMES_MODULE.read_text() == text
    TORCH_NAMES_MODULE.write_text(text)
    return True


def torch_names_module(names: dict[str, dict[str, str]], absences: list[Absence],
                       version: str) -> str:
    """The text of ember/_torch_names.py: torch's top-level names, and for those ember leaves
    out on purpose, the reason."""
    top = sorted(set(names["torch"]) | set(names["torch.<submodule>"]))
    reasons = {}
    for row in ("torch", "torch.<submodule>"):
        for name in names[row]:
            for a in absences:
                if a.row == row and a.matches(name):
                    reasons[name] = a.reason
                    break
    lines = [f'"""torch {version}\'s top-level names (functions, classes, submodules) and the '
             "reasons", "ember leaves some out: ember's __getattr__ says which a missing name is.",
             "",
             "Generated by tools/api_coverage.py --write-snapshot; do not edit by hand.",
             '"""', "", "# ruff: noqa: E501  (generated data: one name per line)", "",
             "TORCH_VERSION = " + repr(version), "", "NAMES = frozenset({"]
    lines += [f"    {n!r}," for n in top]
    lines += ["})", "", "LEFT_OUT = {"]
    lines += [f"    {n!r}: {r!r}," for n, r in sorted(reasons.items())]
    lines += ["}", ""]
    return "\n".join(lines)


# ---- ember's side ----

def ember_has(row: str, names) -> set[str]:
    """The names of `names` that ember's namespace for `row` has (none if it does not import).

    `names` maps each name to its kind in torch: a torch submodule counts as present where
    ember's can be imported (`from ember.utils.data.distributed import DistributedSampler`),
    even if importing the namespace does not import it."""
    path = NAMESPACES[row][1]
    try:
        obj = _resolve(path)
    except ImportError:
        return set()
    present = set()
    for name in names:
        try:
            getattr(obj, name)
        except (AttributeError, ImportError):
            if not (isinstance(names, dict) and names[name] == "module"
                    and _importable(f"{path}.{name}")):
                continue
        except Exception:  # noqa: BLE001 - an attribute that exists but fails: there, and broken
            pass
        present.add(name)
    return present


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


# ---- deliberate absences ----

@dataclass
class Absence:
    row: str
    pattern: str  # a name or an fnmatch pattern
    reason: str

    @property
    def category(self) -> str:
        return self.reason.split(":", 1)[0].strip()

    @property
    def is_pattern(self) -> bool:
        return any(c in self.pattern for c in "*?[")

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.pattern)


def _read_toml_subset(text: str) -> dict[str, dict[str, str]]:
    """The TOML the absences file is written in: ``[table]`` or ``["table"]`` headers and
    ``"key" = "value"`` lines (basic strings), comments and blank lines. Read here rather than
    with tomllib, which Python 3.10 (ember's oldest) lacks; the tests compare both."""
    data: dict[str, dict[str, str]] = {}
    table = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise ValueError(f"absences, line {number}: a table header ends with ']'")
            name = line[1:-1].strip()
            table = ast.literal_eval(name) if name.startswith('"') else name
            if table in data:
                raise ValueError(f"absences, line {number}: table [{table}] defined twice")
            data[table] = {}
            continue
        key, sep, value = line.partition(" = ")
        if not sep or table is None or not key.startswith('"') or not value.startswith('"'):
            raise ValueError(f"absences, line {number}: expected '\"name\" = \"reason\"' "
                             f"inside a [table], got {raw!r}")
        key, value = ast.literal_eval(key), ast.literal_eval(value)
        if key in data[table]:
            raise ValueError(f"absences, line {number}: [{table}] {key!r} listed twice")
        data[table][key] = value
    return data


def parse_absences(text: str) -> list[Absence]:
    """The entries of an absences file: a TOML table per row, ``"name-or-pattern" = "reason"``."""
    data = _read_toml_subset(text)
    out = []
    for row, entries in data.items():
        if row not in NAMESPACES:
            raise ValueError(f"absences: unknown namespace [{row}] "
                             f"(known: {', '.join(NAMESPACES)})")
        for pattern, reason in entries.items():
            if not isinstance(reason, str) or not reason.strip():
                raise ValueError(f"absences: [{row}] {pattern!r} needs a reason")
            absence = Absence(row, pattern, reason)
            if absence.category not in REASONS:
                raise ValueError(f"absences: [{row}] {pattern!r}: reason {reason!r} does not start "
                                 f"with one of {', '.join(REASONS)}")
            out.append(absence)
    return out


def load_absences(path: Path = ABSENCES) -> list[Absence]:
    return parse_absences(path.read_text())


# ---- the computation ----

@dataclass
class Coverage:
    row: str
    total: int  # torch's public names
    absent_by_design: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # names ember has although an absence lists them by name: the entry is stale (a pattern may
    # cover names ember has: UntypedStorage beside the typed "*Storage")
    stale: list[str] = field(default_factory=list)

    @property
    def counted(self) -> int:
        return len(self.present) + len(self.missing)

    @property
    def percent(self) -> float:
        return 100.0 * len(self.present) / self.counted if self.counted else 100.0


def coverage(row: str, torch_side, ember_side, absences: list[Absence]) -> Coverage:
    """Coverage of one row: `torch_side` the names torch has, `ember_side` those ember has."""
    mine = [a for a in absences if a.row == row]
    result = Coverage(row, len(torch_side))
    ember_side = set(ember_side)
    for name in sorted(torch_side):
        excused = [a for a in mine if a.matches(name)]
        if name in ember_side:
            result.present.append(name)
            if any(not a.is_pattern for a in excused):
                result.stale.append(name)
        elif excused:
            result.absent_by_design.append(name)
        else:
            result.missing.append(name)
    return result


def unused_absences(absences: list[Absence],
                    torch_side: dict[str, dict[str, str]]) -> list[Absence]:
    """Entries that match none of torch's names (a typo, or a name torch has dropped)."""
    return [a for a in absences if a.row in torch_side
            and not any(a.matches(n) for n in torch_side[a.row])]


def table(results: list[Coverage]) -> str:
    head = ("namespace", "torch", "absent by design", "counted", "ember has", "missing", "coverage")
    rows = [head] + [
        (r.row, str(r.total), str(len(r.absent_by_design)), str(r.counted), str(len(r.present)),
         str(len(r.missing)), f"{r.percent:.1f}%")
        for r in results
    ]
    total_present = sum(len(r.present) for r in results)
    total_counted = sum(r.counted for r in results)
    rows.append(("all", str(sum(r.total for r in results)),
                 str(sum(len(r.absent_by_design) for r in results)), str(total_counted),
                 str(total_present), str(total_counted - total_present),
                 f"{100.0 * total_present / total_counted if total_counted else 100.0:.1f}%"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = []
    for i, r in enumerate(rows):
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "|".join("-" * (w + 1) + (":" if j else "-")
                                        for j, w in enumerate(widths)) + "|")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--missing", metavar="N", help="list the first N missing names per "
                        "namespace ('all' for every one)")
    parser.add_argument("--namespace", action="append", choices=list(NAMESPACES),
                        help="only these rows (repeatable)")
    parser.add_argument("--snapshot", action="store_true",
                        help="use the checked-in snapshot even where torch is installed")
    parser.add_argument("--write-snapshot", action="store_true",
                        help="rewrite the snapshot from the installed torch and exit")
    parser.add_argument("--write-names", action="store_true",
                        help=f"rewrite {TORCH_NAMES_MODULE.name} from the snapshot and the "
                             "absences (no torch needed) and exit")
    parser.add_argument("--check-names", action="store_true",
                        help=f"exit 1 unless {TORCH_NAMES_MODULE.name} is current (snapshot and "
                             "absences) and exit")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when an absence entry is stale or matches nothing")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)

    if args.write_snapshot:
        write_snapshot()
        print(f"wrote {SNAPSHOT.name} and {TORCH_NAMES_MODULE.name}")
        return 0
    if args.write_names:
        write_torch_names_module()
        print(f"wrote {TORCH_NAMES_MODULE.name}")
        return 0
    if args.check_names:
        if write_torch_names_module(check=True):
            return 0
        print(f"{TORCH_NAMES_MODULE.name} is stale: run tools/api_coverage.py --write-names "
              "(after editing the absences) or --write-snapshot (with a new torch)",
              file=sys.stderr)
        return 1
    rows = args.namespace or list(NAMESPACES)
    source = "snapshot"
    if not args.snapshot:
        try:
            import torch

            names = torch_names(rows)
            source = f"torch {torch.__version__.split('+')[0]} (installed)"
        except ImportError:
            pass
    if source == "snapshot":
        version, all_names = load_snapshot()
        names = {row: all_names[row] for row in rows}
        source = f"torch {version} (snapshot {SNAPSHOT.name})"
    absences = load_absences()
    # every ember namespace imported first: ember-autograd and ember-nn add Tensor methods
    # (backward, register_hook, ...), which must count whatever the order of the rows
    for _, ember_path in NAMESPACES.values():
        try:
            _resolve(ember_path)
        except ImportError:
            pass
    results = [coverage(row, names[row], ember_has(row, names[row]), absences) for row in rows]

    if args.json:
        print(json.dumps({r.row: {"total": r.total, "absent_by_design": r.absent_by_design,
                                  "present": len(r.present), "missing": r.missing,
                                  "percent": round(r.percent, 1), "stale": r.stale}
                          for r in results}, indent=1))
    else:
        print(f"ember's coverage of torch's public names ({source}; absences: {ABSENCES.name})\n")
        print(table(results))
        if args.missing:
            limit = None if args.missing == "all" else int(args.missing)
            for r in results:
                if r.missing:
                    shown = r.missing[:limit]
                    more = f" ... and {len(r.missing) - len(shown)} more" if limit and len(
                        r.missing) > limit else ""
                    print(f"\n{r.row}: missing {len(r.missing)}: " + ", ".join(shown) + more)
    problems = []
    for r in results:
        if r.stale:
            problems.append(f"{r.row}: listed as absent but ember has: {', '.join(r.stale)}")
    for a in unused_absences(absences, names):
        problems.append(f"{a.row}: absence {a.pattern!r} matches none of torch's names")
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    return 1 if args.strict and problems else 0


if __name__ == "__main__":
    sys.exit(main())
