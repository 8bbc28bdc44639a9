import numpy as np
import pandas as pd
import pytest

from seer.evaluate.metrics import accuracy, accuracy_table, format_table, rmspe_interval


def test_accuracy_definitions():
    meas = np.array([1.0, 2.0, 4.0, 10.0])
    pred = np.array([1.08, 2.0, 3.0, 10.5])
    a = accuracy(pred, meas)
    e = np.array([0.08, 0.0, 0.25, 0.05])
    assert a["n"] == 4
    assert a["rmspe"] == pytest.approx(np.sqrt(np.mean(e**2)))
    assert a["mape"] == pytest.approx(0.095)
    assert a["median_ape"] == pytest.approx(0.065)
    assert a["gmae"] == pytest.approx(np.exp(np.mean(np.log([0.08, 1e-6, 0.25, 0.05]))))
    assert a["within_10pct"] == pytest.approx(0.75)


def test_table_has_overall_row():
    df = pd.DataFrame({"g": ["a", "a", "b"], "p": [1.0, 2.0, 3.0], "m": [1.0, 1.0, 3.0]})
    t = accuracy_table(df, "p", "m", "g")
    assert list(t["g"]) == ["a", "b", "overall"]
    assert t.loc[t["g"] == "a", "mape"].item() == pytest.approx(0.5)
    assert "50.0%" in format_table(t)


def test_rmspe_interval_brackets_rmspe_and_widens_where_a_few_rows_carry_it():
    rng = np.random.default_rng(1)
    meas = np.ones(400)
    even = 1 + rng.normal(0, 0.2, 400)  # every row a little off
    lumpy = np.where(np.arange(400) < 4, 3.0, 1.0)  # four rows 200% off, the rest exact
    for pred in (even, lumpy):
        lo, hi = rmspe_interval(pred, meas)
        assert lo < accuracy(pred, meas)["rmspe"] < hi
        assert rmspe_interval(pred, meas) == (lo, hi)  # seeded: a rerun prints the same
    (elo, ehi), (llo, lhi) = rmspe_interval(even, meas), rmspe_interval(lumpy, meas)
    assert ehi - elo < 0.05 < lhi - llo  # the lumpy RMSPE (20%) is no better known than within tens of points
    assert rmspe_interval(even, meas, seed=2) != (elo, ehi)
    assert all(np.isnan(rmspe_interval([], [])))


def test_accuracy_table_adds_rmspes_interval_per_group_and_overall():
    df = pd.DataFrame({"g": ["a"] * 50 + ["b"] * 50, "p": np.r_[np.full(50, 1.1), np.linspace(1, 3, 50)],
                       "m": np.ones(100)})
    assert "rmspe_lo" not in accuracy_table(df, "p", "m", "g")
    t = accuracy_table(df, "p", "m", "g", interval=True)
    assert list(t.columns[:5]) == ["g", "n", "rmspe", "rmspe_lo", "rmspe_hi"]
    a = t.set_index("g")
    assert a.loc["a", "rmspe_lo"] == pytest.approx(0.1) and a.loc["a", "rmspe_hi"] == pytest.approx(0.1)
    assert a.loc["b", "rmspe_lo"] < a.loc["b", "rmspe"] < a.loc["b", "rmspe_hi"]
    assert tuple(a.loc["overall", ["rmspe_lo", "rmspe_hi"]]) == rmspe_interval(df["p"], df["m"])
    assert "10.0%" in format_table(t)
