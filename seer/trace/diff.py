"""What changed between two runs: two traces compared kernel by kernel and op by op.

Each side's GPU events are grouped (by kernel name, and by the op that launched them: `aten::addmm`,
`unlinked` for events no op launched) as the summary groups them (seer.trace.summary.group), then
put side by side: counts, total times and the fraction of the roofline each achieved (`efficiency`:
the ideal time at the GPU's peaks over the measured time, the kernels' time-weighted mean), the
change (`delta_ms` = B - A, `ratio` = B / A) and whether the row is in only one of the traces.
Rows are sorted by the absolute change in time, largest first. Totals are over the whole traces;
when the two hold different numbers of steps, so do their counts (the header says how many).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.trace.kernels import Explained
from seer.trace.summary import group

COLUMNS = ["count_a", "count_b", "total_ms_a", "total_ms_b", "delta_ms", "ratio", "efficiency_a", "efficiency_b",
           "only_in"]  # fmt: skip


def _efficiency(kernels: pd.DataFrame, by: str) -> pd.Series:
    """Per group, the kernels' roofline efficiency weighted by their time (NaN: none has work)."""
    e = kernels["efficiency"].to_numpy(float)
    d = kernels["dur_us"].to_numpy(float)
    ok = np.isfinite(e)
    t = pd.DataFrame({by: kernels[by].to_numpy(object), "w": np.where(ok, e * d, 0.0), "d": np.where(ok, d, 0.0)})
    s = t.groupby(by, sort=False)[["w", "d"]].sum()
    return (s["w"] / s["d"].where(s["d"] > 0)).rename("efficiency")


def _side(ex: Explained, by: str) -> pd.DataFrame:
    k = ex.kernels
    if by == "op_name":
        k = k.assign(op_name=np.where(k["op_name"].to_numpy(object) == "", "unlinked", k["op_name"].to_numpy(object)))
    g = group(k, by).set_index(by)[["count", "total_ms"]]
    return g.join(_efficiency(k, by))


def compare(a: Explained, b: Explained, by: str) -> pd.DataFrame:
    """A vs B grouped by `by` ("name": kernels, "op_name": ops), COLUMNS after the key, largest
    absolute change in time first."""
    sa, sb = _side(a, by), _side(b, by)
    t = sa.add_suffix("_a").join(sb.add_suffix("_b"), how="outer", sort=False)
    in_a, in_b = t["count_a"].notna().to_numpy(), t["count_b"].notna().to_numpy()
    for c in ("count_a", "count_b"):
        t[c] = t[c].fillna(0).astype(np.int64)
    for c in ("total_ms_a", "total_ms_b"):
        t[c] = t[c].fillna(0.0)
    t["delta_ms"] = t["total_ms_b"] - t["total_ms_a"]
    with np.errstate(divide="ignore", invalid="ignore"):
        t["ratio"] = np.where(t["total_ms_a"] > 0, t["total_ms_b"] / t["total_ms_a"], np.nan)
    t["only_in"] = np.where(in_a & in_b, "", np.where(in_a, "a", "b"))
    t.index.name = by
    t = t.reset_index()
    order = np.argsort(-np.abs(t["delta_ms"].to_numpy(float)), kind="stable")
    return t.iloc[order][[by, *COLUMNS]].reset_index(drop=True)


def totals(a: Explained, b: Explained) -> dict[str, float]:
    """GPU time (ms), kernel count and steps of each trace, and the change in GPU time."""
    ga, gb = float(a.kernels["dur_us"].sum()) / 1e3, float(b.kernels["dur_us"].sum()) / 1e3
    return {
        "gpu_ms_a": ga,
        "gpu_ms_b": gb,
        "delta_ms": gb - ga,
        "kernels_a": float(len(a.kernels)),
        "kernels_b": float(len(b.kernels)),
        "steps_a": float(a.steps),
        "steps_b": float(b.steps),
    }
