"""The code's shape: no import cycles (counting imports inside functions), and the typed names
and settings that replace strings and scattered constants."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic import conv_records, gemm_records

from seer import fitsfile, models
from seer.data.configs import ConfigBatch, sizes
from seer.errors import SeerError
from seer.fitsfile.check import check
from seer.hardware import gpus

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("seer", "cudnn_bench")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body (functions included)."""
    mods = {_module(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                # `from pkg import module` imports the module; `from module import name` the module
                names = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods] or [base]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            graph[mod] |= {name for name in names if name in mods and name != mod}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_cycles_not_even_inside_functions():
    graph = _imports()
    assert graph["seer.evaluate.selection"] and graph["cudnn_bench.collect"]  # the walk sees imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_fakes_live_with_the_tests():
    assert not (ROOT / "cudnn_bench" / "fakes.py").exists() and (ROOT / "tests" / "fakes.py").exists()


def test_variant_keys_and_feature_sets_round_trip_as_text():
    key = models.VariantKey("conv_fwd", "GEMM", "sgemm_128x64:nt")
    assert str(key) == "conv_fwd:GEMM:sgemm_128x64:nt" and models.VariantKey.parse(str(key)) == key
    gemm = models.VariantKey.parse("bmm:default:sgemm_128x32_nn")
    assert gemm.algo == "" and gemm.family == "bmm:default" and str(gemm) == "bmm:default:sgemm_128x32_nn"
    for fs in models.FeatureSet.candidates(helpers=True, types=True):
        assert models.FeatureSet.parse(str(fs)) == fs
    assert [str(f) for f in models.FeatureSet.candidates(False)] == ["seer", "seer+clock", "waves", "waves+clock"]
    with pytest.raises(ValueError):
        models.FeatureSet.parse("waves+clock+helpers")  # the order is part of the name


def test_fit_options_are_recorded_and_drive_the_fit(tmp_path):
    opts = models.FitOptions(min_rows=7, trust_distance=2.0)
    assert models.FitOptions.from_dict(opts.to_dict()) == opts
    assert models.FitOptions.from_dict({"min_rows": 7, "from_the_future": 1}).min_rows == 7
    from seer import fit

    rec = gemm_records(60)
    doc = fit.fit_all(rec, data_path="synthetic", options=opts, log=lambda s: None)
    (only,) = doc.values()
    assert only["options"]["min_rows"] == 7 and only["options"]["trust_distance"] == 2.0
    path = tmp_path / "t4.json"
    fitsfile.write(only, path)
    from seer import predict

    assert predict.load(path).options == opts
    only["options"]["trust_distance"] = -1
    with pytest.raises(SeerError, match=r"options\.trust_distance must be a finite number > 0"):
        check(json.loads(fitsfile.dumps(only)), path)


def test_a_config_batch_gives_what_the_frame_functions_give():
    df = conv_records(60, noise=0.0)
    for algo in ("IMPLICIT_PRECOMP_GEMM", "WINOGRAD_NONFUSED", "WINOGRAD", "FFT"):
        one = df.assign(algo=algo)
        want = sizes(one)
        batch = ConfigBatch.of(df, "conv_fwd").with_algo(algo)
        assert list(batch.sizes) == list(want)  # the same names in the same order: rule order
        for k, v in want.items():
            np.testing.assert_array_equal(batch.sizes[k], v, err_msg=k)
        rows = np.arange(0, len(df), 3)
        part = batch.take(rows)
        for k, v in sizes(one.iloc[rows]).items():
            np.testing.assert_array_equal(part.sizes[k], v, err_msg=k)
        np.testing.assert_array_equal(part.logcfg, batch.logcfg[rows])


def test_the_chooser_finds_the_exact_nearest_point_with_constant_sizes_left_out():
    rng = np.random.default_rng(3)
    pts = np.column_stack([rng.uniform(0, 8, 300), rng.uniform(0, 8, 300), np.full(300, 1.5), np.full(300, 0.0)])
    labels = rng.integers(0, 3, 300)
    from seer.models.chooser import Chooser

    ch = Chooser("bmm", "", ["a", "b", "c"], pts, labels)
    q = np.column_stack([rng.uniform(-4, 12, 500), rng.uniform(-4, 12, 500), rng.uniform(0, 3, 500),
                         rng.uniform(0, 3, 500)])
    dist, lab = ch.nearest(q)
    full = np.sqrt(((q[:, None, :] - pts[None, :, :]) ** 2).sum(axis=2))
    np.testing.assert_allclose(dist, full.min(axis=1), rtol=1e-12)
    assert (lab[:, 0] == labels[full.argmin(axis=1)]).all()


def test_grid_rules_are_the_first_best_of_every_candidate():
    """fit_axis scores each distinct candidate grid once; the rule it picks is the one a plain
    search over every (size, tile) and (size, size, tile) picks, with the same match share."""
    from seer.models import geometry

    tr = gemm_records(120)
    batch = ConfigBatch.of(tr, "bmm")
    s = batch.sizes
    y = tr["grid_x"].to_numpy(float) + np.where(np.arange(len(tr)) % 7 == 0, 1, 0)  # no exact rule
    names = [k for k in s if k != "one" and np.all(np.isfinite(s[k]))]
    cands = [(geometry.Ceil(e, t), np.ceil(s[e] / t)) for e in names for t in geometry.TILES]
    cands += [(geometry.MulCeil(e, e2, t), s[e] * np.ceil(s[e2] / t)) for e in names for e2 in names if e2 != e
              for t in geometry.TILES[1:]]
    best, best_err = None, np.inf
    for rule, pred in cands:
        err = float(np.mean(np.abs(np.log2(np.maximum(pred, 1) / y))))
        if best is None or err < best_err - 1e-12:
            best, best_err, share = rule, err, float(np.mean(pred == y))
    got = geometry.fit_axis(s, batch.logcfg, y)
    if not isinstance(got, geometry.Nearest):
        assert got.to_dict() == {**best.to_dict(), "match": round(share, 4)}
    for rule in (geometry.Ceil("NPQ", 128, 0.5), geometry.MulCeil("batch", "m", 64, 1.0), geometry.Const(3.0, 1.0),
                 geometry.Product(("batch", "m", "n"), (16, 64, 27), 1.0)):
        assert geometry.AxisRule.from_dict(rule.to_dict()) == rule


def test_rows_of_one_gpu_by_any_of_its_names():
    rec = pd.DataFrame({"gpu": ["Tesla T4", "NVIDIA A100-SXM4-40GB", "Tesla T4", "Mystery GPU"], "x": range(4)})
    assert gpus.rows_of(rec, "t4")["x"].tolist() == [0, 2]
    assert gpus.rows_of(rec, "Mystery GPU")["x"].tolist() == [3]
    assert len(gpus.rows_of(rec, None)) == 4
