"""The memory-bound model in the model/results shape: MemoryBoundModel(...).fit -> MemoryBoundFit,
which serializes to exactly the bundled fits' "memory_bound" sections and predicts, moves to
another GPU and reads its bandwidth fraction as the dict-based code did."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seer.analytical import fitted_table, memory_bound_detail, predict_memory_bound
from seer.analytical.memory import TERMS
from seer.errors import SeerError
from seer.evaluate.bench_analytical import memory_configs, synthetic_records
from seer.hardware import gpus
from seer.models.memory import SCALING, SCHEMA, MemoryBoundFit, MemoryBoundModel, fit_memory_bound

FITS = Path(__file__).resolve().parents[3] / "fits"
BUNDLED = sorted(p.stem for p in FITS.glob("*.json") if json.loads(p.read_text()).get("memory_bound"))


def _section(slug: str) -> dict:
    return json.loads((FITS / f"{slug}.json").read_text())["memory_bound"]


def _configs() -> pd.DataFrame:
    """Random configs of every op, and large ones (streaming-dominated) of each kernel."""
    big = [
        dict(op=op, fn=fn, rows=r, cols=c)
        for op, fn in (
            ("elementwise", "add"),
            ("elementwise", "relu"),
            ("elementwise", "gelu"),
            ("elementwise", "sigmoid"),
            ("softmax", ""),
            ("layer_norm", ""),
            ("concat", ""),
            ("transpose", ""),
            ("memcpy", "d2d"),
        )
        for r, c in ((16384, 4096), (65536, 1024), (8192, 8192))
    ]
    return pd.concat([memory_configs(3000, seed=5), pd.DataFrame(big)], ignore_index=True)


def test_bundled_sections_round_trip_exactly():
    assert len(BUNDLED) >= 5
    for slug in BUNDLED:
        section = _section(slug)
        fit = MemoryBoundFit.from_dict(section)
        assert fit.to_dict() == section, slug
        # the same JSON text: ints stay ints, floats floats, nulls nulls
        assert json.dumps(fit.to_dict(), sort_keys=True) == json.dumps(section, sort_keys=True), slug
        assert MemoryBoundFit.from_dict(fit.to_dict()) == fit


def test_predictions_are_predict_memory_bound_s():
    cfg = _configs()
    for slug in BUNDLED:
        section = _section(slug)
        fit = MemoryBoundFit.from_dict(section)
        spec = gpus.lookup(slug)
        want = predict_memory_bound(cfg, section, slug)
        np.testing.assert_array_equal(fit.predict(cfg, spec), want, err_msg=slug)
        np.testing.assert_array_equal(predict_memory_bound(cfg, fit, slug), want, err_msg=slug)
        pd.testing.assert_frame_equal(fit.detail(cfg, spec), memory_bound_detail(cfg, section, slug))
        pd.testing.assert_frame_equal(fit.table(), fitted_table(section))
    # a GPU the fit lacks: the datasheet roofline, as with no parameters
    t4 = MemoryBoundFit.from_dict(_section("t4"))
    np.testing.assert_array_equal(t4.predict(cfg, gpus.lookup("p4")), predict_memory_bound(cfg, None, "p4"))


def _old_retarget(section: dict, target: gpus.GPUSpec, clock: float, bandwidth: float) -> dict:
    """What seer.predict.transfer._memory_params did to the dict (before MemoryBoundFit.retarget)."""
    (g,) = section["gpus"].values()
    moved = {}
    for key, k in g["kernels"].items():
        k = copy.deepcopy(k)
        if k.get("coef"):
            for name in list(k["coef"]):
                k["coef"][name] *= {"bytes": bandwidth, "reread_bytes": bandwidth, "rows": clock}.get(name, 1.0)
        moved[key] = k
    return {**section, "gpus": {target.slug: {"kernels": moved, "cc": target.cc, "name": target.name}}}


def test_retarget_scales_the_terms_as_the_transfer_did():
    assert set(SCALING) == set(TERMS)
    cfg = _configs()
    l4 = gpus.lookup("l4")
    for slug in BUNDLED:
        section = _section(slug)
        fit = MemoryBoundFit.from_dict(section)
        moved = fit.retarget(l4, clock=1.37, bandwidth=0.61)
        assert set(moved.gpus) == {"l4"} and moved.gpus["l4"].name == l4.name
        want = predict_memory_bound(cfg, _old_retarget(section, l4, 1.37, 0.61), l4)
        np.testing.assert_array_equal(moved.predict(cfg, l4), want, err_msg=slug)
        assert fit.to_dict() == section  # the source is left as it was


def test_retarget_by_one_changes_nothing_and_half_the_bandwidth_slows_streaming():
    cfg = _configs()
    big = cfg.index >= len(cfg) - 27  # the large configs of _configs
    for slug in BUNDLED:
        fit = MemoryBoundFit.from_dict(_section(slug))
        spec = gpus.lookup(slug)
        before = fit.predict(cfg, spec)
        same = fit.retarget(spec, clock=1.0, bandwidth=1.0)
        np.testing.assert_array_equal(same.predict(cfg, spec), before, err_msg=slug)
        slow = fit.retarget(spec, clock=1.0, bandwidth=2.0).predict(cfg, spec)
        assert (slow >= before).all(), slug  # no term of the line shrinks
        assert (slow[big] > 1.5 * before[big]).all() and (slow[big] <= 2 * before[big]).all(), slug
        # the moved fit still serializes as a section a fits file can hold, and reads back
        moved = fit.retarget(spec, clock=1.0, bandwidth=2.0)
        assert MemoryBoundFit.from_dict(json.loads(json.dumps(moved.to_dict()))) == moved
        frac, moved_frac = fit.bandwidth_fraction(spec), moved.bandwidth_fraction(spec)
        assert frac is not None and moved_frac == pytest.approx(frac / 2, rel=1e-12)


def test_bandwidth_fraction_is_the_median_fitted_bandwidth_over_the_datasheet():
    for slug in BUNDLED:
        section = _section(slug)
        spec = gpus.lookup(slug)
        kernels = section["gpus"][slug]["kernels"]
        bw = [k["bw_gbs"] for k in kernels.values() if k.get("bw_gbs") and k.get("bw_source") == "fit"]
        assert MemoryBoundFit.from_dict(section).bandwidth_fraction(spec) == float(np.median(bw) / spec.dram_gbs)
        assert MemoryBoundFit.from_dict(section).bandwidth_fraction(slug) == float(np.median(bw) / spec.dram_gbs)
    assert MemoryBoundFit.from_dict(_section("t4")).bandwidth_fraction(gpus.lookup("p4")) is None


def test_model_settings_repr_and_bad_input():
    rec = synthetic_records("Tesla T4", bw_gbs=240, floor_ms=0.027, noise=0.02, seed=2)
    fit = MemoryBoundModel().fit(rec)
    assert fit.to_dict() == fit_memory_bound(rec) and fit.to_dict()["schema"] == SCHEMA
    assert "\n" not in repr(fit) and repr(fit).startswith("MemoryBoundFit(t4: ")
    assert MemoryBoundModel(min_rows=10**6).fit(rec).gpus["t4"].kernels == {}  # too few rows for any kernel
    line = fit.gpus["t4"].kernels["elementwise"].line
    assert line is not None and 1e-6 / line.bytes == pytest.approx(240, rel=0.05)
    with pytest.raises(SeerError, match="schema"):
        MemoryBoundFit.from_dict({"schema": "seer.analytical.memory_bound/0", "gpus": {}})
    with pytest.raises(SeerError, match="bandwidth"):
        fit.retarget(gpus.lookup("p4"), clock=1.0, bandwidth=0.0)
    two = MemoryBoundModel().fit(pd.concat([rec, synthetic_records("Tesla P4", seed=3)]))
    with pytest.raises(SeerError, match="source"):
        two.retarget(gpus.lookup("l4"), clock=1.0, bandwidth=1.0)
    assert set(two.retarget(gpus.lookup("l4"), clock=1.0, bandwidth=1.0, source="p4").gpus) == {"l4"}


def test_a_fit_on_neusight_is_the_bundled_section(neusight):
    """What `python -m seer.fit` fits on NeuSight's data (its training rows) is each bundled
    fits file's memory_bound section, exactly."""
    from seer.fit.gpu import fit_memory

    for slug in [b for b in BUNDLED if b != "h100-sxm"]:  # the H100's own memory_ops, not NeuSight's
        spec = gpus.lookup(slug)
        names = [n for n in pd.unique(neusight["gpu"]) if gpus.lookup(n).slug == slug]
        (name,) = names
        fit = fit_memory(neusight[neusight["gpu"] == name])
        assert fit is not None
        assert _same(fit.to_dict(), _section(slug)), slug
        bundled = MemoryBoundFit.from_dict(_section(slug)).bandwidth_fraction(spec)
        assert fit.bandwidth_fraction(spec) == pytest.approx(bundled, rel=1e-9)


def _same(got: object, want: object) -> bool:
    """The same structure, keys and types, floats equal to 1e-9 relative: a fit on another CPU or
    BLAS may round its last bits differently (the fits file was written on one machine)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, float) and type(got) is float:
        return got == pytest.approx(want, rel=1e-9, abs=1e-300)
    return type(got) is type(want) and got == want
