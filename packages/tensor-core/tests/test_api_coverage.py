"""tools/api_coverage.py, the report of how much of torch's public API ember has: its logic on
made-up namespaces (no torch needed), the checked-in absences file and torch-names snapshot, and
the generated ember/_torch_names.py that ember's missing-name errors read."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types
from pathlib import Path

import pytest

import ember

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "api_coverage.py"

pytestmark = pytest.mark.skipif(not TOOL.exists(), reason="needs the repository's tools/")


@pytest.fixture(scope="module")
def cov():
    spec = importlib.util.spec_from_file_location("api_coverage", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["api_coverage"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("api_coverage", None)


# ---- the computation, on names made up here ----

def test_coverage_counts_present_missing_and_excused(cov):
    absences = cov.parse_absences('[torch]\n"gone" = "deprecated: use new"\n'
                                  '"q_*" = "quantization"\n')
    r = cov.coverage("torch", {"a": "function", "b": "function", "gone": "function",
                               "q_scale": "function", "c": "class"},
                     {"a", "c", "unrelated"}, absences)
    assert r.present == ["a", "c"]
    assert r.missing == ["b"]
    assert r.absent_by_design == ["gone", "q_scale"]
    assert r.total == 5 and r.counted == 3
    assert r.percent == pytest.approx(200 / 3)
    assert r.stale == []


def test_an_absence_only_applies_to_its_own_namespace(cov):
    absences = cov.parse_absences('[nn]\n"b" = "internal: x"\n')
    assert cov.coverage("torch", {"b": "function"}, set(), absences).missing == ["b"]
    assert cov.coverage("nn", {"b": "function"}, set(), absences).absent_by_design == ["b"]


def test_a_name_listed_as_absent_that_ember_has_is_stale_but_a_pattern_is_not(cov):
    absences = cov.parse_absences('[Tensor]\n"imag" = "complex"\n"*Storage" = "storage"\n')
    r = cov.coverage("Tensor", {"imag": "function", "UntypedStorage": "class",
                                "FloatStorage": "class"}, {"imag", "UntypedStorage"}, absences)
    assert r.stale == ["imag"]
    assert r.present == ["UntypedStorage", "imag"]  # counted as present either way
    assert r.absent_by_design == ["FloatStorage"]


def test_an_empty_namespace_is_fully_covered(cov):
    assert cov.coverage("fft", {}, set(), []).percent == 100.0


def test_unused_absences_are_those_matching_no_torch_name(cov):
    absences = cov.parse_absences('[torch]\n"a" = "internal"\n"zz*" = "internal"\n')
    unused = cov.unused_absences(absences, {"torch": {"a": "function"}})
    assert [a.pattern for a in unused] == ["zz*"]


def test_table_has_a_row_per_namespace_and_the_total(cov):
    rows = [cov.coverage("torch", {"a": "function", "b": "function"}, {"a"}, []),
            cov.coverage("nn", {"c": "class"}, {"c"}, [])]
    text = cov.table(rows).splitlines()
    assert text[0].startswith("| namespace")
    assert "50.0%" in text[2] and "100.0%" in text[3]
    # all: 2 of 3 counted names
    assert text[4].split("|")[1].strip() == "all" and "66.7%" in text[4]


# ---- torch's side: which names count as public, on a made-up module ----

def _fake_torch_module():
    mod = types.ModuleType("torch.fake")
    sub = types.ModuleType("torch.fake.sub")
    import math
    import typing

    def own():
        pass

    own.__module__ = "torch.fake"

    class Own:
        pass

    Own.__module__ = "torch.fake"
    mod.sub, mod.math, mod.Optional, mod.own, mod.Own = sub, math, typing.Optional, own, Own
    mod._private, mod.flag = own, True
    return mod


def test_public_names_keep_torchs_own_names_and_submodules(cov):
    names = cov.public_names(_fake_torch_module(), "nn")
    assert names == {"sub": "module", "own": "function", "Own": "class", "flag": "other"}


def test_public_names_follow_all_where_the_module_declares_it(cov):
    mod = _fake_torch_module()
    mod.__all__ = ["Optional"]  # declared: counted although typing's
    assert "Optional" in cov.public_names(mod, "nn")


def test_the_torch_rows_split_functions_from_submodules(cov):
    mod = _fake_torch_module()
    assert "sub" not in cov.public_names(mod, "torch")
    assert cov.public_names(mod, "torch.<submodule>") == {"sub": "module"}


def test_public_names_of_a_class_are_its_attributes_without_underscore(cov):
    class T:
        def add(self):
            pass

        @property
        def shape(self):
            return ()

        def _hidden(self):
            pass

    assert cov.public_names(T, "Tensor") == {"add": "function", "shape": "other"}


# ---- ember's side ----

def test_ember_has_reads_the_live_namespace(cov):
    present = cov.ember_has("linalg", ["norm", "not_a_linalg_function"])
    assert present == {"norm"}
    assert cov.ember_has("Tensor", ["add", "is_xpu", "nope"]) == {"add", "is_xpu"}


def test_a_submodule_counts_where_it_imports(cov):
    # a torch submodule ember has (linalg); one it has neither as attribute nor as module
    assert cov.ember_has("torch.<submodule>", {"linalg": "module", "nope": "module"}) == \
        {"linalg"}
    present = cov.ember_has("linalg", {"norm": "function", "nope": "module"})
    assert present == {"norm"}


def test_a_namespace_ember_lacks_has_no_names(cov, monkeypatch):
    monkeypatch.setitem(cov.NAMESPACES, "fft", ("torch.fft", "ember.no_such_module"))
    assert cov.ember_has("fft", ["fft"]) == set()


# ---- the absences file format ----

@pytest.mark.parametrize("text,message", [
    ('[nope]\n"a" = "internal"\n', "unknown namespace"),
    ('[torch]\n"a" = "because"\n', "does not start with one of"),
    ('[torch]\n"a" = ""\n', "needs a reason"),
    ('[torch]\n"a" = "internal"\n"a" = "internal"\n', "listed twice"),
    ('"a" = "internal"\n', r"inside a \[table\]"),
    ('[torch]\na = "internal"\n', "expected"),
    ('[torch\n', "ends with ']'"),
])
def test_bad_absence_files_are_refused_with_the_line(cov, text, message):
    with pytest.raises(ValueError, match=message):
        cov.parse_absences(text)


def test_quoted_table_names_and_comments(cov):
    a = cov.parse_absences('# c\n["nn.functional"]\n"x" = "internal: y"  \n\n')
    assert [(e.row, e.pattern, e.category) for e in a] == [("nn.functional", "x", "internal")]


# ---- the checked-in files ----

def test_the_absences_file_reads_the_same_as_with_tomllib(cov):
    tomllib = pytest.importorskip("tomllib")
    text = cov.ABSENCES.read_text()
    assert cov._read_toml_subset(text) == tomllib.loads(text)


def test_every_absence_matches_a_name_of_the_snapshot(cov):
    _, names = cov.load_snapshot()
    assert set(names) == set(cov.NAMESPACES)
    unused = cov.unused_absences(cov.load_absences(), names)
    assert unused == [], [f"[{a.row}] {a.pattern}" for a in unused]


def test_the_torch_names_module_is_current(cov):
    assert cov.write_torch_names_module(check=True), (
        "ember/_torch_names.py is stale: run tools/api_coverage.py --write-names")


def test_the_snapshot_agrees_with_the_installed_torch(cov):
    torch = pytest.importorskip("torch")
    version, names = cov.load_snapshot()
    if torch.__version__.split("+")[0] != version:
        pytest.skip(f"the snapshot is of torch {version}, torch {torch.__version__} is installed")
    assert cov.torch_names(list(cov.NAMESPACES)) == names


def test_the_report_runs_from_the_snapshot():
    out = subprocess.run([sys.executable, str(TOOL), "--snapshot", "--missing", "3"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "| Tensor " in out.stdout and "| all " in out.stdout
    assert "snapshot" in out.stdout.splitlines()[0]


def test_the_report_as_json_counts_what_the_table_counts(cov):
    out = subprocess.run([sys.executable, str(TOOL), "--snapshot", "--json", "--namespace",
                          "linalg"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    import json

    linalg = json.loads(out.stdout)["linalg"]
    _, names = cov.load_snapshot()
    assert linalg["total"] == len(names["linalg"])
    assert linalg["present"] + len(linalg["missing"]) + len(linalg["absent_by_design"]) == \
        linalg["total"]
    for name in linalg["missing"]:
        assert not hasattr(ember.linalg, name)
