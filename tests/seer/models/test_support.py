"""Which filter shapes an algorithm runs, learnt from where it ran among configurations timed
with every algorithm."""

import numpy as np
import pandas as pd

from seer.data.configs import log_config
from seer.models.support import MIN_SEEN, Support, describe, shape_keys
from seer.predict.inputs import frame


def _logcfg(rows: list[dict]) -> np.ndarray:
    base = dict(op="conv_fwd", batch=8, c_in=32, h_in=28, w_in=28, c_out=32, kh=3, kw=3, pad_h=1, pad_w=1)
    return log_config(frame(pd.DataFrame([dict(base, **r) for r in rows]), {})[0], "conv_fwd")


def test_a_shape_key_says_the_shape():
    cfg = _logcfg([dict(kh=7, kw=5, stride_h=2, stride_w=1, dil_h=2, pad_h=6, pad_w=2, c_out=64, groups=2)])
    assert describe(int(shape_keys(cfg)[0])) == "7x5 filter, stride 2x1, dilation 2x1, grouped"


def test_never_runs_needs_the_shape_measured_with_other_algorithms():
    three = [dict(batch=b) for b in (1, 2, 4, 8)]
    one = [dict(batch=b, kh=1, kw=1, pad_h=0, pad_w=0) for b in (1, 2, 4, 8)]
    rare = [dict(batch=1, kh=5, kw=5, pad_h=2, pad_w=2)]  # one configuration: too few to say
    s = Support.of({"A": _logcfg(three + one + rare), "B": _logcfg(three)})
    assert s.seen[int(shape_keys(_logcfg(one))[0])] == len(one) >= MIN_SEEN
    q = _logcfg(
        [dict(batch=3), dict(batch=3, kh=1, kw=1, pad_h=0, pad_w=0), dict(batch=3, kh=5, kw=5, pad_h=2, pad_w=2)]
    )
    assert list(s.never_runs("B", q)) == [False, True, False]
    assert not s.never_runs("A", q).any() and not s.never_runs("C", q).any()  # an algorithm without data
    assert "B does not run a 1x1 filter" in s.explain("B", q[1], "GPU X") and "3x3 filter" in s.explain("B", q[1], "X")
