"""tools/variant_choice.py's split of Test-set-I's error into rows whose variant was named right
and the rest."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

_PATH = Path(__file__).resolve().parents[2] / "tools" / "variant_choice.py"
_spec = importlib.util.spec_from_file_location("variant_choice", _PATH)
assert _spec is not None and _spec.loader is not None
vc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vc)


def test_split_parts_the_error_by_whether_the_variant_was_named_right():
    t = pd.DataFrame(
        {
            "op": "conv_fwd",
            "key": ["conv_fwd:GEMM:a", "conv_fwd:GEMM:a", "conv_fwd:GEMM:b", "conv_fwd:GEMM:b"],
            "pred_config": [1.1, 0.9, 3.0, 1.0],
            "time_dedrifted": [1.0, 1.0, 1.0, 1.0],
        }
    )
    got = vc.split(t, np.array(["conv_fwd:GEMM:a", "conv_fwd:GEMM:a", "conv_fwd:GEMM:a", "conv_fwd:GEMM:b"]))
    assert got["named_right"] == pytest.approx(0.75)
    assert got["rmspe_right"] == pytest.approx(np.sqrt((0.01 + 0.01 + 0.0) / 3))
    assert got["rmspe_wrong"] == pytest.approx(2.0)
    assert got["wrong_share_of_sq_error"] == pytest.approx(4.0 / 4.02)
    assert got["as_forward"] == 0


def test_split_leaves_out_rows_timed_as_the_forward():
    t = pd.DataFrame(
        {
            "op": "conv_bwd_data",
            "key": ["conv_bwd_data:FFT:x", "conv_bwd_data:FFT:y"],
            "pred_config": [2.0, 1.0],
            "time_dedrifted": [1.0, 1.0],
        }
    )
    got = vc.split(t, np.array(["conv_fwd:FFT:x", "conv_bwd_data:FFT:y"]))
    assert got["as_forward"] == 1 and got["named_right"] == 1.0 and got["rmspe"] == 0.0
