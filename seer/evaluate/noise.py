"""--set noise: how far apart identical launches are in the data, the floor under any model's error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import configs, records
from seer.data.prepare import VARIANT_OPS, prepare
from seer.evaluate.metrics import format_table
from seer.evaluate.report import evaluation_records, write_out


def noise_table(rec: pd.DataFrame) -> pd.DataFrame:
    """How far apart the times of identical launches are: rows with the same kernel, grid and
    reduction length per block, which a per-variant model must predict alike. Their median
    deviation from their group's median is the floor under any model's error on this data."""
    rows = []
    prep = prepare(rec[rec["op"].isin(VARIANT_OPS)])
    prep["gk"] = configs.sizes(prep)["gk"]
    for (gpu, op), g in prep.groupby(["gpu", "op"], sort=True):
        key = ["kernel", "grid_x", "grid_y", "grid_z", "gk"]
        grp = g.groupby(key, dropna=False)["time_ms"]
        size = grp.transform("size")
        dev = (g["time_ms"] / grp.transform("median") - 1).abs()[size >= 2]
        rows.append(
            {
                "gpu": gpu,
                "op": op,
                "rows": len(g),
                "rows_in_repeats": int((size >= 2).sum()),
                "median_dev": dev.median() if len(dev) else np.nan,
                "p90_dev": dev.quantile(0.9) if len(dev) else np.nan,
            }
        )
    return pd.DataFrame(rows)


def rerun_table(path: Path) -> pd.DataFrame:
    """Run-to-run noise: calls measured again in a later run (a GPU folder's `repeat/`, same
    suites, same harness) against the first measurement, per GPU and op. Deviation = |t2/t1 - 1|
    of each successful call's time (the GPU span of its kernels)."""
    path = records.data_path(path)
    folders = [path / "repeat"] if (path / "repeat").is_dir() else sorted(path.glob("*/repeat"))
    rows = []
    for rep in folders:
        first, again = (records.load(p) for p in (rep.parent, rep))
        calls = []
        for r in (first, again):
            ok = r[(r["status"] == "ok") & r["call_key"].notna()] if "call_key" in r else r.iloc[:0]
            calls.append(ok.drop_duplicates("call_key").set_index("call_key")[["gpu", "op", "time_ms"]])
        both = calls[0].join(calls[1][["time_ms"]].rename(columns={"time_ms": "again"}), how="inner")
        for (gpu, op), g in both.groupby(["gpu", "op"], sort=True):
            dev = (g["again"] / g["time_ms"] - 1).abs()
            rows.append(
                {
                    "gpu": gpu,
                    "op": op,
                    "calls": len(g),
                    "median_dev": dev.median(),
                    "p90_dev": dev.quantile(0.9),
                    "p99_dev": dev.quantile(0.99),
                }
            )
    return pd.DataFrame(rows)


def run_noise(args) -> int:
    path, rec = evaluation_records(args, "the noise floor compares repeated launches of those kernels")
    t = noise_table(rec)
    print(
        f"Repeated launches in {path}: rows whose kernel, grid and reduction length per block are the "
        "same (a per-variant model predicts them alike); deviation of each from its group's median.\n"
    )
    print(format_table(t, percent=("median_dev", "p90_dev")))
    rerun = rerun_table(Path(path))
    if len(rerun):
        print(
            "\nRun to run: the same calls measured again by a later run (repeat/), deviation |t2/t1 - 1| "
            "of each call's time:\n"
        )
        print(format_table(rerun, percent=("median_dev", "p90_dev", "p99_dev")))
    if args.out:
        payload = {"set": "noise", "groups": t.to_dict(orient="records"), "rerun": rerun.to_dict(orient="records")}
        write_out(Path(args.out), payload, {"noise": t, "rerun": rerun})
        print(f"\nwrote {args.out}")
    return 0
