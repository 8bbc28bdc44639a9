"""python -m seer.evaluate.bench: how fast seer predicts and fits (a benchmark script, not a test).

Prints: ranking every fitted convolution algorithm for n random configs, predicting n GEMMs,
fitting every NeuSight GPU (bmm, linear, conv), and the analytical predictors' figures.
Times are the best of a few runs on one process, on the cores it may use (printed): the
nearest-neighbour searches run one thread per usable core, and numpy may use more than one
core for BLAS. For one core's figures pin the process and its BLAS:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c 0 python -m seer.evaluate.bench --skip-fit
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

from seer import predict
from seer.data import records
from seer.errors import SeerError
from seer.models.knn import usable_cores


def _best(fn, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def conv_configs(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    hw = rng.integers(5, 229, n)
    return pd.DataFrame(
        {
            "op": "conv_fwd",
            "batch": rng.integers(1, 129, n),
            "c_in": rng.integers(3, 2049, n),
            "h_in": hw,
            "w_in": hw,
            "c_out": rng.integers(3, 2049, n),
            "kh": 3,
            "kw": 3,
            "pad_h": 1,
            "pad_w": 1,
        }
    )


def gemm_configs(n: int, op: str, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "op": op,
            "batch": rng.integers(1, 512, n),
            "m": rng.integers(1, 4097, n),
            "n": rng.integers(1, 4097, n),
            "k": rng.integers(1, 4097, n),
        }
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m seer.evaluate.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="configs per prediction benchmark (default %(default)s)")
    ap.add_argument("--fits", default="t4", help="bundled fits name or path (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-fit", action="store_true", help="do not time fitting")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for the fit timing")
    args = ap.parse_args(argv)
    try:
        f = predict.load(args.fits)
        conv = conv_configs(args.n)
        t = _best(lambda: f.rank_algorithms(conv), args.repeat)
        cores = usable_cores()
        print(
            f"rank {len(f.algorithms)} conv algorithms x {args.n} configs ({f.gpu.name}, "
            f"{cores} core{'s' * (cores > 1)}): {t:.3f} s"
        )
        t = _best(lambda: f.best_algorithm(conv), args.repeat)
        print(f"best_algorithm for {args.n} configs: {t:.3f} s")
        for op in ("bmm", "linear"):
            if any(m.op == op for m in f.variants.values()):
                g = gemm_configs(args.n, op)
                t = _best(lambda g=g: f.predict(g), args.repeat)
                print(f"predict {args.n} {op} configs: {t:.3f} s")
        if not args.skip_fit:
            ns = records.neusight_dir()
            if ns is None:
                print("fit: NeuSight data not found, skipped")
            else:
                from seer.fit import fit_all

                rec = records.read_neusight(ns, ops=["bmm", "linear", "conv"])
                for jobs in sorted({1, args.jobs}):
                    t0 = time.perf_counter()
                    docs = fit_all(rec, data_path=str(ns), jobs=jobs, log=lambda s: None)
                    took = time.perf_counter() - t0
                    nv = sum(len(d["variants"]) for d in docs.values())
                    print(
                        f"fit every NeuSight GPU (bmm, linear, conv; {len(rec)} rows, {len(docs)} GPUs, "
                        f"{nv} variants) with {jobs} process(es): {took:.1f} s"
                    )
        from seer.evaluate.bench_analytical import bench

        bench(args.n, args.repeat)
        return 0
    except SeerError as exc:
        print(f"seer.evaluate.bench: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
