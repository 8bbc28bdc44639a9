"""Fitting is deterministic: the same rows give the same discrete choices (B_max, feature set)
and coefficients on every machine, BLAS build and row order (docs/model.md, Deterministic)."""

import json
import os
import platform
import subprocess
import sys

import numpy as np
import statsmodels.api as sm
from scipy.optimize import nnls

from seer import fit, fitsfile
from seer.data import prepare, records
from seer.models import nonnegative_wls

COEF_RTOL = 1e-6  # what may differ between BLAS builds: rounding, never a choice

REFIT = """
import sys
from seer import fit, fitsfile
from seer.data import records
rec = records.read_neusight(sys.argv[1])
doc = fit.fit_all(rec, data_path="../shared/datasets/neusight", log=lambda s: None)
open(sys.argv[2], "w").write(fitsfile.dumps(doc["a100-80gb-pcie"]))
"""


def test_same_fits_under_another_blas_configuration(a100_80_conv, neusight_path, tmp_path):
    """The A100-80GB conv data once made B_max flip (108 vs 324) with OpenBLAS's kernel: refit
    in a process with another OpenBLAS core type and one thread, and compare."""
    _, here = a100_80_conv
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if platform.machine() in ("x86_64", "AMD64"):
        env["OPENBLAS_CORETYPE"] = "Sandybridge"  # another GEMM kernel than the CPU's own
    out = tmp_path / "there.json"
    r = subprocess.run(
        [sys.executable, "-c", REFIT, str(neusight_path / "conv" / "NVIDIA_A100_80GB_PCIe.csv"), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    there = json.loads(out.read_text())
    cmp = fitsfile.compare(there, json.loads(fitsfile.dumps(here)))
    assert not (cmp.added or cmp.removed or cmp.choices), cmp
    assert cmp.coef_rdiff <= COEF_RTOL, cmp


def test_unidentifiable_b_max_is_said(a100_80_conv):
    """That variant's training rows all launch one grid: every B_max fits them alike, and the
    fits say so instead of picking one by the last bit of a floating-point sum."""
    _, doc = a100_80_conv
    v = doc["variants"]["conv_fwd:FFT_TILING:gcgemm_32x32_nt"]
    assert v["b_max_source"].startswith("not identified")
    assert any("B_max not identified" in n for n in v["notes"])
    assert v["blocks_per_sm"] == 1  # the fixed rule: the smallest candidate
    identified = [k for k, w in doc["variants"].items() if w["b_max_source"] == "wave staircase of training rows"]
    assert len(identified) >= 10  # the rule is not applied where the steps are visible


def test_same_fits_in_any_row_order(neusight_path):
    """Shuffling a file once changed B_max (600 vs 280) and feature sets: the CV folds and the
    staircase subsample followed the file's row order."""
    rec = records.read_neusight(neusight_path / "bmm" / "Tesla_T4.csv").iloc[::3].reset_index(drop=True)
    shuffled = rec.sample(frac=1, random_state=7).reset_index(drop=True)
    a, b = (fit.fit_all(r, data_path="x", drift=False, log=lambda s: None)["t4"] for r in (rec, shuffled))
    assert len(a["variants"]) >= 5
    assert fitsfile.dumps(a) == fitsfile.dumps(b)


def test_nonnegative_wls_is_the_exact_optimum():
    """On collinear columns (where unconstrained WLS goes negative) the fit is the non-negative
    optimum: the KKT conditions hold, and the standard errors are statsmodels' WLS on the kept
    columns."""
    rng = np.random.default_rng(0)
    n = 200
    a = rng.uniform(1, 100, n)
    X = np.column_stack([a, a + rng.normal(0, 0.5, n), rng.uniform(0, 1, n), np.ones(n)])
    y = 0.3 * a + 2.0 + rng.normal(0, 0.5, n) + 0.2 * rng.uniform(0, 1, n)
    y = np.abs(y) + 0.1
    free = sm.WLS(y, X, weights=1 / y**2).fit().params
    assert (free < 0).any()  # the unconstrained fit is not admissible here
    r = nonnegative_wls(X, y)
    assert (r.params >= 0).all()
    Xw = X / y[:, None]
    grad = Xw.T @ (Xw @ r.params - 1)
    scale = np.linalg.norm(Xw, axis=0) * np.sqrt(n)
    kept = r.params > 0
    assert np.all(np.abs(grad[kept]) <= 1e-8 * scale[kept])  # stationary where free
    assert np.all(grad[~kept] >= -1e-8 * scale[~kept])  # no gain from leaving zero
    best = nnls(Xw, np.ones(n))[1]
    assert np.linalg.norm(Xw @ r.params - 1) <= best * (1 + 1e-9)
    ref = sm.WLS(y, X[:, kept], weights=1 / y**2).fit()
    assert np.allclose(r.params[kept], ref.params, rtol=1e-6)
    assert np.allclose(r.bse[kept], ref.bse, rtol=1e-9) and (r.bse[~kept] == 0).all()


def test_the_data_hash_survives_a_schema_that_grows(a100_80_conv):
    """A record column the data lack (added to the schema later) leaves their hash alone; a
    value in it does not."""
    rec = a100_80_conv[0].copy()
    assert "gpu_span_ms" in records.COLUMNS
    before = prepare.content_hash(rec.drop(columns=["gpu_span_ms"], errors="ignore"))
    assert prepare.content_hash(rec.assign(gpu_span_ms=np.nan)) == before
    assert prepare.content_hash(rec.assign(gpu_span_ms=1.0)) != before


def test_a_column_constant_over_the_rows_leaves_its_weight_to_the_constant():
    """Waves where every training row launches one wave are a second constant: NNLS would split
    the weight between the two by the BLAS's last bits (the A100-80GB's FFT_TILING variant did),
    and a slope the rows never varied extrapolates unidentified. The last constant column takes it."""
    rng = np.random.default_rng(1)
    n = 100
    work = rng.uniform(1, 50, n)
    y = 0.02 * work + 0.3 + rng.normal(0, 0.01, n)
    X = np.column_stack([work, np.full(n, 6.0), np.ones(n)])
    r = nonnegative_wls(X, y)
    assert r.params[1] == 0 and r.params[2] > 0
    alone = nonnegative_wls(X[:, [0, 2]], y)
    np.testing.assert_allclose(r.params[[0, 2]], alone.params, rtol=1e-12)
    swapped = nonnegative_wls(X[:, [0, 2, 1]], y).params  # the last constant is now the waves
    assert swapped[1] == 0
    np.testing.assert_allclose([swapped[0], 6 * swapped[2]], alone.params, rtol=1e-9)


def test_columns_equal_over_the_rows_share_their_weight_in_any_order():
    """Waves W and blocks per SM S of a variant that holds one block an SM are one column over
    its rows (a helper's bytes a multiple of another's likewise): NNLS gave the weight to one of
    them by the BLAS's last bits (the H100's grouped direct kernels took W*Kb on one CPU, S*Kb on
    another). Each takes an equal share of the weight the set takes alone, scaled to its norm,
    whatever the columns' order; their standard errors are shared the same way."""
    rng = np.random.default_rng(2)
    n = 120
    waves = rng.integers(1, 40, n).astype(float)
    work = rng.uniform(1, 50, n)
    y = 0.05 * waves + 0.01 * work + 0.2 + rng.normal(0, 0.005, n)
    X = np.column_stack([waves, work, waves, 3.0 * waves, np.ones(n)])  # W, work, S, a multiple, 1
    fit, alone = nonnegative_wls(X, y), nonnegative_wls(X[:, [0, 1, 4]], y)
    r = fit.params
    np.testing.assert_allclose(r[[1, 4]], alone.params[1:], rtol=1e-9)
    np.testing.assert_allclose(r[[0, 2, 3]] * [1, 1, 3], alone.params[0] / 3, rtol=1e-9)
    np.testing.assert_allclose(X @ r, X[:, [0, 1, 4]] @ alone.params, rtol=1e-12)
    assert alone.bse[0] > 0
    np.testing.assert_allclose(fit.bse[[1, 4]], alone.bse[1:], rtol=1e-9)
    np.testing.assert_allclose(fit.bse[[0, 2, 3]] * [1, 1, 3], alone.bse[0] / 3, rtol=1e-9)
    np.testing.assert_allclose(fit.rsquared, alone.rsquared, rtol=1e-12)
    order = [3, 4, 0, 2, 1]  # the constant no longer last: nothing else here is constant
    moved = np.empty(5)
    moved[order] = nonnegative_wls(X[:, order], y).params
    np.testing.assert_allclose(moved, r, rtol=1e-9)
