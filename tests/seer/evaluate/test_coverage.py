import numpy as np
import pandas as pd
import pytest

from seer.evaluate.coverage import coverage_table


def _rows() -> pd.DataFrame:
    """Three scored rows of algorithm A (one beyond the trust distance, off by 100%), one
    unscored, and one row of B within it."""
    return pd.DataFrame(
        {
            "gpu": ["g"] * 5,
            "op": ["conv_fwd"] * 5,
            "algo": ["A"] * 4 + ["B"],
            "time_ms": [1.0, 1.0, 1.0, 1.0, 2.0],
            "pred_config": [1.1, 0.9, 2.0, np.nan, 2.2],
            "beyond": [False, False, True, True, False],
        }
    )


def test_the_rows_beyond_the_trust_distance_carry_their_share_of_the_squared_error():
    t = coverage_table(_rows(), ["gpu", "op", "algo"]).set_index("algo")
    a = t.loc["A"]
    assert a["n"] == 3 and a["beyond"] == pytest.approx(1 / 3)  # the unscored row is left out
    assert a["rmspe_within"] == pytest.approx(0.1) and a["rmspe_beyond"] == pytest.approx(1.0)
    assert a["beyond_err_share"] == pytest.approx(1 / 1.02)
    b = t.loc["B"]
    assert b["beyond"] == 0.0 and np.isnan(b["rmspe_beyond"]) and b["beyond_err_share"] == 0.0


def test_the_overall_row_pools_every_group():
    over = coverage_table(_rows(), ["gpu", "op", "algo"]).iloc[-1]
    assert over["algo"] == "overall" and over["n"] == 4 and over["beyond"] == pytest.approx(1 / 4)
    assert over["rmspe_within"] == pytest.approx(0.1)
