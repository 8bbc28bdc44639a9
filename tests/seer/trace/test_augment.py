"""seer.trace.augment: the trace written back, every event and field kept, seer's values under args."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from seer.trace.augment import ARGS, augment
from seer.trace.kernels import explain
from seer.workload.kineto import read_trace


def _load(path):
    def refuse(token):  # NaN, Infinity, -Infinity: not JSON, Perfetto's parser rejects them
        raise AssertionError(f"{path} holds {token}")

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f, parse_constant=refuse)


def _check(src, out):
    before, after = _load(src), _load(out)
    assert isinstance(after["traceEvents"], list) and len(after["traceEvents"]) == len(before["traceEvents"])
    assert {k: v for k, v in after.items() if k != "traceEvents"} == {
        k: v for k, v in before.items() if k != "traceEvents"
    }
    added = 0
    for old, new in zip(before["traceEvents"], after["traceEvents"]):
        assert {k: v for k, v in new.items() if k != "args"} == {k: v for k, v in old.items() if k != "args"}
        old_args, new_args = old.get("args", {}), new.get("args", {})
        assert {k: new_args[k] for k in old_args} == old_args  # every field kept, unchanged
        extra = set(new_args) - set(old_args)
        assert extra <= set(ARGS)
        for k in extra:
            v = new_args[k]
            assert v is None or isinstance(v, str) or (isinstance(v, (int, float)) and math.isfinite(v))
        added += bool(extra)
    return added


def test_every_event_and_field_survives_and_each_gpu_event_gains_seer_args(gpt_b8, h100, tmp_path):
    out = tmp_path / "gpt_b8.seer.json.gz"
    n = augment(gpt_b8, out)
    assert n == len(gpt_b8.kernels) == _check(h100 / "gpt_b8.pt.trace.json.gz", out)
    ev = [e for e in _load(out)["traceEvents"] if e.get("cat") == "kernel"]
    gemm = next(e for e in ev if e["args"].get("seer_kind") == "linear")
    a = gemm["args"]
    assert a["seer_op"] == "aten::addmm" and a["seer_layer"].startswith("linear#") and a["seer_direction"] == "forward"
    assert a["seer_flops"] > 0 and a["seer_bound"] == "compute" and a["seer_predicted_us"] > 0
    assert a["seer_measured_over_predicted"] == pytest.approx(gemm["dur"] / a["seer_predicted_us"], rel=1e-3)
    # still a trace seer (and so Perfetto) reads, the same kernels in the same order
    assert read_trace(out).kernels[["name", "dur"]].equals(read_trace(h100 / "gpt_b8.pt.trace.json.gz").kernels[
        ["name", "dur"]])  # fmt: skip


def test_unmodelled_kernels_get_a_null_prediction_and_why(param_resnet, shared, tmp_path):
    out = tmp_path / "resnet.json"
    augment(param_resnet, out)
    _check(shared("param/resnet_kineto.json.gz"), out)
    ev = [e for e in _load(out)["traceEvents"] if "seer_split" in e.get("args", {})]
    none = [e["args"] for e in ev if e["args"]["seer_split"] == "none"]
    assert none and all(a["seer_predicted_us"] is None and a["seer_why"] for a in none)
    assert all("seer_flops" not in a for a in none)  # no value rather than NaN


def test_a_triton_trace(shared, tmp_path):
    src = shared("hta/triton_example_triton_example.json.gz")
    out = tmp_path / "triton.json"
    assert augment(explain(src), out) == 1 and _check(src, out) == 1
