"""--set kernel-floors: leave one trace out, never scoring a trace fitted on."""

import numpy as np
import pandas as pd
import pytest

import seer.evaluate.kernel_floors as kf
from seer.models.kernel_floor import fit_kernel_floors as real_fit


def _trace(name, gpu, bw_gbs, seed):
    rng = np.random.default_rng(seed)
    b = 10 ** rng.uniform(3, 9, 120)
    t = np.maximum(0.002, b / (bw_gbs * 1e6)) * (1 + 0.01 * rng.standard_normal(len(b)))
    return pd.DataFrame({"trace": name, "gpu": gpu, "step": np.repeat([1, 2, 3], 40), "op": np.arange(len(b)),
                         "name": "add", "kind": "elementwise", "fns": "add", "n_parts": 1, "n_kernels": 1,
                         "bytes": b, "part_bytes": [(x,) for x in b], "kernel_ms": t})  # fmt: skip


def test_leave_one_out_never_scores_a_trace_it_fitted_on(monkeypatch):
    k = pd.concat(
        [
            _trace("a.json", "h100-sxm", 2900, 0),
            _trace("b.json", "h100-sxm", 2900, 1),
            _trace("c.json", "a100-40gb", 1300, 2),
        ]
    )
    seen = []

    def spy(train, sources=()):
        seen.append(set(train["trace"]))
        return real_fit(train, sources)

    monkeypatch.setattr(kf, "fit_kernel_floors", spy)
    t = kf.leave_one_out(k)
    assert list(t["trace"]) == ["a.json", "b.json", "c.json"]
    for scored, fitted in zip(t["trace"], seen):
        assert scored not in fitted
    assert t.set_index("trace").loc["c.json", "fitted_from"].startswith("spec")  # no other A100 trace
    assert t.set_index("trace").loc["a.json", "error"] == pytest.approx(0.0, abs=0.05)
    assert (t["noise"] >= 0).all()
