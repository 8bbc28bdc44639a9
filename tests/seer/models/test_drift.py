import numpy as np
import pandas as pd

from seer.models import drift


def test_fit_drift_finds_and_ignores():
    rng = np.random.default_rng(0)
    pos = np.sort(rng.uniform(0, 1, 2000))
    slow = 0.3 * pos  # 35% slower at the end
    d = drift.fit_drift("f", pos, slow + rng.normal(0, 0.05, len(pos)))
    assert d is not None and 0.25 < d.span < 0.45
    assert np.allclose(np.log(d.factor(pos)) - np.log(d.factor(pos)).mean(), slow - slow.mean(), atol=0.03)
    assert drift.fit_drift("f", pos, rng.normal(0, 0.05, len(pos))) is None
    back = drift.Drift.from_dict("f", d.to_dict())
    assert np.allclose(back.factor(pos), d.factor(pos), rtol=1e-4)


def test_order_is_random():
    rng = np.random.default_rng(0)
    n = 1000
    df = pd.DataFrame(
        {
            "op": "bmm",
            "batch": rng.integers(1, 64, n),
            "m": rng.integers(1, 999, n),
            "n": rng.integers(1, 999, n),
            "k": rng.integers(1, 999, n),
            "call_id": np.arange(n),
            "source": "x",
        }
    )
    assert drift.order_is_random(df)
    assert not drift.order_is_random(df.sort_values("m").assign(call_id=np.arange(n)))
