"""Helpers of the store tests: collect into a folder on the simulated GPU, read a store's rows."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from fakes import fake_env

from cudnn_bench import collect as K
from cudnn_bench.plan import Budget, Shard
from cudnn_bench.store import store_files

SUITES = ["gemm_layers", "test_set_ii"]
WHEN = ["measured_at", "wall_s"]  # when and how long: the only cells two runs may differ in
ORDER = ["suite", "config_key", "math", "call_key", "kernel_index"]


def collect_into(folder: Path, shard: Shard | None = None, suites=SUITES) -> Path:
    """A collect on the simulated GPU (the whole plan, or one shard of it); its store folder."""
    opts = K.Options(out=folder, suites=suites, budget=Budget(), progress=False, counters="none",
                     shard=shard, timing=K.TimingOptions(warmup=1, reps=4, min_reps=2))
    return K.run(opts, fake_env(), log=lambda s: None).folder


def rows_of(folder: Path) -> pd.DataFrame:
    """Every row of a store folder, in a fixed order, without the cells that say when."""
    df = pd.concat([pd.read_csv(f) for f in store_files(folder)], ignore_index=True)
    return df.drop(columns=WHEN).sort_values(ORDER).reset_index(drop=True)


def assert_same_rows(a: Path, b: Path) -> None:
    """Same rows, times to the nanosecond: the simulated clock starts afresh in each process
    and kernel stamps are whole nanoseconds, as CUPTI's are."""
    pd.testing.assert_frame_equal(rows_of(a), rows_of(b), check_exact=False, rtol=0, atol=2e-6)
