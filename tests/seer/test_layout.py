"""The tree is the data flow: collect -> data -> fit -> fits -> predict / evaluate.

Every module of seer/ lives in its stage's folder but the front door and shared infrastructure;
a stage imports only stages before it; no module imports a command line (a `__main__`) but the
front door's `python -m seer`; tests mirror the tree."""

from __future__ import annotations

from pathlib import Path

from test_structure import _imports  # the import graph, imports inside functions too

ROOT = Path(__file__).resolve().parents[2]

# front doors (python -m seer; the `seer` command, which runs the command lines by name) and shared infrastructure
SHARED = {"__init__", "__main__", "command", "errors", "cli", "cluster"}
STAGES = ("hardware", "data", "analytical", "models", "fitsfile", "fit", "predict", "workload", "trace", "evaluate")
# what each stage may import besides the shared modules (the flow, not the folder order)
MAY_IMPORT = {
    "hardware": set(),
    "data": {"hardware"},
    "analytical": {"hardware", "data"},
    "models": {"hardware", "data", "analytical"},
    "fitsfile": {"hardware", "data", "analytical", "models"},
    "fit": {"hardware", "data", "analytical", "models", "fitsfile"},
    "predict": {"hardware", "data", "analytical", "models", "fitsfile"},
    "workload": {"hardware", "data", "analytical", "predict"},
    "trace": {"hardware", "data", "analytical", "predict", "workload"},
    "evaluate": {"hardware", "data", "analytical", "models", "fitsfile", "fit", "predict", "workload"},
}
# the one module that reaches past its stage, and where: the fit stage chooses a gradient's forward
# dual by what the models just fitted predict of its training calls, through the predictor that
# will time it (seer.fit.duals)
EXCEPTIONS = {("seer.fit.duals", "seer.predict.variants")}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_lives_in_its_stage_folder():
    top = {p.stem for p in (ROOT / "seer").glob("*.py")}
    assert top <= SHARED, f"modules outside a stage folder: {sorted(top - SHARED)}"
    folders = {p.name for p in (ROOT / "seer").iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(STAGES), sorted(folders ^ set(STAGES))


def test_a_stage_imports_only_what_comes_before_it():
    graph = _imports()
    wrong = []
    for mod, deps in graph.items():
        if not mod.startswith("seer.") or mod.endswith("__main__") or _stage(mod) in SHARED:
            continue  # command lines may use any stage before them
        for dep in deps:
            st = _stage(dep)
            allowed = st in SHARED or st == _stage(mod) or st in MAY_IMPORT[_stage(mod)] or (mod, dep) in EXCEPTIONS
            if dep.startswith("seer") and not allowed:
                wrong.append(f"{mod} -> {dep}")
    assert not wrong, wrong


def test_no_module_imports_a_command_line():
    graph = _imports()
    wrong = [
        f"{m} -> {d}" for m, deps in graph.items() for d in deps if d.endswith("__main__") and m != "seer.__main__"
    ]
    assert not wrong, wrong


def test_the_repository_root_is_looked_up_once():
    hits = [p for p in (ROOT / "seer").rglob("*.py") if "__file__" in p.read_text()]
    assert [p.relative_to(ROOT).as_posix() for p in hits] == ["seer/data/paths.py"]


def test_tests_mirror_the_tree():
    """tests/seer/<package>/test_<module>.py and tests/cudnn_bench/test_<module>.py: every test
    folder is a folder of the code; only repository-wide tests sit at the top."""
    tests = ROOT / "tests"
    folders = {p.parent.relative_to(tests) for p in tests.rglob("test_*.py")}
    stray = sorted(str(f) for f in folders if str(f) != "." and not (ROOT / f / "__init__.py").is_file())
    assert not stray, stray
    top = sorted(p.name for p in tests.glob("test_*.py"))
    assert top == ["test_docs.py", "test_packaging.py", "test_structure.py"], top
