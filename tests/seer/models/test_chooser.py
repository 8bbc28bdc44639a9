import numpy as np
import pandas as pd

from seer.models import chooser, knn


def _gemm(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "op": "bmm",
            "batch": rng.integers(1, 64, n),
            "m": rng.integers(16, 4096, n),
            "n": rng.integers(16, 4096, n),
            "k": rng.integers(16, 4096, n),
        }
    )


def test_chooser_learns_regions_and_round_trips():
    tr = _gemm(2000)
    keys = pd.Series(np.where(tr["m"] * tr["n"] < 2**20, "small", "large"))
    ch = chooser.fit_chooser(tr, "bmm", "", keys)
    assert len(ch.points) < len(tr)  # condensed
    test = _gemm(500, seed=1)
    truth = np.where(test["m"] * test["n"] < 2**20, "small", "large")
    got = (ch.choose(test) == truth).mean()
    assert got > 0.9
    full = chooser.Chooser(
        "bmm",
        "",
        ch.labels,
        np.log2(tr[["batch", "m", "n", "k"]].to_numpy(float)),
        keys.map({k: i for i, k in enumerate(ch.labels)}).to_numpy(),
    )
    assert got >= (full.choose(test) == truth).mean() - 0.02  # condensing loses next to nothing
    back = chooser.Chooser.from_dict(ch.to_dict())
    assert (back.choose(test) == ch.choose(test)).all()


def test_single_label_and_distance():
    tr = _gemm(100)
    ch = chooser.fit_chooser(tr, "bmm", "", pd.Series(["only"] * len(tr)))
    assert set(ch.choose(_gemm(10, 2))) == {"only"}
    far = pd.DataFrame({"op": ["bmm"], "batch": [10**6], "m": [1], "n": [1], "k": [1]})
    from seer.data import configs

    d, _ = ch.nearest(configs.log_config(far, "bmm"))
    assert d[0] > 5


def test_condense_keeps_boundaries():
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 10, (3000, 2))
    lab = (pts[:, 0] > 5).astype(int)
    keep = knn.condense(pts, lab)
    near = np.abs(pts[:, 0] - 5) < 0.1
    assert np.isin(np.flatnonzero(near), keep).mean() > 0.9
    assert len(keep) < len(pts) / 3
    assert np.allclose(knn.decode(knn.encode(pts[:5])), pts[:5].astype(np.float32))
