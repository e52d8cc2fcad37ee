"""ember's public surface, generated from the op registry (tools/gen_public_surface.py): the type
stubs, ``ember.__all__`` and the op reference are current, and say what the runtime does."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import ember

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "tools" / "gen_public_surface.py"
STUB = Path(ember.__file__).resolve().parent / "_C.pyi"

needs_repo = pytest.mark.skipif(not GENERATOR.exists(), reason="needs the repository's tools/")


@needs_repo
def test_generated_files_are_current():
    out = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def _stub_tree():
    if not STUB.exists():
        pytest.skip("the installed ember has no _C.pyi beside it")
    return ast.parse(STUB.read_text())


def _defs(body) -> dict[str, list[ast.FunctionDef]]:
    found: dict[str, list[ast.FunctionDef]] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef):
            found.setdefault(node.name, []).append(node)
    return found


def test_every_registered_op_is_in_the_stubs_with_its_parameters():
    tree = _stub_tree()
    functions = _defs(tree.body)
    tensor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = _defs(tensor.body)
    for row in ember._C._ops():
        for variant, table in (("function", functions), ("method", methods)):
            if variant not in row["variants"]:
                continue
            defs = table.get(row["name"])
            assert defs, f"{variant} {row['name']} missing from _C.pyi"
            # one @overload per signature, plus torch's separate-ints form (zeros(2, 3)); a
            # Scalar-self overload (remainder(Scalar self, Tensor other)) is the function's only
            defs = [d for d in defs if d.args.vararg is None]
            signatures = [s for s in row["signatures"] if variant == "function"
                          or not s[s.index("(") + 1:].startswith("Scalar ")]
            assert len(defs) == len(signatures), row["name"]
            for node, sig in zip(defs, signatures):
                stub_names = [a.arg for a in node.args.args + node.args.kwonlyargs]
                schema_names = [p.split("=")[0].split(" ")[-1].rstrip("_")
                                for p in sig[sig.index("(") + 1: sig.rindex(") ->")].split(", ")
                                if p != "*"]
                if variant == "method":  # self for the first tensor, no out=
                    schema_names = [n for n in schema_names[1:] if n != "out"]
                    stub_names = stub_names[1:]
                assert [n.rstrip("_") for n in stub_names] == schema_names, (row["name"], sig)


def test_stub_covers_the_core_module():
    tree = _stub_tree()
    declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {t.target.id for t in tree.body
                 if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)}
    declared |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom)
                 for a in n.names}
    missing = [n for n in dir(ember._C) if not n.startswith("__") and n not in declared
               and n not in ("_make_device", "strided")]
    assert not missing, missing


def test_all_lists_every_public_name_and_only_existing_ones():
    public = {n for n in dir(ember) if not n.startswith("_")}
    lazy = {"autograd", "nn", "optim", "utils", "cuda", "cpu", "backends", "multiprocessing",
            "distributed"}
    for name in ember.__all__:
        assert hasattr(ember, name), name
        assert name not in lazy, f"{name}: `from ember import *` would import a component"
    # modules: ember's own imports (os, ...) and submodules that other code imported since
    # (ember.array_api): `import ember` alone does not define them
    imported_modules = {n for n in public if inspect.ismodule(getattr(ember, n))
                        and n not in ember.__all__}
    assert sorted(public - set(ember.__all__) - lazy - imported_modules) == []
    assert len(set(ember.__all__)) == len(ember.__all__)


def test_star_import_gives_all_and_loads_no_component():
    code = ("import sys, builtins\nfrom ember import *\nimport ember\n"
            "assert builtins.all(n in globals() for n in ember.__all__)\n"
            "assert 'ember.nn' not in sys.modules and 'ember.autograd' not in sys.modules\n"
            "print(len(ember.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 300


def test_linalg_top_level_names_are_the_linalg_functions():
    for name, fn in ember.linalg.TOP_LEVEL.items():
        assert getattr(ember, name) is fn, name


def test_a_type_checker_reads_the_stubs(tmp_path):
    """mypy (when installed) accepts correct calls, infers results from the schemas and flags
    a wrong argument type."""
    mypy_api = pytest.importorskip("mypy.api")
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import ember\n"
        "x = ember.randn(3, 4)\n"
        "y: ember.Tensor = ember.add(x, 1.0, alpha=2)\n"
        "s = x.sum(dim=1, keepdim=True)\n"
        "v, i = ember.max(x, 1)\n"
        "reveal_type(v)\n"
        "reveal_type(ember.exp(x).mean())\n"
        "ember.sum(x, dim='a')\n"
    )
    stdout, stderr, code = mypy_api.run([
        str(sample), "--follow-imports=silent", "--ignore-missing-imports", "--no-incremental",
        "--cache-dir", str(tmp_path / "cache"),
    ])
    lines = [ln for ln in stdout.splitlines() if ln.startswith(str(sample))]
    assert code == 1, stdout + stderr
    assert any(":6: note: Revealed type is \"ember._C.Tensor\"" in ln for ln in lines), lines
    assert any(":7: note: Revealed type is \"ember._C.Tensor\"" in ln for ln in lines), lines
    errors = [ln for ln in lines if ": error:" in ln]
    assert len(errors) == 1 and ":8:" in errors[0] and '"dim"' in errors[0], lines
