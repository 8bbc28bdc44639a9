"""--set trace-loo never learns from the trace it predicts (seer.evaluate.trace_loo)."""

import json
import shutil
from pathlib import Path

import pandas as pd

import seer
from seer.evaluate import trace_loo

DATA = Path(__file__).parents[3] / "data" / "h100-sxm"


def floor_kernels(traces: Path) -> pd.DataFrame:
    """The memory-bound kernels of the folder's traces alone (the default folders are slow to read)."""
    from seer.evaluate.kernel_floors import read_kernels
    from seer.evaluate.models import trace_files

    return read_kernels(trace_files(traces), log=lambda _line: None)


def test_each_fold_leaves_its_trace_out():
    entries = [{"file": f} for f in ("a.json", "b.json", "c.json")]
    folds = trace_loo.folds(entries)
    assert [f.held["file"] for f in folds] == ["a.json", "b.json", "c.json"]
    for f in folds:
        assert f.held["file"] not in f.train and len(f.train) == 2


def test_the_fits_of_a_fold_never_hold_its_trace(tmp_path, monkeypatch):
    traces = tmp_path / "traces"
    traces.mkdir()
    index = [e for e in json.loads((DATA / "traces" / "traces.json").read_text()) if e["model"] == "gpt"]
    for e in index:
        for f in (e["file"], e["execution_trace"]):
            shutil.copy(DATA / "traces" / f, traces / f)
    (traces / "traces.json").write_text(json.dumps(index))
    learnt: list[set] = []

    def spy(rec: pd.DataFrame, name: str):
        learnt.append(set(rec["source"]))
        return seer.load("h100-sxm")

    floors_from: list[set] = []
    fit_floors = trace_loo.fit_kernel_floors

    def spy_floors(kernels: pd.DataFrame):
        floors_from.append(set(kernels["trace"]))
        return fit_floors(kernels)

    monkeypatch.setattr(trace_loo, "fit_fits", spy)
    monkeypatch.setattr(trace_loo, "fit_kernel_floors", spy_floors)
    monkeypatch.setattr(trace_loo, "floor_kernels", lambda _t: floor_kernels(traces))
    table = trace_loo.run(DATA / "gemm_layers.csv", traces)
    # the memory-bound kernels' floors of a fold learn from the other traces only
    assert floors_from == [{"gpt_b8.pt.trace.json.gz"}, {"gpt_b1.pt.trace.json.gz"}]
    assert len(learnt) == 3  # the baseline, then one fit per held-out trace
    assert not any(s.endswith("trace.json.gz") for s in learnt[0])
    assert "gpt_b8.pt.trace.json.gz" in learnt[1] and "gpt_b1.pt.trace.json.gz" not in learnt[1]
    assert "gpt_b1.pt.trace.json.gz" in learnt[2] and "gpt_b8.pt.trace.json.gz" not in learnt[2]
    assert set(table["trace"]) == {"gpt_b1", "gpt_b8"} and "kernel sum" in set(table["kind"])
    s = table[table["kind"] == "kernel sum"]
    assert (s["measured_ms"] > 0).all() and (s["noise"] >= 0).all()
