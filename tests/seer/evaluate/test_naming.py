import numpy as np
import pandas as pd
import pytest

from seer.evaluate.naming import naming_table


def _rows() -> pd.DataFrame:
    """Four forward rows of one algorithm (two named right, one wrong, one unscored) and two
    data-gradient rows, one timed as the forward."""
    return pd.DataFrame(
        {
            "gpu": ["g"] * 6,
            "op": ["conv_fwd"] * 4 + ["conv_bwd_data"] * 2,
            "algo": ["A"] * 4 + ["B"] * 2,
            "key": [
                "conv_fwd:A:x",
                "conv_fwd:A:x",
                "conv_fwd:A:y",
                "conv_fwd:A:x",
                "conv_bwd_data:B:z",
                "conv_bwd_data:B:z",
            ],
            "named": ["conv_fwd:A:x", "conv_fwd:A:x", "conv_fwd:A:x", "", "conv_bwd_data:B:z", "conv_fwd:B:w"],
            "time_ms": [1.0, 1.0, 1.0, 1.0, 2.0, 2.0],
            "pred_config": [1.1, 0.9, 4.0, np.nan, 2.0, 3.0],
            "pred_variant": [1.1, 0.9, 1.2, 1.0, 2.0, np.nan],
        }
    )


def test_the_wrongly_named_rows_carry_their_share_of_the_squared_error():
    t = naming_table(_rows(), ["gpu", "op", "algo"]).set_index("algo")
    a = t.loc["A"]
    assert a["n"] == 3 and a["as_forward"] == 0  # the unscored row is left out
    assert a["named_right"] == pytest.approx(2 / 3)
    assert a["wrong_err_share"] == pytest.approx(9 / (0.01 + 0.01 + 9))
    assert a["rmspe_named_right"] == pytest.approx(0.1)
    assert a["rmspe"] == pytest.approx(np.sqrt((0.01 + 0.01 + 9) / 3))
    assert a["rmspe_known"] == pytest.approx(np.sqrt((0.01 + 0.01 + 0.04) / 3))  # the scored rows


def test_a_row_timed_as_the_forward_is_neither_right_nor_wrong():
    t = naming_table(_rows(), ["gpu", "op", "algo"]).set_index("algo")
    b = t.loc["B"]
    assert b["as_forward"] == 1 and b["named_right"] == 1.0
    assert b["wrong_err_share"] == 0.0  # its one judged row is right; the forward's error is not "wrong"
    only_forward = naming_table(_rows().iloc[[5]], ["gpu", "op", "algo"]).iloc[0]
    assert np.isnan(only_forward["named_right"]) and np.isnan(only_forward["wrong_err_share"])


def test_the_overall_row_pools_every_group():
    over = naming_table(_rows(), ["gpu", "op", "algo"]).iloc[-1]
    assert over["algo"] == "overall" and over["n"] == 5 and over["as_forward"] == 1
    assert over["named_right"] == pytest.approx(3 / 4)
