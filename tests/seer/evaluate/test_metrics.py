import numpy as np
import pandas as pd
import pytest

from seer.evaluate.metrics import accuracy, accuracy_table, format_table


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
