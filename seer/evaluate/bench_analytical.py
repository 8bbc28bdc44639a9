"""Speed of the analytical predictors: `python -m seer.evaluate.bench_analytical [-n 100000]`.

Prints the best of a few runs of predicting n embedding configs (forward and backward) and n
memory-bound configs (datasheet and fitted parameters), and the time to fit the memory-bound
model on NeuSight's measurements when they are present.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from seer.analytical.embedding import embedding_backward_sgd, embedding_forward
from seer.analytical.memory import ELEMENTWISE, predict_memory_bound
from seer.models.memory import MemoryBoundModel


def embedding_configs(n: int, seed: int = 0) -> pd.DataFrame:
    """n random but valid embedding-bag configs (bag_size <= num_embeddings)."""
    rng = np.random.default_rng(seed)
    e = rng.integers(1_000, 100_000_000, n)
    return pd.DataFrame(
        {
            "batch": rng.integers(1, 8193, n),
            "num_embeddings": e,
            "num_tables": rng.integers(1, 257, n),
            "bag_size": np.minimum(rng.integers(1, 1001, n), e),
            "emb_dim": rng.choice([16, 32, 64, 128, 256], n),
            "rows_per_block": rng.choice([1, 2, 4, 8, 16, 32, 64, 128], n),
        }
    )


def memory_configs(n: int, seed: int = 0) -> pd.DataFrame:
    """n random memory-bound configs over every op the model covers."""
    rng = np.random.default_rng(seed)
    ops = rng.choice(["elementwise", "softmax", "layer_norm", "concat", "transpose", "memcpy"], n)
    fns = np.where(
        ops == "elementwise",
        rng.choice(list(ELEMENTWISE), n),
        np.where(ops == "memcpy", rng.choice(["h2d", "d2h", "d2d"], n), ""),
    )
    return pd.DataFrame({"op": ops, "fn": fns, "rows": rng.integers(1, 16385, n), "cols": rng.integers(1, 4097, n)})


def synthetic_records(
    gpu: str = "NVIDIA A100-PCIE-40GB",
    n: int = 400,
    seed: int = 0,
    bw_gbs: float = 1300.0,
    floor_ms: float = 0.025,
    latency_ms: float = 0.010,
    noise: float = 0.0,
) -> pd.DataFrame:
    """Records of element-wise adds and relus timed by a known roofline, for tests and the bench."""
    rng = np.random.default_rng(seed)
    rows = np.exp(rng.uniform(0, np.log(16384), n)).round().astype(int)
    cols = np.exp(rng.uniform(0, np.log(4096), n)).round().astype(int)
    fn = np.where(np.arange(n) % 2 == 0, "add", "relu")
    acc = np.where(fn == "add", 3, 2)
    t = np.maximum(floor_ms, latency_ms + rows * cols * 4.0 * acc / (bw_gbs * 1e6))
    t = t * (1 + noise * rng.standard_normal(n))
    return pd.DataFrame(
        {"gpu": gpu, "op": "elementwise", "fn": fn, "rows": rows, "cols": cols, "dtype": "float32", "time_ms": t}
    )


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench(n: int = 100_000, repeat: int = 3, gpu: str = "v100-sxm2", out=print) -> dict[str, float]:
    """Seconds (best of `repeat`) for each prediction over n configs; printed through `out`."""
    emb = embedding_configs(n)
    mem = memory_configs(n)
    params = MemoryBoundModel().fit(
        pd.concat(
            [synthetic_records(g, seed=i) for i, g in enumerate(["Tesla V100-SXM2-16GB", "NVIDIA A100-PCIE-40GB"])]
        )
    )
    res = {
        "embedding_forward": _best(lambda: embedding_forward(emb, gpu=gpu), repeat),
        "embedding_backward_sgd": _best(lambda: embedding_backward_sgd(emb, gpu=gpu), repeat),
        "memory_bound_datasheet": _best(lambda: predict_memory_bound(mem, None, gpu), repeat),
        "memory_bound_fitted": _best(lambda: predict_memory_bound(mem, params, gpu), repeat),
    }
    from seer.data.records import neusight_dir, read_neusight
    from seer.evaluate.analytical import NEUSIGHT_OPS

    path = neusight_dir()
    if path is not None:
        rec = read_neusight(path, ops=NEUSIGHT_OPS)
        res["fit_memory_bound_neusight"] = _best(lambda: MemoryBoundModel().fit(rec), 1)
        out(f"MemoryBoundModel().fit on NeuSight ({len(rec)} rows, 5 GPUs): {res['fit_memory_bound_neusight']:.2f} s")
    for k in ("embedding_forward", "embedding_backward_sgd", "memory_bound_datasheet", "memory_bound_fitted"):
        out(f"{k}: {n} configs in {1e3 * res[k]:.1f} ms (best of {repeat})")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m seer.evaluate.bench_analytical", description=__doc__)
    ap.add_argument("-n", type=int, default=100_000, help="configs per prediction (default 100000)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if args.n < 1 or args.repeat < 1:
        print("seer: -n and --repeat must be >= 1", file=sys.stderr)
        return 2
    bench(args.n, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
