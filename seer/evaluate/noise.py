"""--set noise: how far apart identical launches are in the data, the floor under any model's error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import configs
from seer.data.prepare import VARIANT_OPS, prepare
from seer.data.records import CONV_OPS
from seer.data.records.harness import LAUNCH_GAP_MS, UNVERIFIED, call_kernels
from seer.evaluate.metrics import format_table
from seer.evaluate.report import evaluation_records, repeat_runs, write_out
from seer.evaluate.selection import selection_floor


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


LONG_KERNEL_MS = 0.1  # kernels this long on average: the host enqueued each launch long before the GPU reached it


def launch_gaps(rec: pd.DataFrame) -> pd.DataFrame:
    """The GPU's own gap between consecutive kernels, per GPU, from calls whose kernels run one
    after another (span >= their times) and average over LONG_KERNEL_MS: there the host is ahead,
    so the idle time between launches is the GPU's, the allowance seer.data.records.harness
    .LAUNCH_GAP_MS puts in a call's busy time. Empty where the data hold no kernel times."""
    need = {"call_id", "kernel_time_ms", "gpu_span_ms", "launches"}
    if not need <= set(rec.columns):
        return pd.DataFrame()
    r = rec[(rec["status"] == "ok") & rec["call_id"].notna()]
    keys = ["gpu", "call_id"]
    span = pd.to_numeric(r["gpu_span_ms"], errors="coerce").groupby([r[k] for k in keys], sort=False).first()
    calls = call_kernels(r, keys).assign(span=span)
    k, n = calls["kernel_ms"], calls["launches"]
    calls = calls[(n > 1) & (k / n > LONG_KERNEL_MS) & (calls["span"] >= k)]
    gap_us = (1e3 * (calls["span"] - calls["kernel_ms"]) / (calls["launches"] - 1)).rename("gap_us")
    out = gap_us.groupby(level="gpu").describe(percentiles=[0.1, 0.5, 0.9])
    out = out.astype({"count": int})
    return out.rename(columns={"count": "calls", "10%": "p10_us", "50%": "median_us", "90%": "p90_us"})[
        ["calls", "p10_us", "median_us", "p90_us"]
    ].reset_index()


def _calls(r: pd.DataFrame) -> pd.DataFrame:
    """One row per successful call whose time is scored (not time_basis unverified)."""
    if "call_key" not in r:
        return r.iloc[:0]
    ok = (r["status"] == "ok") & r["call_key"].notna()
    if "time_basis" in r:
        ok &= r["time_basis"] != UNVERIFIED
    return r[ok].drop_duplicates("call_key").set_index("call_key")


def rerun_table(path: Path) -> pd.DataFrame:
    """Run-to-run noise: calls measured again in a later run (a GPU folder's `repeat/`) against
    the first measurement, per GPU, op and algorithm. Deviation = |t2/t1 - 1| of each call's
    time as seer scores it (the GPU span of its kernels where the batch was not chunked: see
    seer.data.records.harness.time_basis); calls whose time is unverified in either run are left out."""
    rows = []
    for first, again in repeat_runs(path):
        a, b = _calls(first), _calls(again)
        both = a[["gpu", "op", "algo", "time_ms"]].join(
            b[["time_ms"]].rename(columns={"time_ms": "again"}), how="inner"
        )
        for (gpu, op, algo), g in both.groupby(["gpu", "op", "algo"], sort=True):
            dev = (g["again"] / g["time_ms"] - 1).abs()
            rows.append(
                {
                    "gpu": gpu,
                    "op": op,
                    "algo": algo,
                    "calls": len(g),
                    "median_dev": dev.median(),
                    "p90_dev": dev.quantile(0.9),
                    "p99_dev": dev.quantile(0.99),
                }
            )
    return pd.DataFrame(rows)


def rerun_line(t: pd.DataFrame) -> str:
    """One sentence with the run-to-run noise floor per algorithm (a rerun_table's p90) to print
    beside an accuracy figure; '' where the data hold no repeated run."""
    if t.empty:
        return ""
    ops = [
        f"{op} " + ", ".join(f"{r.algo or 'default'} {100 * r.p90_dev:.1f}%" for r in g.itertuples())
        for op, g in t.groupby("op", sort=False)
    ]
    gpus = ", ".join(sorted(pd.unique(t["gpu"])))
    return (
        f"noise floor ({gpus}, the same calls measured again by a later run; python -m seer.evaluate --set noise): "
        f"p90 of |t2/t1 - 1| per algorithm: {'; '.join(ops)}"
    )


def _op_first(t: pd.DataFrame) -> pd.DataFrame:
    return t[["gpu", "op", *(c for c in t.columns if c not in ("gpu", "op"))]]


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
    gaps = launch_gaps(rec)
    if len(gaps):
        print(
            "\nThe GPU's own gap between consecutive kernels of a call (calls whose kernels run one after another and "
            f"average over {1e3 * LONG_KERNEL_MS:.0f} us, so the host is ahead); a call's busy time allows "
            f"{1e3 * LAUNCH_GAP_MS:.1f} us per gap:\n"
        )
        print(format_table(gaps.round(2)))
    floors = [f.assign(op=op) for op in CONV_OPS if len(f := selection_floor(Path(path), op))]
    floor = _op_first(pd.concat(floors, ignore_index=True)) if floors else pd.DataFrame()
    if len(floor):
        print(
            "\nTest-set-II run to run (the forward, and conv_bwd's gradients): how often the fastest algorithm "
            "of a layer changes, and run 1's "
            "fastest algorithms scored as picks on run 2 (the best any predictor of one run can do on the other):\n"
        )
        print(format_table(floor, percent=("top1", "within_10pct", "slowdown_mean", "slowdown_max")))
    if args.out:
        payload = {
            "set": "noise",
            "groups": t.to_dict(orient="records"),
            "rerun": rerun.to_dict(orient="records"),
            "selection_floor": floor.to_dict(orient="records"),
            "launch_gaps": gaps.to_dict(orient="records"),
        }
        write_out(Path(args.out), payload, {"noise": t, "rerun": rerun, "selection_floor": floor, "launch_gaps": gaps})
        print(f"\nwrote {args.out}")
    return 0
